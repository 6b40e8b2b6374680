"""The parameter-server bindings (``mxrs._native``) with real processes on 127.0.0.1.

The scheduler and the servers are started the way MXNet's launch tools start them: the same
``python`` with ``DMLC_ROLE`` set, turning into that role on ``import mxrs``.
"""

import os
import select
import socket
import subprocess
import sys
import textwrap

import pytest
from mxrs.launcher.scheduler import start_scheduler

TIMEOUT = 60

WORKER = textwrap.dedent(
    """
    import numpy as np
    import mxrs
    from mxrs import _native

    w = _native.Worker("sync")
    r = w.rank
    small = np.full((3, 4), r + 1, dtype=np.float32)
    big = np.arange(1500, dtype=np.float32) * (r + 1)  # above the bound of 1000: sliced
    w.init([1, 2], [small, big]).wait()
    w.push([1, 2], [small, big]).wait()
    out, outb = np.zeros_like(small), np.zeros_like(big)
    w.pull([1, 2], [out, outb]).wait()
    assert (out == 3).all(), out
    assert (outb == np.arange(1500, dtype=np.float32) * 3).all(), outb[:5]
    try:
        w.push([1], [np.zeros((2, 2), np.float32)]).wait()
        raise SystemExit("a push of the wrong shape was accepted")
    except mxrs.base.ShapeMismatchError as e:
        assert "key 1" in str(e) and "[2, 2]" in str(e) and "[3, 4]" in str(e), e
    w.set_optimizer("sgd", [("learning_rate", 0.5)])
    w.pushpull([1], [small], [out]).wait()
    assert (out == 3 - 0.5 * 3).all(), out
    w.barrier()
    w.finish()
    print("rank", r, w.num_workers, w.num_servers, flush=True)
    """
)


def _env(role, port, **extra):
    env = dict(os.environ)
    env.update(
        DMLC_ROLE=role,
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(port),
        DMLC_NUM_SERVER="2",
        DMLC_NUM_WORKER="2",
        DMLC_NODE_HOST="127.0.0.1",
        MXNET_KVSTORE_BIGARRAY_BOUND="1000",
        MXRS_SECRET="test-secret",
        PS_HEARTBEAT_TIMEOUT="3",
    )
    env.update(extra)
    return env


@pytest.fixture
def job():
    """Starts a scheduler (on the port it announces) and two servers through ``import mxrs``;
    kills what it started."""
    scheduler, port = start_scheduler([sys.executable, "-c", "import mxrs"], _env("scheduler", 0))
    procs = [scheduler]
    try:
        procs += [
            subprocess.Popen([sys.executable, "-c", "import mxrs"], env=_env("server", port))
            for _ in range(2)
        ]
        yield port, procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _worker(port, script, **extra):
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env=_env("worker", port, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_workers_sum_slice_update_and_the_job_ends(job):
    port, nodes = job
    workers = [_worker(port, WORKER) for _ in range(2)]
    outs = [w.communicate(timeout=TIMEOUT) for w in workers]
    for w, (_, err) in zip(workers, outs, strict=True):
        assert w.returncode == 0, err
    ranks = sorted(out.split()[1] for out, _ in outs)
    assert ranks == ["0", "1"]
    assert all(out.split()[2:] == ["2", "2"] for out, _ in outs)
    # Every worker finished: the servers and the scheduler exit 0 on their own.
    assert [p.wait(timeout=TIMEOUT) for p in nodes] == [0, 0, 0]


def test_a_wrong_secret_is_refused(job):
    port, _ = job
    script = textwrap.dedent(
        """
        import mxrs
        from mxrs import _native
        try:
            _native.Worker("sync")
        except mxrs.base.AuthenticationError as e:
            print("refused:", e)
        """
    )
    bad = _worker(port, script, MXRS_SECRET="wrong")
    out, err = bad.communicate(timeout=TIMEOUT)
    assert bad.returncode == 0, err
    assert out.startswith("refused: authentication failed"), out


def test_bad_settings_are_one_line_errors():
    env = _env("server", 1)
    del env["DMLC_PS_ROOT_URI"]
    p = subprocess.run(
        [sys.executable, "-c", "import mxrs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert p.returncode == 2
    assert p.stderr.strip() == "mxrs server: DMLC_PS_ROOT_URI: not set (address of the scheduler)"
    env = _env("worker", 1, DMLC_NUM_WORKER="two")
    p = subprocess.run(
        [sys.executable, "-c", "from mxrs import _native; _native.Worker('sync')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert p.returncode != 0
    assert "KVStoreError: DMLC_NUM_WORKER: 'two' is not a valid" in p.stderr


def test_the_ps_scheduler_script_on_port_zero_announces_the_port_it_listens_on():
    exe = os.path.join(os.path.dirname(sys.executable), "ps-scheduler")
    if not os.path.exists(exe):
        pytest.skip("the ps-scheduler console script is not installed beside this Python")
    p = subprocess.Popen(
        [exe, "--announce", "/dev/stdout"],
        env=_env("scheduler", 0),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert select.select([p.stdout], [], [], TIMEOUT)[0], "no port announced in time"
        line = p.stdout.readline()
        assert line.endswith(b"\n") and 0 < int(line) < 65536, line
        with socket.create_connection(("127.0.0.1", int(line)), timeout=TIMEOUT):
            pass
        assert p.poll() is None, p.stderr.read()
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
