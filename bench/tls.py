"""What mutual TLS costs: the ps-core data plane (``ps-bench``, 2 workers x 2 servers on
127.0.0.1), ``kv.pushpull`` rounds from Python and a training step of a 16 MB MLP under
``mxrs-launch local``, each without and with ``--tls``, alternating, medians over repeats, into
``bench/RESULTS.md``.

Usage::

    cargo build --release -p ps-core -p ps-bench && pip install .
    python bench/tls.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from _report import write_section
from replication import TRAIN_STEPS, TRAIN_WORKER

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- tls:begin -->", "<!-- tls:end -->"
PS_BENCH = ROOT / "target" / "release" / "ps-bench"
#: ps-bench runs and their rounds: about a second each.
BENCH_RUNS = {"16777216": 40, "1048576": 300, "4096x1000": 150}
PY_RUNS = {"16777216": 30, "4096x1000": 100}
LABELS = {"16777216": "16 MB", "1048576": "1 MB", "4096x1000": "1000 × 4 KB"}


def ps_bench(run: str, tls: bool) -> dict:
    """One ps-bench job: its JSON line."""
    argv = [str(PS_BENCH), "--workers", "2", "--servers", "2", "--runs", run]
    argv += ["--rounds", str(BENCH_RUNS[run])] + (["--tls"] if tls else [])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _launch(args: list[str], tls: bool, env=None) -> str:
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2"]
    cmd += ["--replicas", "0"] + (["--tls"] if tls else []) + args
    p = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )
    if p.returncode != 0:
        raise SystemExit(p.stdout[-2000:] + p.stderr[-2000:])
    return p.stdout


def _records(out: str) -> list[dict]:
    return [json.loads(ln.split("] ", 1)[1]) for ln in out.splitlines() if "] {" in ln]


def pushpull_ms(run: str, tls: bool) -> float:
    """Milliseconds per ``kv.pushpull`` round from Python, mean of the two workers."""
    worker = [sys.executable, str(ROOT / "bench" / "_kv_worker.py"), run, str(PY_RUNS[run])]
    recs = _records(_launch(worker, tls))
    return statistics.mean(1000 * r["secs"] / PY_RUNS[run] for r in recs)


def train_ms(tls: bool, script: Path) -> float:
    """Median ms per training step of the 16 MB MLP job, mean of its two workers."""
    env = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    out = _launch([sys.executable, str(script), str(TRAIN_STEPS)], tls, env)
    return statistics.mean(r["ms"] for r in _records(out))


def _paired(measure, repeats: int):
    """Medians of ``measure(False)`` and ``measure(True)``, run alternately."""
    off, on = [], []
    for _ in range(repeats):
        off.append(measure(False))
        on.append(measure(True))
    return statistics.median(off), statistics.median(on)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = ap.parse_args()
    bench_rows = []
    for run in BENCH_RUNS:
        key = "key_ops_per_s" if "x" in run else "gbps_per_worker"
        off, on = _paired(lambda tls, run=run, key=key: ps_bench(run, tls)[key], args.repeats)
        unit = "key-ops/s" if "x" in run else "GB/s"
        fmt = (lambda v: f"{v:,.0f}") if "x" in run else (lambda v: f"{v:.2f}")
        bench_rows.append(
            f"| {LABELS[run]} ({unit} per worker) | {fmt(off)} | {fmt(on)} | "
            f"{100 * (off / on - 1):+.0f}% |"
        )
        print(bench_rows[-1], flush=True)
    py_rows = []
    for run in PY_RUNS:
        off, on = _paired(lambda tls, run=run: pushpull_ms(run, tls), args.repeats)
        py_rows.append(f"| {LABELS[run]} | {off:.2f} | {on:.2f} | {100 * (on / off - 1):+.0f}% |")
        print(py_rows[-1], flush=True)
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"mxrs-tls-train-{os.getpid()}.py"
    script.write_text(TRAIN_WORKER)
    try:
        off, on = _paired(lambda tls: train_ms(tls, script), args.repeats)
    finally:
        script.unlink()
    train = f"| 16 MB MLP, batch 64 | {off:.1f} | {on:.1f} | {100 * (on / off - 1):+.0f}% |"
    print(train, flush=True)
    section = "\n".join(
        [
            BEGIN,
            "## What mutual TLS costs (issue 36)",
            "",
            f"{datetime.date.today()}, `python bench/tls.py --repeats {args.repeats}` on "
            f"{platform.machine()} ({os.cpu_count()} cores): 2 workers × 2 servers on "
            "127.0.0.1, each cell the median of "
            f"{args.repeats} runs, without and with TLS alternately. TLS 1.3 through rustls "
            "with ring's AES-128-GCM (VAES/AVX2 code on this CPU; `perf` names "
            "`aes_gcm_enc_update_vaes_avx2`); every connection, the scheduler's gRPC too, "
            "shows a certificate of the job's CA both ways. Cost: how much longer a round or a "
            "step takes with TLS.",
            "",
            "The ps-core data plane (`ps-bench --workers 2 --servers 2 [--tls]`, a push and a "
            "pull in flight per key and round):",
            "",
            "| run | without TLS | with TLS | cost |",
            "|---|---|---|---|",
            *bench_rows,
            "",
            "`kv.pushpull` rounds from Python (`bench/_kv_worker.py` under `mxrs-launch local "
            "[--tls]`), ms per round:",
            "",
            "| keys | without TLS | with TLS | cost |",
            "|---|---|---|---|",
            *py_rows,
            "",
            "A Gluon training step (the MLP 1024-2048-1024 of the replication section, 16 MB of "
            "parameters, batch 64, SGD with momentum on the servers, one thread per process; "
            f"median of the last {TRAIN_STEPS - 5} steps, mean of the workers), ms per step:",
            "",
            "| job | without TLS | with TLS | cost |",
            "|---|---|---|---|",
            train,
            END,
        ]
    )
    if args.no_write:
        print(section)
        return
    write_section(RESULTS, section, BEGIN, END)


if __name__ == "__main__":
    main()
