"""One measurement of ``bench/rnn.py``: a recurrent model's training step on the CPU under
mxrs or Apache MXNet 1.9.1 (``BENCH_LIB``), as one JSON line on stdout.

Usage: ``BENCH_LIB=mxrs|mxnet python _rnn_side.py --model lm|lstm|gru [--hybridize]``

``lm`` is the word language model of MXNet's Gluon example (embedding, a 2-layer LSTM,
a dense decoder over the vocabulary; SGD with global-norm clipping); ``lstm`` and ``gru`` are
the fused layers alone (2 layers, bidirectional), forward and backward of a sum of squares.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource

import numpy as np
from _compute_side import kernels, timed


def _lm(mx, args):
    gluon = mx.gluon

    class Model(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.encoder = gluon.nn.Embedding(args.vocab, args.hidden)
                self.rnn = gluon.rnn.LSTM(args.hidden, 2, dropout=0.2, input_size=args.hidden)
                self.decoder = gluon.nn.Dense(args.vocab, in_units=args.hidden)

        def hybrid_forward(self, F, x, h, c):
            out, (h, c) = self.rnn(self.encoder(x), [h, c])
            return self.decoder(out.reshape((-1, args.hidden))), h, c

    net = Model()
    net.initialize(mx.init.Xavier())
    if args.hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.integers(0, args.vocab, (args.bptt, args.batch)))
    y = mx.nd.array(rng.integers(0, args.vocab, (args.bptt * args.batch,)))
    state = [mx.nd.zeros((2, args.batch, args.hidden)) for _ in range(2)]
    params = list(net.collect_params().values())

    def step():
        with mx.autograd.record():
            out, h, c = net(x, *state)
            loss = loss_fn(out, y).mean()
        loss.backward()
        gluon.utils.clip_global_norm([p.grad() for p in params], 0.25)
        trainer.step(1)
        return loss

    return step, args.bptt * args.batch  # tokens per step


def _layer(mx, args):
    cls = mx.gluon.rnn.LSTM if args.model == "lstm" else mx.gluon.rnn.GRU
    layer = cls(args.hidden, 2, bidirectional=True, input_size=args.hidden)
    layer.initialize(mx.init.Xavier())
    if args.hybridize:
        layer.hybridize()
    x = mx.nd.array(np.random.default_rng(0).standard_normal((args.bptt, args.batch, args.hidden)))
    x.attach_grad()

    def step():
        with mx.autograd.record():
            out = layer(x)
            loss = (out * out).sum()
        loss.backward()
        return loss

    return step, args.bptt * args.batch


def main(argv=None):
    """Parse the options, build, warm up, time the steps and print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("lm", "lstm", "gru"), required=True)
    ap.add_argument("--hybridize", action="store_true")
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    args = ap.parse_args(argv)
    lib = os.environ.get("BENCH_LIB", "mxrs")
    mx = importlib.import_module(lib)
    mx.random.seed(0)
    step, tokens = (_lm if args.model == "lm" else _layer)(mx, args)
    out, secs = timed(mx, step, args.warmup, args.steps)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "lib": lib,
        "tokens_per_s": tokens * args.steps / secs,
        "secs": secs,
        "loss": float(out.asnumpy().reshape(-1)[0]),
        "peak_rss_mb": peak,
        "kernels": kernels(mx),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
