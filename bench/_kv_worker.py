"""One worker of the Python KVStore benchmark (started by ``bench/kvstore_py.py``).

Times ``kv.pushpull`` rounds from Python for each run (``BYTES`` or ``BYTESxKEYS``) and prints one
JSON line per run: GB/s per worker counting push and pull bytes, as ps-bench does.
"""

import json
import sys
import time

import mxrs as mx


def main(runs, rounds):
    kv = mx.kv.create("dist_sync")
    base = 0
    for run, n_rounds in zip(runs, rounds, strict=True):
        size, _, count = run.partition("x")
        nbytes, nkeys = int(size), int(count or 1)
        keys = list(range(base, base + nkeys))
        base += nkeys
        vals = [mx.nd.ones((nbytes // 4,)) for _ in keys]
        outs = [mx.nd.zeros((nbytes // 4,)) for _ in keys]
        kv.init(keys, vals)
        for _ in range(3):
            kv.pushpull(keys, vals, out=outs)
        mx.nd.waitall()
        kv.barrier()
        t = time.perf_counter()
        for _ in range(n_rounds):
            kv.pushpull(keys, vals, out=outs)
        mx.nd.waitall()
        secs = time.perf_counter() - t
        kv.barrier()
        print(
            json.dumps(
                {
                    "run": run,
                    "rank": kv.rank,
                    "secs": secs,
                    "gbps": 2 * nbytes * nkeys * n_rounds / secs / 1e9,
                    "kops": nkeys * n_rounds / secs,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1].split(","), [int(r) for r in sys.argv[2].split(",")])
