"""One worker of the scaling model's communication measurement (started by ``bench/scaling.py``).

Builds the seeds' LeNet with the library named by ``BENCH_LIB`` (``mxrs`` or ``mxnet``), and
times dist_sync rounds that move exactly what a data-parallel training step moves: every
parameter's gradient pushed, every parameter pulled, in parameter order, then a wait. No
forward or backward pass runs (the gradients are refilled before each round, outside the
timing, as backward would), so the rounds measure the KVStore alone. Prints one JSON line:
rank, parameter count and bytes, and p50/p99/mean round time in ms. Every pulled value is
checked (no optimizer is set, so a pull returns the sum of the workers' pushes).

Usage: ``python _comm_side.py ROUNDS`` inside a job (see ``_jobs.run_job``).
"""

import importlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples"))
from lenet import lenet  # noqa: E402  (examples/lenet.py, the one definition of the seeds' LeNet)

mx = importlib.import_module(os.environ["BENCH_LIB"])


def shaped_lenet():
    """The seeds' LeNet (as the training benchmark builds it), its shapes fixed by one forward
    pass of a 1x1x28x28 batch."""
    net = lenet(mx.gluon.nn)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros((1, 1, 28, 28)))
    return net


def main(rounds):
    kv = mx.kv.create("dist_sync")
    shapes = [p.data().shape for p in shaped_lenet().collect_params().values()]
    keys = list(range(len(shapes)))
    grads = [mx.nd.ones(s) * (kv.rank + 1) for s in shapes]
    outs = [mx.nd.zeros(s) for s in shapes]
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    want = kv.num_workers * (kv.num_workers + 1) / 2
    times = []
    for i in range(rounds + 5):  # the first 5 rounds warm up
        for g in grads:  # as backward refills them; MXNet's push may leave the pulled sum there
            g[:] = kv.rank + 1
        t = time.perf_counter()
        kv.push(keys, grads)
        kv.pull(keys, out=outs)
        mx.nd.waitall()
        if i >= 5:
            times.append(time.perf_counter() - t)
    for o in outs:
        got = o.asnumpy()
        if not np.all(got == want):
            sys.exit(f"rank {kv.rank}: pulled {got.ravel()[:4]}..., expected {want}")
    kv._barrier()
    ms = np.array(times) * 1e3
    n = sum(int(np.prod(s)) for s in shapes)
    print(
        json.dumps(
            {
                "rank": kv.rank,
                "params": n,
                "bytes": 4 * n,
                "keys": len(keys),
                "p50": float(np.percentile(ms, 50)),
                "p99": float(np.percentile(ms, 99)),
                "mean": float(ms.mean()),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(int(sys.argv[1]))
