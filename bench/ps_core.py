"""Parameter-server data-plane benchmark: runs ``ps-bench`` jobs on 127.0.0.1 and the loopback
TCP ceiling (iperf3), takes medians over repeats and writes them into ``bench/RESULTS.md``.

Usage::

    cargo build --release -p ps-core -p ps-bench
    python bench/ps_core.py [--repeats 3] [--op fused|push-pull]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- ps-core:begin -->", "<!-- ps-core:end -->"

OPS = {"fused": "one pushpull request", "push-pull": "a push and a pull in flight"}
RUNS = ["4096", "1048576", "16777216", "67108864", "4096x1000"]
# Rounds per run: enough that each job measures for about a second or more.
ROUNDS = {"4096": 2000, "1048576": 300, "16777216": 40, "67108864": 15, "4096x1000": 150}
JOBS = [(1, 1), (2, 2)]
# Apache MXNet 1.9.1 (ps-lite) on this machine kind, as given in issue 2: GB/s per worker,
# key-ops/s, p50 ms.
MXNET = {
    (1, 1, "67108864"): {"gbps": 0.79},
    (2, 2, "16777216"): {"gbps": 0.98},
    (2, 2, "1048576"): {"gbps": 1.01},
    (2, 2, "4096x1000"): {"kops": 31_000},
    (1, 1, "4096"): {"p50": 0.44},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def iperf3() -> float | None:
    """One-stream loopback TCP bandwidth in GB/s, or None without iperf3."""
    if shutil.which("iperf3") is None:
        return None
    port = free_port()
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-p", str(port), "--forceflush"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        # Wait for "Server listening"; probing the port would count as the one client.
        for line in server.stdout:
            if "listening" in line:
                break
        out = subprocess.run(
            ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "3", "-J"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8e9
    finally:
        server.kill()
        server.wait()


def ps_bench(exe: Path, w: int, s: int, run: str, rounds: int, op: str) -> dict:
    """One job; returns ps-bench's JSON line."""
    out = subprocess.run(
        [
            str(exe),
            "--workers",
            str(w),
            "--servers",
            str(s),
            "--runs",
            run,
            "--rounds",
            str(rounds),
            "--op",
            op,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def label(run: str) -> str:
    size, _, keys = run.partition("x")
    n = int(size)
    unit = f"{n // 2**20} MB" if n >= 2**20 else f"{n // 1024} KB"
    return f"{keys} × {unit}" if keys else unit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the rounds per run")
    ap.add_argument("--op", default="fused", choices=["fused", "push-pull"])
    args = ap.parse_args()
    exe = ROOT / "target" / "release" / "ps-bench"
    if not exe.exists():
        sys.exit("build first: cargo build --release -p ps-core -p ps-bench")

    samples: dict[tuple, list[dict]] = {}
    ceiling = []
    for rep in range(args.repeats):
        bw = iperf3()
        if bw is not None:
            ceiling.append(bw)
        # Alternate the order of jobs between repeats so drift hits all alike.
        jobs = [(w, s, run) for (w, s) in JOBS for run in RUNS]
        if rep % 2:
            jobs.reverse()
        for w, s, run in jobs:
            r = ps_bench(exe, w, s, run, max(3, int(ROUNDS[run] * args.scale)), args.op)
            samples.setdefault((w, s, run), []).append(r)
            print(json.dumps(r), flush=True)

    def med(key: tuple, field: str) -> float:
        return statistics.median(r[field] for r in samples[key])

    lines = [
        BEGIN,
        "## Parameter-server data plane (ps-bench, issue 2)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}; "
        f"{datetime.date.today().isoformat()}. Command: `python bench/ps_core.py --repeats "
        f"{args.repeats} --op {args.op}` after `cargo build --release "
        "-p ps-core -p ps-bench`.",
        "",
        "Whole jobs on 127.0.0.1 (scheduler, S server processes, W worker processes), dist_sync, "
        f"float32, `{args.op}` rounds ({OPS[args.op]} per key per round), every pulled value "
        "checked. GB/s per worker counts pushed plus "
        "pulled bytes; a key-op is one key pushed and pulled. Medians of "
        f"{args.repeats} jobs per row (15 to 2,000 rounds each, by size, after 3 warm-up rounds).",
        "",
    ]
    if ceiling:
        lines.append(
            f"Loopback TCP ceiling (iperf3, one stream, same run): "
            f"**{statistics.median(ceiling):.2f} GB/s** (median of {len(ceiling)})."
        )
        lines.append("")
    lines += [
        "| W×S | array | GB/s per worker | key-ops/s per worker | round p50 ms | p99 ms "
        "| MXNet 1.9.1 (issue 2) | mxrs/MXNet |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for w, s in JOBS:
        for run in RUNS:
            key = (w, s, run)
            g, k, p50, p99 = (
                med(key, f) for f in ("gbps_per_worker", "key_ops_per_s", "p50_ms", "p99_ms")
            )
            ref = MXNET.get(key, {})
            mx, ratio = "", ""
            if "gbps" in ref:
                mx, ratio = f"{ref['gbps']:.2f} GB/s", f"{g / ref['gbps']:.1f}×"
            elif "kops" in ref:
                mx, ratio = f"{ref['kops']:,} key-ops/s", f"{k / ref['kops']:.1f}×"
            elif "p50" in ref:
                mx, ratio = f"p50 {ref['p50']} ms", f"{ref['p50'] / p50:.1f}× faster"
            lines.append(
                f"| {w}×{s} | {label(run)} | {g:.2f} | {k:,.0f} | {p50:.3f} | {p99:.3f} "
                f"| {mx} | {ratio} |"
            )
    lines += ["", END]
    section = "\n".join(lines)

    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    RESULTS.write_text(text)
    print(section)


if __name__ == "__main__":
    main()
