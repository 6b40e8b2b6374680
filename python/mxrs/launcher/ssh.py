"""The ``ssh`` launcher: servers and workers on the hostfile's machines, over ssh.

Each remote process is started by a local ``ssh -o BatchMode=yes host sh -c SCRIPT``. The
script reads the process's environment from ssh's stdin (so the job secret is on no command
line), starts the command in its own process group, and watches stdin: when the launcher closes
it, or ssh dies and the connection drops, the whole remote process group is stopped. Extra ssh
options (``-F config``, ``-i key``) come from ``MXRS_SSH_OPTIONS``.
"""

import os
import shlex
import subprocess

from . import tracker
from .job import Job, LaunchError, compute_threads, interface_address, route_address

_CHECK_TIMEOUT_S = 30

# Runs on the remote host under sh. {cwd} and {command} are shell-quoted by the launcher.
# sh gives background jobs /dev/null as stdin, so the watcher reads ssh's stdin through fd 3;
# `kill -TERM -PID` has no `--` because dash, a common /bin/sh, rejects `kill -- -PID`.
_REMOTE = """\
while IFS= read -r kv; do [ -z "$kv" ] && break; export "$kv"; done
cd {cwd} || exit 127
exec 3<&0
setsid {command} </dev/null 3<&- &
pid=$!
( cat <&3 >/dev/null; kill -TERM -$pid; sleep 5; kill -KILL -$pid ) >/dev/null 2>&1 &
exec 3<&-
wait $pid
"""


def ssh_options():
    """Extra ssh options from ``MXRS_SSH_OPTIONS``."""
    return shlex.split(os.environ.get("MXRS_SSH_OPTIONS", ""))


def ssh_argv(host, remote_command=None):
    """``ssh`` to ``host`` (a hostfile Host), non-interactive, then ``remote_command``."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", *ssh_options()]
    if host.port is not None:
        argv += ["-p", str(host.port)]
    argv.append(host.name)
    if remote_command is not None:
        argv.append(remote_command)
    return argv


def remote_command(cwd, command):
    """The remote ``sh -c`` line that runs ``command`` in ``cwd`` under the stdin watcher."""
    script = _REMOTE.format(cwd=shlex.quote(cwd), command=shlex.join(command))
    return f"sh -c {shlex.quote(script)}"


def env_lines(env):
    """The environment as ``K=V`` lines ended by a blank line (the remote script's input)."""
    return "".join(f"{k}={v}\n" for k, v in sorted(env.items())).encode() + b"\n"


def launches(job: Job):
    """One ssh process per server and worker, placed on the hosts round-robin."""
    cwd = job.sync_dst_dir or os.getcwd()
    out = []
    for node in job.nodes()[1:]:
        threads = compute_threads(_cpus(node.host), job.workers_on(node.host))
        env = {**threads, **node.env}
        argv = ssh_argv(node.host, remote_command(cwd, job.node_command(node)))
        out.append(tracker.node_launch(job, node, argv, dict(os.environ), env_lines(env)))
    return out


def _cpus(host):
    return host.slots if host.slots > 1 else (os.cpu_count() or 1)


def check_hosts(hosts):
    """Fail with one line naming the first host ssh cannot log in to."""
    for host in hosts:
        try:
            r = subprocess.run(
                ssh_argv(host, "true"),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_CHECK_TIMEOUT_S,
            )
        except FileNotFoundError:
            raise LaunchError("ssh is not installed on this machine") from None
        except subprocess.TimeoutExpired:
            raise LaunchError(f"host {host}: ssh did not answer in {_CHECK_TIMEOUT_S} s") from None
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            raise LaunchError(f"host {host}: cannot run commands over ssh: {why}")


def sync(hosts, dst):
    """rsync the working directory to ``dst`` on every host."""
    for host in hosts:
        rsh = shlex.join(ssh_argv(host)[:-1])
        argv = ["rsync", "-az", "--exclude", ".git", "-e", rsh, "./", f"{host.name}:{dst}/"]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        except FileNotFoundError:
            raise LaunchError("--sync-dst-dir needs rsync on this machine") from None
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            raise LaunchError(f"host {host}: rsync to {dst} failed: {why}")


def submit(job: Job, dry_run=False):
    """Run ``job`` on the hostfile's hosts; returns the job's exit status."""
    if not job.hosts:
        raise LaunchError("the ssh launcher needs -H/--hostfile")
    iface = job.extra_env.get("DMLC_INTERFACE")
    job.root_host = interface_address(iface) if iface else route_address(job.hosts[0].name)
    unique = list(dict.fromkeys(job.hosts))
    if not dry_run:
        check_hosts(unique)
        if job.sync_dst_dir:
            sync(unique, job.sync_dst_dir)
    return tracker.run(job, launches, dry_run)
