"""The ``yarn`` launcher: servers and workers as two Hadoop YARN distributed-shell applications.

One application runs S containers of the server script, the other W containers of the worker
script (``yarn jar hadoop-yarn-applications-distributedshell-*.jar ...Client -shell_script FILE
-num_containers N``). A container has no rank of its own, so workers get theirs from the
scheduler (no ``DMLC_WORKER_ID``). The scripts carry the job's variables, the secret among them,
and are written readable by this user only; nothing secret goes through ``-shell_env`` or any
command line. Each Client waits for its application to end, so the tracker supervises both
like processes. A script enters the launching directory where it exists on the node.

Settings (environment): ``HADOOP_HOME`` (where the distributed-shell jar is),
``MXRS_YARN_MEMORY`` (MB per container, default 1024), ``MXRS_YARN_VCORES`` (default 1),
``MXRS_YARN_ARGS`` (extra Client flags, for example ``-queue research``), ``MXRS_JOB_DIR`` (where
the scripts are written before the Client uploads them; default the temporary folder).
"""

import glob
import os
import shutil
import tempfile

from . import batch, tracker
from .job import Job, LaunchError

CLIENT = "org.apache.hadoop.yarn.applications.distributedshell.Client"
JAR = "share/hadoop/yarn/hadoop-yarn-applications-distributedshell-*.jar"


def _positive(var, default):
    value = os.environ.get(var, "").strip() or str(default)
    if not value.isdigit() or int(value) < 1:
        raise LaunchError(f"{var}={value}: expected a positive whole number")
    return value


def distributed_shell_jar(dry_run):
    """The distributed-shell jar under ``$HADOOP_HOME`` (a dry run may show the pattern)."""
    home = os.environ.get("HADOOP_HOME")
    if not home:
        if dry_run:
            return f"$HADOOP_HOME/{JAR}"
        raise LaunchError("the yarn launcher needs HADOOP_HOME (where Hadoop is installed)")
    found = sorted(p for p in glob.glob(os.path.join(home, JAR)) if "tests" not in p)
    if not found:
        if dry_run:
            return os.path.join(home, JAR)
        raise LaunchError(f"no distributed-shell jar in {home} (looked for {JAR})")
    return found[-1]


def yarn_tool(dry_run):
    """``yarn`` on PATH, else ``$HADOOP_HOME/bin/yarn``."""
    if shutil.which("yarn") or dry_run:
        return "yarn"
    home = os.environ.get("HADOOP_HOME", "")
    candidate = os.path.join(home, "bin", "yarn")
    if home and os.access(candidate, os.X_OK):
        return candidate
    raise LaunchError(
        "the yarn launcher needs 'yarn', which is not on PATH nor in $HADOOP_HOME/bin"
    )


def role_script(job: Job, role):
    """A container's script: the job's and the role's variables, then the role's command."""
    argv = batch.server_command(job) if role == "server" else job.command
    body = [batch.cd_if_present(), *batch.role_lines(job, role, argv)]
    return batch.script(job, body, title=f"YARN {role}")


def client(job: Job, tool, jar, role, script):
    """The distributed-shell Client command line for ``role``'s containers."""
    count = job.count(role)
    return [
        tool,
        "jar",
        jar,
        CLIENT,
        "-jar",
        jar,
        "-appname",
        f"mxrs-{role}s",
        "-shell_script",
        script,
        "-num_containers",
        str(count),
        "-container_memory",
        _positive("MXRS_YARN_MEMORY", 1024),
        "-container_vcores",
        _positive("MXRS_YARN_VCORES", 1),
        *batch.extra_args("MXRS_YARN_ARGS"),
    ]


def submit(job: Job, dry_run=False):
    """Submit ``job``'s servers and workers to YARN and run its scheduler here."""
    tool = yarn_tool(dry_run)
    jar = distributed_shell_jar(dry_run)
    batch.advertise(job)

    def make(job):
        files = batch.JobFiles(
            batch.job_dir() if os.environ.get("MXRS_JOB_DIR") else tempfile.gettempdir(),
            "mxrs-yarn",
        )
        todo = []
        for role in ("server", "worker"):
            path = files.add(f"{role}.sh", role_script(job, role))
            todo.append(
                tracker.Launch(
                    f"yarn {role}s",
                    role,
                    client(job, tool, jar, role, path),
                    dict(os.environ),
                    count=job.count(role),
                )
            )
        return files, todo

    return batch.run_with_files(job, make, dry_run)
