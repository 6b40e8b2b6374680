"""``mxrs-launch LAUNCHER -n W [-s S] [options] [--] command...``."""

import argparse
import importlib
import re
import sys

from . import clashes, kube_manifests, tls
from .console import PROGRESS
from .hostfile import read_hostfile
from .job import Job, LaunchError, parse_env

LAUNCHERS = ("local", "ssh", "mpi", "sge", "yarn", "slurm", "kubernetes")
#: Launchers that start each worker as a process of its own, which can be started again.
RESTARTING = ("local", "ssh", "kubernetes")


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
        "failed server too, whose replacement takes a copy of the keys it backs up (local, ssh "
        "and kubernetes launchers)",
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
        "--tls",
        action="store_true",
        help="mutual TLS on every link of the job: make a CA for the job (its key is never "
        "written) and a certificate per role, and give every node MXRS_TLS_CERT, MXRS_TLS_KEY "
        "and MXRS_TLS_CA (files, or the PEM text where the nodes cannot read this machine's)",
    )
    p.add_argument(
        "--tls-days",
        type=float,
        default=None,
        metavar="DAYS",
        help="how long the job's certificates are valid (default 7; with --tls)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact commands per host (kubernetes: the manifests) and exit",
    )
    _kubernetes_options(p)
    return p


def _kubernetes_options(p):
    k = p.add_argument_group("kubernetes launcher")
    k.add_argument("--image", help="the container image of every pod (mxrs and the program)")
    k.add_argument(
        "--namespace", help="where the job runs (default: the kubeconfig context's, or default)"
    )
    k.add_argument("--name", help="the job's name, on each of its objects (default: mxrs-XXXXXX)")
    k.add_argument("--cpu", help="CPU cores each pod requests (4, 2.5, 500m); sets BLAS threads")
    k.add_argument("--memory", help="memory each pod requests and is limited to (8Gi)")
    k.add_argument("--gpus", type=int, metavar="N", help="nvidia.com/gpu for each worker pod")
    k.add_argument(
        "--node-selector",
        action="append",
        default=[],
        metavar="K=V",
        help="run the pods on nodes with this label (repeatable)",
    )
    k.add_argument(
        "--toleration",
        action="append",
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="let the pods run on nodes with this taint (repeatable)",
    )
    k.add_argument("--service-account", help="the pods' service account")
    k.add_argument(
        "--jobset", action="store_true", help="one JobSet (jobset.x-k8s.io) instead of three Jobs"
    )
    k.add_argument(
        "--keep", action="store_true", help="keep the job's objects when it ends (for kubectl)"
    )


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
    "--tls-days",
    *(flag for flag, dest in kube_manifests.FLAGS.items() if dest not in ("jobset", "keep")),
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
        p.error(f"which launcher? give LAUNCHER ({', '.join(LAUNCHERS)}) or --launcher")
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
    if args.tls_days is not None and not args.tls:
        p.error("--tls-days needs --tls")
    if args.tls:
        days = tls.DEFAULT_DAYS if args.tls_days is None else args.tls_days
        if not days > 0:
            p.error(f"--tls-days must be above 0, got {args.tls_days}")
        if any(k.startswith("MXRS_TLS_") for k in (*env, *job.env_server, *job.env_worker)):
            p.error("--tls makes the job's certificates: give no MXRS_TLS_* with --env as well")
        job.tls = tls.make(tls.labels(launcher, servers, args.num_workers), days)
    if args.interface:
        env["DMLC_INTERFACE"] = args.interface
    if args.verbose:
        env["PS_VERBOSE"] = str(min(args.verbose, 2))
    if launcher != "local" and not args.hostfile and launcher in ("ssh", "mpi"):
        p.error(f"the {launcher} launcher needs -H/--hostfile")
    if launcher == "kubernetes":
        for given, flag in (
            (args.hostfile, "-H/--hostfile"),
            (args.sync_dst_dir, "--sync-dst-dir"),
        ):
            if given:
                p.error(f"{flag} is not for the kubernetes launcher: Kubernetes places the pods")
        try:
            args.kube = kube_manifests.settings_from(args)
        except LaunchError as e:
            p.error(str(e))
    elif (kube_flag := kube_manifests.given_flag(args)) is not None:
        p.error(f"{kube_flag} is an option of the kubernetes launcher, not of {launcher}")
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
    extra = {"settings": args.kube} if launcher == "kubernetes" else {}
    try:
        return module.submit(job, dry_run=args.dry_run, **extra)
    except LaunchError as e:
        print(f"mxrs-launch: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
