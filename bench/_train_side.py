"""One worker of the Gluon training benchmark, the same program for mxrs and Apache MXNet.

Started by ``bench/train_mxnet.py``, either directly (one process, no ``DMLC_*`` variables: the
Trainer gets ``kvstore='local'``, which both libraries drop for a single device) or as a worker of
a dist job (``bench/_jobs.py``: the Trainer gets a ``dist_sync`` store and every worker trains on
its own shard, ``rank::num_workers``). ``BENCH_LIB`` names the library to import (``mxrs`` or
``mxnet``).

The network is the seeds' LeNet of ``examples/lenet.py`` (Conv2D 6x5 relu, MaxPool 2,
Conv2D 16x3 relu, MaxPool 2, Flatten, Dense 120 relu, Dense 84 relu, Dense 10) in a Gluon
``HybridSequential``, never hybridized: both libraries run it imperatively, operator by operator.
Inputs are MNIST images scaled to [0, 1], read from the IDX files with numpy.

Modes (one JSON object per line on stdout):

``throughput``: after ``--warmup`` steps, time ``--steps`` training steps (forward, backward,
``trainer.step``) and finish them by reading the last loss; prints
``{"rank", "samples_per_s", "steps", "secs"}`` (this worker's rate).

``accuracy``: train epoch by epoch on the (shuffled, sharded) training set, evaluate on the test
set after each epoch and stop at ``--target`` accuracy or after ``--max-epochs``; prints
``{"rank", "epoch", "train_secs", "test_acc"}`` per epoch (``train_secs`` cumulative, evaluation
excluded), then ``{"rank", "time_to_target", "epochs", "test_acc"}`` (``time_to_target`` is null
when the target was not reached).
"""

import argparse
import gzip
import importlib
import json
import os
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples"))
from lenet import lenet  # noqa: E402  (examples/lenet.py, the one definition of the seeds' LeNet)


def default_data_dir():
    """``MNIST_DIR``, else a ``shared/data/mnist`` beside the checkout, else where
    ``python -m mxrs.gluon.data.vision.fetch_mnist`` puts the full MNIST."""
    if os.environ.get("MNIST_DIR"):
        return os.environ["MNIST_DIR"]
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.path.join(here, os.pardir, os.pardir, "shared", "data", "mnist")
    if os.path.isdir(shared):
        return os.path.normpath(shared)
    home = os.environ.get("MXRS_HOME", os.path.join(os.path.expanduser("~"), ".mxrs"))
    return os.path.join(home, "datasets", "mnist")


DATA = default_data_dir()
MAGIC = {2049: 1, 2051: 3}  # labels: 1 dimension, images: 3


def read_idx(path):
    """Read one IDX file (gzip'd or not) of unsigned bytes into a numpy array."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    magic = struct.unpack(">I", raw[:4])[0]
    if magic not in MAGIC:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic})")
    ndim = MAGIC[magic]
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_mnist(data_dir, train):
    """Images as float32 (N, 1, 28, 28) in [0, 1] and labels as float32 (N,)."""
    prefix = "train" if train else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"))
    x = images.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    return x, labels.astype(np.float32)


def xavier(shape, rng, magnitude=2.24):
    """Weights drawn as ``mx.init.Xavier(magnitude=2.24)`` does (uniform, 'avg'), with numpy."""
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    scale = np.sqrt(magnitude / ((fan_in + fan_out) / 2.0))
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


def same_start(mx, net, seed):
    """Give ``net`` initial weights drawn with numpy from ``seed`` (zero biases), so that both
    libraries start from identical parameters; one forward pass first settles the shapes."""
    net(mx.nd.zeros((1, 1, 28, 28)))
    rng = np.random.RandomState(seed)
    for param in net.collect_params().values():
        shape = tuple(param.shape)
        value = xavier(shape, rng) if len(shape) > 1 else np.zeros(shape, np.float32)
        param.set_data(mx.nd.array(value))


def setup(mx, args):
    """Seed the RNGs and build the net from the same weights under both libraries; return
    (net, trainer, loss_fn, rank, num_workers)."""
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    if "DMLC_ROLE" in os.environ:
        store = mx.kv.create("dist_sync")
        rank, workers = store.rank, store.num_workers
    else:
        store, rank, workers = "local", 0, 1
    net = lenet(mx.gluon.nn)
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=mx.cpu())
    same_start(mx, net, args.seed)
    trainer = mx.gluon.Trainer(
        net.collect_params(),
        "sgd",
        {"learning_rate": args.lr, "momentum": args.momentum},
        kvstore=store,
    )
    return net, trainer, mx.gluon.loss.SoftmaxCrossEntropyLoss(), rank, workers


def train_step(mx, net, trainer, loss_fn, x, y):
    """One forward, backward and ``trainer.step`` on numpy batch ``(x, y)``; returns the loss."""
    data, label = mx.nd.array(x), mx.nd.array(y)
    with mx.autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(x.shape[0])
    return loss


def throughput(mx, args):
    """Time ``args.steps`` steps after ``args.warmup``; print this worker's samples/s."""
    net, trainer, loss_fn, rank, workers = setup(mx, args)
    x, y = load_mnist(args.data_dir, train=True)
    x, y = x[rank::workers], y[rank::workers]
    batches = len(x) // args.batch

    def step(i):
        j = (i % batches) * args.batch
        return train_step(mx, net, trainer, loss_fn, x[j : j + args.batch], y[j : j + args.batch])

    for i in range(args.warmup):
        loss = step(i)
    loss.asnumpy()
    mx.nd.waitall()
    t0 = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        loss = step(i)
    loss.asnumpy()
    mx.nd.waitall()
    secs = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "rank": rank,
                "samples_per_s": args.batch * args.steps / secs,
                "steps": args.steps,
                "secs": secs,
            }
        ),
        flush=True,
    )


def evaluate(mx, net, x, y, batch=1000):
    """Fraction of ``x`` that ``net`` classifies as ``y``."""
    right = 0
    for j in range(0, len(x), batch):
        pred = net(mx.nd.array(x[j : j + batch])).argmax(axis=1).asnumpy()
        right += int((pred == y[j : j + batch]).sum())
    return right / len(x)


def accuracy(mx, args):
    """Train until test accuracy reaches ``args.target``; print per-epoch and final lines."""
    net, trainer, loss_fn, rank, workers = setup(mx, args)
    x, y = load_mnist(args.data_dir, train=True)
    tx, ty = load_mnist(args.data_dir, train=False)
    if args.train_limit:
        x, y = x[: args.train_limit], y[: args.train_limit]
    if args.test_limit:
        tx, ty = tx[: args.test_limit], ty[: args.test_limit]
    x, y = x[rank::workers], y[rank::workers]
    order_rng = np.random.RandomState(args.seed)
    train_secs, acc, reached, epoch = 0.0, 0.0, None, 0
    for epoch in range(1, args.max_epochs + 1):
        order = order_rng.permutation(len(x))
        t0 = time.perf_counter()
        for j in range(0, len(x) - args.batch + 1, args.batch):
            idx = order[j : j + args.batch]
            loss = train_step(mx, net, trainer, loss_fn, x[idx], y[idx])
        loss.asnumpy()
        mx.nd.waitall()
        train_secs += time.perf_counter() - t0
        acc = evaluate(mx, net, tx, ty)
        print(
            json.dumps({"rank": rank, "epoch": epoch, "train_secs": train_secs, "test_acc": acc}),
            flush=True,
        )
        if acc >= args.target:
            reached = train_secs
            break
    print(
        json.dumps({"rank": rank, "time_to_target": reached, "epochs": epoch, "test_acc": acc}),
        flush=True,
    )


def parse_args(argv=None):
    """Command-line options of the worker."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("throughput", "accuracy"))
    ap.add_argument("--batch", type=int, default=128, help="batch size per worker")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data-dir", default=DATA)
    ap.add_argument("--warmup", type=int, default=10, help="throughput: untimed steps")
    ap.add_argument("--steps", type=int, default=200, help="throughput: timed steps")
    ap.add_argument("--target", type=float, default=0.985, help="accuracy: test accuracy")
    ap.add_argument("--max-epochs", type=int, default=10, help="accuracy: most epochs")
    ap.add_argument("--train-limit", type=int, default=0, help="accuracy: first N train images")
    ap.add_argument("--test-limit", type=int, default=0, help="accuracy: first N test images")
    return ap.parse_args(argv)


def main(argv=None):
    """Import ``BENCH_LIB`` and run the requested mode."""
    args = parse_args(argv)
    mx = importlib.import_module(os.environ.get("BENCH_LIB", "mxrs"))
    (throughput if args.mode == "throughput" else accuracy)(mx, args)


if __name__ == "__main__":
    main()
