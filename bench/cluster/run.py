"""The seeds' scaling experiment ("Distributed MXNet, can it be scaled linearly?") on emulated
hosts: ResNet-50 v1 data-parallel steps, mxrs and Apache MXNet 1.9.1 side by side.

Each job runs on fresh hosts (network namespaces on a bridge, links shaped; ``_hosts.py``),
placed as a :class:`_dist.Layout` says, every worker running ``worker.py``. The seeds' hosts had
8 V100s (about 390 images/s each at batch 120, so a step of 960 images took 0.31 s) on 25 Gbit/s
links; ``--scale K`` keeps their ratio of communication to computation with links K times
slower and steps K times longer. Jobs: the seeds' four configurations and S = W = N hosts (one
server and one worker per host) for each ``--hosts``; series MXNet 1.9.1, mxrs, mxrs without
overlap, mxrs with fp16 and with 2bit gradient compression; the order of the series alternates
between repeats. A probe first measures what the links and both libraries sustain (no
computation, no overlap) at the chosen rate and unshaped. Every job's record, failures included,
goes to ``bench/out/cluster/PREFIX.json``; ``--write`` also draws the charts and rewrites the
RESULTS.md section (``_report.py`` beside this file). Needs root; run it through ``run.sh``,
which tears down whatever a run leaves, however it ends.

``--comm-bound`` adds the communication-bound run of gradient compression and ``--real`` the
real-compute run (ResNet-18 v1 with ``gluon.Trainer``, mxrs's overlap on and off); both are in
``_targets.py``, and ``--no-sweep`` runs them alone.

Usage::

    bash bench/cluster/run.sh [--hosts 1 2 4] [--series mxnet mxrs] [--repeats 3] [--write]
    bash bench/cluster/run.sh --no-sweep --no-probe --comm-bound --real
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent))

import _dist  # noqa: E402  (bench/cluster, then bench/ on the path)
import _targets  # noqa: E402
from _dist import JobFailed, Layout  # noqa: E402
from _hosts import Cluster, ClusterError, Link, check_prefix  # noqa: E402

OUT = HERE.parent / "out" / "cluster"
WORKER = HERE / "worker.py"
#: The seeds' cluster: batch per host, images/s per host (8 GPUs), link Mbit/s.
SEED_BATCH, SEED_RATE, SEED_LINK_MBIT = 960, 8 * 390.0, 25_000.0
SERIES = {
    "mxnet": {"lib": "mxnet", "overlap": True, "compression": "none", "label": "MXNet 1.9.1"},
    "mxrs": {"lib": "mxrs", "overlap": True, "compression": "none", "label": "mxrs"},
    "mxrs-nooverlap": {
        "lib": "mxrs",
        "overlap": False,
        "compression": "none",
        "label": "mxrs, no overlap",
    },
    "mxrs-fp16": {"lib": "mxrs", "overlap": True, "compression": "fp16", "label": "mxrs + fp16"},
    "mxrs-2bit": {"lib": "mxrs", "overlap": True, "compression": "2bit", "label": "mxrs + 2bit"},
    "mxrs-bf16": {"lib": "mxrs", "overlap": True, "compression": "bf16", "label": "mxrs + bf16"},
    "mxnet-2bit": {
        "lib": "mxnet",
        "overlap": True,
        "compression": "2bit",
        "label": "MXNet 1.9.1 + 2bit",
    },
    # every other series keeps no backups, like for like with MXNet (bench/_jobs.py)
    "mxrs-backups": {
        "lib": "mxrs",
        "overlap": True,
        "compression": "none",
        "label": "mxrs, one backup per range",
        "env": {"MXRS_REPLICAS": "1"},
    },
    # every link mutual TLS, certificates as `mxrs-launch --tls` makes them (made per job)
    "mxrs-tls": {
        "lib": "mxrs",
        "overlap": True,
        "compression": "none",
        "label": "mxrs, mutual TLS",
        "tls": True,
    },
}
#: The seeds' four configurations (host 0 also runs the scheduler).
SEED_LAYOUTS = (
    Layout("1s2w-sync", 2, (0,), (0, 1)),
    Layout("2s2w-sync", 2, (0, 1), (0, 1)),
    Layout("2s2w-async", 2, (0, 1), (0, 1), "dist_async"),
    Layout("3s3w-async", 3, (0, 1, 2), (0, 1, 2), "dist_async"),
)


class Interrupted(BaseException):
    """SIGTERM or SIGHUP arrived: unwind, tearing down the hosts on the way."""


def _on_signal(signum, _frame):
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def plan(args: argparse.Namespace) -> list[tuple[Layout, str]]:
    """The (layout, series) pairs of one repeat, in a fixed order."""
    jobs = []
    for n in args.hosts:
        lay = Layout.symmetric(n)
        if n == 2:
            lay = Layout("2s2w-sync", 2, (0, 1), (0, 1))  # the seeds' 2 + 2 sync is S = W = 2
        jobs += [(lay, s) for s in args.series]
    if args.seed_configs:
        for lay in SEED_LAYOUTS:
            if lay.name == "2s2w-sync" and 2 in args.hosts:
                continue
            jobs += [(lay, s) for s in args.series if s in args.seed_series]
    return jobs


def probe_plan(args: argparse.Namespace, link: Link) -> list[tuple[int, Link | None]]:
    """(hosts, link) of the probe jobs: every host count at the run's rate, and the largest
    also at each ``--probe-rates`` and unshaped."""
    plan: list[tuple[int, Link | None]] = [(n, link) for n in args.hosts]
    top = max(args.hosts)
    plan += [(top, Link(r, args.delay_ms)) for r in args.probe_rates if r != link.rate_mbit]
    return plan + [(top, None)]


def worker_argv(
    args: argparse.Namespace, series: str, mode: str, compute_s: float, overlap: bool | None
) -> list[str]:
    """The worker's command line for one job of ``series`` (``overlap`` overrides the
    series')."""
    s = SERIES[series]
    overlap = s["overlap"] if overlap is None else overlap
    argv = [str(WORKER), "--model", args.model, "--batch", str(SEED_BATCH)]
    argv += ["--compute-s", f"{compute_s:g}", "--steps", str(args.steps)]
    argv += ["--warmup", str(args.warmup), "--kvstore", mode]
    argv += ["--compression", s["compression"], "--threshold", str(args.threshold)]
    argv += ["--overlap" if overlap else "--no-overlap"]
    argv += ["--mlp-width", str(args.mlp_width), "--mlp-depth", str(args.mlp_depth)]
    if args.fail_at_step >= 0:
        argv += ["--fail-at-step", str(args.fail_at_step)]
    return argv


def _tls_env(series: str) -> dict:
    """``MXRS_TLS_*`` of a fresh job CA for a series that asks for TLS, else nothing. Every
    process gets the same certificate: any certificate of the job's CA is admitted."""
    if not SERIES[series].get("tls"):
        return {}
    from mxrs.launcher import tls

    return tls.make(["nodes"], days=1).env("nodes")


def one_job(
    args: argparse.Namespace,
    layout: Layout,
    series: str,
    link: Link | None,
    compute_s: float,
    tag: str,
    overlap: bool | None = None,
    lib: str | None = None,
    argv: list[str] | None = None,
    extra_env: dict | None = None,
) -> dict:
    """Run one job on fresh hosts; returns its record (``ok`` False with ``error`` if it
    failed). ``lib``, ``argv`` and ``extra_env`` replace the series' library, ``worker.py``'s
    command line and add to every process's environment."""
    lib = lib or SERIES[series]["lib"]
    extra_env = {**SERIES[series].get("env", {}), **_tls_env(series), **(extra_env or {})}
    rec: dict = {"layout": layout.name, "hosts": layout.hosts, "servers": list(layout.servers)}
    rec |= {"workers": list(layout.workers), "mode": layout.mode, "series": series, "lib": lib}
    rec |= {"compute_s": compute_s, "rate_mbit": link.rate_mbit if link else None, "tag": tag}
    t = time.monotonic()
    logs = args.out / args.prefix / tag
    timeout = args.job_timeout + (args.warmup + args.steps + 1) * compute_s * 3
    if argv is None:
        argv = worker_argv(args, series, layout.mode, compute_s, overlap)
    try:
        with Cluster(args.prefix, layout.hosts, link) as cluster:
            rec["cluster"] = cluster.describe()
            out = _dist.run_job(cluster, lib, layout, argv, logs, timeout, extra_env=extra_env)
    except (JobFailed, ClusterError) as e:
        rec |= {"ok": False, "error": str(e), "seconds": time.monotonic() - t}
        print(f"  FAILED {tag}: {str(e).splitlines()[0]}", flush=True)
        return rec
    # by host: the worker beside the scheduler (and the first server) first
    out.sort(key=lambda r: (int(r["host"].rsplit(".", 1)[-1] or 0), r["rank"]))
    rec |= {"ok": True, "seconds": time.monotonic() - t, "worker_results": out}
    rec["images_per_s"] = sum(r["images_per_s"] for r in out)
    rec["step_s"] = statistics.median(r["median_step_s"] for r in out)
    print(
        f"  {tag}: {rec['images_per_s']:,.1f} images/s, step {rec['step_s']:.3f} s "
        f"({rec['seconds']:.0f} s)",
        flush=True,
    )
    return rec


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    args.out.mkdir(parents=True, exist_ok=True)
    rate = args.rate_mbit or SEED_LINK_MBIT / args.scale
    compute_s = SEED_BATCH / SEED_RATE * args.scale if args.compute_s is None else args.compute_s
    if args.write:
        try:
            import matplotlib  # noqa: F401  (the charts need it; fail now, not after the runs)
        except ImportError:
            print("run.py: --write needs matplotlib (pip install '.[bench]')", file=sys.stderr)
            return 2
    link = Link(rate, args.delay_ms)
    data: dict = {"settings": vars(args) | {"rate_mbit": rate, "compute_s": compute_s}}
    data |= {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "probe": [], "jobs": []}
    path = args.out / f"{args.prefix}.json"

    def save():
        path.write_text(json.dumps(data, indent=1, default=str))

    print(f"cluster run {args.prefix}: links {rate:g} Mbit/s, steps {compute_s:.2f} s", flush=True)
    try:
        if args.probe:
            print("probe (no computation, no overlap):", flush=True)
            for n, how in probe_plan(args, link):
                for lib in ("mxnet", "mxrs"):
                    what = f"{how.rate_mbit:g}mbit" if how else "unshaped"
                    tag = f"probe-{n}h-{lib}-{what}"
                    lay = Layout.symmetric(n)
                    data["probe"].append(one_job(args, lay, lib, how, 0.0, tag, overlap=False))
                    save()
        for r in range(args.repeats if args.sweep else 0):
            print(f"repeat {r + 1} of {args.repeats}:", flush=True)
            jobs = plan(args)
            by_layout: dict[str, list] = {}
            for lay, s in jobs:
                by_layout.setdefault(lay.name, []).append((lay, s))
            for pairs in by_layout.values():
                for lay, s in pairs if r % 2 == 0 else pairs[::-1]:
                    data["jobs"].append(
                        one_job(args, lay, s, link, compute_s, f"r{r}-{lay.name}-{s}")
                    )
                    save()
        if args.comm_bound:
            _targets.comm_bound(args, data, rate, save)
        if args.real:
            _targets.real(args, data, save)
    except (KeyboardInterrupt, Interrupted) as e:
        data["interrupted"] = str(e) or "KeyboardInterrupt"
        save()
        print(f"cluster run {args.prefix}: interrupted ({data['interrupted']})", file=sys.stderr)
        return 130
    data["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save()
    failed = [j["tag"] for j in data["probe"] + data["jobs"] + _targets.jobs(data) if not j["ok"]]
    print(f"cluster run {args.prefix}: {len(data['jobs'])} jobs, JSON in {path}", flush=True)
    if args.write:
        import _report_cluster

        labels = {k: v["label"] for k, v in SERIES.items()}
        libs = {k: v["lib"] for k, v in SERIES.items()}
        _report_cluster.publish(data, path, args.results, args.charts, labels, libs)
    if failed:
        print(f"cluster run {args.prefix}: failed jobs: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", type=check_prefix, default=f"mxc{os.getpid():x}"[:10])
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument(
        "--series",
        nargs="+",
        choices=list(SERIES),
        default=[s for s in SERIES if "env" not in SERIES[s] and "tls" not in SERIES[s]],
        help="the sweep's series (default: all but mxrs-backups and mxrs-tls)",
    )
    ap.add_argument("--seed-configs", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--seed-series",
        nargs="+",
        choices=list(SERIES),
        default=["mxnet", "mxrs"],
        help="the series run on the seeds' configurations",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--sweep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the seeds' configurations and S = W = N hosts (--hosts, --series)",
    )
    _targets.add_options(ap)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per job")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument(
        "--scale", type=float, default=25.0, help="links K times slower, steps K times longer"
    )
    ap.add_argument("--rate-mbit", type=float, help="link rate (default: 25,000 / scale)")
    ap.add_argument("--compute-s", type=float, help="step computation (default: 0.31 x scale)")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per link direction")
    ap.add_argument("--model", choices=("resnet50_v1", "mlp"), default="resnet50_v1")
    ap.add_argument("--mlp-width", type=int, default=1024)
    ap.add_argument("--mlp-depth", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=0.5, help="2bit threshold")
    ap.add_argument("--probe", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--probe-rates",
        type=float,
        nargs="*",
        default=[2500.0],
        help="further link rates (Mbit/s) the probe tries at the largest host count",
    )
    ap.add_argument(
        "--job-timeout", type=float, default=180.0, help="seconds a job may take beyond its steps"
    )
    ap.add_argument(
        "--fail-at-step", type=int, default=-1, help="the last worker exits 3 there (tests)"
    )
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON and logs go")
    ap.add_argument(
        "--write",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw the charts and rewrite the RESULTS.md section",
    )
    ap.add_argument("--results", type=Path, default=HERE.parent / "RESULTS.md")
    ap.add_argument("--charts", type=Path, default=HERE, help="where the PNGs go")
    return ap.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
