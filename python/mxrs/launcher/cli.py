"""``mxrs-launch LAUNCHER -n W [-s S] [options] [--] command...``."""

import argparse
import importlib
import re
import sys

from . import clashes
from .console import PROGRESS
from .hostfile import read_hostfile
from .job import Job, LaunchError, parse_env

LAUNCHERS = ("local", "ssh", "mpi", "sge", "yarn", "slurm")
#: Launchers that start each worker as a process of its own, which can be started again.
RESTARTING = ("local", "ssh")


def _parser():
    p = argparse.ArgumentParser(
        prog="mxrs-launch",
        description="Start a parameter-server job: a scheduler, S servers and W workers running "
        "COMMAND, with the DMLC_* environment and a fresh job secret.",
    )
    p.add_argument("launcher", nargs="?", choices=LAUNCHERS, help="where the processes run")
    p.add_argument(
        "--launcher",
        dest="launcher_opt",
        choices=LAUNCHERS,
        help="the same as the positional LAUNCHER",
    )
    p.add_argument("-n", "--num-workers", type=int, required=True, help="number of workers")
    p.add_argument("-s", "--num-servers", type=int, help="number of servers (default: -n)")
    p.add_argument(
        "-H", "--hostfile", help="file of hosts: 'host', 'host:port' or 'host slots=N' per line"
    )
    p.add_argument("--sync-dst-dir", help="rsync the working directory to this path on each host")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="set K=V for every process (K alone passes this shell's value)",
    )
    p.add_argument(
        "--env-server",
        action="append",
        default=[],
        metavar="K=V",
        help="set K=V for the servers only",
    )
    p.add_argument(
        "--env-worker",
        action="append",
        default=[],
        metavar="K=V",
        help="set K=V for the workers only",
    )
    p.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        metavar="N",
        help="restart a failed worker with the same rank up to N times; the job waits for it "
        "(PS_REJOIN_TIMEOUT seconds, default 60) instead of failing; with backups (--replicas) a "
        "failed server too, whose replacement takes a copy of the keys it backs up (local and "
        "ssh launchers)",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=None,
        metavar="N",
        help="back up each server's keys on the next N servers, so that the job survives "
        "losing a server (MXRS_REPLICAS; default 1 with two servers or more, 0 turns it off)",
    )
    p.add_argument("--interface", help="network interface the nodes bind (DMLC_INTERFACE)")
    p.add_argument(
        "--verbose",
        action="count",
        default=0,
        help="connection debugging (PS_VERBOSE=1; twice: every message)",
    )
    p.add_argument(
        "--progress",
        choices=PROGRESS,
        default="worker0",
        help="on a terminal, whose progress bars are redrawn live: worker 0's (default), every "
        "worker's (one line each) or none; without a terminal redraws are dropped",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics on the scheduler, and on "
        "PORT+1+i on server i (0: any free port each; workers serve none); every node says "
        "where. MXRS_METRICS_PORT=PORT in this environment or in --env means the same (this "
        "option wins); no process gets it as it is",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the exact commands per host and exit"
    )
    return p


_TAKES_VALUE = {
    "--launcher",
    "-n",
    "--num-workers",
    "-s",
    "--num-servers",
    "-H",
    "--hostfile",
    "--sync-dst-dir",
    "--env",
    "--env-server",
    "--env-worker",
    "--max-restarts",
    "--replicas",
    "--interface",
    "--progress",
    "--metrics-port",
}


def _split(argv):
    """Split ``argv`` into mxrs-launch's own arguments and the worker command.

    The command starts after ``--``, or at the first word that is neither an option, an option's
    value, nor the launcher's name.
    """
    own: list[str] = []
    i, launcher_seen = 0, False
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return own, argv[i + 1 :]
        if tok.startswith("-") and tok != "-":
            own.append(tok)
            if tok in _TAKES_VALUE and i + 1 < len(argv):
                own.append(argv[i + 1])
                i += 1
        elif tok in LAUNCHERS and not launcher_seen:
            own.append(tok)
            launcher_seen = True
        else:
            return own, argv[i:]
        i += 1
    return own, []


def parse(argv):
    """Parse ``argv`` into (launcher name, Job, options namespace); exits on bad usage."""
    p = _parser()
    own, command = _split(list(argv))
    args = p.parse_args(own)
    launcher = args.launcher or args.launcher_opt
    if launcher is None:
        p.error("which launcher? give LAUNCHER (local, ssh, mpi, sge, yarn, slurm) or --launcher")
    if not command:
        p.error("no command to run on the workers")
    if args.num_workers < 1:
        p.error(f"-n must be at least 1, got {args.num_workers}")
    servers = args.num_workers if args.num_servers is None else args.num_servers
    if servers < 1:
        p.error(f"-s must be at least 1, got {servers}")
    try:
        env = parse_env(args.env)
        job = Job(
            args.num_workers,
            servers,
            command,
            extra_env=env,
            env_server=parse_env(args.env_server),
            env_worker=parse_env(args.env_worker),
            sync_dst_dir=args.sync_dst_dir,
            progress=args.progress,
        )
        if args.hostfile:
            job.hosts = read_hostfile(args.hostfile)
    except LaunchError as e:
        p.error(str(e))
    port = env.pop("DMLC_PS_ROOT_PORT", None)  # given: the scheduler's port as it is
    if port is not None:
        if not re.fullmatch(r"[0-9]{1,5}", port.strip()) or int(port) > 65535:
            p.error(f"--env DMLC_PS_ROOT_PORT={port}: expected a port, 0-65535 (0: any free one)")
        job.root_port = int(port)
    if args.max_restarts < 0:
        p.error(f"--max-restarts must be 0 or more, got {args.max_restarts}")
    if args.max_restarts and launcher not in RESTARTING:
        p.error(
            f"--max-restarts needs a launcher that starts each worker as its own process "
            f"({', '.join(RESTARTING)}); {launcher} starts them together"
        )
    if args.max_restarts:
        job.max_restarts = args.max_restarts
        env["MXRS_MAX_RESTARTS"] = str(args.max_restarts)
    if args.replicas is not None:
        if args.replicas not in (0, 1):
            p.error(f"--replicas must be 0 or 1, got {args.replicas}")
        env["MXRS_REPLICAS"] = str(args.replicas)
    default = "1" if servers > 1 else "0"
    job.replicas = int(env.get("MXRS_REPLICAS", default) or 0) if servers > 1 else 0
    try:  # taken out of --env either way: every process would get the same port
        from_var = clashes.metrics_port(env, servers)
    except LaunchError as e:
        if args.metrics_port is None:
            p.error(str(e))
        from_var = None
    if args.metrics_port is None:
        job.metrics_port = from_var
    else:
        if not 0 <= args.metrics_port <= 65535 - 1 - servers:
            p.error(
                f"--metrics-port must leave room for the scheduler and {servers} servers "
                f"(0-{65535 - 1 - servers}), got {args.metrics_port}"
            )
        job.metrics_port = args.metrics_port
    if args.interface:
        env["DMLC_INTERFACE"] = args.interface
    if args.verbose:
        env["PS_VERBOSE"] = str(min(args.verbose, 2))
    if launcher != "local" and not args.hostfile and launcher in ("ssh", "mpi"):
        p.error(f"the {launcher} launcher needs -H/--hostfile")
    try:
        clashes.check(job, launcher)
    except LaunchError as e:
        p.error(str(e))
    return launcher, job, args


def main(argv=None):
    """Entry point of the ``mxrs-launch`` console script; returns the job's exit status."""
    launcher, job, args = parse(sys.argv[1:] if argv is None else argv)
    try:
        module = importlib.import_module(f".{launcher}", __package__)
    except ModuleNotFoundError:
        print(
            f"mxrs-launch: the {launcher} launcher is not available in this version",
            file=sys.stderr,
        )
        return 2
    try:
        return module.submit(job, dry_run=args.dry_run)
    except LaunchError as e:
        print(f"mxrs-launch: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
