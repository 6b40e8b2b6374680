"""What every launcher shares: the scheduler on the launching host, then supervision.

A launcher turns a :class:`~.job.Job` into :class:`Launch` entries (the local commands that
start each server and worker, through ssh, mpirun, srun...); :func:`run` starts the scheduler
here, waits for the port it announces (:mod:`.scheduler`), then makes and starts the entries,
prefixes their output and ends the job on the first failure, or with ``dry_run`` prints the
exact commands, with :data:`~.job.PORT_PLACEHOLDER` for the port, and starts nothing.
"""

import contextlib
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, field

from . import clashes, timeline
from .job import PORT_PLACEHOLDER, Job, LaunchError, Node
from .scheduler import SchedulerStartError, start_scheduler
from .supervise import Supervisor

SECRET_MASK = "<secret>"


@dataclass
class Launch:
    """One local process that starts part of the job.

    ``stdin`` is written to the process and the pipe is kept open while the job runs (ssh uses
    it to hand over the environment without a command line, and its closing stops the remote
    side). ``role`` is 'worker' when the process's success means a worker finished. ``count``
    is how many of the job's processes it starts (one mpirun, srun or YARN client starts all
    of a role's): they fail together.
    """

    label: str
    role: str
    argv: list
    env: dict = field(default_factory=dict)
    stdin: bytes | None = None
    host: str = "localhost"
    count: int = 1


def scheduler_launch(job: Job):
    """The scheduler, as a process of the launching host."""
    node = job.nodes()[0]
    env = {**clashes.inherited(), **node.env}
    return Launch(node.label, node.role, job.node_command(node), env)


def mask(text, secrets):
    """``text`` with each of ``secrets`` (a string, or several: the job's secret and TLS keys,
    :meth:`~.job.Job.hidden`) shown as :data:`SECRET_MASK`."""
    for s in [secrets] if isinstance(secrets, str) else sorted(secrets, key=len, reverse=True):
        if s:
            text = text.replace(s, SECRET_MASK)
    return text


def describe(launch: Launch, secret):
    """The dry-run line(s) for ``launch``: host, command, and stdin, with the secret (or the
    secrets, see :func:`mask`) masked."""
    argv = mask(" ".join(shlex.quote(a) for a in launch.argv), secret)
    lines = [f"[{launch.label}] on {launch.host}: {argv}"]
    if launch.stdin:
        text = mask(launch.stdin.decode(), secret)
        lines += [f"[{launch.label}]   stdin: {ln}" for ln in text.splitlines() if ln]
    return "\n".join(lines)


def run(job: Job, plan, dry_run=False, out=None):
    """Start the scheduler, then the launches ``plan(job)`` returns, and supervise them all;
    returns the job's exit status.

    ``plan`` is called once ``job.root_port`` is the port the scheduler announced (in a dry run:
    0, which the job's environments show as :data:`~.job.PORT_PLACEHOLDER`). A scheduler that
    fails before announcing stops everything and raises :class:`~.job.LaunchError`.
    """
    sched = scheduler_launch(job)
    if dry_run:
        out = out or sys.stdout
        print(describe(sched, job.hidden()), file=out)
        port = job.root_port or (
            f"{PORT_PLACEHOLDER} (any free one, which the scheduler announces once listening)"
        )
        print(f"[{sched.label}]   port: {port}", file=out)
        for launch in plan(job):
            print(describe(launch, job.hidden()), file=out)
        return 0
    sup = Supervisor(progress=job.progress)
    signals = _Signals()
    parts = timeline.prepare(job)  # None unless MXRS_TIMELINE asks for one
    try:
        job.root_port = _start_scheduler(sup, sched, signals)
        if job.metrics_port:
            p, last = job.metrics_port, job.metrics_port + job.num_servers
            sup.say(
                f"Prometheus metrics at http://{job.root_host}:{p}/metrics (scheduler) and "
                f"on ports {p + 1}-{last} of the servers' hosts (server i: {p}+1+i)"
            )
        for launch in plan(job):
            with signals.held():
                expendable = launch.role == "server" and _survivable(job, launch.count)
                restarts = job.max_restarts if launch.role == "worker" or expendable else 0
                sup.start(
                    launch.label,
                    launch.role,
                    launch.argv,
                    launch.env,
                    stdin=launch.stdin,
                    restarts=restarts,
                    expendable=expendable,
                )
        return sup.wait()
    except _Interrupted as e:
        sup.stop()
        print(
            f"mxrs-launch: interrupted (signal {e.signum}); stopping the job",
            file=sys.stderr,
            flush=True,
        )
        return 128 + e.signum
    except BaseException:
        sup.stop()
        raise
    finally:
        signals.restore()
        timeline.merge(parts)


def _survivable(job: Job, lost):
    """Whether the job keeps every key when ``lost`` of its servers fail together: each key
    has ``job.replicas`` backups on the servers after its own, so any ``replicas`` of them
    may go. A launch that starts every server at once (``count`` of :class:`Launch`) is never
    one: when it fails, the job cannot go on (nor form, when it fails at start)."""
    return 0 < lost <= job.replicas


def _start_scheduler(sup, sched, signals):
    """Start ``sched`` under ``sup``; returns the port it announced."""

    def popen(argv, env, pass_fds):
        with signals.held():
            return sup.start(sched.label, sched.role, argv, env, pass_fds=pass_fds)

    try:
        return start_scheduler(sched.argv, sched.env, popen=popen)[1]
    except SchedulerStartError as e:
        sup.stop()
        lines = sup.last_lines(sched.label)
        shown = f"; its last lines:\n{lines}" if lines else ""
        raise LaunchError(f"{e}; stopping the job{shown}") from None


class _Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """While the job starts, SIGINT and SIGTERM raise :class:`_Interrupted` here (the supervisor
    takes them over while it watches the job), so a signal still stops what was started; within
    :meth:`held` (a process being started and recorded) the signal waits for the block's end."""

    def __init__(self):
        self._held = False
        self._pending = None
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._previous[s] = signal.signal(s, self._on_signal)

    def _on_signal(self, signum, _frame):
        if self._held:
            self._pending = self._pending or signum
        else:
            raise _Interrupted(signum)

    @contextlib.contextmanager
    def held(self):
        self._held = True
        try:
            yield
        finally:
            self._held = False
            if self._pending:
                raise _Interrupted(self._pending)

    def restore(self):
        for s, h in self._previous.items():
            signal.signal(s, h)


def node_launch(job: Job, node: Node, argv, env, stdin=None):
    """A :class:`Launch` for ``node`` with the given local command."""
    return Launch(node.label, node.role, argv, env, stdin, str(node.host))
