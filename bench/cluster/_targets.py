"""The two runs of ``run.py`` beside the scaling sweep: a communication-bound configuration for
gradient compression, and real computation (ResNet-18 v1 with ``gluon.Trainer``, ``real.py``)
with mxrs's overlap on and off.

Both run the seeds' 2 + 2 sync layout (one server and one worker on each of 2 hosts) and
alternate the order of their series between repeats. Their records go to the run's JSON under
``comm`` and ``real``; ``_report_targets.py`` turns them into tables.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

import _jobs
from _dist import Layout
from _hosts import Link

HERE = Path(__file__).resolve().parent
REAL = HERE / "real.py"
LAYOUT = Layout("2s2w-sync", 2, (0, 1), (0, 1))
COMM_SERIES = ("mxrs", "mxrs-fp16", "mxrs-bf16", "mxrs-2bit", "mxnet", "mxnet-2bit")
#: the seeds' 1 server + 2 workers on the same links, float32 only
COMM_1S2W = (Layout("1s2w-sync", 2, (0,), (0, 1)), ("mxrs", "mxnet"))
#: series of the real-compute run: (library, environment of every process)
REAL_SERIES = {
    "mxrs": ("mxrs", {}),
    "mxrs-nooverlap": ("mxrs", {"MXRS_OVERLAP": "0"}),
    "mxnet": ("mxnet", {}),
}
_COMPUTE_TIMEOUT_S = 600.0


def add_options(ap: argparse.ArgumentParser) -> None:
    """The options of both runs."""
    bopt = argparse.BooleanOptionalAction
    ap.add_argument("--comm-bound", action=bopt, default=False, help="the compression run")
    ap.add_argument("--comm-rate-mbit", type=float, help="its links (default: the rate / 4)")
    ap.add_argument("--comm-compute-s", type=float, default=1.0, help="its step computation")
    ap.add_argument("--comm-steps", type=int, default=4, help="its timed steps per job")
    ap.add_argument("--comm-repeats", type=int, default=2)
    ap.add_argument(
        "--comm-series",
        nargs="+",
        default=list(COMM_SERIES),
        help="the series of the compression run (and of its 1 + 2 layout, where they are there)",
    )
    ap.add_argument(
        "--comm-server-lr",
        type=float,
        default=0.0,
        help="its servers' SGD rate (0, the default: no optimizer on the servers, as with "
        "update_on_kvstore=False: what a worker pulls is the summed gradient)",
    )
    ap.add_argument("--real", action=bopt, default=False, help="the real-compute run")
    ap.add_argument("--real-batch", type=int, default=128, help="images per worker and step")
    ap.add_argument("--real-steps", type=int, default=20, help="its timed steps per job")
    ap.add_argument("--real-warmup", type=int, default=3)
    ap.add_argument("--real-repeats", type=int, default=3)
    ap.add_argument(
        "--real-rate-mbit",
        type=float,
        help="its links (default: communication as long as mxrs's computation)",
    )


def jobs(data: dict) -> list[dict]:
    """Every job record of both runs."""
    return [j for part in ("comm", "real") for j in data.get(part, {}).get("jobs", [])]


def comm_bound(args: argparse.Namespace, data: dict, rate: float, save) -> None:
    """Every series of :data:`COMM_SERIES` (and :data:`COMM_1S2W`) on links
    ``--comm-rate-mbit`` (default ``rate / 4``) with ``--comm-compute-s`` of computation per
    step."""
    import run

    crate = args.comm_rate_mbit or rate / 4
    part = data["comm"] = {"rate_mbit": crate, "compute_s": args.comm_compute_s, "jobs": []}
    part["server_lr"] = args.comm_server_lr
    part |= {"layout": LAYOUT.name, "steps": args.comm_steps, "repeats": args.comm_repeats}
    link = Link(crate, args.delay_ms)
    ns = argparse.Namespace(**(vars(args) | {"steps": args.comm_steps}))
    print(f"communication-bound: links {crate:g} Mbit/s, steps {args.comm_compute_s:g} s")
    lay1, series1 = COMM_1S2W
    for r in range(args.comm_repeats):
        pairs = [(LAYOUT, s) for s in args.comm_series]
        pairs += [(lay1, s) for s in series1 if s in args.comm_series]
        for lay, s in pairs if r % 2 == 0 else pairs[::-1]:
            tag = f"c{r}-{lay.name}-{s}"
            argv = run.worker_argv(ns, s, lay.mode, args.comm_compute_s, None)
            argv += ["--lr", f"{args.comm_server_lr:g}"]
            job = run.one_job(ns, lay, s, link, args.comm_compute_s, tag, argv=argv)
            part["jobs"].append(job)
            save()


def _compute(args: argparse.Namespace, lib: str, logs: Path) -> dict:
    """The computation alone: two workers of ``real.py`` without a store at once on this
    machine (one thread each, as in a job)."""
    logs.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "MXRS_"))}
    env |= {v: "1" for v in _jobs.THREAD_VARS} | {"BENCH_LIB": lib}
    argv = [_jobs.python_for(lib), str(REAL), "--kvstore", "none"]
    argv += ["--batch", str(args.real_batch), "--steps", str(args.real_steps)]
    argv += ["--warmup", str(args.real_warmup)]
    rec: dict = {"tag": f"xcompute-{lib}", "lib": lib, "series": lib}
    files = [open(logs / f"compute-{lib}-{i}.log", "w") for i in range(2)]  # noqa: SIM115
    try:
        procs = [subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT) for f in files]
        codes = [p.wait(timeout=_COMPUTE_TIMEOUT_S) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
        codes = [-1, -1]
    finally:
        for f in files:
            f.close()
    texts = [(logs / f"compute-{lib}-{i}.log").read_text(errors="replace") for i in range(2)]
    out = [json.loads(x) for t in texts for x in t.splitlines() if x.startswith("{")]
    if any(codes) or len(out) != 2:
        return rec | {"ok": False, "error": f"exit codes {codes}: {texts[0][-2000:]}"}
    rec |= {"ok": True, "worker_results": out, "bytes": out[0]["bytes"]}
    rec["step_s"] = statistics.median(w["median_step_s"] for w in out)
    rec["images_per_s"] = args.real_batch / rec["step_s"]
    print(f"  {rec['tag']}: step {rec['step_s']:.3f} s per worker", flush=True)
    return rec


def real(args: argparse.Namespace, data: dict, save) -> None:
    """The computation alone for each library, then ResNet-18 v1 jobs of every
    :data:`REAL_SERIES` on links sized so that a step's communication takes as long as mxrs's
    computation (or ``--real-rate-mbit``)."""
    import run

    part = data["real"] = {"batch": args.real_batch, "steps": args.real_steps, "jobs": []}
    part |= {"warmup": args.real_warmup, "repeats": args.real_repeats, "compute": []}
    print("real computation (ResNet-18 v1, gluon.Trainer):", flush=True)
    logs = args.out / args.prefix / "real"
    for lib in ("mxrs", "mxnet"):
        part["compute"].append(_compute(args, lib, logs))
        save()
    c = part["compute"][0]
    if not c["ok"]:
        print(f"  FAILED {c['tag']}: {c['error'].splitlines()[0]}", flush=True)
        return
    # each link direction carries one model's bytes a step: half of its worker's push and
    # half of the other worker's pull cross it, one way each
    rate = args.real_rate_mbit or c["bytes"] * 8 / c["step_s"] / 1e6
    part |= {"rate_mbit": rate, "bytes": c["bytes"], "compute_s": c["step_s"]}
    link = Link(rate, args.delay_ms)
    print(f"  links {rate:,.0f} Mbit/s", flush=True)
    argv = [str(REAL), "--batch", str(args.real_batch), "--steps", str(args.real_steps)]
    argv += ["--warmup", str(args.real_warmup), "--kvstore", LAYOUT.mode]
    names = list(REAL_SERIES)
    for r in range(args.real_repeats):
        for s in names if r % 2 == 0 else names[::-1]:
            lib, env = REAL_SERIES[s]
            tag = f"x{r}-{LAYOUT.name}-{s}"
            rec = run.one_job(
                args, LAYOUT, s, link, c["step_s"], tag, lib=lib, argv=argv, extra_env=env
            )
            rec["batch"] = args.real_batch
            part["jobs"].append(rec)
            save()
