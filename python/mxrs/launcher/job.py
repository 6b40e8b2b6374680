"""A job's processes: roles, ranks, placement on hosts and the environment each one gets."""

import fcntl
import os
import secrets
import socket
import struct
import sys
from dataclasses import dataclass, field

from . import timeline
from .tls import JobTls

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: What stands for the scheduler's port before it announces it (in dry runs).
PORT_PLACEHOLDER = "<port>"


class LaunchError(Exception):
    """A problem found before anything starts (bad hostfile, unreachable host, bad flag)."""


@dataclass
class Node:
    """One process of a job: its role, rank, host and the environment it is started with."""

    role: str
    rank: int
    host: object  # a hostfile.Host, or the launching host's address for the scheduler
    env: dict = field(default_factory=dict)

    @property
    def label(self):
        """str: how its output lines are prefixed, e.g. ``worker 1``."""
        return self.role if self.role == "scheduler" else f"{self.role} {self.rank}"


@dataclass
class Job:
    """A job's shape and settings: W workers, S servers and one scheduler on the launching host.

    ``root_host``/``root_port`` are where the scheduler listens; ``root_port`` is 0 (any free
    port) until the scheduler announces the one it got, unless the user gave one. ``hosts`` are
    where servers and workers go, round-robin. Every process gets the ``DMLC_*`` variables, the
    job secret, ``env`` and, by role, ``env_server`` or ``env_worker``.
    """

    num_workers: int
    num_servers: int
    command: list
    hosts: list = field(default_factory=list)
    root_host: str = "127.0.0.1"
    root_port: int = 0
    extra_env: dict = field(default_factory=dict)
    env_server: dict = field(default_factory=dict)
    env_worker: dict = field(default_factory=dict)
    sync_dst_dir: str | None = None
    #: How many times each worker is started again after it fails (``--max-restarts``).
    max_restarts: int = 0
    #: Backups of each server's keys (``--replicas``): a failed server does not end the job.
    replicas: int = 0
    #: Whose progress bars the console redraws live (``--progress``: worker0, all, off).
    progress: str = "worker0"
    #: ``--metrics-port P``: the scheduler serves Prometheus metrics on P, server i on P+1+i
    #: (0: each on any free port, which it says); None: no endpoints.
    metrics_port: int | None = None
    secret: str = field(default_factory=lambda: secrets.token_hex(32))
    #: ``--tls``: the job's certificates (:class:`~.tls.JobTls`), or None: links without TLS.
    tls: JobTls | None = None

    def hidden(self):
        """The values dry runs mask: the job's secret and, with TLS, the private keys."""
        return [self.secret, *(self.tls.secrets() if self.tls is not None else ())]

    def tls_env(self, *labels):
        """``MXRS_TLS_*`` when the job runs with TLS: of the first of ``labels`` (a node's,
        ``worker 1``, then its role's, ``workers``) that has a certificate."""
        if self.tls is None:
            return {}
        label = next(x for x in labels if x in self.tls.certs)
        return self.tls.env(label)

    def base_env(self):
        """The variables every process of the job gets (the port is :data:`PORT_PLACEHOLDER`
        while it is not known yet)."""
        return {
            "DMLC_PS_ROOT_URI": self.root_host,
            "DMLC_PS_ROOT_PORT": str(self.root_port) if self.root_port else PORT_PLACEHOLDER,
            "DMLC_NUM_SERVER": str(self.num_servers),
            "DMLC_NUM_WORKER": str(self.num_workers),
            "MXRS_SECRET": self.secret,
            # Each process says what it did, on one line at exit, for the job summary.
            "MXRS_REPORT": "1",
            **self.extra_env,
        }

    def metrics_env(self, role, rank=None):
        """``MXRS_METRICS_PORT`` for the scheduler or server ``rank`` (None: a server whose rank
        is known only once it runs, which takes any free port), when the job has endpoints."""
        if self.metrics_port is None or role == "worker":
            return {}
        if self.metrics_port == 0 or (role == "server" and rank is None):
            return {"MXRS_METRICS_PORT": "0"}
        offset = 0 if role == "scheduler" else 1 + rank
        return {"MXRS_METRICS_PORT": str(self.metrics_port + offset)}

    def nodes(self, hosts=None):
        """The scheduler, then servers and workers placed on ``hosts`` round-robin."""
        hosts = list(hosts or self.hosts or ["127.0.0.1"])
        base = self.base_env()
        out = [
            Node(
                "scheduler",
                0,
                self.root_host,
                {
                    **base,
                    "DMLC_ROLE": "scheduler",
                    "DMLC_NODE_HOST": self.root_host,
                    "DMLC_PS_ROOT_PORT": str(self.root_port),
                    **self.metrics_env("scheduler"),
                    **self.tls_env("scheduler"),
                },
            )
        ]  # 0: any, announced
        for i in range(self.num_servers):  # ranks fixed, so the job's names match the labels
            env = {**base, **self.env_server, "DMLC_ROLE": "server", "DMLC_SERVER_ID": str(i)}
            env.update(self.metrics_env("server", i))
            env.update(self.tls_env(f"server {i}", "servers"))
            out.append(Node("server", i, hosts[i % len(hosts)], env))
        for i in range(self.num_workers):
            env = {**base, **self.env_worker, "DMLC_ROLE": "worker", "DMLC_WORKER_ID": str(i)}
            env.update(timeline.worker_env(self, i))
            env.update(self.tls_env(f"worker {i}", "workers"))
            out.append(Node("worker", i, hosts[i % len(hosts)], env))
        return out

    def node_command(self, node):
        """The command a node runs: the user's command for workers, ``import mxrs`` otherwise."""
        if node.role == "worker":
            return list(self.command)
        python = self.command[0] if _is_python(self.command[0]) else sys.executable
        return [python, "-c", "import mxrs"]

    def count(self, role):
        """int: how many processes of ``role`` ('server' or 'worker') the job runs."""
        return self.num_servers if role == "server" else self.num_workers

    def workers_on(self, host):
        """int: how many workers are placed on ``host``."""
        hosts = list(self.hosts or ["127.0.0.1"])
        return sum(1 for i in range(self.num_workers) if hosts[i % len(hosts)] == host)


def _is_python(word):
    return os.path.basename(word).startswith("python")


def compute_threads(cpus, workers_here):
    """Math-library thread counts for processes sharing ``cpus`` cores with other workers.

    Every BLAS library starts one thread per core by default; several workers on one machine
    then oversubscribe the cores and spin against each other (tens of times slower). Each worker
    gets its share of the cores instead; a value already in the environment wins.
    """
    n = str(max(1, cpus // max(1, workers_here)))
    return {var: n for var in THREAD_VARS}


def interface_address(iface):
    """The IPv4 address of network interface ``iface`` (``--interface``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(
                s.fileno(),
                0x8915,  # SIOCGIFADDR
                struct.pack("256s", iface.encode()[:15]),
            )
        except OSError as e:
            raise LaunchError(f"--interface {iface}: no IPv4 address ({e.strerror})") from None
    return socket.inet_ntoa(packed[20:24])


def route_address(host):
    """The local address this machine uses to reach ``host``."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return s.getsockname()[0]
    except OSError as e:
        raise LaunchError(f"host {host}: cannot route to it ({e.strerror or e})") from None


def parse_env(pairs):
    """``['K=V', ...]`` -> dict; a pair without '=' passes this process's value of ``K``."""
    out = {}
    for p in pairs or ():
        k, sep, v = p.partition("=")
        if not k:
            raise LaunchError(f"--env {p!r}: expected KEY=VALUE")
        if not sep:
            if k not in os.environ:
                raise LaunchError(f"--env {k}: not set in this environment")
            v = os.environ[k]
        if "\n" in v or "\0" in v:
            raise LaunchError(f"--env {k}: the value may not contain a newline or NUL")
        out[k] = v
    return out
