"""Gluon LeNet training side by side: the same program (``bench/_train_side.py``) under mxrs and
under Apache MXNet 1.9.1, medians over repeats.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/train_mxnet.py [--repeats 3] [--acc-repeats 1] [--write]
    .venv/bin/python bench/train_mxnet.py --quick  # smoke test: few steps, 1 epoch on a subset

Measured, for both libraries, the library that runs first alternating between repeats:

- throughput of one process with 1 and with 2 threads (OMP/OpenBLAS/MKL thread variables; no
  ``DMLC_*`` variables, so the Trainer's ``kvstore='local'`` is dropped for the single device);
- throughput of a dist_sync job of 2 workers and 2 servers on 127.0.0.1 (``_jobs.run_job``, one
  thread per process), the aggregate being the sum of the workers' samples/s;
- time to 98.5% test accuracy on full MNIST in one process with 2 threads (training seconds
  only, evaluation after each epoch excluded).

``--json`` (default ``bench/out/train.json``) saves::

    {"machine": str, "date": "YYYY-MM-DD", "command": str, "versions": {"mxrs", "mxnet"},
     "settings": {"batch", "lr", "momentum", "warmup", "steps", "repeats", "acc_repeats",
                  "acc_threads", "target", "max_epochs", "train_limit"},
     "configs": {CONFIG: {"label": str, "workers": int, "servers": int, "threads": int,
                          "runs": {"mxrs": [samples/s], "mxnet": [samples/s]}}},
     "medians": {CONFIG: {"mxrs": samples/s | null, "mxnet": samples/s | null}},
     "ratios": {CONFIG: mxrs/MXNet | null},
     "accuracy": {"runs": {lib: [{"time_to_target": s | null, "epochs": int,
                                  "test_acc": float, "curve": [[epoch, train_secs, test_acc]]}]},
                  "medians": {lib: s | null}, "ratio": mxrs time / MXNet time | null},
     "targets": [{"name", "config", "reference", "mxrs", "mxnet", "met"}],
     "errors": [str]}

where CONFIG is ``one_process_1_thread``, ``one_process_2_threads`` or ``dist_2x2`` (samples/s
of the whole job: the sum over its workers). A median time to target counts runs that missed
the target as infinitely slow (null when that is the median). ``--write`` replaces the section
between ``<!-- train-mxnet:begin -->`` and ``<!-- train-mxnet:end -->`` of ``bench/RESULTS.md``
(or ``--results PATH``), appending it when the markers are absent.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _jobs import LIBS, THREAD_VARS, JobFailed, python_for, run_job
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "bench" / "_train_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "train.json"
BEGIN, END = "<!-- train-mxnet:begin -->", "<!-- train-mxnet:end -->"
NAMES = {"mxrs": "mxrs", "mxnet": "MXNet"}
# name -> (label, workers, servers, threads per process)
CONFIGS = {
    "one_process_1_thread": ("1 process, 1 thread", 1, 0, 1),
    "one_process_2_threads": ("1 process, 2 threads", 1, 0, 2),
    "dist_2x2": ("2 workers × 2 servers, dist_sync, 1 thread each", 2, 2, 1),
}
# (name, config, MXNet's reference samples/s): mxrs's targets, met when mxrs's median is at
# least MXNet's median measured side by side in the same run.
TARGETS = [
    ("LeNet, 1 process, 2 threads", "one_process_2_threads", 12_305),
    ("LeNet, 2 workers × 2 servers", "dist_2x2", 9_959),
]
ACC_THREADS = 2
LR, MOMENTUM, BATCH, TARGET = 0.02, 0.9, 128, 0.985


def local_env(lib: str, threads: int) -> dict:
    """The environment of a one-process run: no dist variables, the thread counts set."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "PS_", "MXRS_", "MXNET_"))
    }
    env.update({"BENCH_LIB": lib, "PYTHONUNBUFFERED": "1"})
    env.update({var: str(threads) for var in THREAD_VARS})
    return env


def run_local(lib: str, threads: int, argv: list[str], timeout: float) -> list[dict]:
    """Run the worker as one plain process; returns the JSON objects it printed."""
    try:
        p = subprocess.run(
            [python_for(lib), str(WORKER), *argv],
            env=local_env(lib, threads),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise JobFailed(f"{lib} {argv} ran past {timeout} s") from None
    if p.returncode != 0:
        raise JobFailed(
            f"{lib} {argv} exited with {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}"
        )
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def throughput(lib: str, config: str, argv: list[str], timeout: float) -> float:
    """samples/s of one run of ``config``: the sum over the job's workers."""
    _, workers, servers, threads = CONFIGS[config]
    if servers:
        lines = run_job(
            lib, workers, servers, [str(WORKER), *argv], threads=threads, timeout=timeout
        )
    else:
        lines = run_local(lib, threads, argv, timeout)
    rates = [x["samples_per_s"] for x in lines if "samples_per_s" in x]
    if len(rates) != workers:
        raise JobFailed(f"{lib} {config}: {len(rates)} results from {workers} workers")
    return sum(rates)


def accuracy(lib: str, argv: list[str], timeout: float) -> dict:
    """One time-to-target run: {time_to_target, epochs, test_acc, curve}."""
    lines = run_local(lib, ACC_THREADS, argv, timeout)
    if not lines or "time_to_target" not in lines[-1]:
        raise JobFailed(f"{lib} accuracy: no final result")
    final = lines[-1]
    curve = [[x["epoch"], x["train_secs"], x["test_acc"]] for x in lines if "epoch" in x]
    return {
        "time_to_target": final["time_to_target"],
        "epochs": final["epochs"],
        "test_acc": final["test_acc"],
        "curve": curve,
    }


def median_or_none(values: list[float]) -> float | None:
    """The median of ``values`` (None for none)."""
    return statistics.median(values) if values else None


def median_time(runs: list[dict]) -> float | None:
    """Median time to target, a run that missed counting as infinite (None if the median is)."""
    times = [r["time_to_target"] if r["time_to_target"] is not None else math.inf for r in runs]
    if not times:
        return None
    m = statistics.median(times)
    return None if math.isinf(m) else m


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None where either is missing."""
    return a / b if a is not None and b else None


def fmt(v: float | None, spec: str = ",.0f", missing: str = "failed") -> str:
    """A number for the table, or ``missing``."""
    return format(v, spec) if v is not None else missing


def section(data: dict) -> str:
    """The RESULTS.md section for a finished run."""
    s, v = data["settings"], data["versions"]
    lines = [
        BEGIN,
        "## Gluon LeNet training: mxrs vs Apache MXNet 1.9.1",
        "",
        f"Machine: {data['machine']}; mxrs {v['mxrs']}, MXNet {v['mxnet']}; {data['date']}. "
        f"Command: `{data['command']}`.",
        "",
        "Both libraries run the same Gluon program (`bench/_train_side.py`): the seeds' LeNet "
        "(Conv2D 6x5 relu, MaxPool 2, Conv2D 16x3 relu, MaxPool 2, Flatten, Dense 120 relu, "
        "Dense 84 relu, Dense 10) in a `HybridSequential` that is not hybridized (both run "
        "imperatively), `SoftmaxCrossEntropyLoss`, `gluon.Trainer` with SGD "
        f"(lr {s['lr']}, momentum {s['momentum']}), batch {s['batch']} per worker of MNIST "
        "training images scaled to [0, 1], identical initial weights (drawn with numpy). "
        f"Throughput: {s['steps']} timed steps (forward, backward, `trainer.step`) after "
        f"{s['warmup']} warm-up steps, finished by reading the loss; median over "
        f"{s['repeats']} fresh run{'s' if s['repeats'] != 1 else ''} per library, the library "
        "that runs first alternating. One process: `kvstore='local'` with one device (no store "
        "at all in either library). Dist: `dist_sync` store, every worker on its own shard, "
        "samples/s summed over the workers. Ratio is mxrs / MXNet.",
        "",
        "| config | mxrs samples/s | MXNet samples/s | mxrs / MXNet | runs: mxrs; MXNet |",
        "|---|---:|---:|---:|---|",
    ]
    for name, cfg in data["configs"].items():
        med = data["medians"][name]
        runs = "; ".join(
            ", ".join(f"{x:,.0f}" for x in cfg["runs"][lib]) or "failed" for lib in LIBS
        )
        lines.append(
            f"| {cfg['label']} | {fmt(med['mxrs'])} | {fmt(med['mxnet'])} | "
            f"{fmt(data['ratios'][name], '.2f', '')} | {runs} |"
        )
    acc = data["accuracy"]
    if acc is not None:
        limit = f"the first {s['train_limit']:,} of " if s["train_limit"] else ""
        lines += [
            "",
            f"Time to {s['target']:.1%} test accuracy (10,000 test images), one process with "
            f"{s['acc_threads']} threads, training on {limit}the 60,000 MNIST training images "
            f"(shuffled per epoch with a fixed seed), evaluating after each epoch (at most "
            f"{s['max_epochs']}); seconds of training only, median over {s['acc_repeats']} "
            f"run{'s' if s['acc_repeats'] != 1 else ''} per library:",
            "",
            f"| library | time to {s['target']:.1%} (s) | epochs | test accuracy | runs (s) |",
            "|---|---:|---:|---:|---|",
        ]
        for lib in LIBS:
            runs = acc["runs"][lib]
            last = runs[-1] if runs else None
            lines.append(
                f"| {NAMES[lib]} | {fmt(acc['medians'][lib], '.1f', 'not reached')} | "
                f"{last['epochs'] if last else ''} | "
                f"{fmt(last['test_acc'] if last else None, '.4f')} | "
                + ", ".join(fmt(r["time_to_target"], ".1f", "missed") for r in runs)
                + " |"
            )
        lines += [
            "",
            f"mxrs time / MXNet time: {fmt(acc['ratio'], '.2f', 'n/a')} "
            "(below 1: mxrs reaches the target sooner). Epochs and test accuracy are "
            "those of the last run.",
        ]
    lines += ["", "Targets (mxrs, against MXNet measured side by side in this run):", ""]
    for t in data["targets"]:
        if t["met"] is None:
            verdict = "not measured in this run"
        else:
            verdict = (
                f"**{'met' if t['met'] else 'missed'}**: mxrs {t['mxrs']:,.0f}, "
                f"MXNet {t['mxnet']:,.0f} samples/s"
            )
        lines.append(
            f"- {t['name']}: samples/s ≥ MXNet's (reference {t['reference']:,} "
            f"samples/s) — {verdict}"
        )
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    """Parse the options, run every measurement, save the JSON and optionally the section."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 1 repeat, 30 steps, 1 epoch on 10,000 training images",
    )
    ap.add_argument("--repeats", type=int, help="throughput runs per config and library (3)")
    ap.add_argument("--acc-repeats", type=int, help="time-to-target runs per library (1; 0: skip)")
    ap.add_argument("--steps", type=int, help="timed steps per throughput run (600)")
    ap.add_argument("--warmup", type=int, help="warm-up steps per throughput run (10)")
    ap.add_argument("--max-epochs", type=int, help="most epochs of a time-to-target run (10)")
    ap.add_argument("--train-limit", type=int, help="train on the first N images (all)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run")
    ap.add_argument("--json", type=Path, default=JSON_OUT, help="where to save all numbers")
    ap.add_argument("--write", action="store_true", help="write the section into --results")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the Markdown file to update")
    args = ap.parse_args()
    q = args.quick

    def pick(value, quick, full):
        return value if value is not None else (quick if q else full)

    settings = {
        "batch": BATCH,
        "lr": LR,
        "momentum": MOMENTUM,
        "warmup": pick(args.warmup, 3, 10),
        "steps": pick(args.steps, 30, 600),
        "repeats": pick(args.repeats, 1, 3),
        "acc_repeats": pick(args.acc_repeats, 1, 1),
        "acc_threads": ACC_THREADS,
        "target": TARGET,
        "max_epochs": pick(args.max_epochs, 1, 10),
        "train_limit": pick(args.train_limit, 10_000, 0),
    }
    common = ["--batch", str(BATCH), "--lr", str(LR), "--momentum", str(MOMENTUM)]
    thr_argv = [
        "throughput",
        *common,
        "--warmup",
        str(settings["warmup"]),
        "--steps",
        str(settings["steps"]),
    ]
    acc_argv = [
        "accuracy",
        *common,
        "--target",
        str(TARGET),
        "--max-epochs",
        str(settings["max_epochs"]),
        "--train-limit",
        str(settings["train_limit"]),
    ]

    t0 = time.perf_counter()
    errors = []
    configs = {
        name: {
            "label": label,
            "workers": w,
            "servers": s,
            "threads": t,
            "runs": {lib: [] for lib in LIBS},
        }
        for name, (label, w, s, t) in CONFIGS.items()
    }
    for name, cfg in configs.items():
        for rep in range(settings["repeats"]):
            for lib in LIBS if rep % 2 == 0 else LIBS[::-1]:
                start = time.perf_counter()
                try:
                    rate = throughput(lib, name, thr_argv, args.timeout)
                except JobFailed as e:
                    errors.append(f"{lib} {name} repeat {rep}: {e}")
                    print(f"FAILED {errors[-1]}", file=sys.stderr, flush=True)
                    continue
                cfg["runs"][lib].append(rate)
                print(
                    f"{lib:5} {cfg['label']}: {rate:,.0f} samples/s "
                    f"({time.perf_counter() - start:.1f} s)",
                    flush=True,
                )
    medians = {
        name: {lib: median_or_none(cfg["runs"][lib]) for lib in LIBS}
        for name, cfg in configs.items()
    }
    ratios = {name: ratio(m["mxrs"], m["mxnet"]) for name, m in medians.items()}

    acc = None
    if settings["acc_repeats"] > 0:
        runs = {lib: [] for lib in LIBS}
        for rep in range(settings["acc_repeats"]):
            for lib in LIBS if rep % 2 == 0 else LIBS[::-1]:
                try:
                    got = accuracy(lib, acc_argv, args.timeout)
                except JobFailed as e:
                    errors.append(f"{lib} accuracy repeat {rep}: {e}")
                    print(f"FAILED {errors[-1]}", file=sys.stderr, flush=True)
                    continue
                runs[lib].append(got)
                secs = got["time_to_target"]
                reached = f"{secs:.1f} s" if secs is not None else "not reached"
                print(
                    f"{lib:5} time to {TARGET:.1%} with {ACC_THREADS} threads: {reached}, "
                    f"{got['epochs']} epochs, test accuracy {got['test_acc']:.4f}",
                    flush=True,
                )
        acc_medians = {lib: median_time(runs[lib]) for lib in LIBS}
        acc = {
            "runs": runs,
            "medians": acc_medians,
            "ratio": ratio(acc_medians["mxrs"], acc_medians["mxnet"]),
        }

    targets = []
    for tname, config, reference in TARGETS:
        a, b = medians[config]["mxrs"], medians[config]["mxnet"]
        targets.append(
            {
                "name": tname,
                "config": config,
                "reference": reference,
                "mxrs": a,
                "mxnet": b,
                "met": a >= b if a is not None and b is not None else None,
            }
        )
    data = {
        "machine": machine(load=True),
        "date": datetime.date.today().isoformat(),
        "command": shlex.join([".venv/bin/python", "bench/train_mxnet.py", *sys.argv[1:]]),
        "versions": {lib: version(lib) for lib in LIBS},
        "settings": settings,
        "configs": configs,
        "medians": medians,
        "ratios": ratios,
        "accuracy": acc,
        "targets": targets,
        "errors": errors,
    }
    publish(data, section(data), args.json, args.results, args.write, BEGIN, END)
    print(f"total {time.perf_counter() - t0:.0f} s; saved {args.json}", flush=True)
    if errors:
        sys.exit("some runs failed (see above and the JSON's errors)")


if __name__ == "__main__":
    main()
