"""One dist job on emulated hosts: where its scheduler, servers and workers run, and running it.

A :class:`Layout` places a job on hosts: the scheduler on host 0, server ``j`` on host
``servers[j]``, worker ``j`` on host ``workers[j]``. Every process is started inside its host's
namespace with ``ip netns exec`` and binds to the host's address (``DMLC_NODE_HOST``); all find
the scheduler at host 0's address (``DMLC_PS_ROOT_URI``). The mxrs scheduler takes any free port
and announces it; MXNet's gets a fixed one, free by construction in a fresh namespace.

Every process's output goes to a log file (``logs/`` beside the job's JSON), so no pipe can
fill and stall it. :func:`run_job` returns the JSON lines the workers printed, or raises
:class:`JobFailed` as soon as any process fails or the job runs past its time limit; either
way every process it started has been killed when it returns.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import _jobs
from _hosts import Cluster
from mxrs.launcher.scheduler import SchedulerStartError, start_scheduler

#: MXNet's scheduler port (each job has fresh namespaces, so it is free).
MXNET_PORT = 9091
#: Set in every process of a run, so that tests can find them.
MARK_VAR = "BENCH_CLUSTER"
_EXIT_WAIT_S = 30.0  # for servers and the scheduler to end once the workers have
_POLL_S = 0.05
_FAIL_GRACE_S = 5.0  # for the rest of a failing job to exit, so that every failure is named


class JobFailed(RuntimeError):
    """A process of the job exited non-zero, or the job ran past its time limit."""


@dataclass(frozen=True)
class Layout:
    """Which host runs each server and each worker; ``mode`` is the KVStore type."""

    name: str
    hosts: int
    servers: tuple[int, ...]
    workers: tuple[int, ...]
    mode: str = "dist_sync"

    @classmethod
    def symmetric(cls, hosts: int, mode: str = "dist_sync") -> Layout:
        """One server and one worker on every host."""
        tag = "sync" if mode == "dist_sync" else "async"
        every = tuple(range(hosts))
        return cls(f"{hosts}h-{tag}", hosts, every, every, mode)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def run_job(
    cluster: Cluster,
    lib: str,
    layout: Layout,
    argv: list[str],
    logs: Path,
    timeout: float,
    threads: int = 1,
    extra_env: dict | None = None,
) -> list[dict]:
    """Run one job of ``lib`` on ``cluster`` placed as ``layout``, the workers running
    ``python ARGV`` (every process with ``extra_env`` set). Returns every JSON object the workers
    printed, in worker order."""
    if layout.hosts > cluster.hosts:
        raise JobFailed(
            f"layout {layout.name} needs {layout.hosts} hosts, cluster has {cluster.hosts}"
        )
    py = _jobs.python_for(lib)
    logs.mkdir(parents=True, exist_ok=True)
    nw, ns = len(layout.workers), len(layout.servers)
    root = cluster.addr(0)
    deadline = time.monotonic() + timeout
    procs: list[tuple[str, subprocess.Popen, Path]] = []
    files = []

    def env(role: str, host: int, port: int) -> dict:
        extra = {
            "DMLC_PS_ROOT_URI": root,
            "DMLC_NODE_HOST": cluster.addr(host),
            MARK_VAR: cluster.prefix,
            **(extra_env or {}),
        }
        return _jobs.job_env(lib, role, nw, ns, port, threads, extra)

    def log(name: str):
        f = open(logs / f"{name}.log", "w")  # noqa: SIM115  (closed in finally)
        files.append(f)
        return f

    try:
        if lib == "mxrs":
            out = log("scheduler")
            try:
                proc, port = start_scheduler(
                    cluster.exec_argv(0, [py, "-c", "import mxrs"]),
                    env("scheduler", 0, 0),
                    timeout=max(1.0, min(60.0, deadline - time.monotonic())),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            except SchedulerStartError as e:
                raise JobFailed(f"mxrs scheduler: {e}\n{_tail(logs / 'scheduler.log')}") from None
            procs.append(("scheduler", proc, logs / "scheduler.log"))
        else:
            port = MXNET_PORT
            cmd = cluster.exec_argv(0, [py, "-c", f"import {lib}"])
            p = subprocess.Popen(
                cmd,
                env=env("scheduler", 0, port),
                stdout=log("scheduler"),
                stderr=subprocess.STDOUT,
            )
            procs.append(("scheduler", p, logs / "scheduler.log"))
        for role, hosts, cmd in (
            ("server", layout.servers, [py, "-c", f"import {lib}"]),
            ("worker", layout.workers, [py, *argv]),
        ):
            for j, host in enumerate(hosts):
                name = f"{role}{j}"
                p = subprocess.Popen(
                    cluster.exec_argv(host, cmd),
                    env=env(role, host, port),
                    stdout=log(name),
                    stderr=subprocess.STDOUT,
                )
                procs.append((name, p, logs / f"{name}.log"))
        _wait(procs, nw, deadline, lib, layout)
        results = []
        for name, _, path in procs:
            if name.startswith("worker"):
                text = path.read_text(errors="replace")
                results += [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        if len(results) != nw:
            raise JobFailed(f"{lib} {layout.name}: {len(results)} of {nw} workers reported")
        return results
    finally:
        for _, p, _ in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for f in files:
            f.close()


def _fail(procs: list, lib: str, layout: Layout) -> None:
    """Raise :class:`JobFailed` naming every process that exited non-zero. One failure makes
    the others fail soon after (a lost peer is an error), and the first to fail may still be
    tearing down when its peers have exited: all get up to :data:`_FAIL_GRACE_S` to exit."""
    grace_end = time.monotonic() + _FAIL_GRACE_S
    while time.monotonic() < grace_end and any(p.poll() is None for _, p, _ in procs):
        time.sleep(_POLL_S)
    failed = [(name, p.returncode, path) for name, p, path in procs if p.poll() not in (None, 0)]
    names = "; ".join(f"{name} exited with {rc}" for name, rc, _ in failed)
    tails = "\n".join(f"--- {name}:\n{_tail(path, 1500)}" for name, _, path in failed)
    raise JobFailed(f"{lib} {layout.name}: {names}:\n{tails}")


def _wait(procs: list, workers: int, deadline: float, lib: str, layout: Layout) -> None:
    """Until every worker has exited 0 and then every other process too; a non-zero exit or
    the deadline raises :class:`JobFailed` with the culprit's last output."""
    worker_procs = procs[-workers:]
    others = procs[:-workers]
    done_at = None
    while True:
        if any(p.poll() not in (None, 0) for _, p, _ in procs):
            _fail(procs, lib, layout)
        if done_at is None and all(p.poll() == 0 for _, p, _ in worker_procs):
            done_at = time.monotonic()
        if done_at is not None and all(p.poll() == 0 for _, p, _ in others):
            return
        now = time.monotonic()
        if now > deadline or (done_at is not None and now - done_at > _EXIT_WAIT_S):
            late = [name for name, p, _ in procs if p.poll() is None]
            raise JobFailed(f"{lib} {layout.name}: ran past its time limit; still running: {late}")
        time.sleep(_POLL_S)
