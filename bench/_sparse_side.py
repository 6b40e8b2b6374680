"""One worker of ``bench/sparse.py``: a large embedding (mean of each sample's ids' rows) with
a small dense head, trained with Gluon on a dist_sync store, under whichever library
``BENCH_LIB`` names (the same code runs on mxrs and on Apache MXNet 1.9.1).

Usage: ``python _sparse_side.py {sparse|dense} ROWS DIM BATCH IDS_PER_SAMPLE STEPS WARMUP``.
``sparse``: the table is a row_sparse Parameter (``grad_stype='row_sparse'``): each step pulls
only the batch's rows (``row_sparse_data``) and pushes a row_sparse gradient, the servers update
those rows. ``dense``: the same model with a dense table and gradient (the whole table crosses
the wire each step). Prints one JSON line: samples/s of the timed steps, and (mxrs) what the
servers received in them; both libraries: the bytes the loopback interface carried per timed
step, from the barrier before the steps to the one after (the whole job's traffic: run nothing
else on 127.0.0.1 meanwhile).
"""

import importlib
import json
import os
import sys
import time

import numpy as np

mx = importlib.import_module(os.environ.get("BENCH_LIB", "mxrs"))
gluon = mx.gluon


class Model(gluon.Block):
    def __init__(self, rows, dim, sparse, **kwargs):
        super().__init__(**kwargs)
        self.rows, self.dim, self.sparse = rows, dim, sparse
        stype = "row_sparse" if sparse else "default"
        with self.name_scope():
            self.embed = self.params.get(
                "embed_weight",
                shape=(rows, dim),
                stype=stype,
                grad_stype=stype,
                init=mx.init.Uniform(0.05),
            )
            self.head = gluon.nn.Dense(1, in_units=dim)

    def forward(self, ids):
        w = self.embed.row_sparse_data(ids) if self.sparse else self.embed.data()
        e = mx.nd.Embedding(
            ids, w, input_dim=self.rows, output_dim=self.dim, sparse_grad=self.sparse
        )
        return self.head(mx.nd.mean(e, axis=1))


def _loopback_bytes():
    """Bytes the loopback interface has carried (every byte a job on 127.0.0.1 sends)."""
    for line in open("/proc/net/dev").read().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])
    raise RuntimeError("no loopback interface in /proc/net/dev")


def _stats(kv):
    stats = getattr(kv, "_server_stats", None)
    return stats() if stats is not None else None


def main():
    mode, rows, dim, batch, per, steps, warmup = sys.argv[1:8]
    rows, dim, batch, per, steps, warmup = map(int, (rows, dim, batch, per, steps, warmup))
    kv = mx.kv.create("dist_sync")
    mx.random.seed(7)
    net = Model(rows, dim, mode == "sparse", prefix="model_")
    net.initialize(ctx=mx.cpu())
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.0}, kvstore=kv
    )
    loss_fn = gluon.loss.SigmoidBinaryCrossEntropyLoss()
    rng = np.random.RandomState(100 + kv.rank)
    batches = [
        (
            mx.nd.array(rng.randint(0, rows, size=(batch, per)), dtype="int64"),
            mx.nd.array(rng.randint(0, 2, size=(batch, 1))),
        )
        for _ in range(4)
    ]

    def step(i):
        ids, label = batches[i % len(batches)]
        with mx.autograd.record():
            loss = loss_fn(net(ids), label).mean()
        loss.backward()
        trainer.step(1)  # the loss is a mean (MXNet's dist Trainer keeps rescale_grad fixed)
        return loss

    debug = os.environ.get("SIDE_DEBUG")
    for i in range(warmup):
        step(i).asnumpy()
        if debug:
            print("warm-up step", i, file=sys.stderr, flush=True)
    kv._barrier()
    before = _stats(kv)
    lo0 = _loopback_bytes()
    t0 = time.perf_counter()
    for i in range(steps):
        last = step(i)
    last.asnumpy()
    mx.nd.waitall()
    elapsed = time.perf_counter() - t0
    kv._barrier()
    lo1 = _loopback_bytes()
    after = _stats(kv)
    out = {
        "lib": os.environ.get("BENCH_LIB", "mxrs"),
        "mode": mode,
        "rank": kv.rank,
        "samples_per_s": batch * steps / elapsed,
        "step_s": elapsed / steps,
        "steps": steps,
        "loss": float(last.asscalar()),
        "loopback_bytes_per_step": (lo1 - lo0) / steps,
    }
    if before is not None:
        out["server_before"], out["server_after"] = before, after
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
