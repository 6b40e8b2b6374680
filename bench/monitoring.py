"""What watching a job costs: 2-worker x 2-server LeNet training with metrics and timeline on/off.

Usage::

    .venv/bin/python bench/monitoring.py --repeats 3 [--write]

Every run is a whole job under ``mxrs-launch local -n 2 -s 2`` (the way users run one), training
the seeds' LeNet with ``gluon.Trainer`` on ``dist_sync`` (``bench/_train_side.py``, throughput
mode: timed steps after a warm-up, one thread per worker). Configurations:

- ``off``: no endpoint and no timeline (the counters behind the metrics are always kept).
- ``metrics``: ``--metrics-port``, with the scheduler and both servers scraped once a second
  during the job, as a Prometheus server would (more often than its default 15 s).
- ``timeline``: ``MXRS_TIMELINE``: both workers record every span and the launcher merges them.
- ``both``.

The configurations run in turn within each repeat, starting from a different one each time; the
table shows the median samples/s (summed over the workers) and its ratio to ``off``. ``--write``
replaces the section in ``bench/RESULTS.md``.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "bench" / "_train_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "monitoring.json"
BEGIN, END = "<!-- monitoring:begin -->", "<!-- monitoring:end -->"
CONFIGS = ("off", "metrics", "timeline", "both")


def _free_base(n: int) -> int:
    """A port P with P..P+n-1 free now."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        socks = []
        try:
            for i in range(n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise SystemExit("no free ports")


def _scrape(ports: list[int], stop: threading.Event, counts: list[int]) -> None:
    """Scrape every endpoint once a second until ``stop``; counts the scrapes that answered."""
    while not stop.wait(1.0):
        for p in ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=5) as r:
                    r.read()
                counts[0] += 1
            except OSError:
                pass  # not up yet, or already gone


def run(config: str, steps: int, warmup: int, timeout: float) -> dict:
    """One job; returns {samples_per_s, scrapes, trace_events}."""
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2",
           "--replicas", "0"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "MXRS_"))}
    env["BENCH_LIB"] = "mxrs"
    ports: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        if config in ("metrics", "both"):
            base = _free_base(3)
            ports = [base, base + 1, base + 2]
            cmd += ["--metrics-port", str(base)]
        if config in ("timeline", "both"):
            env["MXRS_TIMELINE"] = str(trace)
        cmd += [sys.executable, str(WORKER), "throughput",
                "--steps", str(steps), "--warmup", str(warmup)]  # fmt: skip
        stop, counts = threading.Event(), [0]
        scraper = threading.Thread(target=_scrape, args=(ports, stop, counts), daemon=True)
        if ports:
            scraper.start()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        finally:
            stop.set()
        if p.returncode != 0:
            raise SystemExit(f"{config}: job failed ({p.returncode}):\n{p.stderr[-3000:]}")
        rates = []
        for line in p.stdout.splitlines():
            _, _, rest = line.partition("] ")
            if rest.startswith("{") and "samples_per_s" in rest:
                rates.append(json.loads(rest)["samples_per_s"])
        if len(rates) != 2:
            raise SystemExit(f"{config}: {len(rates)} results from 2 workers:\n{p.stdout[-2000:]}")
        events = 0
        if config in ("timeline", "both"):
            events = len(json.loads(trace.read_text())["traceEvents"])
        return {"samples_per_s": sum(rates), "scrapes": counts[0], "trace_events": events}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {c: [] for c in CONFIGS}
    for r in range(args.repeats):
        order = CONFIGS[r % len(CONFIGS) :] + CONFIGS[: r % len(CONFIGS)]
        for c in order:
            runs[c].append(run(c, args.steps, args.warmup, args.timeout))
            print(c, runs[c][-1], flush=True)
    med = {c: statistics.median(x["samples_per_s"] for x in runs[c]) for c in CONFIGS}
    rows = [
        f"| {c} | {med[c]:,.0f} | {med[c] / med['off']:.3f} | "
        + ", ".join(f"{x['samples_per_s']:,.0f}" for x in runs[c])
        + f" | {statistics.median(x['scrapes'] for x in runs[c]):.0f}"
        + f" | {statistics.median(x['trace_events'] for x in runs[c]):,.0f} |"
        for c in CONFIGS
    ]
    text = "\n".join(
        [
            BEGIN,
            "## Watching a job: what metrics and the timeline cost (issue 18)",
            "",
            f"Machine: {machine(load=True)}; mxrs {version('mxrs')}. Command: "
            f"`.venv/bin/python bench/monitoring.py --repeats {args.repeats} --write`.",
            "",
            "2 workers × 2 servers under `mxrs-launch local` (`--replicas 0`), the seeds' LeNet "
            "with `gluon.Trainer` on `dist_sync`, batch 128 per worker, one thread each, "
            f"{args.steps} timed steps after {args.warmup} warm-up steps; samples/s summed over "
            "the workers, median of the runs, the configurations taking turns. `metrics`: "
            "`--metrics-port`, the scheduler and both servers scraped once a second during the "
            "job; `timeline`: `MXRS_TIMELINE`, every worker recording forward, backward, step "
            "and each key's push and pull, merged by the launcher. MXNet 1.9.1 has neither, so "
            "there is no MXNet column; its LeNet row is in the Gluon LeNet section above.",
            "",
            "| config | samples/s | vs off | runs | scrapes per job | trace events |",
            "|---|---:|---:|---|---:|---:|",
            *rows,
            "",
            "The counters are kept whether or not an endpoint serves them (atomic adds where the "
            "work happens, per-peer handles looked up once per connection), so `off` includes "
            "them. With the timeline on, each step also waits for its own requests before it "
            "ends (so the trace shows them inside it), which removes the overlap of a step's "
            "pulls with the next forward.",
            END,
        ]
    )
    data = {"runs": runs, "median": med, "steps": args.steps}
    publish(data, text, JSON_OUT, RESULTS, args.write, BEGIN, END)


if __name__ == "__main__":
    main()
