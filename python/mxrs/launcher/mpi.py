"""The ``mpi`` launcher: servers and workers started by ``mpirun`` over the hostfile's hosts.

As MXNet's ``tools/launch.py --launcher mpi``: one ``mpirun -n S`` starts the servers and one
``mpirun -n W`` the workers, both over a hostfile written from ``-H`` (``host slots=N``). The
job's variables are passed by name (Open MPI ``-x VAR``, MPICH ``-genvlist A,B``) with their
values in mpirun's own environment, so the secret is on no command line. Workers run through
:mod:`.mpi_rank`, which makes the MPI rank the worker id.

Settings (environment): ``MXRS_MPI_FLAVOR`` = ``openmpi`` or ``mpich`` overrides what
``mpirun --version`` says; ``MXRS_MPIRUN_ARGS`` adds flags to both mpiruns (for example
``--allow-run-as-root --oversubscribe``).
"""

import contextlib
import os
import socket
import subprocess
import tempfile

from . import batch, clashes, tracker
from .job import Job, LaunchError

FLAVORS = ("openmpi", "mpich")


def flavor(dry_run=False):
    """'openmpi' or 'mpich': ``MXRS_MPI_FLAVOR``, else what ``mpirun --version`` prints."""
    forced = os.environ.get("MXRS_MPI_FLAVOR", "").strip().lower()
    if forced:
        if forced not in FLAVORS:
            raise LaunchError(f"MXRS_MPI_FLAVOR={forced}: expected one of {', '.join(FLAVORS)}")
        return forced
    try:
        r = subprocess.run(
            ["mpirun", "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        if dry_run:
            return "openmpi"
        raise LaunchError(f"cannot run 'mpirun --version': {e}") from None
    text = r.stdout + r.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "mpich" in text.lower():
        return "mpich"
    raise LaunchError(
        "mpirun is neither Open MPI nor MPICH (its --version says "
        f"{text.strip().splitlines()[0] if text.strip() else 'nothing'!r}); "
        "set MXRS_MPI_FLAVOR=openmpi|mpich"
    )


def hostfile_text(hosts, mpi):
    """The hosts in the hostfile format of ``mpi``: ``host slots=N`` or MPICH's ``host:N``."""
    lines = []
    for h in hosts:
        name, slots = getattr(h, "name", str(h)), getattr(h, "slots", 1)
        lines.append(f"{name} slots={slots}" if mpi == "openmpi" else f"{name}:{slots}")
    return "\n".join(lines) + "\n"


def mpirun(mpi, count, hostfile, names, argv):
    """An ``mpirun`` command line starting ``count`` copies of ``argv`` with variables ``names``
    passed by name."""
    cmd = ["mpirun", *batch.extra_args("MXRS_MPIRUN_ARGS")]
    if mpi == "openmpi":  # rank-tagged output comes whole lines at a time
        cmd += ["--tag-output", "--hostfile", hostfile, "-n", str(count)]
        for name in names:
            cmd += ["-x", name]
    else:
        cmd += ["-prepend-rank", "-f", hostfile, "-n", str(count), "-genvlist", ",".join(names)]
    return cmd + list(argv)


def launches(job: Job, mpi, hostfile):
    """The two mpiruns: servers, then workers (through the rank shim)."""
    out = []
    for role, count, argv in (
        ("server", job.num_servers, batch.server_command(job)),
        ("worker", job.num_workers, batch.rank_shim(job, job.command)),
    ):
        env = {**batch.pass_through(), **batch.role_env(job, role)}
        names = sorted(env)
        cmd = mpirun(mpi, count, hostfile, names, argv)
        out.append(
            tracker.Launch(f"{role}s", role, cmd, {**clashes.inherited(), **env}, count=count)
        )
    return out


@contextlib.contextmanager
def session_kept(tmpdir=None):
    """Keeps Open MPI 4's session directory on this host (``$TMPDIR/ompi.HOST.UID``, private
    to the user) while the job runs; yields the folder of this launcher's that keeps it (None
    where it cannot be made: mpirun then says why).

    Each mpirun, as it starts, deletes the files in that directory and removes it when that
    leaves it empty (what a finished job left); the servers' and the workers' mpiruns start
    together, and one that makes its own session directory in it meanwhile fails ("No such
    file or directory", ``orte_session_dir failed``). A folder of its own in it keeps it: mpirun
    leaves folders that are not its own alone.
    """
    host = socket.gethostname().split(".")[0]
    top = os.path.join(tmpdir or tempfile.gettempdir(), f"ompi.{host}.{os.getuid()}")
    keeper = os.path.join(top, f"mxrs-launch.{os.getpid()}")
    made = None
    for _ in range(10):
        try:
            os.makedirs(top, 0o700, exist_ok=True)
        except OSError:
            break
        try:
            os.mkdir(keeper, 0o700)
        except FileNotFoundError:
            continue  # another job's mpirun removed `top` meanwhile
        except FileExistsError:
            made = keeper  # this process's own, from an earlier job: kept the same
        except OSError:
            pass
        else:
            made = keeper
        break
    if made is not None:
        _remove_orphans(top)
    try:
        yield made
    finally:
        if made is not None:
            with contextlib.suppress(OSError):
                os.rmdir(made)


def _remove_orphans(top):
    """Removes the folders of launchers that were killed before they removed their own (by
    SIGKILL): each would keep ``top`` for ever."""
    with contextlib.suppress(OSError):
        for name in os.listdir(top):
            pid = name.removeprefix("mxrs-launch.")
            if pid == name or not pid.isdigit():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(top, name))
            except OSError:
                pass  # alive (another user's, were the directory shared)


def submit(job: Job, dry_run=False):
    """Run ``job``'s servers and workers with mpirun on ``job.hosts``; returns the exit status."""
    if not job.hosts:
        raise LaunchError("the mpi launcher needs -H/--hostfile")
    batch.require("mpirun", "mpi", dry_run)
    mpi = flavor(dry_run)
    batch.advertise(job)

    def make(job):
        files = batch.JobFiles(tempfile.gettempdir(), "mxrs-mpi")
        hostfile = files.add("hostfile", hostfile_text(job.hosts, mpi))
        return files, launches(job, mpi, hostfile)

    kept = session_kept() if mpi == "openmpi" and not dry_run else contextlib.nullcontext()
    with kept:
        return batch.run_with_files(job, make, dry_run, show_envs=True)
