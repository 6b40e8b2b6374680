"""Runs the LeNet CPU benchmark for mxrs and Apache MXNet side by side and reports medians.

Usage::

    bash bench/setup_mxnet.sh            # once: bench/.venv-mxnet with mxnet==1.9.1
    .venv/bin/python bench/run_lenet.py --repeats 5 --threads 1 2 [--write]

Each repeat starts one fresh worker process per library (``lenet_cpu.py``), alternating which
library goes first, with OMP/OpenBLAS/MKL thread counts set in its environment. ``--write``
replaces the "LeNet forward+backward on CPU (issue 3)" section of ``bench/RESULTS.md``.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SECTION = "## LeNet forward+backward on CPU (issue 3)"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
NOTES = """\
Where mxrs spends a step at 1 thread (measured per primitive op with the worker above, on a
day the step took about 21 ms): convolution backward 37% (the two weight-gradient GEMMs have
only 6 or 16 rows and run memory-bound, plus the strided col2im of conv2), convolution forward
30% (one im2col copy and one GEMM per layer), max pooling 22%, the dense layers 9%, relu the
rest; Python and autograd overhead is under 1 ms. Host memory bandwidth is the limit: the im2col
columns of conv1 alone are 7.4 MB per step. Page faults on fresh `mmap`ed temporaries used to
cost as much again; mxrs keeps freed blocks in glibc's heap (see
`python/mxrs/_backend.py`), which took that step from about 35 ms to 21 ms.

With 2 threads only the GEMMs run in parallel in mxrs (NumPy's elementwise kernels are
single-threaded), while MXNet parallelises every operator. This 2-core machine is shared with
other jobs; when another process holds a core, OpenBLAS's second thread waits for it and a step
can take several times longer, so the 2-thread medians swing widely from run to run for both
libraries (look at the per-run lines). The machine's speed also varies from day to day (the run
of 2026-11-22 measured about half of today's rates for both libraries): compare the ratio
column within one run, not numbers across runs.
"""


def run_worker(python, lib, threads, batch):
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    cmd = [python, os.path.join(HERE, "lenet_cpu.py"), "--lib", lib, "--batch", str(batch)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["samples_per_s"]


def machine():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load:.2f} at start"
    )


def write_section(path, text):
    body = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if SECTION in body:
        start = body.index(SECTION)
        # the section ends where the next heading or marked section begins
        ends = [
            i
            for i in (
                body.find("\n## ", start + len(SECTION)),
                body.find("\n<!-- ", start + len(SECTION)),
            )
            if i >= 0
        ]
        rest = body[min(ends) + 1 :] if ends else ""
        body = body[:start] + text + ("\n" + rest if rest else "")
    else:
        body = body.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(body if body.endswith("\n") else body + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--mxnet-python", default=os.path.join(HERE, ".venv-mxnet", "bin", "python"))
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args()
    pythons = {"mxrs": sys.executable}
    if os.path.exists(args.mxnet_python):
        pythons["mxnet"] = args.mxnet_python
    else:
        print(
            f"no MXNet interpreter at {args.mxnet_python}; run bench/setup_mxnet.sh",
            file=sys.stderr,
        )
    header = machine()
    rows = []
    for threads in args.threads:
        rates = {lib: [] for lib in pythons}
        for r in range(args.repeats):
            order = list(pythons) if r % 2 == 0 else list(reversed(pythons))
            for lib in order:
                rates[lib].append(run_worker(pythons[lib], lib, threads, args.batch))
                print(
                    f"threads={threads} repeat={r} {lib}: {rates[lib][-1]:.0f} samples/s",
                    flush=True,
                )
        med = {lib: statistics.median(v) for lib, v in rates.items()}
        ratio = med["mxrs"] / med["mxnet"] if "mxnet" in med else float("nan")
        rows.append((threads, med.get("mxrs"), med.get("mxnet"), ratio, rates))
    lines = [
        SECTION,
        "",
        f"- Machine: {header}",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Workload: seeds' LeNet (Conv 6x5 relu, MaxPool 2, Conv 16x3 relu, MaxPool 2, "
        f"Dense 120 relu, Dense 84 relu, Dense 10), batch {args.batch} of 1x28x28, "
        "forward + backward + plain SGD update of every parameter, written once with "
        "`mx.nd` operators and run with `import mxrs as mx` and `import mxnet as mx` "
        "(Apache MXNet 1.9.1, numpy 1.23.5).",
        f"- Median over {args.repeats} fresh processes per library and thread count, "
        "alternating which library runs first; each process reports the median of 5 "
        "timed windows of 20 steps after 5 warm-up steps.",
        "- Command: `bash bench/setup_mxnet.sh && .venv/bin/python bench/run_lenet.py "
        f"--repeats {args.repeats} --threads {' '.join(map(str, args.threads))} --write`",
        "",
        "| threads | mxrs samples/s | MXNet 1.9.1 samples/s | mxrs / MXNet | runs: mxrs; MXNet |",
        "|---:|---:|---:|---:|---|",
    ]
    for threads, a, b, ratio, rates in rows:
        runs = "; ".join(", ".join(f"{v:,.0f}" for v in rates[lib]) for lib in rates)
        lines.append(
            f"| {threads} | {a:,.0f} | {b:,.0f} | {ratio:.2f} | {runs} |"
            if b
            else f"| {threads} | {a:,.0f} | n/a | n/a | {runs} |"
        )
    lines += ["", NOTES]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(os.path.join(HERE, "RESULTS.md"), text)


if __name__ == "__main__":
    main()
