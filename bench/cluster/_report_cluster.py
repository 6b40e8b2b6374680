"""Tables, charts and the RESULTS.md section of an emulated-cluster run (``run.py --write``).

Everything here is computed from the run's JSON, so ``python _report_cluster.py RUN.json``
redraws and rewrites them without running anything again.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent))

import _model  # noqa: E402
import _report_targets  # noqa: E402
from _report import machine, version, write_section  # noqa: E402

BEGIN, END = "<!-- cluster:begin -->", "<!-- cluster:end -->"
#: How the scale was chosen (the probe of the run below shows the chosen rate again).
SCALE_NOTE = (
    "The rate was chosen with the probe below at several rates (2026-11-24, on this machine "
    "with other work on it): without computation, both libraries kept 1,000 Mbit/s links "
    "86–95% busy at 2 and 4 hosts; at 2,500 Mbit/s 4 hosts reached only 55–60% of the rate "
    "(unshaped, the 2 cores move 2.8 Gbit/s per link for MXNet and 4.8 for mxrs at 4 hosts), "
    "and 8 hosts reached about 60% of the rate at both 1,000 and 500 Mbit/s, so 8 hosts are "
    "left out."
)
SCALING_PNG, SEEDS_PNG, MODEL_PNG = "cluster_scaling.png", "cluster_seeds.png", "cluster_model.png"
COLORS = {
    "mxnet": "tab:blue",
    "mxrs": "tab:red",
    "mxrs-nooverlap": "tab:orange",
    "mxrs-fp16": "tab:green",
    "mxrs-2bit": "tab:purple",
}


def medians(jobs: list[dict]) -> dict:
    """{(layout, series): {"images": median images/s, "workers": per-worker medians, "hosts",
    "n": jobs, "failed": jobs that failed}} over repeats."""
    out: dict = {}
    for j in jobs:
        cell = out.setdefault(
            (j["layout"], j["series"]), {"runs": [], "hosts": j["hosts"], "failed": 0}
        )
        if j["ok"]:
            cell["runs"].append(j)
        else:
            cell["failed"] += 1
    for cell in out.values():
        runs = cell.pop("runs")
        cell["n"] = len(runs)
        cell["images"] = statistics.median(r["images_per_s"] for r in runs) if runs else None
        per = [[w["images_per_s"] for w in r["worker_results"]] for r in runs]
        cell["workers"] = [statistics.median(col) for col in zip(*per, strict=True)] if per else []
    return out


def sync_layout(n: int) -> str:
    """The name of the S = W = n dist_sync layout (the seeds' 2 + 2 sync for n = 2)."""
    return "2s2w-sync" if n == 2 else f"{n}h-sync"


def _fmt(x: float | None, ideal: float | None = None) -> str:
    if x is None:
        return "failed"
    return f"{x:,.1f}" + (f" ({x / ideal:.0%})" if ideal else "")


def section(data: dict, path: Path, labels: dict, fit: dict, charts: list[str]) -> str:
    s = data["settings"]
    ideal1 = 960 / s["compute_s"]
    cells = medians(data["jobs"])
    series = [x for x in s["series"] if any(k[1] == x for k in cells)]
    scale = 25_000 / s["rate_mbit"]
    cscale = s["compute_s"] / (960 / 3120)
    r0 = next((j["worker_results"][0] for j in data["jobs"] if j["ok"]), None)
    model_line = (
        f"{s['model']} ({r0['params']:,} parameters, {r0['bytes'] / 1e6:.1f} MB of float32 "
        f"in {r0['keys']} keys over {r0['layers']} layers)"
        if r0
        else s["model"]
    )
    lines = [
        BEGIN,
        "## The seeds' scaling experiment on emulated hosts (bench/cluster)",
        "",
        f"Machine: {machine()}; mxrs {version('mxrs')}, MXNet {version('mxnet')}; run "
        f"`{s['prefix']}` from {data['started']} to {data.get('finished', '?')}. Command: "
        f"`bash bench/cluster/run.sh` (JSON of every job: `bench/out/cluster/{path.name}`).",
        "",
        "**Emulation.** Each host is a network namespace with one veth link to a bridge "
        f"(MTU 9000); the link is shaped in both directions by a token bucket (`tc tbf`) at "
        f"{s['rate_mbit']:,.0f} Mbit/s"
        + (f" and {s['delay_ms']:g} ms of delay" if s["delay_ms"] else "")
        + ". This kernel has no `netem`, so no delay is added: hosts are a few tens of µs "
        "apart, as hosts in one placement group are. The scheduler runs on host 0; every "
        "process binds to its host's address. Each worker holds the real parameter set of "
        f"{model_line}; its GPUs' forward and backward are emulated by waiting, layer by layer, "
        "for a time proportional to the layer's FLOPs at 224×224 (backward twice forward), so "
        "the host's CPU is free for communication, as beside a GPU. With overlap each layer's "
        "gradients are pushed (`priority=-index`) and its weights pulled as soon as its "
        "backward ends; the next forward waits for each layer's weights as it reaches it. "
        "Without overlap every push and pull is issued after backward. Servers run SGD.",
        "",
        f"**Scale.** The seeds' hosts (p3.16xlarge) trained at about 390 images/s per V100 at "
        "batch 120, so 8 GPUs took a step of 960 images in 0.31 s, on 25 Gbit/s links. Here the "
        f"links run at {s['rate_mbit']:,.0f} Mbit/s ({scale:.3g}× slower) and a step computes "
        f"for {s['compute_s']:.2f} s ({cscale:.3g}× longer), "
        + (
            "so communication takes the same share of a step as there. "
            if abs(cscale / scale - 1) < 0.01
            else f"so communication takes {scale / cscale:.2g} times its share of a step there. "
        )
        + f"Images/s below are as measured; ×{cscale:.3g} gives the seeds' scale. "
        + SCALE_NOTE,
        "",
        "**Hosts.** The seeds' configurations map onto hosts as follows: 1 server + 2 workers "
        "is host 0 with the server and worker 0, host 1 with worker 1; 2 + 2 and 3 + 3 put one "
        "server and one worker on each of 2 or 3 hosts; S = W = N is N such hosts. A worker "
        "stands for a whole 8-GPU host of the seeds.",
        "",
        f"Medians of {s['repeats']} repeat{'s' if s['repeats'] != 1 else ''} (the order of "
        "the series alternates between "
        f"repeats); each job {s['warmup']} warm-up and {s['steps']} timed steps, images/s = "
        "Σ over workers of batch / median step. Ideal: N × 960 / computation "
        f"({ideal1:,.1f} images/s per host).",
        "",
    ]
    if data["probe"]:
        lines += [
            "Probe (no computation, no overlap: each step pushes and pulls the whole model):",
            "",
            "| hosts | library | link | step s | Mbit/s per link direction | of the rate |",
            "|---:|---|---|---:|---:|---:|",
        ]
        for j in data["probe"]:
            if not j["ok"]:
                lines.append(f"| {j['hosts']} | {labels[j['series']]} | — | failed | | |")
                continue
            d, _ = _model.features(j)
            got = d * 8 / j["step_s"] / 1e6
            rate = j["rate_mbit"]
            link = f"{rate:,.0f} Mbit/s" if rate else "unshaped"
            share = f"{got / rate:.0%}" if rate and d else "—"
            if not d:
                got, link = float("nan"), "none (all on one host)"
            lines.append(
                f"| {j['hosts']} | {labels[j['series']]} | {link} | {j['step_s']:.3f} | "
                + (f"{got:,.0f}" if got == got else "—")
                + f" | {share} |"
            )
        lines.append("")
    hosts = [n for n in s["hosts"] if any(k[0] == sync_layout(n) for k in cells)]
    lines += [
        "S = W = N hosts, dist_sync, images/s (share of ideal):",
        "",
        "| hosts | ideal | " + " | ".join(labels[x] for x in series) + " |",
        "|---:|---:|" + "---:|" * len(series),
    ]
    for n in hosts:
        lay = sync_layout(n)
        row = [_fmt(cells.get((lay, x), {}).get("images"), n * ideal1) for x in series]
        lines.append(f"| {n} | {n * ideal1:,.1f} | " + " | ".join(row) + " |")
    seeds = [k for k in cells if k[0] in ("1s2w-sync", "2s2w-sync", "2s2w-async", "3s3w-async")]
    if any(k[0] != "2s2w-sync" for k in seeds):
        lines += [
            "",
            "The seeds' configurations, images/s per worker (worker beside the scheduler "
            "first) and in all:",
            "",
            "| configuration | library | per worker | all | of ideal |",
            "|---|---|---|---:|---:|",
        ]
        for lay in ("1s2w-sync", "2s2w-sync", "2s2w-async", "3s3w-async"):
            for x in series:
                c = cells.get((lay, x))
                if c is None:
                    continue
                per = ", ".join(f"{w:,.1f}" for w in c["workers"]) or "—"
                nw = int(lay[2]) if lay[0] != "1" else 2
                lines.append(
                    f"| {lay} | {labels[x]} | {per} | {_fmt(c['images'])} | "
                    + (f"{c['images'] / (nw * ideal1):.0%} |" if c["images"] else "— |")
                )
    if fit["series"]:
        lines += [
            "",
            "**Model** (`bench/cluster/_model.py`): T = C + max(0, t_comm − hide · C), "
            "t_comm = D / (η · rate) + α · m, with D the bytes over the busiest link direction "
            "per step and m the requests per worker and step; η and α fitted per library on "
            "the probe, hide per series on its jobs. Fitted: "
            + "; ".join(
                f"{lib}: η = {c['eta']:.2f}, α = {c['alpha'] * 1e3:.2f} ms"
                for lib, c in fit["comm"].items()
                if c
            )
            + ".",
            "",
            "| series | hide | " + " | ".join(f"{p['layout']}" for p in _all_points(fit)) + " |",
            "|---|---:|" + "---:|" * len(_all_points(fit)),
        ]
        for x, f in fit["series"].items():
            by = {p["layout"]: p for p in f["points"]}
            row = [
                f"{by[p['layout']]['model']:,.1f} ({by[p['layout']]['error']:+.1%})"
                if p["layout"] in by
                else ""
                for p in _all_points(fit)
            ]
            lines.append(f"| {labels[x]} | {f['hide']:.2f} | " + " | ".join(row) + " |")
        lines += [
            "",
            "Modelled images/s (error against the measured median in brackets). Where a "
            "series hides its communication entirely (images/s at the ideal), its hide is only "
            "the least overlap the measurements need, so its projection is a lower bound. The "
            "model has no term for a server's CPU: with 1 server and 2 workers one server sums "
            "both workers' gradients and runs SGD on the whole model, and the error in that "
            "column is what that costs. "
            "**Projection** to more hosts (S = W = N, same links, same fitted numbers; it "
            "assumes every host keeps the efficiency measured here), images/s (share of ideal):",
            "",
            "| hosts | ideal | " + " | ".join(labels[x] for x in fit["series"]) + " |",
            "|---:|---:|" + "---:|" * len(fit["series"]),
        ]
        for n in (8, 16, 64):
            row = [_fmt(f["projection"][n], f["ideal"][n]) for f in fit["series"].values()]
            lines.append(f"| {n} | {n * ideal1:,.1f} | " + " | ".join(row) + " |")
    lines += [""] + _report_targets.target_lines(cells, data)
    if data.get("comm"):
        lines += _report_targets.comm_lines(data["comm"], labels)
    if data.get("real"):
        lines += _report_targets.real_lines(data["real"], labels)
    extra = [j for part in ("comm", "real") for j in data.get(part, {}).get("jobs", [])]
    failed = [j["tag"] for j in data["probe"] + data["jobs"] + extra if not j["ok"]]
    if failed:
        lines += ["", f"Failed jobs: {', '.join(failed)} (errors in the JSON)."]
    lines.append("")
    lines += [f"![{c}](cluster/{c})" for c in charts]
    lines += ["", END]
    return "\n".join(lines)


def _all_points(fit: dict) -> list[dict]:
    """One point per layout in any series: S = W = N by hosts, then the seeds' others."""
    seen: dict[str, dict] = {}
    for f in fit["series"].values():
        for p in f["points"]:
            seen.setdefault(p["layout"], p)
    seeds = ("1s2w-sync", "2s2w-sync", "2s2w-async", "3s3w-async")
    return sorted(
        seen.values(),
        key=lambda p: (
            p["layout"] != sync_layout(p["hosts"]),
            p["hosts"] if p["layout"] == sync_layout(p["hosts"]) else seeds.index(p["layout"]),
        ),
    )


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def scaling_chart(path: Path, data: dict, labels: dict) -> None:
    """Images/s against hosts (S = W = N, sync) per series, with the ideal linear line."""
    plt = _plt()
    s = data["settings"]
    cells = medians(data["jobs"])
    ideal1 = 960 / s["compute_s"]
    scale = 25_000 / s["rate_mbit"]
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    hosts = sorted(s["hosts"])
    ax.plot(hosts, [n * ideal1 for n in hosts], "k--", label="ideal (linear)")
    for x in s["series"]:
        pts = [(n, cells.get((sync_layout(n), x), {}).get("images")) for n in hosts]
        pts = [(n, y) for n, y in pts if y]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", color=COLORS[x], label=labels[x])
    ax.set_xticks(hosts)
    ax.set_xlabel("hosts (one server and one worker each)")
    ax.set_ylabel("images/s (emulated)")
    sec = ax.secondary_yaxis("right", functions=(lambda y: y * scale, lambda y: y / scale))
    sec.set_ylabel(f"images/s at the seeds' scale (×{scale:g})")
    ax.set_title(f"{s['model']}, dist_sync, links {s['rate_mbit']:,.0f} Mbit/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def seeds_chart(path: Path, data: dict, labels: dict) -> bool:
    """The seeds' four configurations: per-worker images/s stacked (worker beside the
    scheduler at the bottom) per library, with each configuration's ideal. False if none ran."""
    cells = medians(data["jobs"])
    confs = [c for c in ("1s2w-sync", "2s2w-sync", "2s2w-async", "3s3w-async")]
    series = [x for x in data["settings"]["seed_series"] if any((c, x) in cells for c in confs)]
    if not any((c, x) in cells for c in confs if c != "2s2w-sync" for x in series):
        return False
    plt = _plt()
    ideal1 = 960 / data["settings"]["compute_s"]
    fig, ax = plt.subplots(figsize=(7.2, 4.6), dpi=120)
    width = 0.8 / len(series)
    for i, c in enumerate(confs):
        nw = 2 if c.startswith("1s") else int(c[2])
        ax.hlines(
            nw * ideal1,
            i - 0.45,
            i + 0.45,
            colors="k",
            linestyles="--",
            label="ideal" if i == 0 else None,
        )
        for k, x in enumerate(series):
            cell = cells.get((c, x))
            if not cell or not cell["workers"]:
                continue
            bottom = 0.0
            for w, y in enumerate(cell["workers"]):
                ax.bar(
                    i - 0.4 + width * (k + 0.5),
                    y,
                    width * 0.9,
                    bottom=bottom,
                    color=COLORS[x],
                    alpha=1.0 - 0.25 * w,
                    edgecolor="white",
                    label=labels[x] if i == 0 and w == 0 else None,
                )
                bottom += y
    ax.set_xticks(
        range(len(confs)),
        ["1 server, 2 workers\nsync", "2 + 2\nsync", "2 + 2\nasync", "3 + 3\nasync"],
    )
    ax.set_ylabel("images/s (emulated), one block per worker")
    ax.set_title("The seeds' configurations (worker beside the scheduler at the bottom)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def model_chart(path: Path, data: dict, labels: dict, fit: dict) -> bool:
    """Measured S = W = N points, the model through them and its projection to 64 hosts."""
    if not fit["series"]:
        return False
    plt = _plt()
    s = data["settings"]
    measured_max = max(s["hosts"])
    fig, ax = plt.subplots(figsize=(6.8, 4.8), dpi=120)
    ns = list(_model.PROJECT)
    first = next(iter(fit["series"].values()))
    ax.plot(ns, [first["ideal"][n] for n in ns], "k--", label="ideal (linear)")
    for x, f in fit["series"].items():
        inside = [n for n in ns if n <= measured_max]
        beyond = [n for n in ns if n >= measured_max]
        ax.plot(inside, [f["projection"][n] for n in inside], "-", color=COLORS[x])
        ax.plot(beyond, [f["projection"][n] for n in beyond], ":", color=COLORS[x])
        pts = [
            (p["hosts"], p["measured"])
            for p in f["points"]
            if p["layout"] == sync_layout(p["hosts"])
        ]
        if pts:
            ax.plot(
                *zip(*sorted(pts), strict=True),
                "o",
                color=COLORS[x],
                label=f"{labels[x]}: measured, model (—), projection (⋯)",
            )
    ax.axvspan(measured_max, ns[-1], color="0.9", zorder=0)
    ax.text(measured_max * 1.1, ax.get_ylim()[1] * 0.03, "projection", fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("hosts (one server and one worker each)")
    ax.set_ylabel("images/s (emulated)")
    ax.set_title("Step-time model: measured, fitted and projected")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def publish(
    data: dict, path: Path, results: Path, charts_dir: Path, labels: dict, series_lib: dict
) -> None:
    """Fit the model, draw the charts into ``charts_dir``, print the section and put it into
    ``results``."""
    rate = data["settings"]["rate_mbit"]
    probe = [j for j in data["probe"] if j.get("rate_mbit") in (rate, None)]
    fit = _model.calibrate([j for j in probe if j.get("rate_mbit")], data["jobs"], series_lib)
    data["model"] = fit
    path.write_text(json.dumps(data, indent=1, default=str))
    charts = []
    scaling_chart(charts_dir / SCALING_PNG, data, labels)
    charts.append(SCALING_PNG)
    if seeds_chart(charts_dir / SEEDS_PNG, data, labels):
        charts.append(SEEDS_PNG)
    if model_chart(charts_dir / MODEL_PNG, data, labels, fit):
        charts.append(MODEL_PNG)
    text = section(data, path, labels, fit, charts)
    print(text)
    write_section(results, text, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    """``python _report_cluster.py RUN.json``: redraw the charts and rewrite the section."""
    import argparse

    import run

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("json", type=Path)
    ap.add_argument("--results", type=Path, default=HERE.parent / "RESULTS.md")
    ap.add_argument("--charts", type=Path, default=HERE)
    ap.add_argument(
        "--merge",
        type=Path,
        nargs="*",
        default=[],
        help="other runs' JSON whose communication-bound and real-compute parts to add",
    )
    args = ap.parse_args(argv)
    data = json.loads(args.json.read_text())
    for other in args.merge:
        more = json.loads(other.read_text())
        for part in ("comm", "real"):
            if part in more:
                data[part] = more[part] | {"run": more["settings"]["prefix"]}
    labels = {k: v["label"] for k, v in run.SERIES.items()}
    libs = {k: v["lib"] for k, v in run.SERIES.items()}
    publish(data, args.json, args.results, args.charts, labels, libs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
