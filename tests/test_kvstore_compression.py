"""Gradient compression: MXNet 1.9.1's 2bit with its numbers (dist_sync jobs and the 'device'
store run side by side with MXNet), fp16 and bf16, the wire bytes the servers count, and the
errors of bad parameters and stores that cannot compress."""

import json
import sys
from pathlib import Path

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from jobs import launch
from mxrs.base import KVStoreError, MXNetError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import _jobs  # noqa: E402  (bench/ is not a package)

T = 0.5
ROUNDS = 4
#: key -> elements: a small key on one server and one above the bound of 1000, sliced over two
#: servers (mxrs cuts it at element 1250, MXNet at 1264: the values must not depend on it).
SIZES = {3: 37, 9: 2500}


def _gradients(rng, n):
    """Normal values with elements exactly at, and one float32 step either side of, +-T, and
    halves of T that add up to exactly T over two rounds."""
    g = rng.normal(0.0, 0.4, n).astype(np.float32)
    t = np.float32(T)
    specials = [t, -t, np.nextafter(t, 0), np.nextafter(t, 1), -np.nextafter(t, 0), t / 2]
    idx = rng.choice(n, size=min(n, 6 * 4), replace=False)
    g[idx] = np.resize(np.array(specials, np.float32), idx.size)
    return g


def _inputs(seed=7):
    rng = np.random.default_rng(seed)
    data = {"threshold": np.float64(T), "rounds": np.int64(ROUNDS)}
    for k, n in SIZES.items():
        for phase in (0, 1):
            key = k + phase
            data[f"init{key}"] = rng.normal(0, 1, n).astype(np.float32)
            for rank in range(2):
                for i in range(ROUNDS):
                    data[f"g{rank}_{i}_{key}"] = _gradients(rng, n)
    return data


# Runs under either library (BENCH_LIB), as a worker of a dist_sync job of 2 workers and 2
# servers: phase 0 pushes keys 3 and 9 with no optimizer on the servers, phase 1 keys 4 and 10
# with SGD (momentum) there; every round's pulled values are saved.
WORKER = """
import importlib, json, os, sys
import numpy as np
mx = importlib.import_module(os.environ["BENCH_LIB"])
data = dict(np.load(sys.argv[1]))
kv = mx.kv.create("dist_sync")
r = kv.rank
kv.set_gradient_compression({"type": "2bit", "threshold": float(data["threshold"])})
pulled = {}
for phase, keys in ((0, [3, 9]), (1, [4, 10])):
    kv.init(keys, [mx.nd.array(data[f"init{k}"]) for k in keys])
    if phase == 1:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01,
                                          rescale_grad=0.5))
    for i in range(int(data["rounds"])):
        kv.push(keys, [mx.nd.array(data[f"g{r}_{i}_{k}"]) for k in keys])
        outs = [mx.nd.zeros(data[f"init{k}"].shape) for k in keys]
        kv.pull(keys, out=outs)
        for k, o in zip(keys, outs):
            pulled[f"{i}_{k}"] = o.asnumpy()
np.savez(os.path.join(sys.argv[2], f"rank{r}.npz"), **pulled)
print(json.dumps({"rank": r}), flush=True)
"""


def _run_dist(lib, tmp_path, data):
    inp, out = tmp_path / "grads.npz", tmp_path / lib
    out.mkdir()
    np.savez(inp, **data)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    done = _jobs.run_job(
        lib,
        2,
        2,
        [str(script), str(inp), str(out)],
        timeout=120,
        extra_env={"MXNET_KVSTORE_BIGARRAY_BOUND": "1000", "PS_HEARTBEAT_TIMEOUT": "20"},
    )
    assert sorted(d["rank"] for d in done) == [0, 1]
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(2)]


def _quantize(residual, g):
    """The 2bit recurrence in float32 (updates ``residual``); returns what is sent."""
    t = np.float32(T)
    v = residual + g
    sent = np.where(v >= t, t, np.where(v <= -t, -t, np.float32(0))).astype(np.float32)
    residual[...] = np.where(v >= t, v - t, np.where(v <= -t, v + t, v))
    return sent


def test_dist_sync_2bit_pulls_what_mxnet_pulls_with_and_without_an_optimizer(tmp_path):
    data = _inputs()
    ours = _run_dist("mxrs", tmp_path, data)
    theirs = _run_dist("mxnet", tmp_path, data)
    residuals = {(r, k): np.zeros(n, np.float32) for r in range(2) for k, n in SIZES.items()}
    for i in range(ROUNDS):
        for k in SIZES:
            # No optimizer: the servers store the sum of what the workers' residuals sent.
            want = sum(_quantize(residuals[r, k], data[f"g{r}_{i}_{k}"]) for r in range(2))
            for r in range(2):
                np.testing.assert_array_equal(ours[r][f"{i}_{k}"], want)
                np.testing.assert_array_equal(theirs[r][f"{i}_{k}"], want)
            # SGD with momentum on the servers: the very numbers MXNet's servers compute.
            for r in range(2):
                np.testing.assert_array_equal(ours[r][f"{i}_{k + 1}"], theirs[r][f"{i}_{k + 1}"])
    assert not np.array_equal(ours[0][f"0_{10}"], data["init10"])


DEVICE_SYNC = """
import importlib, os, json
mx = importlib.import_module(os.environ["BENCH_LIB"])
kv = mx.kv.create('dist_device_sync')
kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
kv.init(0, mx.nd.zeros((4,)))
kv.push(0, [mx.nd.array([0.3, 0.3, 0.6, -0.3], ctx=mx.cpu(0)),
            mx.nd.array([0.3, 0.1, 0.0, -0.3], ctx=mx.cpu(1))])
out = mx.nd.zeros((4,))
kv.pull(0, out=out)
print(json.dumps({"pulled": out.asnumpy().tolist()}), flush=True)
"""


def test_dist_device_sync_sums_the_devices_then_compresses_as_mxnet_does(tmp_path):
    # Quantizing each device's value first would send [0, 0, 0.5, 0].
    script = tmp_path / "worker.py"
    script.write_text(DEVICE_SYNC)
    for lib in _jobs.LIBS:
        (done,) = _jobs.run_job(lib, 1, 1, [str(script)], timeout=120)
        assert done["pulled"] == [0.5, 0.0, 0.5, -0.5], lib


DEVICE = """
ctxs = [mx.cpu(0), mx.cpu(1)]
plain = mx.kv.create('device')
plain.init([3, 9], [mx.nd.array(inputs['init3']), mx.nd.array(inputs['init9'])])
sgd = mx.kv.create('device')
sgd.init(3, mx.nd.array(inputs['init4']))
sgd.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
for kv in (plain, sgd):
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
for i in range(4):
    for kv, k, name in ((plain, 3, '3'), (plain, 9, '9'), (sgd, 3, 'sgd')):
        kv.push(k, [mx.nd.array(inputs[f'g{r}_{i}_{k}'], ctx=c) for r, c in enumerate(ctxs)])
        outs = [mx.nd.zeros(inputs[f'init{k}'].shape, ctx=c) for c in ctxs]
        kv.pull(k, out=outs)
        arrays[f'{i}_{name}'] = outs[1].asnumpy()
"""


def test_device_store_2bit_on_two_cpu_contexts_matches_mxnet(tmp_path):
    data = _inputs()
    # MXNet's device store compresses on CPU contexts too: each device's gradient is quantized
    # with its own residual and dequantized before the merge. One store has no updater (stored
    # = merged), the other runs SGD with momentum.
    _, theirs = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + DEVICE, **data)
    ours = {}
    scope = {"mx": mx, "inputs": data, "arrays": ours}
    exec(DEVICE, scope)
    residuals = {(r, k): np.zeros(SIZES[k], np.float32) for r in range(2) for k in SIZES}
    for i in range(ROUNDS):
        for k in SIZES:
            want = sum(_quantize(residuals[r, k], data[f"g{r}_{i}_{k}"]) for r in range(2))
            np.testing.assert_array_equal(ours[f"{i}_{k}"], want)
            np.testing.assert_array_equal(theirs[f"{i}_{k}"], want)
        np.testing.assert_array_equal(ours[f"{i}_sgd"], theirs[f"{i}_sgd"])


def _bf16(x):
    """float32 -> bfloat16 -> float32, rounding to nearest even (finite values)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def test_device_store_sixteen_bit_rounds_each_device_before_the_sum():
    kv = mx.kv.create("device")
    kv.init("w", mx.nd.zeros((6,)))
    g = [
        np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 0.1, -7.3], np.float32),
        np.array([0.3, 1e-8, 2**-9, 65504.0, 1 / 3, 2.5], np.float32),
    ]
    for kind, rounded in (
        ("fp16", lambda a: a.astype(np.float16).astype(np.float32)),
        ("bf16", _bf16),
    ):
        kv.set_gradient_compression({"type": kind})
        kv.push("w", [mx.nd.array(a, ctx=mx.cpu(i)) for i, a in enumerate(g)])
        out = mx.nd.zeros((6,))
        kv.pull("w", out=out)
        np.testing.assert_array_equal(out.asnumpy(), rounded(g[0]) + rounded(g[1]))
        assert out.dtype == np.float32


# One mxrs job: the same pushes with no compression, fp16, bf16 and 2bit (threshold 0.01, so
# most values are sent); the servers count the bytes.
STATS = """
import json
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_sync')
r = kv.rank
n = 50_000
rng = np.random.default_rng(r)
g = rng.normal(0, 1, n).astype(np.float32)
half = lambda a: a.astype(np.float16).astype(np.float32)
rows = []
for i, kind in enumerate(['none', 'fp16', 'bf16', '2bit']):
    if kind != 'none':
        kv.set_gradient_compression({'type': kind, 'threshold': 0.01} if kind == '2bit'
                                    else {'type': kind})
    kv.init(i, mx.nd.zeros((n,)))
    before = kv._server_stats()
    kv.barrier()  # nobody pushes before every worker has read the counters
    out = mx.nd.zeros((n,))
    kv.pushpull(i, mx.nd.array(g), out=out)
    got = out.asnumpy()
    if kind == 'fp16':  # a pull of the sum travels in float16 too
        plain = mx.nd.zeros((n,))
        kv.pull(i, out=plain)
        np.testing.assert_array_equal(plain.asnumpy(), got)
    kv.barrier()
    after = kv._server_stats()
    assert len(after) == 2
    sent = sum(a['payload_bytes'] - b['payload_bytes'] for a, b in zip(after, before))
    frames = sum(a['frame_bytes'] - b['frame_bytes'] for a, b in zip(after, before))
    entries = sum(a['entries'] - b['entries'] for a, b in zip(after, before))
    pulled = sum(a['pulled_bytes'] - b['pulled_bytes'] for a, b in zip(after, before))
    both = [np.random.default_rng(w).normal(0, 1, n).astype(np.float32) for w in range(2)]
    if kind == 'fp16':
        # the sum of the rounded pushes, rounded again to travel back in float16
        np.testing.assert_array_equal(got, half(half(both[0]) + half(both[1])))
    elif kind == 'none':
        np.testing.assert_array_equal(got, both[0] + both[1])
    elif kind == '2bit':
        q = lambda a: np.where(a >= 0.01, 0.01, np.where(a <= -0.01, -0.01, 0)).astype(np.float32)
        np.testing.assert_array_equal(got, q(both[0]) + q(both[1]))
    rows.append((kind, sent, frames, entries, pulled))
kv.init('f64', mx.nd.zeros((3,), dtype='float64'))
try:
    kv.push('f64', mx.nd.ones((3,), dtype='float64'))
    raise SystemExit('a float64 push was compressed')
except mx.base.KVStoreError as e:
    assert "2bit applies to float32 values; key 'f64' holds float64" in str(e), e
print('stats', r, json.dumps(rows), flush=True)
"""


def test_servers_count_the_wire_bytes_halved_by_16_bits_and_a_sixteenth_by_2bit(tmp_path):
    result = launch(tmp_path, STATS, env=["MXNET_KVSTORE_BIGARRAY_BOUND=20000"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    line = next(ln for ln in result.stdout.splitlines() if "stats 0" in ln)
    rows = {kind: tuple(rest) for kind, *rest in json.loads(line[line.index(" [[") + 1 :])}
    n, workers = 50_000, 2
    # The key is sliced over both servers (25,000 elements each, one piece each).
    assert {entries for _, _, entries, _ in rows.values()} == {2 * workers}
    # Each worker's pushpull pulls the sum back: in float32, or in 16 bits under fp16 and bf16
    # (2bit pulls stay plain).
    assert rows["none"][3] == rows["2bit"][3] == workers * n * 4
    assert rows["bf16"][3] == workers * n * 2
    assert rows["fp16"][3] == workers * n * 2 * 2  # the pushpull and a pull
    assert rows["none"][0] == workers * n * 4
    assert rows["fp16"][0] == rows["bf16"][0] == workers * n * 2
    # 2bit: 4 bytes of threshold per piece and 4 bytes per 16 elements.
    assert rows["2bit"][0] == workers * 2 * (4 + 4 * -(-25_000 // 16))
    assert rows["2bit"][0] / rows["none"][0] == pytest.approx(1 / 16, rel=1e-3)
    for kind in ("fp16", "bf16", "2bit"):
        # Whole frames: the same headers around the smaller payloads.
        overhead = rows["none"][1] - rows["none"][0]
        assert rows[kind][1] - rows[kind][0] == overhead, kind


ASYNC = """
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_async')
kv.init(0, mx.nd.zeros((4,)))
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
for _ in range(3):
    kv.push(0, mx.nd.array([0.3, -0.7, 0.1, 2.0]))
mx.nd.waitall()
kv.barrier()
out = mx.nd.zeros((4,))
kv.pull(0, out=out)
# Each worker sends 0/+0.5, -0.5 x3, 0 x3, +0.5 x3 (its residual keeps the rest); the servers
# apply every push as it comes.
np.testing.assert_array_equal(out.asnumpy(), [-1.0, 3.0, 0.0, -3.0])
kv.barrier()
print('ok', kv.rank, flush=True)
"""


def test_dist_async_applies_each_decoded_push(tmp_path):
    result = launch(tmp_path, ASYNC)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.count("ok") == 2, result.stdout


# ----------------------------------------------------------------- errors and API rules
@pytest.mark.parametrize(
    "params, match",
    [
        ({"type": "1bit"}, "unknown compression type '1bit'"),
        ({"type": "none"}, "unknown compression type 'none'"),
        ({"threshold": 0.5}, "'type' key is required"),
        ({}, "'type' key is required"),
        ({"type": "2bit", "threshold": 0}, "threshold must be greater than 0"),
        ({"type": "2bit", "threshold": -1.0}, "threshold must be greater than 0"),
        ({"type": "2bit", "threshold": float("nan")}, "threshold must be greater than 0"),
        ({"type": "2bit", "threshold": 1e-50}, r"finite \(as a float32\), got 1e-50"),
        ({"type": "2bit", "threshold": "abc"}, "threshold must be a number, got 'abc'"),
        ({"type": "2bit", "threshold": True}, "threshold must be a number"),
        ({"type": "2bit", "foo": 1}, r"unexpected key\(s\) 'foo' for type '2bit'"),
        (
            {"type": "fp16", "threshold": 0.5},
            r"'threshold' for type 'fp16' \(it takes only 'pull_weights' besides 'type'\)",
        ),
        ("2bit", "must be a dict"),
    ],
)
def test_bad_parameters_are_refused_naming_what_is_wrong(params, match):
    kv = mx.kv.create("device")
    with pytest.raises(KVStoreError, match=match):
        kv.set_gradient_compression(params)


def test_local_stores_refuse_compression_device_stores_take_it_after_init_too():
    with pytest.raises(KVStoreError, match="not supported for a 'local' KVStore"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    # MXNet 1.9.1 allows setting it after init (both 'device' and dist stores); so do we.
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros((4,)))
    kv.set_gradient_compression({"type": "2bit", "threshold": "0.25"})  # a str, as MXNet takes
    kv.push(0, mx.nd.array([0.3, -0.2, 0.25, -0.26]))
    out = mx.nd.zeros((4,))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [0.25, 0, 0.25, -0.25])
    kv.init(1, mx.nd.zeros((2,), dtype="float64"))
    with pytest.raises(KVStoreError, match="applies to float32 values; key 1 got float64"):
        kv.push(1, mx.nd.ones((2,), dtype="float64"))


def test_trainer_sets_compression_on_the_store_it_creates():
    from mxrs import autograd, gluon

    def step(**kw):
        net = gluon.nn.Dense(1, use_bias=False, in_units=3)
        ctx = [mx.cpu(0), mx.cpu(1)]
        net.initialize(mx.init.Zero(), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0}, **kw)
        x = mx.nd.array([[0.2, 0.6, -0.7]])
        with autograd.record():
            losses = [net(x.as_in_context(c)).sum() for c in ctx]
        autograd.backward(losses)
        trainer.step(1)
        return net.weight.data(mx.cpu(0)).asnumpy()

    # Each device's gradient [0.2, 0.6, -0.7] goes through 2bit (threshold 0.5) first.
    comp = {"type": "2bit", "threshold": 0.5}
    np.testing.assert_array_equal(step(kvstore="device", compression_params=comp), [[0, -1, 1]])
    np.testing.assert_allclose(step(kvstore="device"), [[-0.4, -1.2, 1.4]], rtol=1e-6)
    with pytest.raises(KVStoreError, match="'local' KVStore"):
        step(kvstore="local", compression_params=comp)
    with pytest.raises(MXNetError, match="unknown compression type 'nope'"):
        step(kvstore="device", compression_params={"type": "nope"})


def test_the_native_codec_refuses_what_it_cannot_encode():
    from mxrs import _native

    g = np.array([0.7, -0.2, 0.5], np.float32)
    r = np.zeros(3, np.float32)
    np.testing.assert_array_equal(_native.compress_roundtrip("2bit", 0.5, g, r), [0.5, 0, 0.5])
    np.testing.assert_array_equal(r, np.array([0.7, -0.2, 0.5], np.float32) - [0.5, 0, 0.5])
    cases = [
        (("2bit", 0.5, g.astype(np.float64), r), "applies to float32 values, not float64"),
        (("2bit", 0.5, g), "2bit compression needs a residual"),
        (("2bit", 0.5, g, np.zeros(4, np.float32)), "a residual of 4 elements for a gradient of 3"),
        (("2bit", 0.0, g, r), "threshold must be finite and greater than 0"),
        (("4bit", 0.5, g, r), "unknown gradient compression type '4bit'"),
        (("fp16", 0.5, g[::2].copy()[::-1]), "C-contiguous"),
    ]
    for args, match in cases:
        with pytest.raises(KVStoreError, match=match):
            _native.compress_roundtrip(*args)


# Weights (an optimizer on the servers) come back float32 under fp16, unless pull_weights asks
# for them in 16 bits; the servers keep float32 weights either way.
WEIGHTS = """
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_sync')
n = 1000
w0 = np.linspace(-1, 1, n, dtype=np.float32) / 3
kv.init(['w', 'v'], [mx.nd.array(w0), mx.nd.array(w0)])
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
half = lambda a: a.astype(np.float16).astype(np.float32)
g = np.full(n, 0.125, np.float32)
want = w0 - np.float32(0.1) * (g + g)  # the float32 weights after one step
for key, extra in (('w', {}), ('v', {'pull_weights': True})):
    kv.set_gradient_compression({'type': 'fp16', **extra})
    out = mx.nd.zeros((n,))
    kv.pushpull(key, mx.nd.array(g), out=out)
    got = out.asnumpy()
    if extra:
        np.testing.assert_array_equal(got, half(want))
        assert (got != want).any()
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert (got != half(got)).any()  # not rounded to float16
kv.set_gradient_compression({'type': 'fp16'})  # pull_weights off again: float32
out = mx.nd.zeros((n,))
kv.pull('v', out=out)
np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
print('ok', kv.rank, flush=True)
"""


def test_fp16_pulls_weights_in_float32_unless_asked(tmp_path):
    result = launch(tmp_path, WEIGHTS, s=1)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for r in range(2):
        assert f"[worker {r}] ok {r}" in result.stdout


def test_pull_weights_must_be_a_bool():
    from mxrs.kvstore.compression import compression_spec

    with pytest.raises(KVStoreError, match="pull_weights must be True or False, got 'yes'"):
        compression_spec({"type": "fp16", "pull_weights": "yes"})
    with pytest.raises(KVStoreError, match="unexpected key"):
        compression_spec({"type": "2bit", "pull_weights": True})
