"""Python optimizers on the parameter servers: what the servers do not run natively (a
registered custom optimizer, ``mx.optimizer.Test``) is pickled to them, as MXNet 1.9.1 does,
and a server started from Python runs it; the ``ps-server`` binary refuses it.

The jobs are real processes on 127.0.0.1 (``mxrs-launch local``, or a scheduler, a ``ps-server``
binary and a worker), each under a hard timeout; the optimizers live in a module the workers and
servers import (``pyopts.py`` in the job's directory, their working directory).
"""

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import mxrs as mx
import numpy as np
import pytest
from jobs import TIMEOUT, launch, node_env, start_worker
from mxnet_ref import ROOT
from mxnet_ref import run as mxnet_run
from mxrs.base import KVStoreError, MXNetError
from mxrs.kvstore.server_optimizer import ServerOptimizer, pickled
from mxrs.launcher.scheduler import start_scheduler

PYOPTS = '''
import mxrs as mx


@mx.optimizer.register
class MyMomentum(mx.optimizer.Optimizer):
    """Momentum SGD written with NDArray operations, as a user writes one."""

    def __init__(self, momentum=0.5, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = grad * self.rescale_grad + wd * weight
        state[:] = self.momentum * state - lr * g
        weight[:] += state


@mx.optimizer.register
class LazySGD(mx.optimizer.SGD):
    """MXNet's SGD under another name: not one the servers run natively."""


@mx.optimizer.register
class Failing(mx.optimizer.Test):
    """Test, whose second update of each key raises."""

    def update(self, index, weight, grad, state):
        self._update_count(index)
        if self._index_update_count[index] == 2:
            raise ValueError(f"bad gradient for {index} at update 2")
        super().update(index, weight, grad, state)


class Unpicklable(mx.optimizer.Test):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = lambda g: g
'''

# Shared by the job scripts: gradients, and the same optimizer run in a local store.
PRELUDE = """
import pickle
import numpy as np
import mxrs as mx
from mxrs.base import KVStoreError
import pyopts

SHAPES = {3: (5,), 'w': (40, 30)}  # 'w' is above the big-array bound: sliced over the servers


def grads(seed, steps=3, workers=2):
    rng = np.random.RandomState(seed)
    return [{k: [rng.normal(size=s).astype(np.float32) for _ in range(workers)]
             for k, s in SHAPES.items()} for _ in range(steps)]


def local_store(opt, keys, w0):
    local = mx.kv.create('local')
    for key, k in keys:
        local.init(key, mx.nd.array(w0[k]))
    local.set_optimizer(pickle.loads(pickle.dumps(opt)))
    return local


def pulled(store, key, shape):
    out = mx.nd.zeros(shape)
    store.pull(key, out=out)
    return out.asnumpy()
"""

ENV = ["MXNET_KVSTORE_BIGARRAY_BOUND=100", "PS_HEARTBEAT_TIMEOUT=10"]


def _job(tmp_path, script, n=2, s=2, env=(), timeout=TIMEOUT):
    (tmp_path / "pyopts.py").write_text(PYOPTS)
    return launch(
        tmp_path, PRELUDE + textwrap.dedent(script), n=n, s=s, env=[*ENV, *env], timeout=timeout
    )


def _ok(result, n=2):
    assert result.returncode == 0, result.stdout + result.stderr
    for r in range(n):
        assert f"[worker {r}] ok" in result.stdout, result.stdout + result.stderr


# ----------------------------------------------------------------- the optimizers themselves
def test_test_optimizer_matches_mxnet(tmp_path):
    w0 = np.array([1.0, -2.0, 0.5], np.float32)
    gs = np.array([[0.5, 1.0, -1.0], [2.0, 0.25, 0.0]], np.float32)
    _, ref = mxnet_run(
        tmp_path,
        """
        import mxnet as mx
        opt = mx.optimizer.create('test', rescale_grad=0.5)
        w = mx.nd.array(inputs['w0'])
        state = opt.create_state_multi_precision(0, w)
        for g in inputs['gs']:
            opt.update_multi_precision(0, w, mx.nd.array(g), state)
        arrays.update(w=w.asnumpy(), state=state.asnumpy())
        """,
        w0=w0,
        gs=gs,
    )
    opt = mx.optimizer.create("test", rescale_grad=0.5)
    assert type(opt) is mx.optimizer.Test
    w = mx.nd.array(w0)
    state = opt.create_state_multi_precision(0, w)
    assert state.dtype == np.float32 and (state.asnumpy() == 0).all()
    for g in gs:
        opt.update_multi_precision(0, w, mx.nd.array(g), state)
    np.testing.assert_array_equal(w.asnumpy(), ref["w"])
    np.testing.assert_array_equal(state.asnumpy(), ref["state"])
    assert opt.num_update == 0  # Test counts no updates, as in MXNet


def test_pickled_refuses_what_the_servers_cannot_import():
    class Local(mx.optimizer.Test):
        pass

    with pytest.raises(KVStoreError, match=r"cannot be pickled.*update_on_kvstore=False"):
        pickled(Local())
    Local.__module__ = "__main__"
    with pytest.raises(KVStoreError, match=r"__main__.*update_on_kvstore=False"):
        pickled(Local())
    name, blob = pickled(mx.optimizer.Test(rescale_grad=2.0))
    assert name == "python:mxrs.optimizer.test.Test"
    assert pickle.loads(blob).rescale_grad == 2.0


def test_a_server_optimizer_keeps_a_state_per_piece_and_saves_it():
    runner = ServerOptimizer(pickled(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))[1])
    assert runner.name == "mxrs.optimizer.sgd.SGD"
    local = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))
    w, ref = np.ones(4, np.float32), mx.nd.ones((4,))
    for g in (np.full(4, 0.5, np.float32), np.full(4, -1.0, np.float32)):
        runner.update(7, 0, w, g.copy())
        local(7, mx.nd.array(g), ref)
    np.testing.assert_allclose(w, ref.asnumpy(), rtol=1e-6)
    # Another piece of the same key has its own state and update count.
    w2 = np.ones(4, np.float32)
    runner.update(7, 4, w2, np.full(4, 0.5, np.float32))
    np.testing.assert_allclose(w2, np.full(4, 0.95, np.float32), rtol=1e-6)
    saved = runner.save_state(7, 0)
    assert runner.save_state(7, 8) is None
    again = ServerOptimizer(pickled(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))[1])
    again.load_states([(7, 0, saved)])
    w_a, w_b = w.copy(), w.copy()
    runner.update(7, 0, w_a, np.ones(4, np.float32))
    again.update(7, 0, w_b, np.ones(4, np.float32))
    np.testing.assert_array_equal(w_a, w_b)
    with pytest.raises(MXNetError, match="state of key 7 is not one"):
        again.load_states([(7, 0, b"not a pickle")])
    # learning_rate and rescale_grad change; nothing else does.
    again.set_params([("learning_rate", 0.5)], [(7, 2.0, 0.0)])
    assert again.optimizer.learning_rate == 0.5 and again.optimizer._get_lr_mult(7) == 2.0
    with pytest.raises(MXNetError, match="cannot change momentum"):
        again.set_params([("momentum", 0.5)], [])
    with pytest.raises(MXNetError, match="cannot unpickle the optimizer.*importable"):
        ServerOptimizer(b"cnowhere\nThing\n.")  # a class of a module the server lacks


def test_a_server_optimizer_reports_errors_and_row_sparse_refusals():
    class DenseOnly(mx.optimizer.Test):
        def update(self, index, weight, grad, state):
            if grad.stype != "default":
                raise TypeError("DenseOnly takes dense gradients only")
            super().update(index, weight, grad, state)

    runner = ServerOptimizer(pickle.dumps(mx.optimizer.Test(rescale_grad=0.5)))
    # A row-sparse piece: 3 rows of 2; rows 0 and 2 pushed.
    w = np.arange(6, dtype=np.float32)
    runner.update_rows(1, 0, w, 2, np.array([0, 2]), np.ones(4, np.float32))
    np.testing.assert_array_equal(w, [0.5, 1.5, 2, 3, 4.5, 5.5])
    runner.optimizer = DenseOnly()  # (a local class, which cannot be pickled: set here)
    with pytest.raises(MXNetError, match=r"raised TypeError: DenseOnly takes dense.*row_sparse"):
        runner.update_rows(1, 0, w, 2, np.array([1]), np.ones(2, np.float32))
    w = np.zeros(2, np.float32)
    runner.update(2, 0, w, np.ones(2, np.float32))  # dense gradients work
    np.testing.assert_array_equal(w, [1, 1])


# ----------------------------------------------------------------- on the servers
SYNC = """
kv = mx.kv.create(STORE)
r = kv.rank
rng = np.random.RandomState(0)
w0 = {k: rng.normal(size=s).astype(np.float32) for k, s in SHAPES.items()}
steps = grads(1)
momentum = pyopts.MyMomentum(momentum=0.9, learning_rate=0.1, wd=0.01, rescale_grad=0.5)
momentum.set_lr_mult({'MyMomentum3': 0.5})
for opt in [momentum, mx.optimizer.Test(rescale_grad=0.5)]:
    keys = [(type(opt).__name__ + str(k), k) for k in SHAPES]
    for key, k in keys:
        kv.init(key, mx.nd.array(w0[k]))
    kv.set_optimizer(opt)
    local = local_store(opt, keys, w0)
    for step in steps:
        for key, k in keys:
            kv.push(key, mx.nd.array(step[k][r]))
            local.push(key, [mx.nd.array(g) for g in step[k]])
    for key, k in keys:
        got, want = pulled(kv, key, SHAPES[k]), pulled(local, key, SHAPES[k])
        assert not np.allclose(got, w0[k]), key
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=key)

# A row_sparse key: a registered subclass of SGD updates lazily on the servers too.
shape, ids = (30, 4), [[[1, 5, 17], [5, 29]], [[0, 2], [2, 3, 28]]]
def rsp(rows, seed):
    vals = np.random.RandomState(seed).normal(size=(len(rows), 4)).astype(np.float32)
    return mx.nd.sparse.row_sparse_array((vals, rows), shape=shape)
opt = pyopts.LazySGD(momentum=0.9, learning_rate=0.1, wd=0.01)
start = w0['w'][:30, :4].copy()
kv.init('emb', mx.nd.array(start).tostype('row_sparse'))
kv.set_optimizer(opt)
local = mx.kv.create('local')
local.init('emb', mx.nd.array(start).tostype('row_sparse'))
local.set_optimizer(pickle.loads(pickle.dumps(opt)))
for step, rows in enumerate(ids):
    kv.push('emb', rsp(rows[r], 10 * step + r))
    local.push('emb', [rsp(rows[0], 10 * step), rsp(rows[1], 10 * step + 1)])
outs = []
for store in (kv, local):
    out = mx.nd.sparse.zeros('row_sparse', shape)
    store.row_sparse_pull('emb', out=out, row_ids=mx.nd.arange(30))
    outs.append(out.asnumpy())
np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-6)
np.testing.assert_array_equal(outs[0][[4, 6]], start[[4, 6]])  # rows never pushed
kv.barrier()
print('ok', r, flush=True)
"""


@pytest.mark.parametrize("store", ["dist_sync", "dist_device_sync"])
def test_pickled_optimizers_on_dist_sync_match_local(tmp_path, store):
    # mxrs-launch's default: with two servers each keeps a backup of the other's keys.
    _ok(_job(tmp_path, f"STORE = {store!r}\n" + SYNC))


ASYNC = """
kv = mx.kv.create('dist_async')
r = kv.rank
rng = np.random.RandomState(0)
w0 = {k: rng.normal(size=s).astype(np.float32) for k, s in SHAPES.items()}
steps = grads(2)
# Each push is applied alone, in whatever order they come: rules whose result does not
# depend on the order.
for opt in [mx.optimizer.Test(rescale_grad=0.5), pyopts.LazySGD(learning_rate=0.1)]:
    keys = [(type(opt).__name__ + str(k), k) for k in SHAPES]
    for key, k in keys:
        kv.init(key, mx.nd.array(w0[k]))
    kv.set_optimizer(opt)
    local = local_store(opt, keys, w0)
    for step in steps:
        for key, k in keys:
            kv.push(key, mx.nd.array(step[k][r]))
            for g in step[k]:
                local.push(key, mx.nd.array(g))
    mx.nd.waitall()
    kv.barrier()  # every push of both workers applied
    for key, k in keys:
        got, want = pulled(kv, key, SHAPES[k]), pulled(local, key, SHAPES[k])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=key)
    kv.barrier()
print('ok', r, flush=True)
"""


def test_pickled_optimizers_on_dist_async_match_local(tmp_path):
    _ok(_job(tmp_path, ASYNC))


FAILING = """
kv = mx.kv.create('dist_sync')
r = kv.rank
for bad in [pyopts.Unpicklable()]:
    try:
        kv.set_optimizer(bad)
        raise SystemExit('an unpicklable optimizer was accepted')
    except KVStoreError as e:
        assert 'cannot be pickled' in str(e) and 'update_on_kvstore=False' in str(e), e
kv.init(3, mx.nd.zeros((4,)))
kv.init('w', mx.nd.zeros((200,)))  # sliced: each server's copy of the optimizer fails
kv.set_optimizer(pyopts.Failing())
errors = []
for step in range(3):
    # The failed round's error reaches this worker once: at waitall, or at the pull's call
    # when the push that completed the round was this worker's and its answer came first.
    try:
        kv.push([3, 'w'], [mx.nd.ones((4,)) * (step + 1), mx.nd.ones((200,)) * (step + 1)])
        out = [mx.nd.zeros((4,)), mx.nd.zeros((200,))]
        kv.pull([3, 'w'], out=out)
        mx.nd.waitall()
    except KVStoreError as e:
        errors.append((step, str(e)))
assert [s for s, _ in errors] == [1], errors
assert 'Failing.update_multi_precision raised ValueError: bad gradient for' in errors[0][1], errors
assert 'at update 2' in errors[0][1], errors
# The servers went on: rounds 1 and 3 were applied (each the sum of both workers' pushes).
for key, n in [(3, 4), ('w', 200)]:
    np.testing.assert_array_equal(pulled(kv, key, (n,)), np.full(n, 2.0 + 6.0))
# And they take another optimizer.
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
kv.push(3, mx.nd.ones((4,)))
np.testing.assert_array_equal(pulled(kv, 3, (4,)), np.full(4, 6.0))
kv.barrier()
print('ok', r, flush=True)
"""


def test_an_exception_in_the_optimizer_reaches_the_workers_and_the_servers_go_on(tmp_path):
    result = _job(tmp_path, FAILING)
    _ok(result)
    # The server printed where the exception came from.
    assert "bad gradient for" in result.stdout + result.stderr


SAVE = """
kv = mx.kv.create('dist_sync')
r = kv.rank
rng = np.random.RandomState(0)
w0 = {k: rng.normal(size=s).astype(np.float32) for k, s in SHAPES.items()}
steps = grads(3)
opt = pyopts.MyMomentum(momentum=0.9, learning_rate=0.1, rescale_grad=0.5)
keys = [(f's{k}', k) for k in SHAPES]
local = local_store(opt, keys, w0)
for step in steps:
    for key, k in keys:
        local.push(key, [mx.nd.array(g) for g in step[k]])
if PHASE == 'save':
    for key, k in keys:
        kv.init(key, mx.nd.array(w0[k]))
    kv.set_optimizer(opt)
    for step in steps[:2]:
        for key, k in keys:
            kv.push(key, mx.nd.array(step[k][r]))
    if r == 0:
        kv.save_optimizer_states('states.bin')
        np.savez('weights.npz', **{str(k): pulled(kv, key, SHAPES[k]) for key, k in keys})
else:
    saved = np.load('weights.npz')
    for key, k in keys:
        kv.init(key, mx.nd.array(saved[str(k)]))
    kv.set_optimizer(opt)
    if r == 0:
        kv.load_optimizer_states('states.bin')
    kv.barrier()
    for key, k in keys:
        kv.push(key, mx.nd.array(steps[2][k][r]))
    for key, k in keys:
        got, want = pulled(kv, key, SHAPES[k]), pulled(local, key, SHAPES[k])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(key))
kv.barrier()
print('ok', r, flush=True)
"""


def test_optimizer_states_are_saved_and_loaded(tmp_path):
    # Two steps and a save in one job; the third step after a load in another: the momentum
    # (and the update counts) carry over, so the weights are those of three steps in one go.
    _ok(_job(tmp_path, "PHASE = 'save'\n" + SAVE))
    assert (tmp_path / "states.bin").stat().st_size > 0
    _ok(_job(tmp_path, "PHASE = 'load'\n" + SAVE))


# ----------------------------------------------------------------- the ps-server binary
PS_SERVERS = [ROOT / "target" / build / "ps-server" for build in ("release", "debug")]

BINARY = """
import numpy as np
import mxrs as mx
from mxrs.base import KVStoreError
kv = mx.kv.create('dist_sync')
kv.init(0, mx.nd.zeros((3,)))
try:
    kv.set_optimizer(mx.optimizer.Test())
    raise SystemExit('the ps-server binary accepted a Python optimizer')
except KVStoreError as e:
    print('refused:', e, flush=True)
# The server goes on serving, with an optimizer it runs natively.
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
kv.push(0, mx.nd.ones((3,)))
out = mx.nd.zeros((3,))
kv.pull(0, out=out)
np.testing.assert_array_equal(out.asnumpy(), [-1, -1, -1])
print('ok', flush=True)
"""


def _one_server_job(server_cmd, script):
    """Run ``script`` as the one worker of a job whose one server runs ``server_cmd``; returns
    the worker's output and the server's exit status and stderr."""
    env = dict(PS_HEARTBEAT_TIMEOUT=10)
    scheduler, port = start_scheduler(
        [sys.executable, "-c", "import mxrs"], node_env("scheduler", 0, 1, 1, **env)
    )
    procs = [scheduler]
    try:
        server = subprocess.Popen(
            server_cmd,
            env=node_env("server", port, 1, 1, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(server)
        worker = start_worker(port, script, workers=1, servers=1, **env)
        procs.append(worker)
        out, err = worker.communicate(timeout=TIMEOUT)
        assert worker.returncode == 0, out + err
        # The job ended: the server leaves.
        _, server_err = server.communicate(timeout=TIMEOUT)
        return out, server.returncode, server_err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def _ps_server_binary():
    """The Rust ``ps-server`` binary of this checkout: the newest of the release and debug
    builds (test.sh's ``cargo test`` makes the debug one), else built now."""
    built = [p for p in PS_SERVERS if p.exists()]
    if not built:
        subprocess.run(
            ["cargo", "build", "-p", "ps-core", "--bin", "ps-server"],
            cwd=ROOT, check=True, timeout=1800,
        )  # fmt: skip
        built = [p for p in PS_SERVERS if p.exists()]
    assert built, f"cargo built no ps-server at {PS_SERVERS}"
    return max(built, key=lambda p: p.stat().st_mtime)


def test_the_ps_server_binary_refuses_python_optimizers_and_goes_on():
    out, status, server_err = _one_server_job([str(_ps_server_binary())], BINARY)
    refused = next(line for line in out.splitlines() if line.startswith("refused:"))
    for part in (
        "Python optimizer mxrs.optimizer.test.Test cannot run on this parameter server",
        "without Python (the ps-server binary)",
        'DMLC_ROLE=server python -c "import mxrs"',
        "update_on_kvstore=False",
    ):
        assert part in refused, refused
    assert "ok" in out.splitlines()
    assert status == 0, server_err


CONSOLE = """
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_sync')
kv.init(0, mx.nd.zeros((3,)))
kv.set_optimizer(mx.optimizer.Test(rescale_grad=0.5))
kv.push(0, mx.nd.ones((3,)))
out = mx.nd.zeros((3,))
kv.pull(0, out=out)
np.testing.assert_array_equal(out.asnumpy(), [0.5, 0.5, 0.5])
print('ok', flush=True)
"""


def test_the_ps_server_console_script_runs_python_optimizers():
    script = Path(sys.executable).with_name("ps-server")
    assert script.exists(), f"the console script {script} is not installed (pip install .)"
    out, status, server_err = _one_server_job([str(script)], CONSOLE)
    assert "ok" in out.splitlines()
    assert status == 0, server_err
