"""What every launcher shares: the scheduler on the launching host, then supervision.

A launcher turns a :class:`~.job.Job` into :class:`Launch` entries (the local commands that
start each server and worker, through ssh, mpirun, srun...); :func:`run` starts the scheduler
here, starts the entries, prefixes their output and ends the job on the first failure, or with
``dry_run`` prints the exact commands and starts nothing.
"""

import os
import shlex
import sys
from dataclasses import dataclass, field

from .job import Job, Node
from .supervise import Supervisor

SECRET_MASK = "<secret>"


@dataclass
class Launch:
    """One local process that starts part of the job.

    ``stdin`` is written to the process and the pipe is kept open while the job runs (ssh uses
    it to hand over the environment without a command line, and its closing stops the remote
    side). ``role`` is 'worker' when the process's success means a worker finished.
    """

    label: str
    role: str
    argv: list
    env: dict = field(default_factory=dict)
    stdin: bytes | None = None
    host: str = "localhost"


def scheduler_launch(job: Job):
    """The scheduler, as a process of the launching host."""
    node = job.nodes()[0]
    env = {**os.environ, **node.env}
    return Launch(node.label, node.role, job.node_command(node), env)


def describe(launch: Launch, secret):
    """The dry-run line(s) for ``launch``: host, command, and stdin, with the secret masked."""
    argv = " ".join(shlex.quote(a) for a in launch.argv).replace(secret, SECRET_MASK)
    lines = [f"[{launch.label}] on {launch.host}: {argv}"]
    if launch.stdin:
        text = launch.stdin.decode().replace(secret, SECRET_MASK)
        lines += [f"[{launch.label}]   stdin: {ln}" for ln in text.splitlines() if ln]
    return "\n".join(lines)


def run(job: Job, launches, dry_run=False, out=None):
    """Start the scheduler and ``launches`` and supervise them; returns the job's exit status."""
    all_launches = [scheduler_launch(job), *launches]
    if dry_run:
        out = out or sys.stdout
        for launch in all_launches:
            print(describe(launch, job.secret), file=out)
        return 0
    sup = Supervisor()
    for launch in all_launches:
        sup.start(launch.label, launch.role, launch.argv, launch.env, stdin=launch.stdin)
    return sup.wait()


def node_launch(job: Job, node: Node, argv, env, stdin=None):
    """A :class:`Launch` for ``node`` with the given local command."""
    return Launch(node.label, node.role, argv, env, stdin, str(node.host))
