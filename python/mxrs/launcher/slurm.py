"""The ``slurm`` launcher: servers and workers as Slurm job steps.

Inside an allocation (``SLURM_JOB_ID`` set, as in ``salloc`` or a batch script) two ``srun``
steps start the servers (``--ntasks S``) and the workers (``--ntasks W``) and stream their
output here. Outside one, ``sbatch --wait`` submits a batch script that runs the same two steps
in an allocation of S + W tasks and waits for them. Either way the variables reach the tasks
through the environment (``--export=ALL``): srun's own, or exported by the batch script, which
is written readable by this user only; the secret is on no command line. Workers run through
:mod:`.mpi_rank`, so ``SLURM_PROCID`` is the worker id.

Settings (environment): ``MXRS_SRUN_ARGS`` adds flags to both steps (for example ``--overlap``
or ``--exact`` where steps must share or split the allocation), ``MXRS_SBATCH_ARGS`` to sbatch
(``-p partition -t 1:00:00``); ``MXRS_JOB_DIR`` is where the batch script and the job's output go
(default: the launching directory, on a shared file system).
"""

import os

from . import batch, clashes, tracker
from .job import Job


def srun(job: Job, role):
    """The ``srun`` command line of ``role``'s step."""
    count = job.count(role)
    argv = batch.server_command(job) if role == "server" else batch.rank_shim(job, job.command)
    return [
        "srun",
        f"--ntasks={count}",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        f"--job-name=mxrs-{role}s",
        *batch.extra_args("MXRS_SRUN_ARGS"),
        *argv,
    ]


def step_launches(job: Job):
    """Inside an allocation: the two steps, with the variables in srun's environment."""
    out = []
    for role in ("server", "worker"):
        env = {**clashes.inherited(), **batch.role_env(job, role)}
        out.append(tracker.Launch(f"{role}s", role, srun(job, role), env, count=job.count(role)))
    return out


def batch_script(job: Job):
    """The sbatch script: servers in the background, then the workers; the workers' status."""
    servers = [
        "export DMLC_ROLE=server",
        *batch.exports(job.env_server),
        "exec " + batch.command_line(srun(job, "server")),
    ]
    workers = [
        "export DMLC_ROLE=worker",
        *batch.exports(job.env_worker),
        "exec " + batch.command_line(srun(job, "worker")),
    ]
    body = [
        "(",
        *("  " + line for line in servers),
        ") &",
        "servers=$!",
        "(",
        *("  " + line for line in workers),
        ")",
        "status=$?",
        'if [ "$status" -ne 0 ]; then kill "$servers" 2>/dev/null; fi',
        'wait "$servers"',
        'exit "$status"',
    ]
    return batch.script(job, body, title="Slurm batch")


def sbatch(job: Job, script, logdir):
    """The ``sbatch`` command line that submits ``script`` and waits for the job to end."""
    total = job.num_servers + job.num_workers
    return [
        "sbatch",
        "--wait",
        f"--ntasks={total}",
        "--job-name=mxrs",
        "--export=ALL",
        f"--output={os.path.join(logdir, 'slurm-%j.out')}",
        *batch.extra_args("MXRS_SBATCH_ARGS"),
        script,
    ]


def submit(job: Job, dry_run=False):
    """Run ``job``'s servers and workers under Slurm and its scheduler here."""
    inside = bool(os.environ.get("SLURM_JOB_ID"))
    batch.require("srun" if inside else "sbatch", "slurm", dry_run)
    batch.advertise(job)
    if inside:
        if dry_run:
            batch.show_role_envs(job)
        else:
            step_launches(job)  # a bad MXRS_SRUN_ARGS fails before the scheduler starts
        return tracker.run(job, step_launches, dry_run)
    return batch.run_script(job, "slurm", batch_script, sbatch, dry_run, output_of="Slurm job's")
