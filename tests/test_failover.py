"""Losing a server in a job with backups (``mxrs-launch --replicas 1``): each server's keys are
kept on the next server too, a killed server's keys are served by its backup, the workers send
it what the lost server had not answered, and the job finishes as if nothing had happened.

Real processes on 127.0.0.1: the launcher runs the job, the test kills one server with SIGKILL
at a random round (its seed is in the test's output).
"""

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import numpy as np
from jobs import TIMEOUT, launch, tagged_processes

STEPS = 120

WORKER = textwrap.dedent(f"""
    import os
    import sys
    import time
    import numpy as np
    import mxrs as mx

    mode = sys.argv[1]
    # Worker 0 waits at each of these steps until the test says go (file go0, go1, ...): a
    # replacement server copies the keys meanwhile.
    pauses = [int(a) for a in sys.argv[2:]]
    kv = mx.kv.create(mode)
    r = kv.rank
    if mode == 'dist_sync':
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3))
    else:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    # Above MXNET_KVSTORE_BIGARRAY_BOUND (1000) keys are cut over both servers.
    shapes = [(3,), (2500,), (7, 5), (1200,), (64,), (300000,)]
    keys = list(range(len(shapes)))
    kv.init(keys, [mx.nd.ones(s) for s in shapes])
    outs = [mx.nd.zeros(s) for s in shapes]
    for step in range({STEPS}):
        if r == 0 and step in pauses:
            deadline = time.monotonic() + 120
            while not os.path.exists(f'go{{pauses.index(step)}}'):
                assert time.monotonic() < deadline, 'the test never said go'
                time.sleep(0.02)
        rng = np.random.RandomState(1000 * step + r)
        if mode == 'dist_sync':
            grads = [mx.nd.array(rng.normal(size=s).astype(np.float32)) for s in shapes]
        else:
            grads = [mx.nd.ones(s) * (r + 1) for s in shapes]
        kv.pushpull(keys, grads, out=outs)
        mx.nd.waitall()
        print('step', step, flush=True)
    kv.barrier()
    kv.pull(keys, out=outs)
    np.save(f'final{{r}}.npy', np.concatenate([o.asnumpy().ravel() for o in outs]))
    print('ok', r, flush=True)
""")


def _run(cwd, args, steps=()):
    """Runs ``mxrs-launch local -n 2 -s 2 ARGS`` in ``cwd``, taking ``steps`` in order: each is
    (a test of an output line, an action given the job's tag) and acts once a line after the
    previous step's passes its test. Returns the output, with a ``<step N>`` line where step N
    acted; fails unless the job exits 0."""
    tag = uuid.uuid4().hex
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2"]
    cmd += ["--env", f"MXRS_TEST_TAG={tag}", *args]
    launcher = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    steps = list(steps)
    lines = []
    # A job that hangs is stopped (SIGTERM: the launcher ends every process it started).
    watchdog = threading.Timer(TIMEOUT, launcher.terminate)
    watchdog.start()
    with launcher, launcher.stdout:
        try:
            for line in launcher.stdout:
                lines.append(line)
                if steps and steps[0][0](line):
                    steps.pop(0)[1](tag)
                    lines.append("<killed>\n")
            launcher.wait(timeout=TIMEOUT)
        finally:
            watchdog.cancel()
            launcher.kill()
    out = "".join(lines)
    assert launcher.returncode == 0, out[-4000:]
    assert not steps, f"{len(steps)} steps never happened:\n{out[-4000:]}"
    return out


def _kill(server=None):
    """An action that SIGKILLs server ``server`` of the job (any server for None)."""

    def kill(tag):
        procs = tagged_processes(tag, "DMLC_SERVER_ID").items()
        pid = next(
            p for p, (role, rank, _) in procs if role == "server" and server in (None, int(rank))
        )
        os.kill(pid, signal.SIGKILL)

    return kill


def _step_line(step):
    return lambda line: line.strip() == f"[worker 0] step {step}"


def _job(tmp_path, mode, kill=None):
    """Runs the job; with ``kill`` = (server rank, step), kills that server once worker 0 has
    done that step. Returns (launcher output, final values of each worker)."""
    tmp_path.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    args = ["--replicas", "1", "--env", "MXNET_KVSTORE_BIGARRAY_BOUND=1000"]
    args += [sys.executable, "worker.py", mode]
    steps = [] if kill is None else [(_step_line(kill[1]), _kill(kill[0]))]
    out = _run(tmp_path, args, steps)
    if kill:  # the server died while the workers were at it
        assert out.index("<killed>") < out.index(f"[worker 0] step {STEPS - 1}\n"), out
    return out, [np.load(tmp_path / f"final{r}.npy") for r in (0, 1)]


def test_a_server_killed_at_a_random_round_costs_nothing(tmp_path):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print("seed", seed)
    _, calm = _job(tmp_path / "calm", "dist_sync")
    np.testing.assert_array_equal(calm[0], calm[1])
    server, step = rng.randrange(2), rng.randrange(5, STEPS - 20)
    out, hit = _job(tmp_path / "hit", "dist_sync", kill=(server, step))
    assert f"server {server} failed with exit status 137; its keys are served by their " in out
    assert "its keys are served by their backups from now on" in out
    # SGD with momentum on the servers: the same weights as the job nobody disturbed.
    for values in hit:
        np.testing.assert_allclose(values, calm[0], rtol=0, atol=1e-6, err_msg=f"seed {seed}")


def test_dist_async_counts_every_push_once_across_a_lost_server(tmp_path):
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    out, hit = _job(
        tmp_path / "hit", "dist_async", kill=(rng.randrange(2), rng.randrange(5, STEPS - 20))
    )
    assert "its keys are served by their backups from now on" in out
    # Each worker pushed r + 1 per step; lr 1: every push subtracted exactly once.
    expected = 1.0 - STEPS * (1 + 2)
    for values in hit:
        assert np.unique(values).tolist() == [expected], (seed, np.unique(values))


def test_mnist_training_loses_a_server_and_ends_with_the_same_model(tmp_path):
    """The README's job (LeNet, 2 workers, 2 servers, SGD with momentum on the servers), one
    server killed as worker 0 finishes its first epoch: the same test accuracy to the digit."""
    example = Path(__file__).resolve().parent.parent / "examples" / "train_mnist.py"
    args = [sys.executable, str(example), "--kv-store", "dist_sync", "--num-epochs", "3"]
    args.append("--no-progress")

    def after_first_epoch(line):
        return line.startswith("[worker 0] worker 0/2: epoch 1:")

    accs = []
    for kill in (False, True):
        out = _run(tmp_path, args, [(after_first_epoch, _kill())] if kill else [])
        assert ("its keys are served by their backups from now on" in out) == kill, out[-3000:]
        found = re.findall(r"final test accuracy ([0-9.]+)", out)
        assert len(found) == 2 and found[0] == found[1], out[-3000:]
        accs.append(float(found[0]))
    assert accs[1] == accs[0] and accs[0] > 0.9, accs


def test_a_replacement_server_copies_the_keys_and_then_the_other_original_may_go(tmp_path):
    """``--max-restarts 1``: a killed server is restarted, joins the running job as the backup
    of the keys it held, and once it has a full copy the other original server is killed too
    (and restarted in turn): the weights of the job nobody disturbed."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print("seed", seed)
    _, calm = _job(tmp_path / "calm", "dist_sync")
    first = rng.randrange(2)
    kill_at = rng.randrange(5, 40)
    pause = kill_at + 1  # worker 0 waits there: the first kill cannot come after it
    second_at = rng.randrange(pause + 1, STEPS - 20)
    # and there, until the second replacement has its copy, however slowly it starts
    second_pause = second_at + 1
    hit = tmp_path / "hit"
    hit.mkdir()
    (hit / "worker.py").write_text(WORKER)
    args = ["--replicas", "1", "--max-restarts", "1"]
    args += ["--env", "MXNET_KVSTORE_BIGARRAY_BOUND=1000"]
    args += [sys.executable, "worker.py", "dist_sync", str(pause), str(second_pause)]
    synced = "holds a full copy of its keys again"
    steps = [
        (_step_line(kill_at), _kill(first)),
        (lambda line: synced in line, lambda _: (hit / "go0").touch()),
        (_step_line(second_at), _kill(1 - first)),
        (lambda line: synced in line, lambda _: (hit / "go1").touch()),
    ]
    out = _run(hit, args, steps)
    for server in (first, 1 - first):
        assert f"server {server} failed with exit status 137; restarting it (1 of 1)" in out
    assert f"replaces the lost server {first}; copying ranges [0, 1] to it" in out, out[-4000:]
    assert out.index("holds a full copy") < out.index(f"[worker 0] step {pause}\n"), out
    assert out.count("holds a full copy of its keys again") == 2, out[-4000:]
    second = out.index("holds a full copy", out.index("holds a full copy") + 1)
    assert second < out.index(f"[worker 0] step {second_pause}\n"), out[-4000:]
    for values in (np.load(hit / f"final{r}.npy") for r in (0, 1)):
        np.testing.assert_allclose(values, calm[0], rtol=0, atol=1e-6, err_msg=f"seed {seed}")


UNEVEN_ASYNC = """
import numpy as np
import mxrs as mx
kv = mx.kv.create('dist_async')
r = kv.rank
kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
kv.init([0, 1], [mx.nd.zeros((3,)), mx.nd.zeros((3000,))])
outs = [mx.nd.zeros((3,)), mx.nd.zeros((3000,))]
for _ in range(5 if r == 0 else 200):  # worker 0 finishes long before worker 1
    kv.pushpull([0, 1], [mx.nd.ones((3,)), mx.nd.ones((3000,))], out=outs)
mx.nd.waitall()
kv.barrier()  # both are done pushing: every push is in
kv.pull([0, 1], out=outs)
print('ok', r, float(outs[0].asnumpy()[0]), float(outs[1].asnumpy()[-1]), flush=True)
"""


def test_dist_async_workers_that_finish_at_different_times_with_backups(tmp_path):
    # A finished worker must not fail what the others have waiting for their backups.
    r = launch(tmp_path, UNEVEN_ASYNC, env=["MXNET_KVSTORE_BIGARRAY_BOUND=1000"])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for rank in (0, 1):  # 5 + 200 pushes of ones at learning rate 1, each applied once
        assert f"[worker {rank}] ok {rank} -205.0 -205.0" in r.stdout, r.stdout[-2000:]
