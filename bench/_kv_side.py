"""One worker of the side-by-side KVStore benchmark (started by ``bench/kvstore_mxnet.py``).

The same program runs under mxrs and under Apache MXNet 1.9.1: ``BENCH_LIB`` names the module
to import as ``mx``. Usage::

    python bench/_kv_side.py RUNS ROUNDS [WARMUP]

RUNS is a comma-separated list of ``BYTES`` or ``BYTESxKEYS`` (float32 arrays of BYTES each,
KEYS distinct int keys per run); ROUNDS is one count per run, or one count for all runs.

Each round is ``kv.push(keys, vals)`` with every value ``rank + 1``, then
``kv.pull(keys, out=outs)``, then ``mx.nd.waitall()``, timed with ``perf_counter``. Before each
round (untimed) ``vals`` are copied back to ``rank + 1``: MXNet 1.9.1 pulls a key that was pushed
from one CPU array into that array itself (its worker-side buffer for the key is the pushed
array), so without the reset its pushed values grow W-fold per round.

dist_sync with no optimizer: the servers store the sum of the W pushes, so every pulled element
must be W(W+1)/2. Element 0 of the first key is checked after every round (outside the timing)
and every key's whole array after the last round; a mismatch exits non-zero.

Prints one JSON line per run: ``run``, ``rank``, ``workers``, ``rounds``, ``secs`` (sum of the
timed rounds), ``gbps`` (GB/s per worker counting pushed plus pulled bytes), ``kops`` (keys
pushed and pulled per second), ``p50`` / ``p99`` (round latency in ms) and ``wall`` (seconds for
the whole run: init, warm-up, resets, checks and barriers included).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

import numpy as np

mx = importlib.import_module(os.environ["BENCH_LIB"])


def parse_run(run: str) -> tuple[int, int]:
    """``"4096x1000"`` -> (4096 bytes, 1000 keys); ``"4096"`` -> (4096, 1)."""
    size, _, count = run.partition("x")
    return int(size), int(count or 1)


def first_element(arr) -> float:
    """Element 0 of a 1-D NDArray, copied to the host."""
    return float(arr[0:1].asnumpy()[0])


def bench_run(kv, run: str, rounds: int, warmup: int, base: int) -> dict:
    """Time ``rounds`` push-then-pull rounds over keys ``base ...``; returns the JSON record."""
    start = time.perf_counter()
    nbytes, nkeys = parse_run(run)
    n = nbytes // 4
    keys = list(range(base, base + nkeys))
    expect = kv.num_workers * (kv.num_workers + 1) / 2
    kv.init(keys, [mx.nd.zeros((n,)) for _ in keys])
    src = mx.nd.ones((n,)) * (kv.rank + 1)
    vals = [mx.nd.zeros((n,)) for _ in keys]
    outs = [mx.nd.zeros((n,)) for _ in keys]
    mx.nd.waitall()

    def check(k: int, got: float) -> None:
        if got != expect:
            sys.exit(f"{run} rank {kv.rank}: key {k} pulled {got}, expected {expect}")

    def reset() -> None:
        for v in vals:
            src.copyto(v)
        mx.nd.waitall()

    for _ in range(warmup):
        reset()
        kv.push(keys, vals)
        kv.pull(keys, out=outs)
        mx.nd.waitall()
    check(keys[0], first_element(outs[0]))
    kv._barrier()
    times = []
    for _ in range(rounds):
        reset()
        t = time.perf_counter()
        kv.push(keys, vals)
        kv.pull(keys, out=outs)
        mx.nd.waitall()
        times.append(time.perf_counter() - t)
        check(keys[0], first_element(outs[0]))
    kv._barrier()
    for k, out in zip(keys, outs, strict=True):
        got = out.asnumpy()
        if (got != expect).any():
            check(k, float(got[got != expect][0]))
    secs = sum(times)
    ms = np.array(times) * 1e3
    return {
        "run": run,
        "rank": kv.rank,
        "workers": kv.num_workers,
        "rounds": rounds,
        "secs": secs,
        "gbps": 2 * nbytes * nkeys * rounds / secs / 1e9,
        "kops": nkeys * rounds / secs,
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "wall": time.perf_counter() - start,
    }


def main(argv: list[str]) -> None:
    """Run every run named in ``argv`` (see the module docstring) and print its JSON line."""
    runs = argv[0].split(",")
    rounds = [int(r) for r in argv[1].split(",")]
    if len(rounds) == 1:
        rounds *= len(runs)
    warmup = int(argv[2]) if len(argv) > 2 else 3
    kv = mx.kv.create("dist_sync")
    base = 0
    for run, n_rounds in zip(runs, rounds, strict=True):
        print(json.dumps(bench_run(kv, run, n_rounds, warmup, base)), flush=True)
        base += parse_run(run)[1]


if __name__ == "__main__":
    main(sys.argv[1:])
