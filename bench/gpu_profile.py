"""Where a training step's GPU time goes: every CUDA kernel of a ResNet-50 step, mxrs beside
PyTorch eager, as PyTorch's profiler (CUPTI) records them; it sees every kernel the process
launches, CuPy's and cuDNN's too.

``python bench/gpu_profile.py [--dtype float16] [--batch 128] [--steps 3]`` prints, per library,
the wall time of a step, the summed kernel time of a step (their difference is time the GPU
waited for the host) and the kernels that took the most time, grouped by what they are.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _groups(name):
    n = name.lower()
    if n.startswith("mxrs_"):
        return "mxrs fused: " + n[5:].split("_bwd")[0].split("_relu")[0]
    for key, label in (
        ("nchwtonhwc", "layout conversion"),
        ("nhwctonchw", "layout conversion"),
        ("wgrad", "convolution wgrad"),
        ("dgrad", "convolution dgrad"),
        ("fprop", "convolution fprop"),
        ("conv", "convolution other"),
        ("xmma", "convolution other"),
        ("gemm", "gemm"),
        ("batch_norm", "batch norm"),
        ("bn_", "batch norm"),
        ("reduce", "reductions"),
        ("memcpy", "copies"),
        ("memset", "memset"),
        ("elementwise", "elementwise"),
        ("cupy_", "cupy elementwise"),
        ("pool", "pooling"),
    ):
        if key in n:
            return label
    return "other"


def profile(step, steps, sync):
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    for _ in range(3):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    wall = (time.perf_counter() - t0) / steps
    with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        sync()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0)
        if t:
            rows.append((t / steps / 1000.0, e.count / steps, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    groups = {}
    for ms, count, key in rows:
        g = groups.setdefault(_groups(key), [0.0, 0.0])
        g[0] += ms
        g[1] += count
    print(f"  step wall {wall * 1000:.1f} ms, kernels {total:.1f} ms per step")
    for name, (ms, count) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"    {ms:7.2f} ms {count:6.0f} launches  {name}")
    print("  top kernels:")
    for ms, count, key in rows[:18]:
        print(f"    {ms:7.2f} ms {count:5.0f}x  {key[:110]}")
    del torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    import mxrs as mx
    import numpy as np
    import torch
    from mxrs import autograd, gluon, nd
    from mxrs.gluon.model_zoo import vision

    b, dt = args.batch, args.dtype
    ctx = mx.gpu(0)
    net = vision.resnet50_v1(classes=1000)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if dt == "float16":
        net.cast("float16")
    opt = {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4, "multi_precision": dt == "float16"}
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = nd.array(rng.uniform(-1, 1, (b, 3, 224, 224)), ctx=ctx, dtype=dt)
    y = nd.array(rng.integers(0, 1000, b), ctx=ctx, dtype=dt)

    def mx_step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(b)

    print(f"mxrs resnet50 {dt} batch {b}:")
    profile(mx_step, args.steps, nd.waitall)

    import torchvision

    dev = torch.device("cuda:0")
    tdt = getattr(torch, dt)
    tnet = torchvision.models.resnet50().to(dev, dtype=tdt)
    topt = torch.optim.SGD(tnet.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    tx = torch.rand((b, 3, 224, 224), device=dev, dtype=tdt)
    ty = torch.randint(0, 1000, (b,), device=dev)
    crit = torch.nn.CrossEntropyLoss()

    def t_step():
        topt.zero_grad(set_to_none=True)
        crit(tnet(tx), ty).backward()
        topt.step()

    print(f"PyTorch resnet50 {dt} batch {b}:")
    profile(t_step, args.steps, torch.cuda.synchronize)


if __name__ == "__main__":
    main()
