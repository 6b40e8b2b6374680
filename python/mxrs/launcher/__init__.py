"""``mxrs-launch``: start a whole parameter-server job (scheduler, servers, workers).

Layout
------
cli
    Command-line parsing (``mxrs-launch LAUNCHER -n W -s S ... command``) and dispatch.
job
    Roles, ranks, placement on hosts and the ``DMLC_*`` environment; ``LaunchError``.
hostfile
    ``host``, ``host:port`` and ``host slots=N`` lines.
clashes
    Variables that would clash between a job's processes (ports, ranks, files), and ports
    already in use, refused before anything starts.
tracker
    What every launcher shares: the scheduler here, dry runs, supervision of the launches.
scheduler
    ``start_scheduler``: starts a scheduler and reads the port it announces (``MXRS_ANNOUNCE``).
supervise
    Runs processes, prefixes their output, ends everything on the first failure.
console
    The processes' output as a terminal shows it, progress bars live.
summary
    The job summary printed when a job ends, from the ``mxrs-report:`` lines processes write.
local, ssh, ...
    One module per launcher, each with ``submit(job, dry_run=False)``.
batch
    What mpi, sge, yarn and slurm share: role environments, job scripts, private job files.
mpi_rank
    ``python -m mxrs.launcher.mpi_rank -- cmd``: the MPI/Slurm rank as ``DMLC_WORKER_ID``.
"""

from .cli import main

__all__ = ["main"]
