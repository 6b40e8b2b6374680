"""The ``sge`` launcher: servers and workers as one Sun Grid Engine array job.

``qsub -sync y -t 1-N`` (N = servers + workers) submits a job script whose task number
``$SGE_TASK_ID`` picks the role: tasks 1..S are the servers, with ``DMLC_SERVER_ID`` = task - 1,
the others the workers, with ``DMLC_WORKER_ID`` = task - S - 1. The script carries the job's
variables, the secret among them, so it is written readable by this user only and nothing secret
is on qsub's command line (no ``-v``/``-V``). ``-sync y`` makes qsub wait for every task, so the
tracker supervises it like any process; the tasks' output goes to the job folder
(``-o``/``-e``), which is kept.

Settings (environment): ``MXRS_QSUB_ARGS`` adds flags (for example ``-q all.q -l h_vmem=4G``);
``MXRS_JOB_DIR`` is where the job folder goes (default: the launching directory; the script is
read on the execution hosts, so a shared file system).
"""

from . import batch
from .job import Job


def job_script(job: Job):
    """The array job's script: the task number picks server or worker and the worker id."""
    servers = job.num_servers
    total = servers + job.num_workers
    body = [
        'case "$SGE_TASK_ID" in',
        f"  ''|*[!0-9]*) echo \"mxrs: SGE_TASK_ID='$SGE_TASK_ID' is not a task of 1-{total}\" >&2;"
        " exit 2;;",
        "esac",
        f'if [ "$SGE_TASK_ID" -le {servers} ]; then',
        "  export DMLC_SERVER_ID=$((SGE_TASK_ID - 1))",
        *("  " + line for line in batch.role_lines(job, "server", batch.server_command(job))),
        "fi",
        f"export DMLC_WORKER_ID=$((SGE_TASK_ID - {servers + 1}))",
        *batch.role_lines(job, "worker", job.command),
    ]
    return batch.script(job, body, title="SGE array job")


def qsub(job: Job, script, logdir):
    """The ``qsub`` command line that submits ``script`` as a blocking array job."""
    total = job.num_servers + job.num_workers
    return [
        "qsub",
        "-sync",
        "y",
        "-t",
        f"1-{total}",
        "-N",
        "mxrs",
        "-cwd",
        "-S",
        "/bin/sh",
        "-o",
        logdir,
        "-e",
        logdir,
        *batch.extra_args("MXRS_QSUB_ARGS"),
        script,
    ]


def submit(job: Job, dry_run=False):
    """Submit ``job``'s servers and workers to SGE and run its scheduler here."""
    batch.require("qsub", "sge", dry_run)
    batch.advertise(job)
    return batch.run_script(job, "sge", job_script, qsub, dry_run, output_of="SGE tasks'")
