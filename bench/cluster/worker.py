"""One worker of the emulated-cluster scaling runs (started by ``bench/cluster/run.py``).

The same program runs under both libraries, ``import mxrs as mx`` or ``import mxnet as mx``
(Apache MXNet 1.9.1) as ``BENCH_LIB`` says, and uses only MXNet 1.9.1's public API.

What one step does, as a data-parallel trainer on a GPU host would, with the GPU's work replaced
by waiting for its time:

- the model's real parameter set (ResNet-50 v1 from the model zoo, or a small MLP for tests),
  its shapes fixed by one forward pass of a tiny input; one key per trained parameter (the
  BatchNorm running statistics are not trained, so not pushed);
- forward, layer by layer in forward order: wait for the layer's weights (``wait_to_read``: the
  previous step's pull of them), then spend the layer's share of the forward time;
- backward, in reverse order: spend the layer's share of the backward time, then (``--overlap``)
  push its gradients with ``priority=-index`` and pull its weights with the same priority, so
  communication overlaps the rest of backward and the next forward; without overlap every
  push and pull is issued after backward ends.

Each layer's time is proportional to its FLOPs at ``--image`` pixels (forward one third of
``--compute-s``, backward two thirds). A step is the time from one forward's start to the next.
Prints one JSON line per worker: step times, time spent waiting for weights, images/s and, under
mxrs, what each server received over the wire (``kv._server_stats()`` after a barrier).

Usage: ``python worker.py --model resnet50_v1 --batch 960 --compute-s 3 --steps 6`` in a job.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time

import numpy as np

mx = importlib.import_module(os.environ.get("BENCH_LIB", "mxrs"))

#: The zoo model's shapes are fixed with an input of this side; its FLOPs are counted at --image.
TINY = 32
_BLOCKED_S = 5e-4  # a wait_to_read longer than this waited for a pull


class Layer:
    """A block that owns trained parameters: their indices (keys) and its FLOPs per image."""

    def __init__(self, name: str, keys: list[int], flops: float) -> None:
        self.name, self.keys, self.flops = name, keys, flops


def build(model: str, width: int, depth: int):
    """The network and the shape of the tiny input that fixes its parameter shapes."""
    if model == "resnet50_v1":
        return mx.gluon.model_zoo.vision.resnet50_v1(), (1, 3, TINY, TINY)
    net = mx.gluon.nn.Sequential()
    for _ in range(depth):
        net.add(mx.gluon.nn.Dense(width, activation="relu"))
    net.add(mx.gluon.nn.Dense(10))
    return net, (1, width)


def layers_of(net, shape: tuple[int, ...], image: int) -> tuple[list[Layer], list]:
    """The trained layers in the order their parameters were defined, and those parameters
    (key ``i`` is ``params[i]``).

    One forward pass with a hook on every block gives each block's output shape; a block owns
    the parameters not claimed by a block that finished before it (its children finish first).
    Layers are ordered by their first parameter in ``collect_params()``, so both libraries
    order them alike whichever branch of a block runs first. FLOPs per image: ``2 * weight
    size * output pixels`` for a layer with a weight of 2 or more dimensions, ``4 * output
    size`` for one with only vectors (BatchNorm); pixels are counted at ``image`` a side.
    """
    seen: list = []
    handles: list = []
    net.apply(
        lambda b: handles.append(b.register_forward_hook(lambda b, i, o: seen.append((b, o))))
    )
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros(shape))
    for h in handles:
        h.detach()
    scale = (image / shape[-1]) ** 2 if len(shape) == 4 else 1.0
    order = {id(p): i for i, p in enumerate(net.collect_params().values())}
    claimed: set[int] = set()
    found = []
    for block, out in seen:
        own = [p for p in block.collect_params().values() if id(p) not in claimed]
        claimed.update(id(p) for p in own)
        trained = sorted((p for p in own if p.grad_req != "null"), key=lambda p: order[id(p)])
        if not trained:
            continue
        out_shape = out.shape
        pixels = float(np.prod(out_shape[2:])) * scale if len(out_shape) == 4 else 1.0
        weight = max(trained, key=lambda p: len(p.shape))
        if len(weight.shape) >= 2:
            flops = 2.0 * float(np.prod(weight.shape)) * pixels
        else:
            flops = 4.0 * float(np.prod(out_shape[1:])) * (scale if len(out_shape) == 4 else 1)
        found.append((order[id(trained[0])], block.name, trained, flops))
    layers, params = [], []
    for _, name, trained, flops in sorted(found, key=lambda f: f[0]):
        layers.append(Layer(name, list(range(len(params), len(params) + len(trained))), flops))
        params += trained
    return layers, params


class _Clock:
    """Spends emulated compute time: each call ends ``dt`` after the previous one ended, or
    after ``ready`` when the layer had to wait for its weights past that."""

    def __init__(self) -> None:
        self.end = time.perf_counter()

    def spend(self, dt: float, ready: float | None = None) -> None:
        if ready is not None:
            self.end = max(self.end, ready)
        self.end += dt
        left = self.end - time.perf_counter()
        if left > 0:
            time.sleep(left)


def compression(kind: str, threshold: float) -> dict | None:
    """The ``set_gradient_compression`` argument for ``kind`` (None for none)."""
    if kind == "none":
        return None
    if kind == "2bit":
        return {"type": "2bit", "threshold": threshold}
    return {"type": kind}


def run(args: argparse.Namespace) -> dict:
    net, shape = build(args.model, args.mlp_width, args.mlp_depth)
    layers, params = layers_of(net, shape, args.image)
    total = sum(la.flops for la in layers)
    fwd = [args.compute_s / 3 * la.flops / total for la in layers]
    bwd = [2 * f for f in fwd]

    kv = mx.kv.create(args.kvstore)
    comp = compression(args.compression, args.threshold)
    if comp is not None:
        kv.set_gradient_compression(comp)
    # plain copies: the pulls land here (MXNet may keep a layer's own weights in a oneDNN layout)
    weights = [mx.nd.array(p.data().asnumpy()) for p in params]
    rng = np.random.default_rng(kv.rank)
    grads = [
        mx.nd.array(rng.standard_normal(w.shape).astype(np.float32) * args.grad_scale)
        for w in weights
    ]
    keys = list(range(len(params)))
    kv.init(keys, weights)
    if args.lr > 0:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=args.lr))
    kv.pull(keys, out=weights)
    mx.nd.waitall()

    def push(i: int) -> None:
        ks = layers[i].keys
        kv.push(ks, [grads[k] for k in ks], priority=-i)

    def pull(i: int) -> None:
        ks = layers[i].keys
        kv.pull(ks, out=[weights[k] for k in ks], priority=-i)

    steps, waits = [], []
    start = time.perf_counter()
    for step in range(args.warmup + args.steps + 1):
        now = time.perf_counter()
        if step > 0:
            steps.append(now - start)
        start = now
        if step == args.warmup + args.steps:
            break  # the last step's forward start closes the last timed step
        if step == args.fail_at_step and kv.rank == kv.num_workers - 1:
            sys.exit(3)
        clock, waited = _Clock(), 0.0
        for i, la in enumerate(layers):
            t = time.perf_counter()
            for k in la.keys:
                weights[k].wait_to_read()
            ready = time.perf_counter()
            blocked = ready - t > _BLOCKED_S
            waited += ready - t if blocked else 0.0
            clock.spend(fwd[i], ready if blocked else None)
        waits.append(waited)
        for i in reversed(range(len(layers))):
            clock.spend(bwd[i])
            if args.overlap:
                push(i)
                pull(i)
        if not args.overlap:
            for i in reversed(range(len(layers))):
                push(i)
            for i in reversed(range(len(layers))):
                pull(i)
    mx.nd.waitall()
    stats = None
    if hasattr(kv, "_server_stats"):  # mxrs: what crossed the wire into each server
        kv.barrier()  # every worker's pushes counted
        stats = kv._server_stats()
    timed = steps[args.warmup :]
    median = statistics.median(timed)
    n = sum(int(np.prod(w.shape)) for w in weights)
    return {
        "rank": kv.rank,
        "host": os.environ.get("DMLC_NODE_HOST", ""),
        "workers": kv.num_workers,
        "lib": os.environ.get("BENCH_LIB", "mxrs"),
        "model": args.model,
        "params": n,
        "bytes": 4 * n,
        "keys": len(keys),
        "key_elems": [int(np.prod(w.shape)) for w in weights],
        "layers": len(layers),
        "batch": args.batch,
        "compression": args.compression,
        "overlap": args.overlap,
        "kvstore": args.kvstore,
        "compute_s": args.compute_s,
        "step_s": timed,
        "wait_s": waits[args.warmup :],
        "median_step_s": median,
        "images_per_s": args.batch / median,
        "push_rounds": args.warmup + args.steps,
        "server_stats": stats,
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("resnet50_v1", "mlp"), default="resnet50_v1")
    ap.add_argument("--mlp-width", type=int, default=1024)
    ap.add_argument("--mlp-depth", type=int, default=4)
    ap.add_argument("--image", type=int, default=224, help="pixels a side FLOPs are counted at")
    ap.add_argument("--batch", type=int, default=960, help="images per worker and step")
    ap.add_argument("--compute-s", type=float, default=3.0, help="forward+backward seconds")
    ap.add_argument("--steps", type=int, default=6, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--kvstore", choices=("dist_sync", "dist_async"), default="dist_sync")
    ap.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--compression", choices=("none", "fp16", "bf16", "2bit"), default="none")
    ap.add_argument("--threshold", type=float, default=0.5, help="2bit threshold")
    ap.add_argument("--grad-scale", type=float, default=1.0, help="gradients' standard deviation")
    ap.add_argument("--lr", type=float, default=1e-6, help="server SGD rate (0: no optimizer)")
    ap.add_argument(
        "--fail-at-step", type=int, default=-1, help="the last worker exits 3 there (tests)"
    )
    return ap.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(run(parse())), flush=True)
