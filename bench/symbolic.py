"""MXNet's own ``train_imagenet.py`` benchmark mode (the seeds' blog workload) under mxrs and
under Apache MXNet 1.9.1, side by side: the symbolic API end to end (``mx.sym`` ResNet-18,
``mx.mod.Module.fit``, Speedometer), one process and a 2 workers × 2 servers dist_sync job.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/symbolic.py [--repeats 3] [--examples 1280] [--write]

The script and its options are the same for both libraries: ``--benchmark 1 --network resnet
--num-layers 18 --image-shape 3,32,32 --batch-size 32`` (synthetic data, 1000 classes), read from
``../shared/mxnet-examples/image-classification``; mxrs runs it through the shim that makes
``import mxnet`` mean mxrs. A run's throughput is the median of its Speedometer lines after the
first (warm-up) one, summed over the workers of a job; a configuration's value is the median
over ``--repeats`` runs, the library that runs first alternating. One process gets 2 threads,
each process of the dist job 1 (OMP/OpenBLAS/MKL thread variables).
``--write`` replaces the section between ``<!-- symbolic:begin -->`` and ``<!-- symbolic:end -->``
of ``bench/RESULTS.md``; ``--json`` (default ``bench/out/symbolic.json``) keeps the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
from pathlib import Path

from _jobs import LIBS, THREAD_VARS, JobFailed, python_for, run_job
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SCRIPTS = SHARED / "mxnet-examples" / "image-classification"
SHIM = SHARED / "mxnet-tests" / "shim"
SIDE = ROOT / "bench" / "_imagenet_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- symbolic:begin -->", "<!-- symbolic:end -->"
CONFIGS = {
    "one_process": ("1 process, kv local, 2 threads", 1, 2, "local"),
    "dist_2x2": ("2 workers × 2 servers, dist_sync, 1 thread each", 2, 1, "dist_sync"),
}


def _args(examples: int, kv: str) -> list[str]:
    return ["--benchmark", "1", "--network", "resnet", "--num-layers", "18", "--image-shape",
            "3,32,32", "--batch-size", "32", "--num-epochs", "1", "--num-examples",
            str(examples), "--disp-batches", "5", "--kv-store", kv]  # fmt: skip


def _extra(lib: str) -> dict[str, str]:
    return {"PYTHONPATH": str(SHIM)} if lib == "mxrs" else {}


def _throughput(reports: list[dict]) -> float:
    total = 0.0
    for r in reports:
        speeds = r["speeds"][1:] or r["speeds"]
        if not speeds:
            raise JobFailed("a worker printed no Speedometer line")
        total += statistics.median(speeds)
    return total


def _one_process(lib: str, argv: list[str], threads: int) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "MXRS_"))}
    env.update({v: str(threads) for v in THREAD_VARS}, **_extra(lib))
    p = subprocess.run([python_for(lib), *argv], env=env, capture_output=True, text=True,
                       timeout=1800)  # fmt: skip
    if p.returncode != 0:
        raise JobFailed(f"{lib} exited with {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def measure(repeats: int, examples: int) -> dict:
    runs: dict[str, dict[str, list[float]]] = {c: {lib: [] for lib in LIBS} for c in CONFIGS}
    errors = []
    for rep in range(repeats):
        for config, (_, workers, threads, kv) in CONFIGS.items():
            argv = [str(SIDE), str(SCRIPTS), *_args(examples, kv)]
            for lib in LIBS if rep % 2 == 0 else LIBS[::-1]:
                try:
                    if workers == 1:
                        reports = _one_process(lib, argv, threads)
                    else:
                        reports = run_job(lib, workers, 2, argv, threads=threads,
                                          timeout=1800, extra_env=_extra(lib))  # fmt: skip
                    runs[config][lib].append(round(_throughput(reports), 2))
                except JobFailed as e:
                    errors.append(f"{config} {lib}: {e}")
                print(config, lib, runs[config][lib], flush=True)
    medians = {c: {lib: statistics.median(v) if v else None for lib, v in r.items()}
               for c, r in runs.items()}  # fmt: skip
    ratios = {c: (m["mxrs"] / m["mxnet"] if m["mxrs"] and m["mxnet"] else None)
              for c, m in medians.items()}  # fmt: skip
    return {"runs": runs, "medians": medians, "ratios": ratios, "errors": errors}


def report(data: dict) -> str:
    lines = [
        BEGIN,
        "## MXNet's train_imagenet.py benchmark mode: mxrs vs Apache MXNet 1.9.1 (issue 16)",
        "",
        f"Machine: {data['machine']}; mxrs {data['versions']['mxrs']}, MXNet "
        f"{data['versions']['mxnet']}; {data['date']}. Command: `{data['command']}`.",
        "",
        "MXNet's own `example/image-classification/train_imagenet.py`, unchanged, in benchmark "
        "mode (synthetic 3×32×32 images, 1000 classes, batch 32 per worker, the symbolic "
        "ResNet-18 of `symbols/resnet.py`, `mx.mod.Module.fit` with SGD momentum 0.9); mxrs runs "
        "it through the shim that makes `import mxnet` mean mxrs. Samples/s: the median of a "
        "run's Speedometer lines after the first, summed over the workers; median over "
        f"{data['repeats']} runs per library, alternating which runs first.",
        "",
        "| config | mxrs samples/s | MXNet samples/s | mxrs / MXNet | runs: mxrs; MXNet |",
        "|---|---:|---:|---:|---|",
    ]
    for c, (label, *_rest) in CONFIGS.items():
        m, r = data["medians"][c], data["runs"][c]
        ratio = data["ratios"][c]
        fmt = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
        lines.append(
            f"| {label} | {fmt(m['mxrs'])} | {fmt(m['mxnet'])} | "
            f"{'–' if ratio is None else f'{ratio:.2f}'} | "
            f"{', '.join(map(str, r['mxrs']))}; {', '.join(map(str, r['mxnet']))} |"
        )
    lines += ["", data["note"], ""]
    if data["errors"]:
        lines += ["Errors:", *[f"- {e}" for e in data["errors"]], ""]
    lines.append(END)
    return "\n".join(lines)


NOTE = (
    "Where the time goes: a ResNet-18 step here is ≈ 3.3 GFLOP per sample of convolution, almost "
    "all of either library's step, on oneDNN in both. MXNet 1.9.1 runs the MKL-DNN 2.4 it builds "
    "in: `convolution_direct` with JIT AVX-512 kernels on blocked layouts. mxrs runs oneDNN 3.2 "
    "from the onednn-cpu-gomp wheel channels-last (NHWC, where its brgconv kernels run, each "
    "layer handing the next its output without a reorder), and computes the 3×3 stride-1 "
    "convolutions of 16 to 512 channels (forward, data and weight gradients) by Winograd's "
    "F(4×4, 3×3): its own transforms around oneDNN's batched matmul, 1.1–2.3× the direct "
    "kernels' speed on those layers (`MXRS_CONV_WINOGRAD=0` keeps the direct kernels; "
    "`MXRS_KERNELS=numpy` gives the portable im2col + OpenBLAS GEMM kernels). The last stage's "
    "512-channel layers at 4×4 (one tile an image) joined them on 2026-11-29, when the kernel "
    "transforms learnt to read the weights and write their points in order: those three layers "
    "took 188 ms of a 760 ms step on the direct kernels (MXNet 1.9.1's blocked kernels: 126), "
    "and by Winograd's a layer's three passes take 43 ms where the direct kernels take 70 "
    "(timed alone). Run by hand that day, one "
    "process at one thread went from 41.3 to 50.0 samples/s (MXNet 1.9.1: 37.7), and at two "
    "threads from 80.5 to 93.4 (MXNet 1.9.1: 72.9)."
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--examples", type=int, default=1280)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "symbolic.json")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    if not SCRIPTS.is_dir():
        raise SystemExit(f"MXNet's example scripts are not at {SCRIPTS}")
    data = {
        "machine": machine(load=True),
        "date": datetime.date.today().isoformat(),
        "command": ".venv/bin/python bench/symbolic.py"
        + (f" --repeats {a.repeats}" if a.repeats != 3 else "")
        + (f" --examples {a.examples}" if a.examples != 1280 else "")
        + (" --write" if a.write else ""),
        "versions": {lib: version(lib) for lib in LIBS},
        "repeats": a.repeats,
        "note": NOTE,
        **measure(a.repeats, a.examples),
    }
    publish(data, report(data), a.json, a.results, a.write, BEGIN, END)


if __name__ == "__main__":
    main()
