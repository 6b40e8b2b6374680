"""Variables that would clash between the processes of a job, and what mxrs-launch does with each.

Every process of a job starts from the same settings: ``--env``, its role's ``--env-server`` or
``--env-worker``, and, with the launchers of :data:`INHERITING`, mxrs-launch's own environment.
A variable naming something only one process may hold (a port it listens on, a file it writes,
its rank) would be given to several at once: the second server to bind ``MXRS_PORT`` fails
with "Address already in use" and takes the job with it. :data:`RULES` says, for each such
variable a node or a worker reads, what the launcher does instead:

``per-node``
    The launcher sets it for each process itself (``DMLC_ROLE``, the ranks, ``MXRS_ANNOUNCE``
    for the scheduler's pipe) or each node finds its own (``DMLC_NODE_HOST``). A value inherited
    from mxrs-launch's environment is dropped (:func:`inherited`); one given with ``--env``,
    ``--env-server`` or ``--env-worker`` is refused (:func:`check`).
``metrics``
    ``MXRS_METRICS_PORT=P`` in mxrs-launch's environment or ``--env`` means ``--metrics-port P``
    (:func:`metrics_port`): the scheduler serves on P, server i on P+1+i, workers get none. An
    explicit ``--metrics-port`` wins. Per role (``--env-server``) it is refused.
``server-port``
    ``MXRS_PORT``, the port a server listens on, is passed as it is while no two servers may
    share a machine (or an address: each Kubernetes pod has its own), and refused otherwise
    (every server would bind the same port).
``worker-file``
    ``MXRS_TIMELINE``: the local and ssh launchers give each worker a file of its own
    (:mod:`.timeline`); the batch launchers start every worker with the same settings, so there
    it is refused.

Before a local job starts, :func:`check_free_ports` binds each fixed port the job's nodes will
listen on, so that a port another program holds is named before anything runs.
"""

import errno
import os
import socket
from collections import Counter
from dataclasses import dataclass

from . import timeline
from .job import Job, LaunchError


@dataclass(frozen=True)
class Rule:
    """What the launcher does with a variable: ``how`` (see the module), what it is for, and
    what to do instead of giving it (``hint``, for refusals)."""

    how: str
    what: str
    hint: str = ""


#: The variables a node or worker reads that would clash between processes, by name.
RULES = {
    "DMLC_ROLE": Rule("per-node", "each process's role"),
    "DMLC_WORKER_ID": Rule("per-node", "each worker's rank"),
    "DMLC_SERVER_ID": Rule("per-node", "each server's rank"),
    "DMLC_NODE_HOST": Rule(
        "per-node", "the address each node binds", "; --interface IFACE chooses the network"
    ),
    "MXRS_ANNOUNCE": Rule("per-node", "the pipe where the scheduler announces its port"),
    "MXRS_METRICS_PORT": Rule("metrics", "the port a node serves Prometheus metrics on"),
    "MXRS_PORT": Rule("server-port", "the port a server listens on"),
    "MXRS_TIMELINE": Rule("worker-file", "the file a worker writes its timeline to"),
}

#: Launchers whose servers and workers inherit mxrs-launch's own environment.
INHERITING = ("local", "mpi", "slurm")
#: Launchers that give each worker a timeline file of its own.
PER_WORKER_FILES = ("local", "ssh")

#: What places the servers on machines, for the launchers that do not place them themselves.
_PLACED_BY = {"mpi": "mpirun", "sge": "SGE", "yarn": "YARN", "slurm": "Slurm"}

_METRICS = "MXRS_METRICS_PORT"
_PORT = "MXRS_PORT"
_ROOT = "the scheduler's port"
_DROPPED = tuple(k for k, r in RULES.items() if r.how in ("per-node", "metrics"))


def inherited(environ=None):
    """dict: ``environ`` (default mxrs-launch's own) as a process of the job inherits it: without
    the variables the launcher sets for each process itself (``per-node`` and ``metrics``)."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if k not in _DROPPED}


def metrics_port(extra_env, num_servers, environ=None):
    """The job's metrics port that ``MXRS_METRICS_PORT`` asks for, or None when it is not set.

    ``--env``'s value (taken out of ``extra_env``, so that no process gets it as it is) comes
    before mxrs-launch's own environment's. A value that is not a port, or leaves no room for
    the scheduler and ``num_servers`` servers (P+1+i each), raises :class:`LaunchError` naming
    the variable.
    """
    environ = os.environ if environ is None else environ
    if _METRICS in extra_env:
        raw = extra_env.pop(_METRICS).strip()
        source = f"--env {_METRICS}={raw}"
    else:
        raw = environ.get(_METRICS, "").strip()
        source = f"{_METRICS}={raw} (in mxrs-launch's environment)"
    if not raw:
        return None
    top = 65535 - 1 - num_servers
    if not raw.isdigit() or int(raw) > top:
        raise LaunchError(
            f"{source}: expected a port P, 0-{top}, that leaves room for the scheduler "
            f"(P) and {num_servers} servers (P+1+i; 0: any free port each)"
        )
    return int(raw)


def check(job: Job, launcher, environ=None):
    """Refuse settings that would clash between ``job``'s processes under ``launcher``.

    Raises :class:`LaunchError` saying which variable, why, and what to do instead.
    """
    environ = os.environ if environ is None else environ
    given = (("--env", job.extra_env), ("--env-server", job.env_server))
    for flag, env in (*given, ("--env-worker", job.env_worker)):
        for name in env:
            rule = RULES.get(name)
            if rule is not None and rule.how == "per-node":
                raise LaunchError(
                    f"{flag} {name}: mxrs-launch sets {rule.what} for each process itself; "
                    f"every process would get the same value{rule.hint}"
                )
    for flag, env in (("--env-server", job.env_server), ("--env-worker", job.env_worker)):
        if _METRICS in env:
            raise LaunchError(
                f"{flag} {_METRICS}: use --metrics-port P (or {_METRICS}=P for the whole job): "
                "the scheduler serves on P and server i on P+1+i, each on a port of its own"
            )
    _check_server_port(job, launcher, given, environ)
    if launcher not in PER_WORKER_FILES:
        parts = timeline.requested(job)
        if parts is not None:
            raise LaunchError(
                f"{timeline.ENV}={parts.target}: the {launcher} launcher starts every worker "
                "with the same settings, so it cannot give each a timeline file of its own; "
                f"use the {' or '.join(PER_WORKER_FILES)} launcher for a timeline, or unset "
                f"{timeline.ENV}"
            )


def _check_server_port(job, launcher, given, environ):
    sources = list(given)
    if launcher in INHERITING:
        sources.append(("mxrs-launch's environment", environ))
    found = [(where, env[_PORT]) for where, env in sources if _fixed(env.get(_PORT, ""))]
    if not found:
        return
    where, value = found[0]
    shared = _shared(job, launcher)
    if shared is None:
        return
    raise LaunchError(
        f"{_PORT}={value} (from {where}) is the port every server listens on, and {shared}: "
        "the second to bind it would fail with 'Address already in use'. Unset it (each server "
        "then takes a free port and the scheduler tells the workers), or run one server per "
        "machine"
    )


def _shared(job, launcher):
    """Why two of ``job``'s servers may share a machine under ``launcher``; None if they cannot."""
    servers = job.num_servers
    if servers < 2 or launcher == "kubernetes":  # every pod has an address of its own
        return None
    if launcher == "local":
        return f"the local launcher runs all {servers} servers on this machine"
    if launcher == "ssh":
        hosts = list(job.hosts or ["127.0.0.1"])
        counts = Counter(hosts[i % len(hosts)] for i in range(servers))
        host, n = counts.most_common(1)[0]
        return None if n < 2 else f"{n} of the {servers} servers run on {host}"
    tool = _PLACED_BY.get(launcher, launcher)
    return f"{tool} places the {servers} servers, and may put two on one machine"


def _fixed(value):
    """Whether ``value`` is a fixed port (not 0, which takes any free one)."""
    value = value.strip()
    return value.isdigit() and int(value) != 0


def planned_ports(job: Job, environ=None):
    """``[(port, what)]``: the fixed ports ``job``'s nodes will listen on, all of them on one
    machine (as the local launcher runs them); ports taken by chance (0) are left out."""
    out = []
    if job.root_port:
        out.append((job.root_port, _ROOT))
    if job.metrics_port:
        out.append((job.metrics_port, "the scheduler's metrics"))
        out += [(job.metrics_port + 1 + i, f"server {i}'s metrics") for i in range(job.num_servers)]
    env = {**inherited(environ), **job.extra_env, **job.env_server}
    data = env.get(_PORT, "")
    if _fixed(data):
        out += [(int(data), f"server {i}'s port") for i in range(job.num_servers)]
    return out


def check_free_ports(job: Job, host, environ=None):
    """Before a job whose nodes all run on this machine starts: raise :class:`LaunchError`
    naming a port two of its nodes would share, or one they will bind on ``host`` that is
    already in use (the scheduler's own port aside: the scheduler says so itself)."""
    planned = planned_ports(job, environ)
    seen: dict[int, str] = {}
    for port, what in planned:
        if port in seen:
            raise LaunchError(f"port {port} would be both {seen[port]} and {what}")
        seen[port] = what
    for port, what in planned:
        if what == _ROOT:
            continue
        why = _bind_error(host, port)
        if why is not None:
            hint = "choose another --metrics-port" if "metrics" in what else f"unset {_PORT}"
            raise LaunchError(f"port {port} ({what}) is {why} on {host}; {hint}")


def _bind_error(host, port):
    """None when ``host:port`` can be bound now (as a node binds it), else why not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the nodes bind
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return "already in use"
            return f"not free to bind ({e.strerror or e})"
    return None
