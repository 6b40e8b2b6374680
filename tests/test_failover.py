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
import uuid
from pathlib import Path

import numpy as np
from jobs import TIMEOUT, launch, tagged_processes

STEPS = 120

WORKER = textwrap.dedent(f"""
    import sys
    import numpy as np
    import mxrs as mx

    mode = sys.argv[1]
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


def _run(cwd, args, kill_when=None, server=None):
    """Runs ``mxrs-launch local -n 2 -s 2 ARGS`` in ``cwd``; once an output line satisfies
    ``kill_when``, SIGKILLs server ``server`` (any server for None). Returns its output, with a
    ``<killed>`` line where the kill happened; fails unless the job exits 0."""
    tag = uuid.uuid4().hex
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2"]
    cmd += ["--env", f"MXRS_TEST_TAG={tag}", *args]
    launcher = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    with launcher, launcher.stdout:
        try:
            for line in launcher.stdout:
                lines.append(line)
                if kill_when is not None and kill_when(line):
                    kill_when = None
                    procs = tagged_processes(tag, "DMLC_SERVER_ID").items()
                    pid = next(
                        p
                        for p, (role, rank, _) in procs
                        if role == "server" and server in (None, int(rank))
                    )
                    os.kill(pid, signal.SIGKILL)
                    lines.append("<killed>\n")
            launcher.wait(timeout=TIMEOUT)
        finally:
            launcher.kill()
    out = "".join(lines)
    assert launcher.returncode == 0, out[-4000:]
    return out


def _job(tmp_path, mode, kill=None):
    """Runs the job; with ``kill`` = (server rank, step), kills that server once worker 0 has
    done that step. Returns (launcher output, final values of each worker)."""
    tmp_path.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    args = ["--replicas", "1", "--env", "MXNET_KVSTORE_BIGARRAY_BOUND=1000"]
    args += [sys.executable, "worker.py", mode]
    step = None if kill is None else f"[worker 0] step {kill[1]}"
    if kill is None:
        out = _run(tmp_path, args)
    else:
        out = _run(tmp_path, args, lambda line: line.strip() == step, kill[0])
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
        out = _run(tmp_path, args, after_first_epoch if kill else None)
        assert ("its keys are served by their backups from now on" in out) == kill, out[-3000:]
        found = re.findall(r"final test accuracy ([0-9.]+)", out)
        assert len(found) == 2 and found[0] == found[1], out[-3000:]
        accs.append(float(found[0]))
    assert accs[1] == accs[0] and accs[0] > 0.9, accs


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
