"""Jobs started back to back on a loaded machine form, run and end, every one of them: 2×2
with and without backups, 4×4, and a job whose worker is lost right after it joined and is
restarted. Two busy processes the test starts keep both cores loaded; each job has a hard
timeout, so a job that hangs at the start fails the test with its output instead of waiting.

The start-up hang that was found (an init that found a piece rank 0 had just made, before it was
durable, in a job without backups) has a window too narrow for this test (ten runs against the
unfixed server, 300 more keys a job: none hung); `server::store::tests` holds it for certain."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

JOB_TIMEOUT = 90

WORKER = """
import os, signal
import numpy as np
import mxrs as mx

kv = mx.kv.create("dist_sync")
r, n = kv.rank, kv.num_workers
# a row-sparse table of many pieces per server, each its own init frame, then dense keys
kv.init("table", mx.nd.zeros((200_000, 16)).tostype("row_sparse"))
kv.init(["a", "b"], [mx.nd.ones((1000,)), mx.nd.ones((10,))])
if os.environ.get("LOSE_WORKER") == str(r) and not os.path.exists("lost"):
    open("lost", "w").close()
    os.kill(os.getpid(), signal.SIGKILL)  # lost after joining; the launcher restarts it
out = mx.nd.zeros((1000,))
for _ in range(3):
    kv.pushpull("a", mx.nd.ones((1000,)) * (r + 1), out=out)
    assert (out.asnumpy() == n * (n + 1) / 2).all(), out
kv.barrier()
print("done", r, flush=True)
"""

#: (workers, servers, launcher options, extra environment) of each kind of job
KINDS = {
    "2x2 without backups": (2, 2, ["--replicas", "0"], {}),
    "2x2 with backups": (2, 2, ["--replicas", "1"], {}),
    "4x4": (4, 4, [], {}),
    "2x2 with a restarted worker": (2, 2, ["--max-restarts", "1"], {"LOSE_WORKER": "1"}),
}
ROUNDS = 4


@pytest.fixture
def loaded():
    """Two busy processes, one per core, for the duration of the test."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _job(tmp_path, workers, servers, options, env):
    tmp_path.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER))
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", str(workers), "-s", str(servers)]
    cmd += ["--progress", "off", "--env", "MXRS_FORM_TIMEOUT=60", *options]
    cmd += [sys.executable, str(script)]
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the launcher stops every process it started
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"the job did not end within {JOB_TIMEOUT}s:\n{out[-6000:]}")
    return proc.returncode, out


def test_jobs_started_back_to_back_under_load_all_finish(tmp_path, loaded):
    took = {}
    for i in range(ROUNDS):
        for kind, (workers, servers, options, env) in KINDS.items():
            start = time.monotonic()
            name = f"{i}-{kind.replace(' ', '-')}"
            rc, out = _job(tmp_path / name, workers, servers, options, env)
            assert rc == 0, f"{kind}, round {i}:\n{out[-6000:]}"
            for r in range(workers):
                assert f"[worker {r}] done {r}" in out, f"{kind}, round {i}:\n{out[-6000:]}"
            if "LOSE_WORKER" in env:
                assert "restarting it (1 of 1)" in out, out[-6000:]
            took.setdefault(kind, []).append(time.monotonic() - start)
    print({kind: [round(t, 1) for t in ts] for kind, ts in took.items()})
