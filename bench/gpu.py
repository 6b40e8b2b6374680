"""Training speed on one GPU: mxrs beside PyTorch eager, in the same run.

``resnet50``: Gluon's ``model_zoo.vision.resnet50_v1`` (mxrs) and torchvision's ``resnet50``
(PyTorch), trained with SGD (momentum 0.9, weight decay 1e-4) and softmax cross-entropy on
synthetic ImageNet-shaped data (3x224x224, 1000 classes), batch 128. ``lenet``: the seeds'
LeNet (``examples/lenet.py``) and the same layers in PyTorch, on MNIST-shaped data, batch 128.
``mxrs-cupy`` is mxrs with ``MXRS_GPU_KERNELS=cupy``: the portable CuPy kernels alone.

float16 casts the whole network and data (``net.cast('float16')`` with SGD's
``multi_precision``, float32 master weights; PyTorch ``model.half()`` with plain SGD). Both
libraries leave TF32 convolutions on, as they do by default (PyTorch's
``torch.backends.cudnn.allow_tf32``; mxrs's ``MXRS_CUDNN_TF32``), and use cuDNN's heuristics
(no autotuning).

Each measurement runs in its own process: ``--warmup`` steps, then ``--windows`` windows of
``--steps`` steps, each finished by waiting for the device; the rate quoted is the median
window's images/s. ``python bench/gpu.py --all --out DIR`` runs every measurement, prints a
table and writes ``DIR/gpu.json`` and ``DIR/gpu.md``; ``--case LIB MODEL DTYPE`` runs one and
prints one JSON line (``--profile FILE`` writes a cProfile of mxrs's timed steps).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

#: (library, model, dtype, batch) of each measurement; ``mxrs-cupy`` is the portable CuPy
#: kernels alone, the larger batch shows how much of a step is the host's work.
CASES = [
    (lib, model, dtype, 128)
    for model in ("resnet50", "lenet")
    for dtype in ("float32", "float16")
    for lib in ("torch", "mxrs", "mxrs-hybrid")
] + [("torch", "resnet50", "float16", 256), ("mxrs", "resnet50", "float16", 256)]
if os.environ.get("BENCH_WITH_CUPY"):
    CASES.append(("mxrs-cupy", "resnet50", "float32", 128))


def _shape(model):
    return (3, 224, 224, 1000) if model == "resnet50" else (1, 28, 28, 10)


def run_mxrs(model, dtype, batch, warmup, steps, windows, hybrid, profile=None):
    """Median images/s of mxrs training ``model`` on gpu(0)."""
    import mxrs as mx
    import numpy as np
    from mxrs import autograd, gluon, nd
    from mxrs.gluon.model_zoo import vision

    ctx = mx.cpu(0) if os.environ.get("BENCH_CTX") == "cpu" else mx.gpu(0)  # cpu: a smoke test
    c, h, w, classes = _shape(model)
    if model == "resnet50":
        net = vision.resnet50_v1(classes=classes)
    else:
        from lenet import lenet

        net = lenet(gluon.nn, classes)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if dtype == "float16":
        net.cast("float16")
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    opt = {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
    if dtype == "float16":
        opt["multi_precision"] = True
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = nd.array(rng.uniform(-1, 1, (batch, c, h, w)), ctx=ctx, dtype=dtype)
    y = nd.array(rng.integers(0, classes, batch), ctx=ctx, dtype=dtype)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        return loss

    for _ in range(warmup):
        step()
    nd.waitall()
    rates = []
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        loss.wait_to_read()
        nd.waitall()
        rates.append(batch * steps / (time.perf_counter() - t0))
    if prof is not None:
        import pstats

        prof.disable()
        with open(profile, "w") as f:
            stats = pstats.Stats(prof, stream=f)
            stats.sort_stats("tottime").print_stats(40)
            stats.sort_stats("cumulative").print_stats(40)
    info = mx.kernels.describe().get("gpu", {})
    return rates, {k: info.get(k) for k in ("convolution", "cudnn", "graphs_built", "tf32")}


def run_torch(model, dtype, batch, warmup, steps, windows):
    """Median images/s of PyTorch eager training the same network on cuda:0."""
    import torch
    from torch import nn

    dev = torch.device("cuda:0")
    c, h, w, classes = _shape(model)
    if model == "resnet50":
        import torchvision

        net = torchvision.models.resnet50(num_classes=classes)
    else:
        net = nn.Sequential(
            nn.Conv2d(1, 6, 5),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 3),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, classes),
        )
    tdt = getattr(torch, dtype)
    net = net.to(dev, dtype=tdt)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand((batch, c, h, w), generator=g, device=dev, dtype=tdt) * 2 - 1
    y = torch.randint(0, classes, (batch,), generator=g, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    rates = []
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        rates.append(batch * steps / (time.perf_counter() - t0))
    return rates, {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}


def one(lib, model, dtype, args):
    if lib == "torch":
        rates, info = run_torch(model, dtype, args.batch, args.warmup, args.steps, args.windows)
    else:
        if lib == "mxrs-cupy":  # the portable CuPy kernels alone, as before the CUDA provider
            os.environ["MXRS_GPU_KERNELS"] = "cupy"
        rates, info = run_mxrs(
            model,
            dtype,
            args.batch,
            args.warmup,
            args.steps,
            args.windows,
            lib == "mxrs-hybrid",
            args.profile,
        )
    return {
        "lib": lib,
        "model": model,
        "dtype": dtype,
        "batch": args.batch,
        "images_per_s": statistics.median(rates),
        "windows": rates,
        **info,
    }


def _device():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.strip()
    except OSError:
        return "unknown"


def table(results, device):
    """The results as a markdown table, mxrs's rates over PyTorch's beside them."""
    by = {
        (r["lib"], r["model"], r["dtype"]): r
        for r in results
        if "images_per_s" in r and r["batch"] == min(x["batch"] for x in results)
    }
    big = [r for r in results if "images_per_s" in r and r not in by.values()]
    lines = [
        f"Device: {device}.",
        "",
        "| model | dtype | PyTorch eager img/s | mxrs img/s | ratio | mxrs hybridized img/s "
        "| ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for model in ("resnet50", "lenet"):
        for dtype in ("float32", "float16"):
            t = by.get(("torch", model, dtype))
            cells = [model, dtype, f"{t['images_per_s']:.0f}" if t else "—"]
            for lib in ("mxrs", "mxrs-hybrid"):
                m = by.get((lib, model, dtype))
                if m is None:
                    cells += ["failed", "—"]
                    continue
                ratio = f"{m['images_per_s'] / t['images_per_s']:.2f}" if t else "—"
                cells += [f"{m['images_per_s']:.0f}", ratio]
            lines.append("| " + " | ".join(cells) + " |")
    for r in big:
        t = next((x for x in big if x["lib"] == "torch" and x["dtype"] == r["dtype"]), None)
        if r["lib"] != "torch" and t is not None:
            rate, base = r["images_per_s"], t["images_per_s"]
            lines += [
                "",
                f"Batch {r['batch']}, {r['model']} {r['dtype']}: PyTorch {base:.0f}, "
                f"mxrs {rate:.0f} img/s ({rate / base:.2f}).",
            ]
    old = by.get(("mxrs-cupy", "resnet50", "float32"))
    t = by.get(("torch", "resnet50", "float32"))
    if old and t:
        rate = old["images_per_s"]
        lines += [
            "",
            f"mxrs with the portable CuPy kernels alone (`MXRS_GPU_KERNELS=cupy`), resnet50 "
            f"float32: {rate:.0f} img/s ({rate / t['images_per_s']:.2f} of PyTorch).",
        ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", nargs=3, metavar=("LIB", "MODEL", "DTYPE"))
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=240, help="seconds per measurement")
    ap.add_argument("--profile", metavar="FILE", help="with --case mxrs: cProfile the timed steps")
    ap.add_argument("--models", nargs="+", default=["resnet50", "lenet"], help="with --all")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(one(*args.case, args)), flush=True)
        return
    if not args.all:
        ap.error("give --case LIB MODEL DTYPE or --all")
    os.makedirs(args.out, exist_ok=True)
    results = []
    for lib, model, dtype, batch in CASES:
        if model not in args.models:
            continue
        if batch != 128 and args.batch != 128:
            continue  # --batch replaces the default batch; the larger one is a diagnostic
        batch = args.batch if batch == 128 else batch
        cmd = [sys.executable, os.path.abspath(__file__), "--case", lib, model, dtype]
        cmd += ["--batch", str(batch)]
        for flag in ("warmup", "steps", "windows"):
            cmd += [f"--{flag}", str(getattr(args, flag))]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if p.returncode == 0 and lines:
                r = json.loads(lines[-1])
            else:
                r = {"lib": lib, "model": model, "dtype": dtype, "error": p.stderr[-1500:]}
        except subprocess.TimeoutExpired:
            r = {"lib": lib, "model": model, "dtype": dtype, "error": "timed out"}
        results.append(r)
        r["batch"] = batch
        brief = f"{r['images_per_s']:.0f} img/s" if "images_per_s" in r else r["error"][-300:]
        print(f"{lib:12s} {model:9s} {dtype:8s} {batch:4d} {brief}", flush=True)
    device = _device()
    with open(os.path.join(args.out, "gpu.json"), "w") as f:
        json.dump({"device": device, "results": results}, f, indent=1)
    md = table(results, device)
    with open(os.path.join(args.out, "gpu.md"), "w") as f:
        f.write(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
