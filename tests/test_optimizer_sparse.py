"""Optimizers with sparse gradients, weights and states, against Apache MXNet 1.9.1.

A ``row_sparse`` gradient updates only its rows with the optimizers that have a lazy kernel in
MXNet (SGD and Adam with ``lazy_update``, AdaGrad, FTRL on row_sparse weights): MXNet runs the
same steps on the same inputs and mxrs must give its weights and states, leaving every other
row bit-identical. Everything else updates every row as with the dense gradient (compared with
mxrs's own dense updates, themselves checked against MXNet in test_optimizer_mxnet.py).
"""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import nd
from mxrs.base import MXNetError

SHAPE = (10, 3)
RNG = np.random.default_rng(5)
W0 = RNG.uniform(-1, 1, SHAPE)
#: rows of each step's gradient: repeated across steps, one step empty; rows 2, 3, 6, 8 never
STEP_ROWS = [[1, 4, 7], [4, 5], [0, 4, 7, 9], [], [5]]
STEP_VALS = [RNG.uniform(-2, 2, (len(r), SHAPE[1])) for r in STEP_ROWS]
UNTOUCHED = [2, 3, 6, 8]
FULL = {"learning_rate": 0.1, "wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.6}
NO_WD = {k: v for k, v in FULL.items() if k != "wd"}

#: (optimizer, options, lazy on a dense weight, lazy on a row_sparse weight)
LAZY_CASES = [
    ("sgd", FULL, True, True),
    ("sgd", {**FULL, "momentum": 0.9}, True, True),
    ("adam", FULL, True, True),
    ("adam", {**FULL, "beta1": 0.8, "epsilon": 1e-3}, True, True),
    ("adagrad", {**NO_WD, "eps": 1e-3}, True, True),
    ("ftrl", {**FULL, "lamda1": 0.02, "beta": 0.5}, False, True),
    ("sgd", {**FULL, "momentum": 0.9, "lazy_update": False}, False, False),
    ("adam", {**FULL, "lazy_update": False}, False, False),
]


def _cases():
    cases = []
    for name, kw, lazy_dense, lazy_rsp in LAZY_CASES:
        for wst, lazy in (("default", lazy_dense), ("row_sparse", lazy_rsp)):
            cases.append({"name": name, "kw": kw, "wst": wst, "dtype": "float32", "lazy": lazy})
    # float16 weights with float32 master copies; MXNet's multi-precision SGD has no sparse
    # kernel, so it updates every row
    for name, kw, lazy in (
        ("adam", FULL, True),
        ("adagrad", NO_WD, True),
        ("sgd", {**FULL, "momentum": 0.9}, False),
    ):
        for wst in ("default", "row_sparse"):
            cases.append(
                {
                    "name": name,
                    "kw": {**kw, "multi_precision": True},
                    "wst": wst,
                    "dtype": "float16",
                    "lazy": lazy,
                }
            )
    return cases


CASES = _cases()

_MXNET_SCRIPT = """
import mxnet as mx

def leaves(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in leaves(s)]
    return [state]

cases = json.loads({cases!r})
nsteps = {nsteps}
result = []
for i, case in enumerate(cases):
    dt = case["dtype"]
    opt = mx.optimizer.create(case["name"], **case["kw"])
    w = mx.nd.array(inputs["w0"], dtype=dt).tostype(case["wst"])
    state = opt.create_state_multi_precision(0, w)
    for s in range(nsteps):
        rows = inputs["rows%d" % s]
        if len(rows):
            g = mx.nd.sparse.row_sparse_array(
                (inputs["vals%d" % s].astype(dt), rows), shape=w.shape, dtype=dt)
        else:
            g = mx.nd.sparse.zeros("row_sparse", w.shape, dtype=dt)
        opt.update_multi_precision(0, w, g, state)
    arrays["w%d" % i] = w.asnumpy()
    for j, s in enumerate(leaves(state)):
        arrays["s%d_%d" % (i, j)] = s.asnumpy()
    result.append({{"wst": w.stype, "sst": [s.stype for s in leaves(state)]}})
"""


def _inputs():
    out = {"w0": W0}
    for s, (rows, vals) in enumerate(zip(STEP_ROWS, STEP_VALS, strict=True)):
        out[f"rows{s}"] = np.asarray(rows, np.int64)
        out[f"vals{s}"] = vals
    return out


def _leaves(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in _leaves(s)]
    return [state]


def _rsp(rows, vals, dtype="float32", shape=SHAPE, ctx=None):
    if not len(rows):
        return nd.sparse.zeros("row_sparse", shape, ctx=ctx, dtype=dtype)
    return nd.sparse.row_sparse_array(
        (np.asarray(vals, dtype), np.asarray(rows, np.int64)), shape=shape, ctx=ctx, dtype=dtype
    )


def _mxrs_run(case):
    dt = case["dtype"]
    opt = mx.optimizer.create(case["name"], **case["kw"])
    w = nd.array(W0, dtype=dt).tostype(case["wst"])
    state = opt.create_state_multi_precision(0, w)
    for rows, vals in zip(STEP_ROWS, STEP_VALS, strict=True):
        opt.update_multi_precision(0, w, _rsp(rows, vals, dt), state)
    assert opt._index_update_count[0] == len(STEP_ROWS)  # counted once per update
    return w, state


@pytest.fixture(scope="module")
def mxnet_results(tmp_path_factory):
    script = _MXNET_SCRIPT.format(cases=json.dumps(CASES), nsteps=len(STEP_ROWS))
    tmp = tmp_path_factory.mktemp("optimizer_sparse")
    return mxnet_ref.run(tmp, script, **_inputs())


def _case_id(case):
    return f"{case['name']}-{case['wst']}-{case['dtype']}-{'lazy' if case['lazy'] else 'std'}"


@pytest.mark.parametrize("i", range(len(CASES)), ids=[_case_id(c) for c in CASES])
def test_row_sparse_gradients_match_mxnet(i, mxnet_results):
    case = CASES[i]
    meta, arrays = mxnet_results
    w, state = _mxrs_run(case)
    # MXNet hands its kernels float32 hyper-parameters (Adam's 1 - beta2 is 1.3e-5 off), which
    # moves its weights by up to 3e-6 here
    tol = (
        {"rtol": 2e-3, "atol": 2e-3} if case["dtype"] == "float16" else {"rtol": 2e-5, "atol": 5e-6}
    )
    assert w.stype == case["wst"] == meta[i]["wst"]
    assert w.dtype == np.dtype(case["dtype"])
    np.testing.assert_allclose(w.asnumpy(), arrays[f"w{i}"], **tol)
    leaves = _leaves(state)
    assert [s.stype for s in leaves] == meta[i]["sst"]
    for j, s in enumerate(leaves):
        np.testing.assert_allclose(s.asnumpy(), arrays[f"s{i}_{j}"], **tol, err_msg=f"state {j}")
    got = w.asnumpy()
    w0 = W0.astype(case["dtype"])
    if case["lazy"]:  # the rows no gradient held are bit-identical, their states still zero
        np.testing.assert_array_equal(got[UNTOUCHED], w0[UNTOUCHED])
        if case["dtype"] == "float16":  # the float32 master copy comes first
            master, leaves = leaves[0].asnumpy(), leaves[1:]
            np.testing.assert_array_equal(master[UNTOUCHED], w0[UNTOUCHED].astype(np.float32))
        for s in leaves:
            np.testing.assert_array_equal(s.asnumpy()[UNTOUCHED], 0)
    else:  # weight decay (or FTRL's rule) reached every row
        assert (got[UNTOUCHED] != w0[UNTOUCHED]).all()


# ----------------------------------------------------------------- standard updates
STANDARD = [
    ("sgd", {**FULL, "momentum": 0.9, "lazy_update": False}),
    ("sgd", {**FULL, "lazy_update": False}),
    ("adam", {**FULL, "lazy_update": False}),
    ("nag", {**FULL, "momentum": 0.9}),
    ("rmsprop", FULL),
    ("rmsprop", {**FULL, "centered": True, "clip_weights": 2.0}),
    ("signum", {**FULL, "wd_lh": 0.02}),
    ("adamax", FULL),
    ("nadam", FULL),
    ("ftml", FULL),
    ("adadelta", FULL),
    ("lamb", FULL),
    ("sgld", FULL),
    ("dcasgd", {**FULL, "momentum": 0.9}),
    ("ftrl", FULL),  # on a dense weight
]


def _run_steps(name, kw, weight, grads):
    mx.random.seed(3)  # SGLD's noise
    opt = mx.optimizer.create(name, **kw)
    state = opt.create_state(0, weight)
    for g in grads:
        opt.update(0, weight, g, state)
    return weight, state


def _dense_grads():
    return [_rsp(r, v).tostype("default") for r, v in zip(STEP_ROWS, STEP_VALS, strict=True)]


@pytest.mark.parametrize("name,kw", STANDARD, ids=[f"{n}{i}" for i, (n, _) in enumerate(STANDARD)])
def test_standard_updates_equal_the_dense_ones(name, kw):
    want, want_state = _run_steps(name, kw, nd.array(W0, dtype="float32"), _dense_grads())
    rsp = [_rsp(r, v) for r, v in zip(STEP_ROWS, STEP_VALS, strict=True)]
    csr = [g.tostype("csr") for g in _dense_grads()]
    for grads in (rsp, csr):
        got, state = _run_steps(name, kw, nd.array(W0, dtype="float32"), grads)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        for a, b in zip(_leaves(state), _leaves(want_state), strict=True):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    if name == "ftrl":
        return  # FTRL on a row_sparse weight updates lazily
    # a row_sparse weight, and a csr one, are updated in place with the same numbers
    for wst in ("row_sparse", "csr"):
        weight = nd.array(W0, dtype="float32").tostype(wst)
        got, state = _run_steps(name, kw, weight, rsp)
        assert got is weight and got.stype == wst
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        for a, b in zip(_leaves(state), _leaves(want_state), strict=True):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ----------------------------------------------------------------- states' storage types
STATE_OPTIONS = [
    ("sgd", {}),
    ("sgd", {"momentum": 0.9}),
    ("sgd", {"momentum": 0.9, "lazy_update": False}),
    ("nag", {"momentum": 0.9}),
    ("signum", {}),
    ("adam", {}),
    ("adam", {"lazy_update": False}),
    ("adagrad", {}),
    ("rmsprop", {}),
    ("rmsprop", {"centered": True}),
    ("ftrl", {}),
    ("adamax", {}),
    ("nadam", {}),
    ("adadelta", {}),
    ("ftml", {}),
    ("lamb", {}),
    ("sgld", {}),
    ("dcasgd", {}),
    ("dcasgd", {"momentum": 0.9}),
]

_STYPES_SCRIPT = """
import mxnet as mx
result = []
for name, kw in json.loads({options!r}):
    row = []
    for wst in ("default", "row_sparse", "csr"):
        for mp in (False, True):
            opt = mx.optimizer.create(name, multi_precision=mp, **kw)
            dt = "float16" if mp else "float32"
            w = mx.nd.array(inputs["w0"], dtype=dt).tostype(wst)
            state = opt.create_state_multi_precision(0, w)
            def desc(s):
                if s is None:
                    return None
                if isinstance(s, (tuple, list)):
                    return [desc(x) for x in s]
                return [s.stype, str(s.dtype.__name__) if s.dtype != w.dtype else "same"]
            row.append(desc(state))
    result.append(row)
"""


def test_states_take_mxnets_storage_types(tmp_path):
    script = _STYPES_SCRIPT.format(options=json.dumps(STATE_OPTIONS))
    want, _ = mxnet_ref.run(tmp_path, script, w0=W0)

    def desc(s, w):
        if s is None:
            return None
        if isinstance(s, (tuple, list)):
            return [desc(x, w) for x in s]
        return [s.stype, np.dtype(s.dtype).name if s.dtype != w.dtype else "same"]

    for (name, kw), row in zip(STATE_OPTIONS, want, strict=True):
        got = []
        for wst in ("default", "row_sparse", "csr"):
            for mp in (False, True):
                opt = mx.optimizer.create(name, multi_precision=mp, **kw)
                w = nd.array(W0, dtype="float16" if mp else "float32").tostype(wst)
                got.append(desc(opt.create_state_multi_precision(0, w), w))
        assert got == row, name


# ----------------------------------------------------------------- sparse weights in place
def test_a_row_sparse_weight_storing_some_rows_is_updated_in_place():
    stored = nd.sparse.row_sparse_array((W0[[1, 4]], [1, 4]), shape=SHAPE, dtype="float32")
    dense = stored.tostype("default")
    opts = [mx.optimizer.create("sgd", momentum=0.9, **FULL) for _ in range(2)]
    states = [opt.create_state(0, w) for opt, w in zip(opts, (stored, dense), strict=True)]
    assert states[0].stype == "row_sparse" and states[1].stype == "default"
    for rows, vals in zip(STEP_ROWS, STEP_VALS, strict=True):
        for opt, w, st in zip(opts, (stored, dense), states, strict=True):
            opt.update(0, w, _rsp(rows, vals), st)
    assert isinstance(stored, nd.sparse.RowSparseNDArray) and stored.stype == "row_sparse"
    np.testing.assert_array_equal(stored.asnumpy(), dense.asnumpy())
    np.testing.assert_array_equal(states[0].asnumpy(), states[1].asnumpy())
    np.testing.assert_array_equal(stored.asnumpy()[UNTOUCHED], 0)


def test_a_dense_float16_weight_gets_only_its_rows_from_the_master_copy():
    opt = mx.optimizer.create("adam", multi_precision=True, **FULL)
    w = nd.array(W0, dtype="float16")
    master, (mean, var) = opt.create_state_multi_precision(0, w)
    assert master.dtype == np.float32 and mean.dtype == np.float32
    opt.update_multi_precision(0, w, _rsp([3, 8], STEP_VALS[1], "float16"), (master, (mean, var)))
    changed = np.flatnonzero((w.asnumpy() != W0.astype("float16")).any(axis=1))
    assert changed.tolist() == [3, 8]
    np.testing.assert_array_equal(w.asnumpy(), master.asnumpy().astype("float16"))


# ----------------------------------------------------------------- a large table
@pytest.mark.parametrize(
    "name,kw,wst",
    [
        ("sgd", {"momentum": 0.9, "wd": 1e-3}, "default"),
        ("sgd", {"wd": 1e-3}, "row_sparse"),
        ("adam", {"wd": 1e-3}, "default"),
        ("adam", {"wd": 1e-3}, "row_sparse"),
        ("adagrad", {}, "default"),
        ("ftrl", {"wd": 1e-3}, "row_sparse"),
    ],
)
def test_a_large_table_changes_only_the_gradients_rows(name, kw, wst):
    n, d = 200_000, 16
    rng = np.random.default_rng(1)
    w0 = rng.uniform(-1, 1, (n, d)).astype(np.float32)
    rows = np.sort(rng.choice(n, 50, replace=False))
    opt = mx.optimizer.create(name, learning_rate=0.1, **kw)
    w = nd.array(w0).tostype(wst)
    state = opt.create_state(0, w)
    for _ in range(2):
        g = _rsp(rows, rng.uniform(-1, 1, (50, d)), shape=(n, d))
        opt.update(0, w, g, state)
    got = w.asnumpy()
    others = np.ones(n, bool)
    others[rows] = False
    np.testing.assert_array_equal(got[others], w0[others])
    assert (got[rows] != w0[rows]).all()
    assert w.stype == wst
    for s in _leaves(state):
        assert s.stype == wst
        values = s.asnumpy()
        assert not values[others].any() and values[rows].any()


# ----------------------------------------------------------------- saved states
def test_sparse_states_survive_get_and_set_states():
    steps = list(zip(STEP_ROWS, STEP_VALS, strict=True))

    def make():
        return mx.optimizer.get_updater(mx.optimizer.create("adam", **FULL))

    straight, w1 = make(), nd.array(W0, dtype="float32").tostype("row_sparse")
    for rows, vals in steps:
        straight(0, _rsp(rows, vals), w1)
    first, w2 = make(), nd.array(W0, dtype="float32").tostype("row_sparse")
    for rows, vals in steps[:3]:
        first(0, _rsp(rows, vals), w2)
    blob = first.get_states(dump_optimizer=True)
    resumed = make()
    resumed.set_states(blob)
    assert [s.stype for s in resumed.states[0]] == ["row_sparse", "row_sparse"]
    for a, b in zip(resumed.states[0], first.states[0], strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    for rows, vals in steps[3:]:
        resumed(0, _rsp(rows, vals), w2)
    assert w2.stype == "row_sparse"
    np.testing.assert_array_equal(w2.asnumpy(), w1.asnumpy())
    for a, b in zip(resumed.states[0], straight.states[0], strict=True):
        assert a.stype == "row_sparse"
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ----------------------------------------------------------------- errors
def test_a_gradient_of_another_shape_is_refused():
    opt = mx.optimizer.create("sgd", momentum=0.9)
    w = nd.array(W0)
    state = opt.create_state(0, w)
    g = _rsp([1], STEP_VALS[4], shape=(11, 3))
    with pytest.raises(MXNetError, match=r"\(11, 3\).*\(10, 3\)"):
        opt.update(0, w, g, state)
    np.testing.assert_array_equal(w.asnumpy(), W0.astype(np.float32))


def test_adagrad_refuses_weight_decay_with_a_row_sparse_gradient():
    # MXNet's sparse adagrad_update takes wd=0 only
    opt = mx.optimizer.create("adagrad", wd=0.1)
    w = nd.array(W0).tostype("row_sparse")
    history = opt.create_state(0, w)
    with pytest.raises(MXNetError, match="weight decay"):
        opt.update(0, w, _rsp([1, 4, 7], STEP_VALS[0]), history)
    np.testing.assert_array_equal(w.asnumpy(), W0.astype(np.float32))
    assert not history.asnumpy().any()
    opt.update(0, w, _rsp([1, 4, 7], STEP_VALS[0]).tostype("default"), history)  # dense: fine


# ----------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_lazy_updates_on_the_gpu_match_the_cpu():
    pytest.importorskip("cupy", reason="GPU tests need CuPy and a CUDA GPU")
    if mx.context.num_gpus() == 0:
        pytest.skip("GPU tests need a CUDA GPU")
    for name, kw, _, _ in LAZY_CASES:
        for wst in ("default", "row_sparse"):
            results = []
            for ctx in (mx.cpu(0), mx.gpu(0)):
                opt = mx.optimizer.create(name, **kw)
                w = nd.array(W0, ctx=ctx, dtype="float32").tostype(wst)
                state = opt.create_state(0, w)
                for rows, vals in zip(STEP_ROWS, STEP_VALS, strict=True):
                    opt.update(0, w, _rsp(rows, vals, ctx=ctx), state)
                assert w.context == ctx and w.stype == wst
                results.append([w.asnumpy()] + [s.asnumpy() for s in _leaves(state)])
            for a, b in zip(*results, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
