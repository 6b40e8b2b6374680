"""One worker of the real-compute run on emulated hosts (started by ``bench/cluster/run.py
--real``): ResNet-18 v1 from the model zoo trained with ``gluon.Trainer``.

The same program runs under both libraries, ``import mxrs as mx`` or ``import mxnet as mx``
(Apache MXNet 1.9.1) as ``BENCH_LIB`` says, and uses only MXNet 1.9.1's public API: SGD with
momentum through a distributed store (the optimizer runs on the servers), a fixed synthetic
batch of ``--batch`` images of 3 x 32 x 32 and labels of 10 classes per worker. Whether mxrs's
Trainer overlaps communication with backward is its own default (``MXRS_OVERLAP=0`` turns it
off); MXNet runs its Trainer as it is.

A step is the time from one step's start to the next one's, each step ending when its loss
is read back (the next forward waits for the pulled weights itself). ``--kvstore none`` trains
without a store, which gives the computation alone. Prints one JSON line per worker.

Usage: ``python real.py --batch 32 --steps 20 --warmup 3`` in a job.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import time

import numpy as np

mx = importlib.import_module(os.environ.get("BENCH_LIB", "mxrs"))


def run(args: argparse.Namespace) -> dict:
    net = mx.gluon.model_zoo.vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier())
    rng = np.random.default_rng(args.seed)
    x = mx.nd.array(rng.standard_normal((args.batch, 3, 32, 32)).astype(np.float32))
    y = mx.nd.array(rng.integers(0, 10, args.batch).astype(np.float32))
    net(x).wait_to_read()  # shapes fixed before the store sees the parameters
    kv = None if args.kvstore == "none" else mx.kv.create(args.kvstore)
    opt = {"learning_rate": args.lr, "momentum": 0.9}
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", opt, kvstore=kv)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    steps, losses = [], []
    start = time.perf_counter()
    for _ in range(args.warmup + args.steps):
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(args.batch)
        losses.append(float(loss.mean().asnumpy().reshape(-1)[0]))
        now = time.perf_counter()
        steps.append(now - start)
        start = now
    mx.nd.waitall()
    timed = steps[args.warmup :]
    median = statistics.median(timed)
    n = sum(int(np.prod(p.shape)) for p in net.collect_params().values() if p.grad_req != "null")
    return {
        "rank": kv.rank if kv is not None else 0,
        "host": os.environ.get("DMLC_NODE_HOST", ""),
        "workers": kv.num_workers if kv is not None else 1,
        "lib": os.environ.get("BENCH_LIB", "mxrs"),
        "model": "resnet18_v1",
        "params": n,
        "bytes": 4 * n,
        "batch": args.batch,
        "kvstore": args.kvstore,
        "overlap_env": os.environ.get("MXRS_OVERLAP", ""),
        "step_s": timed,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "median_step_s": median,
        "images_per_s": args.batch / median,
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=32, help="images per worker and step")
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--kvstore", choices=("dist_sync", "dist_async", "none"), default="dist_sync")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(run(parse())), flush=True)
