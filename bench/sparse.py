"""A sparse model on dist_sync, 2 workers × 2 servers: a 1,000,000 × 64 float32 embedding (each
sample the mean of 10 ids' rows, 1,000 samples a batch: about 1% of the rows a batch) with a
dense head, trained with Gluon's Trainer. mxrs with row_sparse gradients against the same model
with dense ones, and against Apache MXNet 1.9.1's row_sparse path, in the same run.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/sparse.py [--repeats 3] [--write]

The workers run ``bench/_sparse_side.py`` under each library (the same Gluon code). Samples/s are
summed over the two workers; a configuration's value is the median over ``--repeats`` jobs, the
library that runs first alternating. Bytes on the wire per step: what each worker process read
and wrote through system calls in its timed steps (its traffic with the servers), summed over
the workers; for mxrs also the payload its servers received. Each process gets 1 thread.
``--write`` replaces the section between ``<!-- sparse:begin -->`` and ``<!-- sparse:end -->`` of
``bench/RESULTS.md``; ``--json`` (default ``bench/out/sparse.json``) keeps the numbers.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from pathlib import Path

from _jobs import JobFailed, run_job
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
SIDE = ROOT / "bench" / "_sparse_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- sparse:begin -->", "<!-- sparse:end -->"
ROWS, DIM, BATCH, PER = 1_000_000, 64, 1000, 10
#: (library, gradients, timed steps, warm-up steps)
CONFIGS = {
    "mxrs_sparse": ("mxrs", "sparse", 100, 5),
    "mxnet_sparse": ("mxnet", "sparse", 100, 5),
    "mxrs_dense": ("mxrs", "dense", 4, 1),
}


def _one(lib: str, mode: str, steps: int, warmup: int) -> dict:
    argv = [str(SIDE), mode, *map(str, (ROWS, DIM, BATCH, PER, steps, warmup))]
    reports = run_job(lib, 2, 2, argv, threads=1, timeout=1800)
    if len(reports) != 2:
        raise JobFailed(f"{lib} {mode}: {len(reports)} worker reports instead of 2")
    out = {
        "samples_per_s": sum(r["samples_per_s"] for r in reports),
        "wire_bytes_per_step": reports[0]["loopback_bytes_per_step"],
    }
    first = reports[0]
    if "server_after" in first:
        payload = sum(
            a["payload_bytes"] - b["payload_bytes"]
            for a, b in zip(first["server_after"], first["server_before"], strict=True)
        )
        out["server_payload_per_step"] = payload / first["steps"]
    return out


def measure(repeats: int) -> dict:
    runs: dict[str, list[dict]] = {c: [] for c in CONFIGS}
    errors = []
    order = list(CONFIGS)
    for rep in range(repeats):
        for config in order if rep % 2 == 0 else order[::-1]:
            lib, mode, steps, warmup = CONFIGS[config]
            try:
                runs[config].append(_one(lib, mode, steps, warmup))
            except JobFailed as e:
                errors.append(f"{config}: {e}")
            print(config, runs[config][-1:] or "failed", flush=True)
    medians = {
        c: {k: statistics.median(r[k] for r in rs) for k in rs[0] if all(k in r for r in rs)}
        if rs
        else {}
        for c, rs in runs.items()
    }
    return {"runs": runs, "medians": medians, "errors": errors}


def _ratio(a: float | None, b: float | None) -> str:
    return "–" if not a or not b else f"{a / b:.2f}"


def report(data: dict) -> str:
    m = data["medians"]
    fmt = lambda v, d=1: "–" if v is None else f"{v:,.{d}f}"  # noqa: E731
    mib = lambda v: "–" if v is None else f"{v / 2**20:,.2f}"  # noqa: E731
    lines = [
        BEGIN,
        "## Sparse embedding on dist_sync: row_sparse vs dense, mxrs vs Apache MXNet 1.9.1 "
        "(issue 17)",
        "",
        f"Machine: {data['machine']}; mxrs {data['versions']['mxrs']}, MXNet "
        f"{data['versions']['mxnet']}; {data['date']}. Command: `{data['command']}`.",
        "",
        f"A {ROWS:,} × {DIM} float32 embedding (the mean of {PER} ids' rows per sample, "
        f"{BATCH:,} samples per batch per worker: ≈ 1% of the rows each batch) and a dense "
        "head, Gluon `Trainer` with SGD on the servers, 2 workers × 2 servers on 127.0.0.1, one "
        "thread per process. *row_sparse*: the table is a `row_sparse` Parameter, each step "
        "pulls only its batch's rows (`row_sparse_data`) and pushes a row_sparse gradient; "
        "*dense*: the same model with a dense table and gradient. Medians of "
        f"{data['repeats']} jobs; wire MiB: what the loopback interface carried per step (the "
        "whole job, TCP/IP headers included).",
        "",
        "| configuration | samples/s | wire MiB / step | server payload MiB / step |",
        "|---|---:|---:|---:|",
    ]
    labels = {
        "mxrs_sparse": "mxrs, row_sparse",
        "mxnet_sparse": "MXNet 1.9.1, row_sparse",
        "mxrs_dense": "mxrs, dense gradients",
    }
    for c, label in labels.items():
        r = m.get(c, {})
        lines.append(
            f"| {label} | {fmt(r.get('samples_per_s'))} | {mib(r.get('wire_bytes_per_step'))} | "
            f"{mib(r.get('server_payload_per_step'))} |"
        )
    s, d, x = m.get("mxrs_sparse", {}), m.get("mxrs_dense", {}), m.get("mxnet_sparse", {})
    lines += [
        "",
        f"- Wire bytes, dense / row_sparse (mxrs): "
        f"**{_ratio(d.get('wire_bytes_per_step'), s.get('wire_bytes_per_step'))}×** fewer with "
        f"row_sparse (target ≥ 50×); server payload "
        f"{_ratio(d.get('server_payload_per_step'), s.get('server_payload_per_step'))}×.",
        f"- Samples/s, mxrs row_sparse / MXNet row_sparse: "
        f"**{_ratio(s.get('samples_per_s'), x.get('samples_per_s'))}** (target ≥ 2); "
        f"mxrs row_sparse / mxrs dense: {_ratio(s.get('samples_per_s'), d.get('samples_per_s'))}.",
        "",
    ]
    if data["errors"]:
        lines += ["Errors:", *[f"- {e}" for e in data["errors"]], ""]
    lines.append(END)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "sparse.json")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    data = {
        "machine": machine(load=True),
        "date": datetime.date.today().isoformat(),
        "command": ".venv/bin/python bench/sparse.py"
        + (f" --repeats {a.repeats}" if a.repeats != 3 else "")
        + (" --write" if a.write else ""),
        "versions": {lib: version(lib) for lib in ("mxrs", "mxnet")},
        "repeats": a.repeats,
        **measure(a.repeats),
    }
    publish(data, report(data), a.json, a.results, a.write, BEGIN, END)


if __name__ == "__main__":
    main()
