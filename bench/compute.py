"""Model computation on the CPU side by side: Gluon model-zoo networks trained and run under
Apache MXNet 1.9.1 and under mxrs with each of its kernel providers (oneDNN, NumPy).

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/compute.py [--repeats 3] [--threads 1 2] [--openblas both] [--write]
    .venv/bin/python bench/compute.py --quick --threads 1 --openblas machine   # smoke test

Three configurations run the same program (``bench/_compute_side.py``): MXNet 1.9.1
(``bench/.venv-mxnet``), mxrs with ``MXRS_KERNELS=onednn`` and mxrs with ``MXRS_KERNELS=numpy``
(``.venv``). A cell of the matrix is one model (LeNet 1×28×28 batch 128; resnet18_v1 3×32×32
batch 32; resnet18_v1 3×224×224 batch 16; resnet50_v1 3×224×224 batch 8; 10 classes), one mode
(training step or inference), hybridized or not, one thread count and one OpenBLAS setting; each
measurement is a fresh child process with a hard time limit. Every repeat goes once through the
whole matrix, running the three configurations of a cell one after another, the one that starts
rotating from repeat to repeat; a figure is the median over the repeats.

Threads: ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``MXNET_OMP_MAX_THREADS`` are the thread count; ``MXNET_CPU_WORKER_NTHREADS=1`` (MXNet's default:
one engine worker, whose operators use the OpenMP threads), so neither library runs more compute
threads than asked. ``--openblas both`` measures the matrix with this machine's
``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` and again with both removed from the children's
environment (``machine`` or ``unset`` runs one of the two).

``--json`` (default ``bench/out/compute.json``) keeps every run: samples/s, peak RSS, the kernel
libraries each child found, failures. ``--write`` replaces the section between
``<!-- compute:begin -->`` and ``<!-- compute:end -->`` of ``bench/RESULTS.md`` (``--results``),
appending it when the markers are absent.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _jobs import THREAD_VARS, JobFailed, python_for
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
SIDE = ROOT / "bench" / "_compute_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "compute.json"
BEGIN, END = "<!-- compute:begin -->", "<!-- compute:end -->"
TITLE = "## Model computation on CPU: mxrs (oneDNN, NumPy) vs Apache MXNet 1.9.1 (issue 30)"
# name -> (label, library, environment)
CONFIGS = {
    "mxnet": ("MXNet 1.9.1", "mxnet", {}),
    "onednn": ("mxrs oneDNN", "mxrs", {"MXRS_KERNELS": "onednn"}),
    "numpy": ("mxrs NumPy", "mxrs", {"MXRS_KERNELS": "numpy"}),
}
# name -> (network, C,H,W, batch, timed training steps, timed inference steps, warm-up steps):
# about 1 to 20 s of timed work per child on one of this machine's cores
MODELS = {
    "lenet": ("lenet", "1,28,28", 128, 100, 300, 5),
    "resnet18_v1_32": ("resnet18_v1", "3,32,32", 32, 20, 60, 3),
    "resnet18_v1_224": ("resnet18_v1", "3,224,224", 16, 5, 10, 2),
    "resnet50_v1_224": ("resnet50_v1", "3,224,224", 8, 5, 10, 2),
}
QUICK_MODELS = ["lenet", "resnet18_v1_32"]
MODES = ("train", "infer")
OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
EXCEPTION_LINE = re.compile(r"^[\w.]*(Error|Exception|Interrupt|Exit)\b")


def child_env(config: str, threads: int, openblas: str) -> dict:
    """The environment of one child: no dist or library variables of ours, the thread counts,
    the configuration's ``MXRS_KERNELS``, and the OpenBLAS variables kept or removed."""
    _, lib, extra = CONFIGS[config]
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "PS_", "MXRS_", "MXNET_"))
    }
    if openblas == "unset":
        for var in OPENBLAS_VARS:
            env.pop(var, None)
    env.update({var: str(threads) for var in THREAD_VARS})
    env.update(
        {
            "MXNET_OMP_MAX_THREADS": str(threads),
            "MXNET_CPU_WORKER_NTHREADS": "1",
            "BENCH_LIB": lib,
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    return env


def last_line(text: str) -> str:
    """The last non-empty line of ``text``, or rather the last exception line of a traceback in
    it, whose message may go on over more lines ("" when there is none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if EXCEPTION_LINE.match(line)]
    return (raised or lines or [""])[-1]


def run_child(config: str, cell: dict, steps: int | None, timeout: float) -> dict:
    """One measurement in a fresh process; its JSON result, or :class:`JobFailed` carrying the
    last line of its stderr."""
    net, shape, batch, train_steps, infer_steps, warmup = MODELS[cell["model"]]
    default_steps = train_steps if cell["mode"] == "train" else infer_steps
    argv = [str(SIDE), "--model", net, "--shape", shape, "--batch", str(batch)]
    argv += ["--mode", cell["mode"], "--steps", str(steps or default_steps)]
    argv += ["--warmup", str(warmup)] + (["--hybridize"] if cell["hybridize"] else [])
    env = child_env(config, cell["threads"], cell["openblas"])
    try:
        p = subprocess.run(
            [python_for(CONFIGS[config][1]), *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise JobFailed(f"ran past {timeout:g} s") from None
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not results:
        why = last_line(p.stderr) or last_line(p.stdout) or "no output"
        raise JobFailed(f"exit {p.returncode}: {why}")
    return results[-1]


def cells(openblas: list[str], threads: list[int], models: list[str]) -> list[dict]:
    """Every cell of the matrix, in the order a repeat runs them."""
    return [
        {"openblas": o, "threads": t, "model": m, "mode": mode, "hybridize": h}
        for o in openblas
        for t in threads
        for m in models
        for mode in MODES
        for h in (False, True)
    ]


def key(cell: dict) -> str:
    """A cell's name in the JSON: ``openblas/threads/model/mode/hybridized``."""
    hyb = "hybridized" if cell["hybridize"] else "imperative"
    return f"{cell['openblas']}/{cell['threads']}/{cell['model']}/{cell['mode']}/{hyb}"


def measure(todo: list[dict], repeats: int, steps: int | None, timeout: float) -> dict:
    """Run every cell ``repeats`` times; returns the runs, failures and kernel reports."""
    names = list(CONFIGS)
    runs = {key(c): {cfg: [] for cfg in names} for c in todo}
    errors: list[dict] = []
    kernels: dict[str, dict] = {}
    for rep in range(repeats):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for cell in todo:
            for cfg in order:
                start = time.perf_counter()
                try:
                    got = run_child(cfg, cell, steps, timeout)
                except JobFailed as e:
                    errors.append(
                        {"cell": key(cell), "config": cfg, "repeat": rep, "error": str(e)}
                    )
                    print(f"FAILED {key(cell)} {cfg}: {e}", file=sys.stderr, flush=True)
                    continue
                runs[key(cell)][cfg].append(
                    {"samples_per_s": got["samples_per_s"], "peak_rss_mb": got["peak_rss_mb"]}
                )
                kernels.setdefault(f"{cfg}/{cell['openblas']}", got["kernels"])
                print(
                    f"{key(cell)} {cfg}: {got['samples_per_s']:,.1f} samples/s, "
                    f"{got['peak_rss_mb']:,.0f} MiB ({time.perf_counter() - start:.1f} s)",
                    flush=True,
                )
    medians = {
        k: {
            cfg: {
                "samples_per_s": statistics.median(r["samples_per_s"] for r in rs),
                "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
            }
            if rs
            else None
            for cfg, rs in by_cfg.items()
        }
        for k, by_cfg in runs.items()
    }
    return {"runs": runs, "medians": medians, "errors": errors, "kernels": kernels}


def describe_kernels(k: dict) -> str:
    """One line of what a child found: OpenBLAS core, threadpoolctl, libraries, features."""
    parts = []
    for ob in k["openblas"]:
        libs = ", ".join(ob["libraries"])
        parts.append(f"{ob.get('config', '?')}, core {ob.get('corename', '?')} ({libs})")
    pools = k["threadpoolctl"]
    if pools == "unknown":
        parts.append("threadpoolctl: unknown (not installed)")
    else:
        parts.append(
            "threadpoolctl: "
            + "; ".join(
                f"{p['internal_api']} {p['version']} ({p['architecture'] or '-'})" for p in pools
            )
        )
    parts.append("loaded: " + (", ".join(k["loaded"]) or "none of the known kernel libraries"))
    if k["features"] is not None:
        parts.append("features: " + (", ".join(k["features"]) or "none"))
    return "; ".join(parts)


def fmt(v: float | None, spec: str = ",.1f") -> str:
    """A number for the table, or "–"."""
    return "–" if v is None else format(v, spec)


def table(data: dict, openblas: str, threads: int) -> list[str]:
    """The Markdown table of one thread count and OpenBLAS setting."""
    names = list(CONFIGS)
    head = [CONFIGS[c][0] for c in names]
    lines = [
        "| model | mode | hybridized | "
        + " | ".join(f"{h} samples/s" for h in head)
        + " | oneDNN / MXNet | NumPy / MXNet | "
        + " | ".join(f"{h} peak RSS MiB" for h in head)
        + " | runs: "
        + "; ".join(head)
        + " |",
        "|---|---|---|" + "---:|" * 8 + "---|",
    ]
    failed = {(e["cell"], e["config"]): e["error"] for e in data["errors"]}
    for cell in cells([openblas], [threads], data["settings"]["models"]):
        k = key(cell)
        med = data["medians"][k]

        def rate(cfg, k=k, med=med):
            if med[cfg] is not None:
                return fmt(med[cfg]["samples_per_s"])
            why = failed.get((k, cfg), "not run").replace("|", "\\|")
            return f"failed: `{why[-120:]}`"

        def ratio(cfg, med=med):
            a, b = med[cfg], med["mxnet"]
            return fmt(a["samples_per_s"] / b["samples_per_s"], ".2f") if a and b else "–"

        rss = [fmt(med[c]["peak_rss_mb"], ",.0f") if med[c] else "–" for c in names]
        runs = "; ".join(
            ", ".join(f"{r['samples_per_s']:,.1f}" for r in data["runs"][k][c]) or "–"
            for c in names
        )
        net, shape, batch, *_ = MODELS[cell["model"]]
        label = f"{'LeNet' if net == 'lenet' else net} {shape.replace(',', '×')}, batch {batch}"
        lines.append(
            f"| {label} | {cell['mode']} | {'yes' if cell['hybridize'] else 'no'} | "
            + " | ".join(rate(c) for c in names)
            + f" | {ratio('onednn')} | {ratio('numpy')} | "
            + " | ".join(rss)
            + f" | {runs} |"
        )
    return lines


def report(data: dict) -> str:
    """The RESULTS.md section for a finished run."""
    s, v = data["settings"], data["versions"]
    steps = "; ".join(
        f"{m}: {s['steps'] or n} training or {s['steps'] or k} inference steps after {w}"
        for m, (*_, n, k, w) in MODELS.items()
        if m in s["models"]
    )
    machine_ob = ", ".join(f"{k}={data['openblas_env'][k] or '(unset)'}" for k in OPENBLAS_VARS)
    lines = [
        BEGIN,
        TITLE,
        "",
        f"Machine: {data['machine']}; mxrs {v['mxrs']}, MXNet {v['mxnet']}; {data['date']}. "
        f"Command: `{data['command']}`.",
        "",
        "The same Gluon program (`bench/_compute_side.py`) under Apache MXNet 1.9.1 and under "
        "mxrs with `MXRS_KERNELS=onednn` and `MXRS_KERNELS=numpy`: the seeds' LeNet "
        "(`examples/lenet.py`) or `mx.gluon.model_zoo.vision.get_model(name, classes=10)`, "
        "`mx.init.Xavier()`, not hybridized or after `hybridize()`, one random batch made with "
        "numpy from a fixed seed. *train*: forward under `autograd.record()`, "
        "`SoftmaxCrossEntropyLoss`, `backward()`, `Trainer('sgd', momentum 0.9).step`; *infer*: "
        "forward only. Each step ends with `wait_to_read()` on its result (MXNet's engine is "
        "asynchronous), in both libraries. Samples/s over the timed steps after the warm-up "
        f"ones ({steps}); each measurement is a fresh process, the three configurations of a "
        "cell run one after another, the one that starts rotating between repeats; medians over "
        f"{s['repeats']} repeat{'s' if s['repeats'] != 1 else ''}. Peak RSS: the child's "
        "`getrusage(RUSAGE_SELF).ru_maxrss` at exit (interpreter and library included), median "
        "over the repeats. Ratios are mxrs / MXNet (above 1: mxrs is faster). Threads: "
        "`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` and "
        "`MXNET_OMP_MAX_THREADS`, with `MXNET_CPU_WORKER_NTHREADS=1`.",
        "",
        "MXNet's own `train_imagenet.py --benchmark 1` (the symbolic API, `Module.fit`) is "
        "measured by `bench/symbolic.py`, in the section \"MXNet's train_imagenet.py benchmark "
        'mode" above.',
        "",
        "Kernels each configuration loaded (OpenBLAS's own `openblas_get_config()` and core "
        "name read through ctypes; threadpoolctl where it is installed):",
        "",
    ]
    for ob in s["openblas"]:
        for cfg in CONFIGS:
            k = data["kernels"].get(f"{cfg}/{ob}")
            lines.append(
                f"- {CONFIGS[cfg][0]}, OpenBLAS variables {ob}: "
                + (describe_kernels(k) if k else "no child finished")
            )
    for ob in s["openblas"]:
        for t in s["threads"]:
            env = f"this machine's ({machine_ob})" if ob == "machine" else "removed"
            lines += [
                "",
                f"### {t} thread{'s' if t != 1 else ''}, OpenBLAS variables {env}",
                "",
                *table(data, ob, t),
            ]
    if data["errors"]:
        lines += ["", "Failed runs:", ""]
        lines += [
            f"- {e['cell']} {CONFIGS[e['config']][0]} (repeat {e['repeat']}): {e['error']}"
            for e in data["errors"]
        ]
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    """Parse the options, run the matrix, save the JSON and optionally the section."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, help="runs of each cell and configuration (3)")
    ap.add_argument("--steps", type=int, help="timed steps per child (default: per model)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", choices=list(MODELS), help="default: all")
    ap.add_argument("--openblas", choices=("both", "machine", "unset"), default="both")
    ap.add_argument("--quick", action="store_true", help="LeNet and resnet18 at 32, 1 repeat")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per child")
    ap.add_argument("--json", type=Path, default=JSON_OUT, help="where to save all numbers")
    ap.add_argument("--write", action="store_true", help="write the section into --results")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the Markdown file to update")
    a = ap.parse_args()
    models = a.models or (QUICK_MODELS if a.quick else list(MODELS))
    repeats = a.repeats or (1 if a.quick else 3)
    openblas_env = {var: os.environ.get(var) for var in OPENBLAS_VARS}
    openblas = ["machine", "unset"] if a.openblas == "both" else [a.openblas]
    if a.openblas == "both" and not any(openblas_env.values()):
        print("neither OpenBLAS variable is set here: measuring once", file=sys.stderr)
        openblas = ["machine"]
    data = {
        "machine": machine(load=True),
        "date": datetime.date.today().isoformat(),
        "command": shlex.join([".venv/bin/python", "bench/compute.py", *sys.argv[1:]]),
        "versions": {lib: version(lib) for lib in ("mxrs", "mxnet")},
        "openblas_env": openblas_env,
        "settings": {
            "repeats": repeats,
            "steps": a.steps,
            "threads": a.threads,
            "models": models,
            "openblas": openblas,
            "timeout": a.timeout,
        },
    }
    t0 = time.perf_counter()
    data.update(measure(cells(openblas, a.threads, models), repeats, a.steps, a.timeout))
    publish(data, report(data), a.json, a.results, a.write, BEGIN, END)
    print(f"total {time.perf_counter() - t0:.0f} s; saved {a.json}", flush=True)


if __name__ == "__main__":
    main()
