"""Python-layer KVStore benchmark: ``kv.pushpull`` from Python against ps-bench's Rust client,
both as 2 workers x 2 servers on 127.0.0.1, medians over repeats, into ``bench/RESULTS.md``.

Usage::

    cargo build --release -p ps-core -p ps-bench && pip install .
    python bench/kvstore_py.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- kvstore-py:begin -->", "<!-- kvstore-py:end -->"
RUNS = ["1048576", "16777216", "67108864", "4096x1000"]
ROUNDS = {"1048576": 200, "16777216": 30, "67108864": 10, "4096x1000": 100}
LABELS = {"1048576": "1 MB", "16777216": "16 MB", "67108864": "64 MB", "4096x1000": "1000 × 4 KB"}


def python_job(run: str) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mxrs.launcher",
            "local",
            "-n",
            "2",
            "-s",
            "2",
            "--replicas",
            "0",
            sys.executable,
            str(ROOT / "bench" / "_kv_worker.py"),
            run,
            str(ROUNDS[run]),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    ).stdout
    lines = [json.loads(ln.split("] ", 1)[1]) for ln in out.splitlines() if "{" in ln]
    return {
        "gbps": statistics.mean(x["gbps"] for x in lines),
        "kops": statistics.mean(x["kops"] for x in lines),
    }


def rust_job(run: str) -> dict:
    exe = ROOT / "target" / "release" / "ps-bench"
    out = subprocess.run(
        [str(exe), "--workers", "2", "--servers", "2", "--runs", run, "--rounds", str(ROUNDS[run])],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"gbps": r["gbps_per_worker"], "kops": r["key_ops_per_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for run in RUNS:
        py, rs = [], []
        for _ in range(args.repeats):  # interleaved so both see the same machine state
            rs.append(rust_job(run))
            py.append(python_job(run))
        field = "kops" if "x" in run else "gbps"
        mp = statistics.median(x[field] for x in py)
        mr = statistics.median(x[field] for x in rs)
        rows.append((run, field, mp, mr))
        print(run, field, f"python {mp:.3g}", f"rust {mr:.3g}", flush=True)
    lines = [
        BEGIN,
        "",
        f"### Python KVStore vs ps-bench (2 workers × 2 servers, "
        f"{datetime.date.today()}, medians of {args.repeats})",
        "",
        "| run | metric (per worker) | mxrs Python `kv.pushpull` | ps-bench (Rust) | "
        "Python / Rust |",
        "|---|---|---|---|---|",
    ]
    for run, field, mp, mr in rows:
        unit = "key-ops/s" if field == "kops" else "GB/s"
        fmt = (lambda v: f"{v:,.0f}") if field == "kops" else (lambda v: f"{v:.2f}")
        lines.append(f"| {LABELS[run]} | {unit} | {fmt(mp)} | {fmt(mr)} | {mp / mr:.2f} |")
    lines += ["", END]
    text = RESULTS.read_text()
    block = "\n".join(lines)
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
