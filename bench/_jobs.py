"""Whole dist jobs on 127.0.0.1 for either library, for the side-by-side benchmarks.

A job is a scheduler, S servers and W workers, each a fresh process of the library's own Python
(mxrs: this checkout's ``.venv``; Apache MXNet 1.9.1: ``bench/.venv-mxnet``, made by
``setup_mxnet.sh``). Scheduler and servers are ``python -c "import LIB"`` with ``DMLC_ROLE`` set:
both libraries run the role on import, as MXNet's launch tools expect. The mxrs scheduler takes
any free port and announces it (``mxrs.launcher.scheduler``); MXNet's cannot, so its jobs get a
port that was free a moment before. Workers run the same
program under both, told which library to import by ``BENCH_LIB``. Every process binds to
127.0.0.1 and gets the same thread counts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from mxrs.launcher.scheduler import SchedulerStartError, start_scheduler

ROOT = Path(__file__).resolve().parent.parent
LIBS = ("mxrs", "mxnet")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _free_port() -> int:
    """A port free now on 127.0.0.1, for MXNet's scheduler (which cannot announce the one it
    binds); another process may take it before the scheduler does, failing that job."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JobFailed(RuntimeError):
    """A benchmark job exited non-zero or ran past its time limit."""


def python_for(lib: str) -> str:
    """The interpreter that has ``lib`` installed."""
    if lib == "mxnet":
        exe = ROOT / "bench" / ".venv-mxnet" / "bin" / "python"
        if not exe.exists():
            raise SystemExit("MXNet 1.9.1 is not set up: run `bash bench/setup_mxnet.sh` first")
        return str(exe)
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def job_env(
    lib: str,
    role: str,
    workers: int,
    servers: int,
    port: int,
    threads: int,
    extra: dict | None = None,
) -> dict:
    """The environment of one process of a job."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "PS_", "MXRS_", "MXNET_"))
    }
    env.update(
        {
            "DMLC_ROLE": role,
            "DMLC_PS_ROOT_URI": "127.0.0.1",
            "DMLC_PS_ROOT_PORT": str(port),
            "DMLC_NUM_WORKER": str(workers),
            "DMLC_NUM_SERVER": str(servers),
            "DMLC_NODE_HOST": "127.0.0.1",
            "BENCH_LIB": lib,
            # Like for like with Apache MXNet 1.9.1, which keeps no backups of server state.
            "MXRS_REPLICAS": "0",
            "PYTHONUNBUFFERED": "1",
            **{v: str(threads) for v in THREAD_VARS},
        }
    )
    env.update(extra or {})
    return env


def run_job(
    lib: str,
    workers: int,
    servers: int,
    argv: list[str],
    threads: int = 1,
    timeout: float = 900,
    extra_env: dict | None = None,
) -> list[dict]:
    """Run one job; returns every JSON object the workers printed (one per line), in order of
    worker start. Raises :class:`JobFailed` with the failing process's output."""
    py = python_for(lib)
    port = 0 if lib == "mxrs" else _free_port()
    procs = []

    def start(role, cmd):
        env = job_env(lib, role, workers, servers, port, threads, extra_env)
        procs.append(
            (
                role,
                subprocess.Popen(
                    cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                ),
            )
        )

    try:
        if lib == "mxrs":
            env = job_env(lib, "scheduler", workers, servers, 0, threads, extra_env)
            try:
                proc, port = start_scheduler(
                    [py, "-c", "import mxrs"],
                    env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            except SchedulerStartError as e:
                raise JobFailed(f"mxrs: {e}") from None
            procs.append(("scheduler", proc))
        else:
            start("scheduler", [py, "-c", f"import {lib}"])
        for _ in range(servers):
            start("server", [py, "-c", f"import {lib}"])
        for _ in range(workers):
            start("worker", [py, *argv])
        results = []
        for role, p in procs[1 + servers :]:
            out, _ = p.communicate(timeout=timeout)
            if p.returncode != 0:
                raise JobFailed(f"{lib} {role} exited with {p.returncode}:\n{out[-3000:]}")
            results += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        for role, p in procs[: 1 + servers]:
            out, _ = p.communicate(timeout=60)
            if p.returncode != 0:
                raise JobFailed(f"{lib} {role} exited with {p.returncode}:\n{out[-3000:]}")
        return results
    except subprocess.TimeoutExpired as e:
        raise JobFailed(f"{lib} job {argv} ran past {e.timeout} s") from None
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
