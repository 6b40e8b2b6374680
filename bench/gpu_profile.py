"""Where a training step's GPU time goes: every CUDA kernel of a ResNet-50 step, mxrs beside
PyTorch eager, as PyTorch's profiler (CUPTI) records them; it sees every kernel the process
launches, CuPy's and cuDNN's too.

``python bench/gpu_profile.py [--dtype float16] [--batch 128] [--steps 3] [--hybridize]
[--sites]`` prints, per library, the wall time of a step, the summed kernel time of a step
(their difference is time the GPU waited for the host) and the kernels that took the most time,
grouped by what they are. ``--sites`` adds, for mxrs, where in the Python code a step allocates
device memory (every kernel that makes a new array allocates): the lines and the count per step.
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


def alloc_sites(step, top=25):
    """Print the mxrs source lines that allocate device memory in one ``step`` (CuPy's memory
    hook sees every allocation from its pool), most frequent first."""
    import traceback

    from cupy.cuda import memory_hook

    counts = {}

    class Sites(memory_hook.MemoryHook):
        name = "mxrs-sites"

        def malloc_preprocess(self, **kwargs):
            frames = [f for f in traceback.extract_stack()[:-1] if "/mxrs/" in f.filename]
            where = " < ".join(
                f"{f.filename.split('/mxrs/')[-1]}:{f.lineno} {f.name}" for f in frames[-1:-4:-1]
            )
            c = counts.setdefault(where, [0, 0])
            c[0] += 1
            c[1] += kwargs.get("mem_size", 0)

    step()
    with Sites():
        step()
    print("  device allocations of one step, by the mxrs lines that made them:")
    for where, (n, size) in sorted(counts.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"    {n:5d}x {size / 2**20:9.1f} MiB  {where}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--hybridize", action="store_true", help="hybridize mxrs's network")
    ap.add_argument("--sites", action="store_true", help="where mxrs allocates in a step")
    ap.add_argument("--no-torch", action="store_true", help="profile mxrs alone")
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
    if args.hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
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

    print(f"mxrs resnet50 {dt} batch {b}" + " hybridized" * args.hybridize + ":")
    profile(mx_step, args.steps, nd.waitall)
    if args.sites:
        alloc_sites(mx_step)
    if args.no_torch:
        return

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
