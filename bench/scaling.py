"""The scaling chart: LeNet samples/s against the number of dist_sync workers, mxrs and Apache
MXNet 1.9.1, measured where this machine can measure and modelled beyond; plus a bar chart of
the KVStore ratios.

What is measured here: the communication of one training step, that is every LeNet gradient
pushed and every parameter pulled (``_comm_side.py``), in jobs of W workers and W servers for
W in 1, 2, 4, both libraries alternating, medians over repeats. What comes from the other
benchmarks (their JSON in ``bench/out``): one process's compute rate at one thread and the
2-worker dist_sync training rate (``train_mxnet.py``), and the KVStore table
(``kvstore_mxnet.py``).

The model: W workers on W machines each compute a batch of B in ``B / rate_1`` seconds and then
wait for the step's communication ``t_comm(W)``, so samples/s = W * B / (B / rate_1 + t_comm(W)).
Ideal is W * rate_1. This machine has 2 cores, so the measured W = 4 communication has 9
processes sharing them: the model is pessimistic there, alike for both libraries.

Usage::

    python bench/scaling.py [--repeats 3] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path

import _jobs
from _report import machine, publish

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
RESULTS = HERE / "RESULTS.md"
BEGIN, END = "<!-- scaling:begin -->", "<!-- scaling:end -->"
WORKERS = (1, 2, 4)
BATCH = 128
ROUNDS = 300


def measure_comm(repeats: int) -> dict:
    """{lib: {W: median step-communication ms}} from alternating jobs."""
    runs = {lib: {w: [] for w in WORKERS} for lib in _jobs.LIBS}
    for r in range(repeats):
        for w in WORKERS:
            order = _jobs.LIBS if r % 2 == 0 else _jobs.LIBS[::-1]
            for lib in order:
                rows = _jobs.run_job(lib, w, w, [str(HERE / "_comm_side.py"), str(ROUNDS)])
                runs[lib][w].append(statistics.mean(x["p50"] for x in rows))
    return {lib: {w: statistics.median(v) for w, v in by_w.items()} for lib, by_w in runs.items()}


def model(rate_1: float, comm_ms: dict) -> dict:
    """{W: modelled samples/s} for a one-process rate and step-communication times."""
    return {w: w * BATCH / (BATCH / rate_1 + comm_ms[w] / 1e3) for w in comm_ms}


def _load(name: str) -> dict | None:
    path = OUT / name
    return json.loads(path.read_text()) if path.exists() else None


def train_rates(train: dict) -> dict:
    """{lib: {"one": samples/s at 1 thread, "dist2": 2-worker aggregate}} from train.json."""
    med = train["medians"]
    return {
        lib: {"one": med["one_process_1_thread"][lib], "dist2": med["dist_2x2"][lib]}
        for lib in _jobs.LIBS
    }


def scaling_chart(path: Path, rates: dict, comm: dict) -> dict:
    """Draw samples/s against workers; returns the modelled numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    modelled = {}
    for lib, color in (("mxrs", "tab:red"), ("mxnet", "tab:blue")):
        name = "mxrs" if lib == "mxrs" else "MXNet 1.9.1"
        one = rates[lib]["one"]
        modelled[lib] = model(one, comm[lib])
        ax.plot(
            WORKERS,
            [w * one for w in WORKERS],
            "--",
            color=color,
            alpha=0.6,
            label=f"{name} ideal linear",
        )
        ax.plot(
            WORKERS,
            [modelled[lib][w] for w in WORKERS],
            "-",
            color=color,
            label=f"{name} modelled (measured communication)",
        )
        ax.plot(
            [1, 2],
            [one, rates[lib]["dist2"]],
            "o",
            color=color,
            markersize=8,
            label=f"{name} measured on this machine",
        )
    ax.set_xlabel("dist_sync workers (one server per worker)")
    ax.set_ylabel("samples/s (LeNet, batch 128 per worker)")
    ax.set_xticks(WORKERS)
    ax.set_title("LeNet data-parallel scaling")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return modelled


def ratio_chart(path: Path, kv: dict) -> None:
    """Bars of mxrs/MXNet per KVStore row (GB/s, or key-ops/s for many small keys)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = kv["rows"]
    labels = [f"{r['label']}\nW{r['workers']} S{r['servers']}" for r in rows]
    ratios = [r["ratio_gbps"] for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.42 * len(rows)), 4.2), dpi=120)
    ax.bar(range(len(rows)), ratios, color="tab:red")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), labels, fontsize=6, rotation=90)
    ax.set_ylabel("mxrs / MXNet 1.9.1 (push+pull GB/s per worker)")
    ax.set_title("KVStore dist_sync on 127.0.0.1: mxrs over MXNet (1 = par)")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def section(
    comm: dict, rates: dict | None, modelled: dict | None, charts: list[str], repeats: int
) -> str:
    """The RESULTS.md section."""
    lines = [
        BEGIN,
        "## Scaling (issue 7)",
        "",
        f"Machine: {machine()}; {datetime.date.today().isoformat()}. "
        f"Command: `python bench/scaling.py --repeats {repeats} --write` "
        "(after `kvstore_mxnet.py` and `train_mxnet.py`).",
        "",
        "Communication of one LeNet step (all 10 gradients pushed, all parameters pulled, "
        f"60,170 float32), W workers × W servers on 127.0.0.1, p50 ms, medians of {repeats}:",
        "",
        "| W | mxrs ms | MXNet ms | MXNet / mxrs |",
        "|---:|---:|---:|---:|",
    ]
    for w in WORKERS:
        a, b = comm["mxrs"][w], comm["mxnet"][w]
        lines.append(f"| {w} | {a:.3f} | {b:.3f} | {b / a:.1f}× |")
    if rates and modelled:
        lines += [
            "",
            "Samples/s (B = 128 per worker). Measured: one process at one thread (W = 1)"
            " and 2 workers × 2 servers on this machine (W = 2). Modelled: W · B / (B / "
            "rate₁ + t_comm(W)), each worker on its own machine; t_comm(4) was measured "
            "with 9 processes on 2 cores, so it is pessimistic for both.",
            "",
            "| W | mxrs measured | mxrs modelled | MXNet measured | MXNet modelled |",
            "|---:|---:|---:|---:|---:|",
        ]
        for w in WORKERS:
            meas = {
                lib: (rates[lib]["one"] if w == 1 else rates[lib]["dist2"] if w == 2 else None)
                for lib in _jobs.LIBS
            }
            cells = []
            for lib in _jobs.LIBS:
                cells += [f"{meas[lib]:,.0f}" if meas[lib] else "—", f"{modelled[lib][w]:,.0f}"]
            lines.append(f"| {w} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"![{c}]({c})" for c in charts]
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write", action="store_true", help="update the RESULTS.md section")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    comm = measure_comm(args.repeats)
    train, kv = _load("train.json"), _load("kvstore.json")
    charts, rates, modelled = [], None, None
    if train:
        rates = train_rates(train)
        modelled = scaling_chart(HERE / "scaling.png", rates, comm)
        charts.append("scaling.png")
    if kv:
        ratio_chart(HERE / "kvstore_ratios.png", kv)
        charts.append("kvstore_ratios.png")
    publish(
        {"comm_ms": comm, "rates": rates, "modelled": modelled},
        section(comm, rates, modelled, charts, args.repeats),
        OUT / "scaling.json",
        args.results,
        args.write,
        BEGIN,
        END,
    )


if __name__ == "__main__":
    main()
