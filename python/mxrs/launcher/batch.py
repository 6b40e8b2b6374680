"""What the ``mpi``, ``sge``, ``yarn`` and ``slurm`` launchers share.

Each of them hands the servers and workers to a tool (``mpirun``, ``qsub``, ``yarn``, ``srun`` or
``sbatch``) that starts them on machines it picks, while the scheduler still runs here (see
:mod:`.tracker`). This module holds what they have in common: the environment of a role, the
command of a role, where the scheduler is advertised, the job scripts the batch systems run, and
the files a submission needs. Those files hold the job secret, so they are written readable by
this user only (mode 0600, in a 0700 folder) and the secret never appears on a command line;
they also hold the scheduler's port, so they are made once the scheduler has announced it.
"""

import os
import re
import secrets
import shlex
import shutil
import socket
import sys

from . import clashes, tracker
from .job import Job, LaunchError, Node, interface_address, route_address

#: Variables of the launching shell that every process also gets (where to find Python and mxrs).
PASS_THROUGH = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PUBLIC = "192.0.2.1"  # TEST-NET-1: only used to ask which local address the default route has


def role_env(job: Job, role):
    """The variables of every process of ``role`` ('server' or 'worker'), rank aside."""
    extra = job.env_server if role == "server" else job.env_worker
    return {
        **job.base_env(),
        **extra,
        **job.metrics_env(role),
        **job.tls_env(f"{role}s"),
        "DMLC_ROLE": role,
    }


def pass_through(environ=None):
    """The :data:`PASS_THROUGH` variables set in ``environ`` (default: this process's)."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in PASS_THROUGH if k in environ}


def python_of(job: Job):
    """The Python that runs servers and the rank shim: the command's own, else this one."""
    return job.node_command(Node("server", 0, None))[0]


def server_command(job: Job):
    """argv of a server: ``python -c 'import mxrs'`` (mxrs runs the role DMLC_ROLE names)."""
    return job.node_command(Node("server", 0, None))


def rank_shim(job: Job, argv):
    """``argv`` run through :mod:`.mpi_rank`, which sets ``DMLC_WORKER_ID`` from the task rank."""
    return [python_of(job), "-m", "mxrs.launcher.mpi_rank", "--", *argv]


def extra_args(var):
    """Extra flags for a tool from environment variable ``var`` (shell-style words)."""
    try:
        return shlex.split(os.environ.get(var, ""))
    except ValueError as e:
        raise LaunchError(f"{var}: cannot split it into words ({e})") from None


def require(tool, launcher, dry_run):
    """Check that ``tool`` is on PATH (a dry run only prints, so there it may be missing)."""
    if not dry_run and shutil.which(tool) is None:
        raise LaunchError(f"the {launcher} launcher needs '{tool}', which is not on PATH")
    return tool


def advertise(job: Job):
    """Choose where the scheduler listens: ``--interface``'s address, else the address of the
    route to the first host, else of the default route (else this machine's name). Its port is
    the one it announces when it starts (see :mod:`.tracker`)."""
    iface = job.extra_env.get("DMLC_INTERFACE")
    if iface:
        host = interface_address(iface)
    elif job.hosts:
        first = job.hosts[0]
        host = route_address(getattr(first, "name", str(first)))
    else:
        try:
            host = route_address(_PUBLIC)
        except LaunchError:
            host = socket.getfqdn()
    job.root_host = host
    return host


def exports(env):
    """``export K='V'`` lines for ``env``, sorted by name; a name the shell cannot take is an
    error."""
    lines = []
    for k in sorted(env):
        if not _NAME.match(k):
            raise LaunchError(f"cannot pass variable {k!r} through a job script: not a shell name")
        lines.append(f"export {k}={shlex.quote(str(env[k]))}")
    return lines


def command_line(argv):
    """``argv`` as one shell-quoted line."""
    return " ".join(shlex.quote(a) for a in argv)


def script(job: Job, body, common=None, title="job"):
    """A POSIX sh job script: the shared variables exported, then ``body`` lines.

    ``common`` (default: the job's base environment and :func:`pass_through`) is what every
    process of the script gets; the role-specific variables are exported in ``body``.
    """
    if common is None:
        common = {**pass_through(), **job.base_env()}
    return (
        "\n".join(
            [
                "#!/bin/sh",
                f"# mxrs {title} script; it holds the job secret: keep it private.",
                *exports(common),
                *body,
            ]
        )
        + "\n"
    )


def role_lines(job: Job, role, argv, exec_=True):
    """Lines that export ``role``'s own variables and run ``argv``."""
    own = {**(job.env_server if role == "server" else job.env_worker), "DMLC_ROLE": role}
    return [*exports(own), ("exec " if exec_ else "") + command_line(argv)]


def cd_if_present(path=None):
    """A line that enters the launching directory where it exists (a shared file system)."""
    path = path or os.getcwd()
    q = shlex.quote(path)
    return f"if [ -d {q} ]; then cd {q}; fi"


class JobFiles:
    """The files a submission needs, in a fresh folder that only this user can read.

    Nothing is written until :meth:`write`; a dry run only :meth:`show` s them. :meth:`remove`
    deletes the files written (they hold the secret) and the folder if nothing else is in it
    (batch systems may have put the job's output there).
    """

    def __init__(self, parent, prefix):
        self.dir = os.path.join(os.path.abspath(parent), f"{prefix}-{secrets.token_hex(4)}")
        self.files = {}

    def add(self, name, text):
        """Plan file ``name`` with ``text``; returns its path."""
        path = os.path.join(self.dir, name)
        self.files[path] = text
        return path

    def write(self):
        """Create the folder (0700) and the files (0600)."""
        try:
            os.makedirs(self.dir, mode=0o700)
            for path, text in self.files.items():
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(text)
        except OSError as e:
            self.remove()
            raise LaunchError(f"cannot write the job files in {self.dir}: {e.strerror}") from None

    def show(self, secret, out=None):
        """Print each file with the secret masked, as a dry run shows them."""
        out = out or sys.stdout
        for path, text in self.files.items():
            print(f"[file] {path} (mode 0600):", file=out)
            for line in tracker.mask(text, secret).splitlines():
                print(f"[file]   {line}", file=out)

    def remove(self):
        """Delete the files written and, if then empty, the folder."""
        for path in self.files:
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


def show_env(label, env, secret, out=None):
    """Print ``env`` as a dry run shows a launch's environment, with the secret masked."""
    out = out or sys.stdout
    for k in sorted(env):
        print(f"[{label}]   env: {k}={tracker.mask(str(env[k]), secret)}", file=out)


def show_role_envs(job: Job):
    """On a dry run: the servers' and the workers' environments, secret masked."""
    for role in ("server", "worker"):
        show_env(f"{role}s", role_env(job, role), job.hidden())


def run_script(job: Job, launcher, script, submit, dry_run=False, output_of=None):
    """Run a job as one batch script: ``script(job)`` is its text (written as ``job.sh`` in a
    ``mxrs-LAUNCHER`` job folder) and ``submit(job, path, folder)`` the command that submits it
    and waits. Returns the job's exit status (see :func:`run_with_files`)."""

    def make(job):
        files = JobFiles(job_dir(), f"mxrs-{launcher}")
        path = files.add("job.sh", script(job))
        return files, [
            tracker.Launch(launcher, "worker", submit(job, path, files.dir), clashes.inherited())
        ]

    return run_with_files(job, make, dry_run, output_of=output_of)


def run_with_files(job: Job, make, dry_run=False, output_of=None, show_envs=False):
    """Run a job whose launches need files: ``make(job)`` returns ``(files, todo)``, a
    :class:`JobFiles` and the launches, once the scheduler announced its port (the files hold
    it); the files are written for as long as the job runs. A dry run shows the files instead
    (and with ``show_envs`` the roles' environments), the port as a placeholder. When
    ``output_of`` names the batch system, its output folder (the job folder) is kept and pointed
    to at the end. Returns the job's exit status."""
    if dry_run:
        files, todo = make(job)
        files.show(job.hidden(), sys.stdout)
        if show_envs:
            show_role_envs(job)
        return tracker.run(job, lambda _job: todo, dry_run=True)
    make(job)  # a bad setting it meets (MXRS_*_ARGS, a variable name) fails before any start
    written = []

    def plan(job):
        files, todo = make(job)
        written.append(files)
        files.write()
        return todo

    try:
        return tracker.run(job, plan)
    finally:
        for files in written:
            files.remove()
            if output_of and os.path.isdir(files.dir):  # what the batch system wrote there
                print(f"mxrs-launch: the {output_of} output is in {files.dir}", file=sys.stderr)


def job_dir():
    """Where batch job files go: ``MXRS_JOB_DIR``, else the launching directory (the batch
    systems read them on other machines, so this should be on a shared file system)."""
    return os.environ.get("MXRS_JOB_DIR") or os.getcwd()
