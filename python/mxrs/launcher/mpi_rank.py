"""``python -m mxrs.launcher.mpi_rank -- command...``: run a worker with its rank as worker id.

``mpirun`` and ``srun`` start every worker with the same command; each process learns its rank
from the variables the tool sets. This shim copies that rank into ``DMLC_WORKER_ID`` (so worker
ranks follow MPI ranks, as with MXNet's launchers) and then replaces itself with the command.
Where the tool also says how many of its processes share this machine, each gets its share of
the cores for the math libraries (unless their thread counts are already set).
"""

import os
import sys

from .job import THREAD_VARS, compute_threads

#: Where MPI implementations and Slurm put a process's rank, in the order they are looked at.
RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")

#: Where Open MPI, PMIx and MPICH put the number of the job's processes on this machine.
LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS")

_USAGE = "usage: python -m mxrs.launcher.mpi_rank -- command [args...]"


def rank(environ=None):
    """int or None: this process's rank, from the first of :data:`RANK_VARS` that is set."""
    environ = os.environ if environ is None else environ
    for var in RANK_VARS:
        value = environ.get(var, "").strip()
        if value:
            if not value.isdigit():
                raise ValueError(f"{var}={value!r} is not a rank")
            return int(value)
    return None


def thread_env(environ, cpus):
    """dict: the math-library thread counts for a process sharing ``cpus`` cores with the other
    local processes of its job; empty when the tool does not say how many, and a count already
    in ``environ`` is left alone."""
    for var in LOCAL_SIZE_VARS:
        value = environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            threads = compute_threads(cpus, int(value))
            return {k: v for k, v in threads.items() if k in THREAD_VARS and not environ.get(k)}
    return {}


def main(argv=None):
    """Set ``DMLC_WORKER_ID`` and exec the command; returns a status only when that fails."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(_USAGE, file=sys.stderr)
        return 2
    try:
        r = rank()
    except ValueError as e:
        print(f"mpi_rank: {e}", file=sys.stderr)
        return 2
    if r is None:
        print(
            f"mpi_rank: no rank in the environment (none of {', '.join(RANK_VARS)} is set)",
            file=sys.stderr,
        )
        return 2
    os.environ["DMLC_WORKER_ID"] = str(r)
    os.environ.update(thread_env(os.environ, len(os.sched_getaffinity(0))))
    sys.stdout.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"mpi_rank: cannot run {argv[0]}: {e.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
