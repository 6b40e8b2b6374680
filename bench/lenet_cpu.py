"""LeNet forward+backward+SGD step on CPU, written once for both mxrs and Apache MXNet.

Run as a worker: ``python lenet_cpu.py --lib mxrs|mxnet [--batch 128] [--steps 40]``. It builds
the seeds' LeNet from ``mx.nd`` operators (Conv 6x5 relu, MaxPool 2, Conv 16x3 relu, MaxPool 2,
Dense 120 relu, Dense 84 relu, Dense 10), trains on a fixed random batch of 1x28x28 images and
prints one JSON line: the median samples/s over several timed windows. Thread counts come from
the environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS), set by the runner.
"""

import argparse
import importlib
import json
import statistics
import time

import numpy as np


def build(mx, batch, seed=0):
    """Return (params, step) for a LeNet on ``batch`` random images."""
    nd, autograd = mx.nd, mx.autograd
    rng = np.random.default_rng(seed)

    def param(*shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = np.sqrt(3.0 / fan_in)
        p = nd.array(rng.uniform(-scale, scale, size=shape).astype(np.float32))
        p.attach_grad()
        return p

    w1, b1 = param(6, 1, 5, 5), param(6)
    w2, b2 = param(16, 6, 3, 3), param(16)
    f1, c1 = param(120, 400), param(120)
    f2, c2 = param(84, 120), param(84)
    f3, c3 = param(10, 84), param(10)
    params = [w1, b1, w2, b2, f1, c1, f2, c2, f3, c3]
    x = nd.array(rng.random((batch, 1, 28, 28), dtype=np.float32))
    y = nd.array(rng.integers(0, 10, size=batch).astype(np.float32))
    lr = 0.1 / batch

    def step():
        with autograd.record():
            h = nd.relu(nd.Convolution(x, w1, b1, kernel=(5, 5), num_filter=6))
            h = nd.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max")
            h = nd.relu(nd.Convolution(h, w2, b2, kernel=(3, 3), num_filter=16))
            h = nd.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max")
            h = nd.relu(nd.FullyConnected(h, f1, c1, num_hidden=120))
            h = nd.relu(nd.FullyConnected(h, f2, c2, num_hidden=84))
            out = nd.FullyConnected(h, f3, c3, num_hidden=10)
            loss = -nd.pick(nd.log_softmax(out), y).sum()
        loss.backward()
        for p in params:
            p -= lr * p.grad
        return loss

    return params, step


def measure(lib, batch, steps, windows, warmup):
    """Median samples/s over ``windows`` timed windows of ``steps`` training steps."""
    mx = importlib.import_module(lib)
    _, step = build(mx, batch)
    for _ in range(warmup):
        step()
    mx.nd.waitall()
    rates = []
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        loss.wait_to_read()
        mx.nd.waitall()
        rates.append(batch * steps / (time.perf_counter() - t0))
    return statistics.median(rates), float(loss.asnumpy().reshape(-1)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", choices=["mxrs", "mxnet"], required=True)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    rate, loss = measure(args.lib, args.batch, args.steps, args.windows, args.warmup)
    print(json.dumps({"lib": args.lib, "samples_per_s": rate, "loss": loss}))


if __name__ == "__main__":
    main()
