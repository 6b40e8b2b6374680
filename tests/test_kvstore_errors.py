"""No error of the distributed KVStore is lost and a worker's memory stays flat: real
scheduler, server and worker processes on 127.0.0.1."""

import signal
import subprocess

from jobs import TIMEOUT, job_nodes, launch, start_worker

REFUSED_PUSH = """
import mxrs as mx
kv = mx.kv.create('dist_async')
kv.init(1, mx.nd.ones((4,)))
kv.push(1, mx.nd.ones((4,)) * 5)  # refused: no optimizer on the servers
o = mx.nd.zeros((4,))
kv.pull(1, out=o)
print(o.asnumpy(), flush=True)
"""


def test_the_issue_reproduction_fails_the_job_with_the_refusal(tmp_path):
    # Whether the refusal arrives before the pull (raised there) or after it (reported at
    # exit), the worker and with it the job fail, with the server's message.
    r = launch(tmp_path, REFUSED_PUSH, n=1, s=1)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "KVStoreError: key 1: dist_async push before any optimizer is set" in r.stdout
    assert "mxrs-launch: worker 0 failed with exit status 1" in r.stderr, r.stderr
    assert "Exception ignored" not in r.stdout + r.stderr


def test_a_refusal_nobody_looked_at_is_printed_at_exit_with_status_1(tmp_path):
    script = """
    import mxrs as mx
    kv = mx.kv.create('dist_async')
    kv.init(1, mx.nd.ones((4,)))
    kv.push(1, mx.nd.ones((4,)) * 5)  # refused, and the program ends without looking
    print('done', flush=True)
    """
    r = launch(tmp_path, script, n=1, s=1)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    at = lines.index(
        "[worker 0] mxrs: the distributed KVStore failed and the program did not see it:"
    )
    assert lines[at - 1] == "[worker 0] done"
    assert lines[at + 1].startswith("[worker 0]   KVStoreError: key 1: dist_async push before")
    assert "mxrs-launch: worker 0 failed with exit status 1" in r.stderr, r.stderr


def test_a_refused_push_raises_at_the_next_call_and_once_seen_is_not_reported_again(tmp_path):
    # The refusal comes back before the next pull's answer (one server, one connection): it
    # raises at the first KVStore call after it arrived, exactly once.
    script = """
    import mxrs as mx
    from mxrs.base import KVStoreError
    kv = mx.kv.create('dist_async')
    kv.init(1, mx.nd.ones((4,)))
    kv.push(1, mx.nd.ones((4,)) * 5)
    raised = []
    for _ in range(3):
        try:
            o = mx.nd.zeros((4,))
            kv.pull(1, out=o)
            assert (o.asnumpy() == 1).all(), o
        except KVStoreError as e:
            raised.append(str(e))
    assert len(raised) == 1 and 'before any optimizer is set' in raised[0], raised
    kv.barrier()
    mx.nd.waitall()
    print('ok', flush=True)
    """
    r = launch(tmp_path, script, n=1, s=1)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker 0] ok" in r.stdout and "did not see it" not in r.stdout


FINISHED = """
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_sync')
r = kv.rank
kv.init([1, 2], [mx.nd.zeros((3,)), mx.nd.zeros((2,))])
for _ in range(3 + r):  # worker 1 does one round more than worker 0
    a, b = mx.nd.zeros((3,)), mx.nd.zeros((2,))
    kv.push([1, 2], [mx.nd.ones((3,)), mx.nd.ones((2,))])
    kv.pull([1, 2], out=[a, b])
if r == 1:
    for arr in (a, b):  # both outputs of the failed pull raise at their first read
        try:
            arr.asnumpy()
            raise SystemExit('a pull that can never complete returned')
        except mx.base.KVStoreError as e:
            assert 'worker 0 on 127.0.0.1 has finished after pushing 3 rounds' in str(e), e
            print('raised:', e, flush=True)
    # The ticket itself stays failed however often it is waited for.
    t = kv._worker.pull([1], [np.zeros(3, np.float32)])
    for _ in range(2):
        try:
            t.wait()
            raise SystemExit('a failed ticket reported success')
        except mx.base.KVStoreError:
            pass
    assert t.ready
print('ok', r, flush=True)
"""


def test_a_pull_that_waits_on_a_finished_worker_raises_naming_it(tmp_path):
    r = launch(tmp_path, FINISHED, n=2, s=2, env=["MXNET_KVSTORE_BIGARRAY_BOUND=2"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("[worker 1] raised: key ") == 2, r.stdout
    assert "[worker 0] ok 0" in r.stdout and "[worker 1] ok 1" in r.stdout


def test_a_lost_scheduler_is_named_as_the_cause():
    script = """
    import sys
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    kv.init(0, mx.nd.zeros((2,)))
    print('ready', flush=True)
    sys.stdin.readline()  # the test kills the scheduler meanwhile
    out = mx.nd.zeros((2,))
    try:
        for _ in range(1000):
            kv.pushpull(0, mx.nd.ones((2,)), out=out)
            out.asnumpy()
        raise SystemExit('the job went on without its scheduler')
    except mx.base.NodeLostError as e:
        print('lost:', e, flush=True)
    """
    with job_nodes(workers=1, servers=2) as (port, procs):
        w = start_worker(port, script, workers=1, servers=2, stdin=subprocess.PIPE)
        assert w.stdout.readline() == "ready\n"
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        out, err = w.communicate("go\n", timeout=TIMEOUT)
    assert w.returncode == 0, err
    assert out.startswith("lost: "), out + err
    assert "scheduler on 127.0.0.1:" in out, out


def test_float16_pushpull_into_a_float32_key_and_one_array_for_two_keys(tmp_path):
    script = """
    import numpy as np
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    r = kv.rank
    kv.init([1, 2], [mx.nd.zeros((4,)), mx.nd.full((4,), 7.0)])
    h = mx.nd.ones((4,), dtype='float16') * (r + 1)
    out = mx.nd.zeros((4,))
    kv.pushpull(1, h, out=out)  # float16 in, the float32 key's value out
    np.testing.assert_array_equal(out.asnumpy(), [3, 3, 3, 3])
    kv.pushpull(1, h)  # out defaults to the float16 value itself: the next round's sum
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h.asnumpy(), [3, 3, 3, 3])
    a = mx.nd.zeros((4,))
    kv.pull([1, 2], out=[a, a])  # in order: a ends with key 2
    np.testing.assert_array_equal(a.asnumpy(), [7, 7, 7, 7])
    buf = np.zeros(8, np.float32)
    try:
        kv._worker.pull([kv._keys[1][0], kv._keys[2][0]], [buf[:4], buf[2:6]])
        raise SystemExit('destinations that share memory were accepted')
    except mx.base.KVStoreError as e:
        assert 'share memory' in str(e), e
    kv.barrier()
    print('ok', r, flush=True)
    """
    r = launch(tmp_path, script, n=2, s=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker 0] ok 0" in r.stdout and "[worker 1] ok 1" in r.stdout


def test_pushing_fresh_arrays_keeps_a_workers_memory_flat(tmp_path):
    script = """
    import mxrs as mx

    def rss_mb():
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    kv = mx.kv.create('dist_sync')
    kv.init(3, mx.nd.zeros((256, 1024)))  # 1 MiB
    grad = mx.nd.ones((256, 1024))
    for i in range(1000):
        kv.push(3, grad * 0.5)  # a fresh 1 MiB array every round, never read again
        if i == 99:
            start = rss_mb()
    mx.nd.waitall()
    print('growth', round(rss_mb() - start, 1), flush=True)
    """
    # With at most 16 MiB of requests in flight, whatever the server's pace.
    r = launch(tmp_path, script, n=1, s=1, env=["MXRS_WORKER_INFLIGHT_BYTES=16777216"])
    assert r.returncode == 0, r.stdout + r.stderr
    growth = float(r.stdout.split("[worker 0] growth ")[1].split()[0])
    assert growth < 64, r.stdout


def test_the_worker_exit_status_is_left_alone_when_nothing_was_lost(tmp_path):
    script = """
    import sys
    import mxrs as mx
    kv = mx.kv.create('dist_sync')
    kv.init(0, mx.nd.zeros((2,)))
    kv.push(0, mx.nd.ones((2,)))
    sys.exit(4)
    """
    r = launch(tmp_path, script, n=1, s=1)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "did not see it" not in r.stdout
