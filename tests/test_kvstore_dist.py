"""The distributed KVStores with real scheduler, server and worker processes on 127.0.0.1."""

import pytest
from jobs import TIMEOUT, launch, scheduler_and_servers, start_worker

BOUND = ["MXNET_KVSTORE_BIGARRAY_BOUND=1000", "PS_HEARTBEAT_TIMEOUT=5"]


def _ok(result, n=2):
    assert result.returncode == 0, result.stdout + result.stderr
    for r in range(n):
        assert f"[worker {r}] ok" in result.stdout, result.stdout + result.stderr


SUMS = """
import numpy as np
import mxrs as mx
from mxrs.base import ShapeMismatchError

kv = mx.kv.create('dist')
r, n = kv.rank, kv.num_workers
assert (kv.type, n, kv.num_servers) == ('dist_sync', 2, 2), (kv.type, n)
big = np.arange(2500, dtype=np.float32)
kv.init(['small', 7, 'big', 'half'],
        [mx.nd.full((3, 4), 5.0 + r), mx.nd.zeros((5,)), mx.nd.array(big * (r + 1)),
         mx.nd.zeros((4,), dtype='float16')])
out = mx.nd.zeros((3, 4))
kv.pull('small', out=out)
assert (out.asnumpy() == 5).all(), out  # rank 0's value wins
# Per-device values are summed on the worker, then over the workers.
kv.push('small', [mx.nd.ones((3, 4), ctx=mx.cpu(0)) * 10 * (r + 1),
                  mx.nd.ones((3, 4), ctx=mx.cpu(1))])
kv.pull('small', out=[out, mx.nd.zeros((3, 4), ctx=mx.cpu(1))])
assert (out.asnumpy() == 32).all(), out
# Above the big-array bound the key is sliced over both servers.
b = mx.nd.zeros((2500,), ctx=mx.cpu(1))
kv.pushpull('big', mx.nd.array(big * (r + 1)), out=b)
assert b.context == mx.cpu(1)
np.testing.assert_array_equal(b.asnumpy(), big * 3)
h = mx.nd.array([0.5, 1.5, 2.5, 3.5], dtype='float16') * (r + 1)
kv.pushpull('half', h)
assert h.dtype == np.float16
np.testing.assert_array_equal(h.asnumpy(), np.array([1.5, 4.5, 7.5, 10.5], np.float16))
v = mx.nd.ones((5,)) * r
kv.pushpull(7, v)
assert (v.asnumpy() == 1).all(), v
# A push of the wrong shape is refused on this worker; the job carries on.
try:
    kv.push('small', mx.nd.ones((4, 3)))
    raise SystemExit('a wrong shape was accepted')
except ShapeMismatchError as e:
    assert "'small'" in str(e) and '(3, 4)' in str(e) and '(4, 3)' in str(e), e
kv.pushpull(7, v)
assert (v.asnumpy() == 2).all(), v
kv.barrier()
print('ok', r, flush=True)
"""


def test_dist_sync_sums_pushes_over_devices_workers_and_servers(tmp_path):
    _ok(launch(tmp_path, SUMS, env=BOUND))


SGD = """
import numpy as np
import mxrs as mx

kv = mx.kv.create('dist_device_sync')
r = kv.rank
kv.init(0, mx.nd.ones((4,)))
opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5)
kv.set_optimizer(opt)
w, mom, g = np.ones(4, np.float32), np.zeros(4, np.float32), np.arange(1, 5, dtype=np.float32)
out = mx.nd.zeros((4,))


def step(lr):
    global w, mom
    kv.pushpull(0, mx.nd.array(g * (r + 1)), out=out)
    mom = 0.9 * mom - lr * (0.5 * 3 * g + 0.01 * w)
    w = w + mom
    np.testing.assert_allclose(out.asnumpy(), w, rtol=1e-6)


step(0.1)
step(0.1)
kv.set_optimizer_params(learning_rate=0.05)
step(0.05)
if r == 0:
    kv.save_optimizer_states('states.bin')
kv.barrier()
saved_w, saved_mom = w.copy(), mom.copy()
step(0.05)
kv.load_optimizer_states('states.bin')  # momentum back to what it was after step 3
kv.barrier()
w, mom = out.asnumpy(), saved_mom
step(0.05)
print('ok', r, flush=True)
"""


def test_servers_apply_sgd_with_momentum_like_the_formula(tmp_path):
    _ok(launch(tmp_path, SGD))


ASYNC = """
import numpy as np
import mxrs as mx
from mxrs.base import KVStoreError

kv = mx.kv.create('dist_async')
r = kv.rank
kv.init('w', mx.nd.zeros((3,)))
g = mx.nd.ones((3,)) * (r + 1)
kv.push('w', g)
try:
    mx.nd.waitall()
    raise SystemExit('a push before set_optimizer was accepted')
except KVStoreError as e:
    assert 'optimizer' in str(e), e
kv.barrier()  # every worker's early push was refused before the optimizer arrives
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
for _ in range(5):
    kv.push('w', g)
mx.nd.waitall()
kv.barrier()
out = mx.nd.zeros((3,))
kv.pull('w', out=out)
np.testing.assert_array_equal(out.asnumpy(), [-15, -15, -15])
kv.barrier()
print('ok', r, flush=True)
"""


def test_dist_async_applies_every_push(tmp_path):
    _ok(launch(tmp_path, ASYNC))


def test_optimizers_the_servers_do_not_run_natively_are_sent_pickled(tmp_path):
    # FTRL has no native server rule: the servers run the pickled Python optimizer.
    script = """
    import numpy as np
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    kv.init(0, mx.nd.ones((3,)))
    kv.set_optimizer(mx.optimizer.FTRL(learning_rate=0.5))
    local = mx.kv.create('local')
    local.init(0, mx.nd.ones((3,)))
    local.set_optimizer(mx.optimizer.FTRL(learning_rate=0.5))
    for step in range(3):
        g = [mx.nd.array([0.5, -1.0, 2.0]) * (step + w) for w in (1, 2)]
        kv.push(0, g[kv.rank])
        local.push(0, g)
    out, ref = mx.nd.zeros((3,)), mx.nd.zeros((3,))
    kv.pull(0, out=out)
    local.pull(0, out=ref)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6)
    print('ok', kv.rank, flush=True)
    """
    _ok(launch(tmp_path, script, n=2, s=1))


LOST = """
import os, sys, time
import mxrs as mx
from mxrs.base import NodeLostError

kv = mx.kv.create('dist_sync')
out = mx.nd.zeros((2,))
t = time.monotonic()
try:
    # worker 1 dies once its init returns: worker 0 may hear of it before its own init returns
    kv.init(0, mx.nd.zeros((2,)))
    if kv.rank == 1:
        os.kill(os.getpid(), 9)
    kv.pushpull(0, mx.nd.ones((2,)), out=out)
    out.asnumpy()
    raise SystemExit('the round finished without worker 1')
except NodeLostError as e:
    print('lost', round(time.monotonic() - t, 1), e, flush=True)
"""


def test_a_killed_worker_makes_the_other_raise_node_lost():
    with scheduler_and_servers(PS_HEARTBEAT_INTERVAL=1, PS_HEARTBEAT_TIMEOUT=3) as port:
        procs = [
            start_worker(
                port, LOST, PS_HEARTBEAT_INTERVAL=1, PS_HEARTBEAT_TIMEOUT=3, DMLC_WORKER_ID=i
            )
            for i in range(2)
        ]
        outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert procs[1].returncode == -9
    assert procs[0].returncode == 0, outs[0]
    assert outs[0][0].startswith("lost"), outs[0]


def test_a_worker_with_the_wrong_secret_is_refused():
    script = """
    import mxrs as mx
    try:
        mx.kv.create('dist_sync')
    except mx.base.AuthenticationError as e:
        print('refused:', e)
    """
    with scheduler_and_servers(workers=1, servers=1) as port:
        p = start_worker(port, script, workers=1, servers=1, MXRS_SECRET="not-the-secret")
        out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, err
    assert out.startswith("refused: authentication failed"), out + err


def test_creating_a_dist_store_outside_a_job_names_what_is_missing(monkeypatch):
    import mxrs as mx

    for var in ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(mx.MXNetError, match="DMLC_"):
        mx.kv.create("dist_sync")


def test_priorities_beyond_32_bits_keep_their_order():
    from mxrs.kvstore.dist import _priority

    assert _priority(-(10**12)) == -(2**31) < _priority(-5) == -5 < _priority(10**12) == 2**31 - 1


PROGRAM_ORDER = """
import numpy as np
import mxrs as mx

kv = mx.kv.create('dist_sync')
r = kv.rank
kv.init(0, mx.nd.zeros((1000,)))
out = mx.nd.zeros((1000,))
for step in range(20):
    # A pull sees this worker's pushes before it and none after, though the next ones are made
    # before its answer is in (with backups a server answers once the round reached the
    # backup, by when the rounds after it could be complete).
    kv.push(0, mx.nd.ones((1000,)))
    if r == 0:
        kv.pull(0, out=out)
    kv.push(0, mx.nd.ones((1000,)) * 10)
    kv.push(0, mx.nd.ones((1000,)) * 100)
    if r == 0:
        np.testing.assert_array_equal(out.asnumpy(), np.full(1000, 2.0), err_msg=str(step))
    mx.nd.waitall()
kv.barrier()
print('ok', r, flush=True)
"""


def test_a_pull_is_answered_in_program_order_with_backups(tmp_path):
    _ok(launch(tmp_path, PROGRAM_ORDER, launcher_args=["--replicas", "1"]))
