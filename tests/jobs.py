"""Helpers that run parameter-server jobs of real processes on 127.0.0.1 for the tests."""

import contextlib
import os
import random
import socket
import subprocess
import sys
import textwrap

from mxrs.launcher.scheduler import start_scheduler

TIMEOUT = 120


def launch(tmp_path, script, n=2, s=2, env=(), timeout=TIMEOUT, args=(), launcher_args=()):
    """Run ``script`` (Python source) as the workers of an ``mxrs-launch local`` job, with
    ``launcher_args`` among mxrs-launch's own options."""
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(script))
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", str(n), "-s", str(s)]
    for kv in env:
        cmd += ["--env", kv]
    cmd += [*launcher_args, sys.executable, str(path), *args]
    return run_launcher(cmd, timeout=timeout, cwd=tmp_path)


def run_launcher(cmd, timeout=TIMEOUT, **popen):
    """Run an ``mxrs-launch`` command line to its end, output captured as text; past
    ``timeout`` it gets SIGTERM, on which it stops every process it started before it exits
    (SIGKILL, as ``subprocess.run`` sends, would leave them running), and the timeout is
    raised."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def node_env(role, port, workers=2, servers=2, **extra):
    """The environment of one process of a job whose scheduler listens on ``port``."""
    env = dict(os.environ)
    env.update(
        DMLC_ROLE=role,
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(port),
        DMLC_NUM_SERVER=str(servers),
        DMLC_NUM_WORKER=str(workers),
        DMLC_NODE_HOST="127.0.0.1",
        MXRS_SECRET="test-secret",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


@contextlib.contextmanager
def scheduler_and_servers(workers=2, servers=2, **extra):
    """Start a scheduler and ``servers`` servers; yields the port; kills what it started."""
    with job_nodes(workers, servers, **extra) as (port, _):
        yield port


@contextlib.contextmanager
def job_nodes(workers=2, servers=2, **extra):
    """Start a scheduler, on the port it announces, and ``servers`` servers; yields the port and
    their processes (scheduler first); kills what it started."""
    scheduler, port = start_scheduler(
        [sys.executable, "-c", "import mxrs"], node_env("scheduler", 0, workers, servers, **extra)
    )
    procs = [scheduler]
    try:
        procs += [
            subprocess.Popen(
                [sys.executable, "-c", "import mxrs"],
                env=node_env("server", port, workers, servers, **extra),
            )
            for _ in range(servers)
        ]
        yield port, procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def start_worker(port, script, workers=2, servers=2, stdin=None, **extra):
    """Start one worker running ``script``; stdout and stderr are captured as text."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=node_env("worker", port, workers, servers, **extra),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tagged_processes(tag, rank_var="DMLC_WORKER_ID"):
    """Live processes whose environment carries ``MXRS_TEST_TAG=tag``.

    Returns
    -------
    dict
        pid -> (DMLC_ROLE, the value of ``rank_var``, basename of argv[0]), as str.
    """
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = os.path.basename(f.read().split(b"\0")[0]).decode(errors="replace")
        except OSError:
            continue
        if env.get(b"MXRS_TEST_TAG") == tag.encode() and state != "Z":
            found[int(pid)] = (
                env.get(b"DMLC_ROLE", b"").decode(),
                env.get(rank_var.encode(), b"").decode(),
                argv0,
            )
    return found


def _below_ephemeral():
    """The first port the kernel hands out to outgoing connections (32768 where unknown)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n):
    """A port P with P..P+n-1 all free now (on 127.0.0.1), below the ephemeral range: a job's
    own outgoing connections take ephemeral ports, and one took a port picked there before its
    server bound it."""
    top = _below_ephemeral() - n
    for _ in range(50):
        base = random.randrange(10000, max(top, 10001))
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports")
