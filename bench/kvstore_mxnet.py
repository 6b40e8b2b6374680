"""KVStore side by side: the same worker program (``bench/_kv_side.py``) under mxrs and under
Apache MXNet 1.9.1, as whole dist_sync jobs on 127.0.0.1, medians over repeats.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/kvstore_mxnet.py [--repeats 3] [--write]
    .venv/bin/python bench/kvstore_mxnet.py --quick  # smoke test: 1x1 and 2x2, few rounds

One job is a scheduler, S servers and W workers of one library (``_jobs.run_job``) running every
selected run in turn: ``BYTES`` (one float32 array) or ``BYTESxKEYS`` (KEYS arrays per call).
Each (W, S) and repeat runs the mxrs job and the MXNet job back to back, the library that goes
first alternating between repeats so drift hits both alike. The loopback TCP ceiling (iperf3) is
measured in the same run. A cell is the median over repeats of the mean over a job's workers.

``--json`` (default ``bench/out/kvstore.json``) saves, read back with :func:`load`::

    {"machine": str, "date": "YYYY-MM-DD", "command": str, "versions": {"mxrs", "mxnet"},
     "repeats": int, "rounds": {run: int}, "ceiling_gbps": float | null,
     "ceiling_samples": [float],
     "rows": [{"workers": W, "servers": S, "run": "4096x1000", "label": "1000 × 4 KB",
               "mxrs": {"gbps", "kops", "p50", "p99"} | null, "mxnet": {...} | null,
               "ratio_gbps": mxrs/MXNet | null, "ratio_kops": mxrs/MXNet | null}],
     "targets": [{"name", "metric", "goal", "mxrs", "mxnet", "met"}],
     "jobs": [{"lib", "workers", "servers", "repeat", "results": [worker JSON lines]}
              | {"lib", "workers", "servers", "repeat", "error": str}]}

``gbps`` is GB/s per worker counting pushed plus pulled bytes, ``kops`` keys pushed and pulled
per second per worker, ``p50`` / ``p99`` round latency in ms. ``--write`` replaces the section
between ``<!-- kvstore-mxnet:begin -->`` and ``<!-- kvstore-mxnet:end -->`` of
``bench/RESULTS.md`` (or ``--results PATH``), appending it when the markers are absent.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

from _jobs import LIBS, JobFailed, run_job
from _report import machine, publish, version
from ps_core import iperf3, label

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "bench" / "_kv_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "kvstore.json"
BEGIN, END = "<!-- kvstore-mxnet:begin -->", "<!-- kvstore-mxnet:end -->"
NAMES = {"mxrs": "mxrs", "mxnet": "MXNet"}

RUNS = ["4096", "65536", "1048576", "16777216", "67108864", "4096x1000"]
# Timed rounds per run: about a second of measuring for mxrs; MXNet takes 1-7x longer.
ROUNDS = {
    "4096": 1000,
    "65536": 500,
    "1048576": 150,
    "16777216": 20,
    "67108864": 6,
    "4096x1000": 30,
}
JOBS = [(w, s) for w in (1, 2, 4) for s in (1, 2)]
QUICK_JOBS = [(1, 1), (2, 2)]
FIELDS = ("gbps", "kops", "p50", "p99")
# (name, (W, S, run), field, goal, direction): mxrs's targets.
TARGETS = [
    ("64 MB, 1×1", (1, 1, "67108864"), "gbps", 3.5, "min"),
    ("16 MB, 2×2", (2, 2, "16777216"), "gbps", 2.0, "min"),
    ("1 MB, 2×2", (2, 2, "1048576"), "gbps", 2.0, "min"),
    ("1000 × 4 KB, 2×2", (2, 2, "4096x1000"), "kops", 300_000, "min"),
    ("4 KB round p50, 1×1", (1, 1, "4096"), "p50", 0.1, "max"),
]
UNITS = {"gbps": "GB/s per worker", "kops": "key-ops/s per worker", "p50": "ms"}


def load(path: str | Path = JSON_OUT) -> dict:
    """The results a run saved with ``--json`` (schema in the module docstring)."""
    return json.loads(Path(path).read_text())


def job(lib: str, w: int, s: int, runs: list[str], rounds: dict, timeout: float) -> dict:
    """Run one job of ``lib``; returns {run: {field: mean over workers}} and the raw lines."""
    argv = [str(WORKER), ",".join(runs), ",".join(str(rounds[r]) for r in runs)]
    lines = run_job(lib, w, s, argv, timeout=timeout)
    means = {}
    for run in runs:
        got = [x for x in lines if x["run"] == run]
        if len(got) != w:
            raise JobFailed(f"{lib} {w}x{s}: {len(got)} results for {run}, expected {w}")
        means[run] = {f: statistics.mean(x[f] for x in got) for f in FIELDS}
    return {"means": means, "results": lines}


def parse_jobs(text: str) -> list[tuple[int, int]]:
    """``"1x1,2x2"`` -> [(1, 1), (2, 2)]."""
    return [tuple(int(n) for n in item.split("x")) for item in text.split(",")]


def fmt_ms(v: float) -> str:
    """A latency in ms, to three significant-ish places."""
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def table(rows: list[dict]) -> list[str]:
    """The Markdown table of the medians."""
    out = [
        "| W×S | array | mxrs GB/s | MXNet GB/s | ratio | mxrs key-ops/s | MXNet key-ops/s "
        "| mxrs p50/p99 ms | MXNet p50/p99 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r["mxrs"], r["mxnet"]
        cells = [f"{r['workers']}×{r['servers']}", r["label"]]
        cells += [f"{x['gbps']:.2f}" if x else "failed" for x in (a, b)]
        cells.append(f"{r['ratio_gbps']:.2f}×" if r["ratio_gbps"] else "")
        cells += [f"{x['kops']:,.0f}" if x else "failed" for x in (a, b)]
        cells += [f"{fmt_ms(x['p50'])} / {fmt_ms(x['p99'])}" if x else "failed" for x in (a, b)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def targets(rows: list[dict]) -> list[dict]:
    """mxrs's targets against the medians: met, missed, or None where not measured."""
    by_key = {(r["workers"], r["servers"], r["run"]): r for r in rows}
    out = []
    for name, key, field, goal, direction in TARGETS:
        row = by_key.get(key)
        mine = row["mxrs"][field] if row and row["mxrs"] else None
        theirs = row["mxnet"][field] if row and row["mxnet"] else None
        met = None
        if mine is not None:
            met = mine >= goal if direction == "min" else mine <= goal
        out.append(
            {
                "name": name,
                "metric": field,
                "goal": goal,
                "direction": direction,
                "mxrs": mine,
                "mxnet": theirs,
                "met": met,
            }
        )
    return out


def fmt_value(field: str, v: float | None) -> str:
    """A target's measured value with its unit."""
    if v is None:
        return "failed"
    if field == "kops":
        return f"{v:,.0f} {UNITS[field]}"
    if field == "p50":
        return f"{v:.3f} {UNITS[field]}"
    return f"{v:.2f} {UNITS[field]}"


def section(data: dict) -> str:
    """The RESULTS.md section for a finished run."""
    v = data["versions"]
    lines = [
        BEGIN,
        "## KVStore from Python: mxrs vs Apache MXNet 1.9.1",
        "",
        f"Machine: {data['machine']}; mxrs {v['mxrs']}, MXNet {v['mxnet']}; {data['date']}. "
        f"Command: `{data['command']}`.",
        "",
        "Both libraries run the same worker program (`bench/_kv_side.py`) as whole dist_sync "
        "jobs on 127.0.0.1 (scheduler, S server processes, W worker processes, one thread "
        "each). A round is `kv.push` of every key, then `kv.pull` of every key, then "
        "`mx.nd.waitall()`; float32, no optimizer, every pulled value checked. GB/s per worker "
        "counts pushed plus pulled bytes; a key-op is one key pushed and pulled; p50/p99 are "
        "round latencies. The pushed arrays are restored before each round, untimed (MXNet "
        "1.9.1 pulls a key into the CPU array last pushed for it). Each cell is the median over "
        f"{data['repeats']} job{'s' if data['repeats'] != 1 else ''} of the mean over the job's "
        "workers (timed rounds: "
        + ", ".join(f"{label(r)} {n}" for r, n in data["rounds"].items())
        + ", after 3 warm-up rounds); the library that runs first alternates between repeats. "
        "Ratio is mxrs / MXNet.",
        "",
    ]
    if data["ceiling_gbps"] is not None:
        lines += [
            f"Loopback TCP ceiling (iperf3, one stream, same run): "
            f"**{data['ceiling_gbps']:.2f} GB/s** "
            f"(median of {len(data['ceiling_samples'])}).",
            "",
        ]
    lines += table(data["rows"])
    lines += ["", "Targets (mxrs):", ""]
    for t in data["targets"]:
        sign = "≥" if t["direction"] == "min" else "≤"
        goal = f"{t['goal']:,}" if t["metric"] == "kops" else f"{t['goal']}"
        if t["met"] is None and t["mxrs"] is None:
            verdict = "not measured in this run"
        else:
            verdict = (
                f"**{'met' if t['met'] else 'missed'}**: mxrs "
                f"{fmt_value(t['metric'], t['mxrs'])}, MXNet "
                f"{fmt_value(t['metric'], t['mxnet'])}"
            )
        lines.append(f"- {t['name']}: {sign} {goal} {UNITS[t['metric']]} — {verdict}")
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    """Parse the options, run every job, save the JSON and optionally the section."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: jobs 1x1,2x2, 1 repeat, rounds x0.1, one iperf3 run",
    )
    ap.add_argument("--repeats", type=int, help="jobs per (W, S) and library (default 3)")
    ap.add_argument("--runs", help=f"comma-separated runs (default: {','.join(RUNS)})")
    ap.add_argument("--jobs", help="comma-separated WxS (default: W 1,2,4 x S 1,2)")
    ap.add_argument("--scale", type=float, help="multiplies the rounds per run (at least 3)")
    ap.add_argument("--iperf", type=int, help="iperf3 measurements (default 3; 0: none)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per job")
    ap.add_argument("--json", type=Path, default=JSON_OUT, help="where to save all numbers")
    ap.add_argument("--write", action="store_true", help="write the section into --results")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the Markdown file to update")
    args = ap.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    scale = args.scale or (0.1 if args.quick else 1.0)
    n_iperf = args.iperf if args.iperf is not None else (1 if args.quick else 3)
    runs = args.runs.split(",") if args.runs else RUNS
    jobs = parse_jobs(args.jobs) if args.jobs else (QUICK_JOBS if args.quick else JOBS)
    rounds = {r: max(3, round(ROUNDS.get(r, 100) * scale)) for r in runs}

    t0 = time.perf_counter()
    ceiling, raw, failed = [], [], False
    samples: dict[tuple, list[dict]] = {}
    for rep in range(repeats):
        # Spread the iperf3 runs over the repeats.
        for _ in range(n_iperf // repeats + (rep < n_iperf % repeats)):
            bw = iperf3()
            if bw is not None:
                ceiling.append(bw)
                print(f"iperf3 {bw:.2f} GB/s", flush=True)
        order = LIBS if rep % 2 == 0 else LIBS[::-1]
        for w, s in jobs:
            for lib in order:
                entry = {"lib": lib, "workers": w, "servers": s, "repeat": rep}
                start = time.perf_counter()
                try:
                    got = job(lib, w, s, runs, rounds, args.timeout)
                except JobFailed as e:
                    failed = True
                    entry["error"] = str(e)
                    print(f"FAILED {lib} {w}x{s} repeat {rep}: {e}", file=sys.stderr, flush=True)
                else:
                    entry["results"] = got["results"]
                    for run, m in got["means"].items():
                        samples.setdefault((lib, w, s, run), []).append(m)
                        print(
                            f"{lib:5} {w}x{s} {label(run):12} {m['gbps']:7.3f} GB/s "
                            f"{m['kops']:10,.0f} key-ops/s p50 {m['p50']:.3f} ms",
                            flush=True,
                        )
                raw.append(entry)
                print(f"  ({lib} {w}x{s} job: {time.perf_counter() - start:.1f} s)", flush=True)

    def median(lib: str, key: tuple) -> dict | None:
        got = samples.get((lib, *key))
        return {f: statistics.median(m[f] for m in got) for f in FIELDS} if got else None

    rows = []
    for w, s in jobs:
        for run in runs:
            a, b = median("mxrs", (w, s, run)), median("mxnet", (w, s, run))
            rows.append(
                {
                    "workers": w,
                    "servers": s,
                    "run": run,
                    "label": label(run),
                    "mxrs": a,
                    "mxnet": b,
                    "ratio_gbps": a["gbps"] / b["gbps"] if a and b else None,
                    "ratio_kops": a["kops"] / b["kops"] if a and b else None,
                }
            )
    data = {
        "machine": machine(),
        "date": datetime.date.today().isoformat(),
        "command": shlex.join(["python", "bench/kvstore_mxnet.py", *sys.argv[1:]]),
        "versions": {lib: version(lib) for lib in LIBS},
        "repeats": repeats,
        "rounds": rounds,
        "ceiling_gbps": statistics.median(ceiling) if ceiling else None,
        "ceiling_samples": ceiling,
        "rows": rows,
        "targets": targets(rows),
        "jobs": raw,
    }
    publish(data, section(data), args.json, args.results, args.write, BEGIN, END)
    print(f"total {time.perf_counter() - t0:.0f} s; saved {args.json}", flush=True)
    if failed:
        sys.exit("some jobs failed (see above and the JSON's jobs[].error)")


if __name__ == "__main__":
    main()
