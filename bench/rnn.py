"""Recurrent networks on the CPU side by side: the fused LSTM/GRU layers and the LSTM word
language model of MXNet's Gluon example, trained under Apache MXNet 1.9.1 and under mxrs.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/rnn.py [--repeats 3] [--threads 1] [--openblas both] [--write]

Each cell (a model, hybridized or not, a thread count, an OpenBLAS setting) runs
``bench/_rnn_side.py`` once per library per repeat, in fresh processes, the library that starts
alternating; a figure is the median over the repeats, in tokens (time steps × batch) per second.
Thread counts go to ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``MXNET_OMP_MAX_THREADS``. ``--openblas both`` runs with this machine's
``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` and with both removed (``machine`` or ``unset`` runs
one). ``--write`` replaces the section between ``<!-- rnn:begin -->`` and ``<!-- rnn:end -->`` of
``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
from pathlib import Path

from _jobs import THREAD_VARS, python_for
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
SIDE = ROOT / "bench" / "_rnn_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "rnn.json"
BEGIN, END = "<!-- rnn:begin -->", "<!-- rnn:end -->"
TITLE = "## Recurrent networks on CPU: mxrs vs Apache MXNet 1.9.1 (issue 32)"
#: name -> (label, _rnn_side.py arguments)
CELLS = {
    "lm": ("word LM (LSTM 2×200, vocab 10k), training step", ["--model", "lm"]),
    "lm_hyb": ("word LM, hybridized", ["--model", "lm", "--hybridize"]),
    "lstm": ("LSTM layer 2×200 bidirectional, fwd+bwd", ["--model", "lstm"]),
    "gru": ("GRU layer 2×200 bidirectional, fwd+bwd", ["--model", "gru"]),
}
LIBS = ("mxrs", "mxnet")
NOTES = """\
mxrs's `RNN` operator runs each direction of a layer as one GEMM over all time steps for the
input part and one small GEMM per step for the recurrent part (NumPy's OpenBLAS), and its
backward pass computes each weight gradient as one GEMM after the loop; MXNet 1.9.1 runs its
fused oneDNN RNN primitive. The word model's time also goes to its 10,000-word decoder and
softmax, where mxrs's fused softmax cross-entropy helps. With this machine's
`OPENBLAS_CORETYPE=Haswell` mxrs's GEMMs run AVX2 kernels; unset, OpenBLAS picks SkylakeX
(AVX-512), which is where the LSTM layer draws level with MXNet."""


def _env(lib: str, threads: int, openblas: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MXRS_", "DMLC_"))}
    env.update({v: str(threads) for v in (*THREAD_VARS, "MXNET_OMP_MAX_THREADS")})
    env["MXNET_CPU_WORKER_NTHREADS"] = "1"
    env["BENCH_LIB"] = lib
    if openblas == "unset":
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


def _measure(lib: str, cell: str, threads: int, openblas: str) -> dict:
    cmd = [python_for(lib), str(SIDE), *CELLS[cell][1]]
    proc = subprocess.run(
        cmd, env=_env(lib, threads, openblas), capture_output=True, text=True, timeout=900,
        cwd=SIDE.parent,
    )  # fmt: skip
    if proc.returncode != 0:
        return {"error": (proc.stdout + proc.stderr)[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _corename(run: dict) -> str:
    names = {o.get("corename", "?") for o in run.get("kernels", {}).get("openblas", [])}
    return "/".join(sorted(names)) or "?"


def main(argv=None) -> None:
    """Run the matrix and print (and with ``--write`` record) the medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--openblas", choices=("both", "machine", "unset"), default="both")
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    settings = ["machine", "unset"] if args.openblas == "both" else [args.openblas]
    runs: dict = {}
    start = machine(load=True)
    for rep in range(args.repeats):
        for cell in args.cells:
            for threads in args.threads:
                for ob in settings:
                    order = LIBS if rep % 2 == 0 else LIBS[::-1]
                    for lib in order:
                        key = f"{cell}|{threads}|{ob}|{lib}"
                        runs.setdefault(key, []).append(_measure(lib, cell, threads, ob))
    rows = []
    for cell in args.cells:
        for threads in args.threads:
            for ob in settings:
                med, cores = {}, {}
                for lib in LIBS:
                    good = [r for r in runs[f"{cell}|{threads}|{ob}|{lib}"] if "error" not in r]
                    med[lib] = statistics.median(r["tokens_per_s"] for r in good) if good else None
                    cores[lib] = _corename(good[0]) if good else "failed"
                ratio = f"{med['mxrs'] / med['mxnet']:.2f}" if med["mxrs"] and med["mxnet"] else "-"
                cells = [f"{med[lib]:,.0f}" if med[lib] else "failed" for lib in LIBS]
                rows.append(
                    f"| {CELLS[cell][0]} | {threads} | {ob} ({cores['mxrs']}; {cores['mxnet']}) "
                    f"| {cells[0]} | {cells[1]} | {ratio} |"
                )
    text = "\n".join(
        [
            BEGIN,
            TITLE,
            "",
            f"- Machine: {start}; {datetime.date.today().isoformat()}; mxrs {version('mxrs')}, "
            f"MXNet {version('mxnet')}.",
            "- Workload: batch 20 × 35 time steps, hidden 200 (`bench/_rnn_side.py`); tokens/s "
            f"are medians of {args.repeats} fresh processes per library, 10 timed steps after 2.",
            "- OpenBLAS: `machine` keeps this machine's `OPENBLAS_CORETYPE=Haswell` and "
            "`OPENBLAS_L2_SIZE`, `unset` removes both; the core each library's OpenBLAS "
            "reported is in brackets (mxrs; MXNet).",
            f"- Command: `.venv/bin/python bench/rnn.py --repeats {args.repeats} --threads "
            f"{' '.join(map(str, args.threads))} --openblas {args.openblas} --write`",
            "",
            "| model | threads | OpenBLAS | mxrs tokens/s | MXNet 1.9.1 tokens/s | mxrs / MXNet |",
            "|---|---:|---|---:|---:|---:|",
            *rows,
            "",
            NOTES,
            END,
        ]
    )
    publish(runs, text, JSON_OUT, RESULTS, args.write, BEGIN, END)


if __name__ == "__main__":
    main()
