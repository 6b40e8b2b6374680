"""Losing a worker: ``mxrs-launch --max-restarts`` restarts it with its rank, the job waits for it
(``PS_REJOIN_TIMEOUT``) and it rejoins the current round; without restarts the job ends at once.

Real processes on 127.0.0.1; workers are lost to a real SIGKILL (a worker kills itself at a
chosen step, so that the run is the same every time).
"""

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from jobs import TIMEOUT, job_nodes, start_worker

ROOT = Path(__file__).resolve().parent.parent

#: train_mnist.py, whose worker 1 kills itself (SIGKILL) at the start of step KILL_AT the first
#: time it gets there, once every request it made is done; a marker file says it happened.
DYING_MNIST = f"""
import os, signal, sys
sys.path.insert(0, {str(ROOT / "examples")!r})
import mxrs as mx
from mxrs import gluon
import train_mnist

KILL_AT, RANK = int(os.environ["KILL_AT"]), os.environ["DMLC_WORKER_ID"]
step, steps = gluon.Trainer.step, [0]

def dying_step(self, batch_size, ignore_stale_grad=False):
    if RANK == "1" and steps[0] == KILL_AT and not os.path.exists("killed"):
        mx.nd.waitall()
        open("killed", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    steps[0] += 1
    return step(self, batch_size, ignore_stale_grad)

gluon.Trainer.step = dying_step
train_mnist.main(sys.argv[1:])
"""


def _mnist_job(tmp_path, kill_at, *launcher_args):
    script = tmp_path / "worker.py"
    script.write_text(DYING_MNIST)
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2", *launcher_args]
    cmd += [sys.executable, str(script), "--kv-store", "dist_sync", "--no-progress"]
    cmd += ["--num-epochs", "4"]
    env = {**os.environ, "KILL_AT": str(kill_at)}
    return subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


def _accuracies(text):
    return [float(a) for a in re.findall(r"final test accuracy ([0-9.]+)", text)]


def test_a_killed_worker_is_restarted_and_the_job_trains_the_same_model(tmp_path):
    (tmp_path / "calm").mkdir()
    (tmp_path / "killed").mkdir()
    calm = _mnist_job(tmp_path / "calm", -1, "--max-restarts", "1")
    assert calm.returncode == 0, calm.stdout[-3000:] + calm.stderr[-3000:]
    killed = _mnist_job(tmp_path / "killed", 150, "--max-restarts", "1")
    out = killed.stdout + killed.stderr
    assert killed.returncode == 0, out[-4000:]
    assert "mxrs-launch: worker 1 failed with exit status 137; restarting it (1 of 1)" in out
    assert "worker 1 on 127.0.0.1 (node 4) disconnected; waiting up to 60s for it to be " in out
    assert "[worker 1] worker 1/2: rejoined the job at step 150" in killed.stdout
    # Epoch 1 (93 steps) was finished by the lost process; its successor trains on from step 150.
    assert killed.stdout.count("[worker 1] worker 1/2: epoch 1:") == 1
    calm_acc, killed_acc = _accuracies(calm.stdout), _accuracies(killed.stdout)
    assert len(calm_acc) == len(killed_acc) == 2, out[-4000:]
    assert calm_acc[0] == calm_acc[1] and killed_acc[0] == killed_acc[1]
    # Lost at a step boundary, nothing is lost: the very same model (within 0.5% is the bar).
    assert killed_acc[0] == calm_acc[0] and calm_acc[0] > 0.9, (calm_acc, killed_acc)


def test_without_restarts_a_killed_worker_ends_the_job_at_once(tmp_path):
    started = time.monotonic()
    r = _mnist_job(tmp_path, 20)
    assert r.returncode == 137, r.stdout[-3000:] + r.stderr[-3000:]
    assert "mxrs-launch: worker 1 failed with exit status 137; stopping the job" in r.stderr
    assert "final test accuracy" not in r.stdout
    assert time.monotonic() - started < TIMEOUT / 2


ALWAYS_DYING = """
import os, signal
import mxrs as mx
kv = mx.kv.create('dist_sync')
kv.init('w', mx.nd.zeros((2,)))
if kv.rank == 1:
    print('dying', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
kv.push('w', mx.nd.ones((2,)))
out = mx.nd.zeros((2,))
kv.pull('w', out=out)
print('ok', out.asnumpy().tolist(), flush=True)
"""


def test_a_worker_that_keeps_failing_uses_up_its_restarts_and_ends_the_job(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(ALWAYS_DYING)
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "1"]
    cmd += ["--max-restarts", "2", sys.executable, str(script)]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 137, r.stdout + r.stderr
    assert r.stdout.count("[worker 1] dying") == 3
    for n in (1, 2):
        assert f"worker 1 failed with exit status 137; restarting it ({n} of 2)" in r.stderr
    assert "worker 1 failed with exit status 137; stopping the job" in r.stderr
    assert "[worker 0] ok" not in r.stdout


def test_a_worker_not_restarted_within_the_rejoin_timeout_fails_the_job_naming_it(tmp_path):
    worker = textwrap.dedent("""
        import os, signal, sys
        import mxrs as mx
        from mxrs.base import NodeLostError
        kv = mx.kv.create('dist_sync')
        kv.init('w', mx.nd.zeros((2,)))
        kv.barrier()
        if kv.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        kv.push('w', mx.nd.ones((2,)))
        out = mx.nd.zeros((2,))
        kv.pull('w', out=out)
        try:
            out.asnumpy()
        except NodeLostError as e:
            print('lost:', e, flush=True)
            sys.exit(3)
        sys.exit('the pull completed without worker 1')
    """)
    with job_nodes(2, 1, MXRS_MAX_RESTARTS=1, PS_REJOIN_TIMEOUT=1) as (port, _):
        procs = [start_worker(port, worker, 2, 1, DMLC_WORKER_ID=r) for r in (0, 1)]
        started = time.monotonic()
        out, err = procs[0].communicate(timeout=TIMEOUT)
        procs[1].communicate(timeout=TIMEOUT)
    assert procs[0].returncode == 3, out + err
    assert procs[1].returncode == -9
    assert re.search(
        r"lost: .*worker 1 on 127\.0\.0\.1 \(node \d\) disconnected, and was not restarted "
        r"within 1s",
        out,
    ), out + err
    # It waited for the timeout, not for the heartbeat's, nor for ever.
    assert 1.0 <= time.monotonic() - started < 30
