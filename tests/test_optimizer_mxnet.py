"""Every optimizer's updates against Apache MXNet 1.9.1's, on a grid of options and dtypes.

MXNet (``bench/.venv-mxnet``) runs each case for three steps from the same weights and
gradients; mxrs must give the same weights, on workers (the Python optimizers, float16 with and
without ``multi_precision``, float32, float64) and on the servers (the Rust updaters, through a
real 1-worker 1-server job, for every optimizer the servers run).
"""

import json
import subprocess
import sys
import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from jobs import TIMEOUT, node_env, scheduler_and_servers

RNG = np.random.default_rng(11)
W0 = RNG.uniform(-2, 2, (4, 5))
GRADS = RNG.uniform(-3, 3, (3, 4, 5))
FULL = {"learning_rate": 0.1, "wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.6}

#: (optimizer, options) pairs; each runs with the defaults, with FULL, and with multipliers.
OPTIONS = [
    ("sgd", {}),
    ("sgd", {"momentum": 0.9}),
    ("nag", {"momentum": 0.9}),
    ("nag", {}),
    ("signum", {"momentum": 0.9, "wd_lh": 0.02}),
    ("signum", {"momentum": 0.0}),
    ("adam", {}),
    ("adam", {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-3}),
    ("adagrad", {"eps": 1e-3}),
    ("rmsprop", {"gamma1": 0.8, "epsilon": 1e-3}),
    ("rmsprop", {"centered": True, "gamma2": 0.7, "clip_weights": 2.0}),
    ("ftrl", {"lamda1": 0.02, "beta": 0.5}),
    ("adamax", {"beta1": 0.8, "beta2": 0.5}),
    ("nadam", {"schedule_decay": 0.01}),
    ("adadelta", {"rho": 0.8, "epsilon": 1e-3}),
    ("ftml", {"beta1": 0.7, "beta2": 0.99, "epsilon": 1e-3}),
    ("lamb", {}),
    ("lamb", {"bias_correction": False, "lower_bound": 0.5, "upper_bound": 1.5}),
    # MXNet 1.9.1's DCASGD fails with any momentum ("The truth value of an NDArray with
    # multiple elements is ambiguous"): only its momentum-free form can be compared.
    ("dcasgd", {"lamda": 0.1}),
]
#: the servers run these natively
SERVER_OPTIMIZERS = {"sgd", "nag", "signum", "adam", "adagrad", "rmsprop", "adamax", "adadelta",
                     "ftml"}  # fmt: skip
#: float16 with and without float32 master weights, float32, float64
DTYPES = [("float16", True), ("float16", False), ("float32", False), ("float64", False)]


def _cases():
    cases = []
    for name, opts in OPTIONS:
        for variant in ("defaults", "full", "mults"):
            kw = dict(opts)
            if variant != "defaults":
                kw.update(FULL)
            mults = variant == "mults"
            if name == "ftml" and variant == "defaults":
                kw["learning_rate"] = 0.05  # FTML's default rate is MXNet's Optimizer default
            for dtype, mp in DTYPES:
                cases.append({"name": name, "kw": {**kw, "multi_precision": mp}, "dtype": dtype,
                              "mults": mults})  # fmt: skip
    return cases


CASES = _cases()

_MXNET_SCRIPT = """
import mxnet as mx
cases = json.loads({cases!r})
for i, case in enumerate(cases):
    opt = mx.optimizer.create(case["name"], **case["kw"])
    if case["mults"]:
        opt.set_lr_mult({{0: 0.5}})
        opt.set_wd_mult({{0: 2.0}})
    w = mx.nd.array(inputs["w0"], dtype=case["dtype"])
    try:
        state = opt.create_state_multi_precision(0, w)
        for g in inputs["grads"]:
            opt.update_multi_precision(0, w, mx.nd.array(g, dtype=case["dtype"]), state)
        arrays["w%d" % i] = w.asnumpy()
    except Exception as e:
        result = result or {{}}
        result[str(i)] = str(e).strip().splitlines()[-1]
"""


@pytest.fixture(scope="module")
def mxnet_weights(tmp_path_factory):
    script = _MXNET_SCRIPT.format(cases=json.dumps(CASES))
    tmp = tmp_path_factory.mktemp("optimizer_grid")
    failed, arrays = mxnet_ref.run(tmp, script, w0=W0, grads=GRADS)
    # MXNet 1.9.1's AdaGrad, RMSProp, FTRL and AdaDelta fail on float16 weights without
    # multi_precision and on float64 weights (they mix float32 states in); nothing else may fail
    refused = {_id(CASES[int(i)]) for i in failed or {}}
    assert refused == {
        _id(c)
        for c in CASES
        if c["name"] in ("adagrad", "rmsprop", "ftrl", "adadelta")
        and (
            c["dtype"] == "float64" or (c["dtype"] == "float16" and not c["kw"]["multi_precision"])
        )
    }, failed
    return [arrays.get(f"w{i}") for i in range(len(CASES))]


# MXNet passes hyperparameters to its kernels as float32 (Adam's 1 - beta2 is 1.3e-5 off), so
# its float64 updates agree with float64 arithmetic only as closely as its float32 ones do.
_TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 1e-6), "float64": (2e-5, 1e-6)}
#: where MXNet refuses a dtype, against its float32 numbers
_TOL_VS_FLOAT32 = {"float16": (2e-2, 2e-2), "float64": (2e-5, 1e-6)}


def _lamb_master_bug(case):
    """MXNet 1.9.1's LAMB with multi_precision never updates its float32 master copy
    (``mp_lamb_update_phase2`` writes only the float16 weight), so from the second step on its
    float16 weights leave its own float32 ones; mxrs keeps the master copy: such a case is
    compared with MXNet's float32 numbers (two places on in CASES)."""
    return case["name"] == "lamb" and case["dtype"] == "float16" and case["kw"]["multi_precision"]


def _reference(i, mxnet_weights):
    """MXNet's weights for case ``i`` and the tolerances; where MXNet refused the case, its
    float32 weights for the same options, with the tolerances of that precision gap."""
    case = CASES[i]
    if _lamb_master_bug(case):
        return mxnet_weights[_float32_case(i)], _TOL["float16"]
    if mxnet_weights[i] is not None:
        return mxnet_weights[i], _TOL[case["dtype"]]
    return mxnet_weights[_float32_case(i)], _TOL_VS_FLOAT32[case["dtype"]]


def _float32_case(i):
    """The index of case ``i``'s float32 twin (same optimizer, options, multipliers)."""
    case = CASES[i]
    for j, other in enumerate(CASES):
        same = {**other["kw"], "multi_precision": case["kw"]["multi_precision"]} == case["kw"]
        if same and (other["name"], other["mults"], other["dtype"]) == (
            case["name"],
            case["mults"],
            "float32",
        ):
            return j
    raise AssertionError(f"no float32 twin of {_id(case)}")


def _assert_matches(i, got, mxnet_weights, label=""):
    """``got`` (case ``i``'s weights) agree with MXNet's. Float16 arithmetic without a master
    copy rounds at every operation, and MXNet's kernels round in their own order: there mxrs
    may instead be at least as close to MXNet's float32 numbers as MXNet's float16 ones are."""
    case = CASES[i]
    want, (rtol, atol) = _reference(i, mxnet_weights)
    got, want = np.asarray(got, np.float64), want.astype(np.float64)
    if case["dtype"] == "float16" and not case["kw"]["multi_precision"]:
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            f32 = mxnet_weights[_float32_case(i)].astype(np.float64)
            ours, theirs = np.abs(got - f32).max(), np.abs(want - f32).max()
            assert ours <= theirs, f"{label}{_id(case)}: {ours} from float32, MXNet {theirs}"
            return
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=label + _id(case))


def _mxrs_weights(case):
    opt = mx.optimizer.create(case["name"], **case["kw"])
    if case["mults"]:
        opt.set_lr_mult({0: 0.5})
        opt.set_wd_mult({0: 2.0})
    w = mx.nd.array(W0, dtype=case["dtype"])
    state = opt.create_state_multi_precision(0, w)
    for g in GRADS:
        opt.update_multi_precision(0, w, mx.nd.array(g, dtype=case["dtype"]), state)
    return w.asnumpy()


def _id(case):
    opts = ",".join(f"{k}={v}" for k, v in case["kw"].items())
    return f"{case['name']}({opts}){' mults' if case['mults'] else ''} {case['dtype']}"


@pytest.mark.parametrize("name", sorted({n for n, _ in OPTIONS}))
def test_python_optimizers_match_mxnet(name, mxnet_weights):
    checked = 0
    for i, case in enumerate(CASES):
        if case["name"] != name:
            continue
        got = _mxrs_weights(case)
        assert got.dtype == np.dtype(case["dtype"]), _id(case)
        _assert_matches(i, got, mxnet_weights)
        assert not np.allclose(got, W0.astype(got.dtype)), _id(case)  # the case did update
        checked += 1
    assert checked == 12 * sum(1 for n, _ in OPTIONS if n == name)


_SERVER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import mxrs as mx
    from mxrs import _native

    cases = json.load(open(sys.argv[1]))
    w0, grads = np.load(sys.argv[2]), np.load(sys.argv[3])
    w = _native.Worker("sync")
    out = {}
    for key, case in enumerate(cases):
        opt = mx.optimizer.create(case["name"], **case["kw"])
        lr_mult, wd_mult = (0.5, 2.0) if case["mults"] else (1.0, 1.0)
        w.set_optimizer(*opt.to_spec(), [(key, lr_mult, wd_mult)])
        dt = np.dtype(case["dtype"])
        w.init([key], [w0.astype(dt)]).wait()
        res = np.empty(w0.shape, dt)
        for g in grads:
            w.pushpull([key], [g.astype(dt)], [res]).wait()
        out[str(key)] = res.astype(np.float64).tolist()
    w.finish()
    json.dump(out, open(sys.argv[4], "w"))
    """
)


def test_the_servers_updates_match_mxnet(tmp_path, mxnet_weights):
    # Servers keep float16 keys in a float32 master copy: MXNet's multi_precision.
    picked = [
        (i, c)
        for i, c in enumerate(CASES)
        if c["name"] in SERVER_OPTIMIZERS
        and (c["dtype"] != "float16" or c["kw"]["multi_precision"])
    ]
    (tmp_path / "cases.json").write_text(json.dumps([c for _, c in picked]))
    np.save(tmp_path / "w0.npy", W0)
    np.save(tmp_path / "grads.npy", GRADS)
    files = [str(tmp_path / n) for n in ("cases.json", "w0.npy", "grads.npy", "out.json")]
    with scheduler_and_servers(workers=1, servers=1, PS_HEARTBEAT_TIMEOUT=5) as port:
        done = subprocess.run(
            [sys.executable, "-c", _SERVER_SCRIPT, *files],
            env=node_env("worker", port, workers=1, servers=1),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert done.returncode == 0, done.stderr
    got = json.loads((tmp_path / "out.json").read_text())
    # three variants of each option set, in float16 (with a master copy), float32, float64
    assert len(got) == len(picked) == 9 * sum(n in SERVER_OPTIMIZERS for n, _ in OPTIONS)
    for key, (i, _) in enumerate(picked):
        _assert_matches(i, got[str(key)], mxnet_weights, "server ")
