"""row_sparse values on dist_sync and dist_async (2 workers × 2 servers of real processes):
only the rows pushed and asked for cross the wire, the servers sum a round's rows (replacing the
table without an optimizer, updating only those rows with one), ``row_sparse_pull`` returns the
rows asked for, and bad row ids are refused with the table unchanged."""

import json

import numpy as np
from jobs import launch

ROWS, DIM = 40, 4

WORKER = """
import json, sys
import numpy as np
import mxrs as mx
from mxrs.base import MXNetError

mode = sys.argv[1]
kv = mx.kv.create(mode)
rank = kv.rank
rows, dim = 40, 4
start = np.arange(rows * dim, dtype=np.float32).reshape(rows, dim) / 100
kv.init("table", mx.nd.array(start).tostype("row_sparse"))
kv.init("dense", mx.nd.array(start))
out = {}

def rsp(ids, scale):
    vals = np.ones((len(ids), dim), np.float32) * scale
    return mx.nd.sparse.row_sparse_array((vals, ids), shape=(rows, dim))

def pulled(key, ids):
    o = mx.nd.zeros((rows, dim), stype="row_sparse")
    kv.row_sparse_pull(key, out=o, row_ids=mx.nd.array(ids))
    return o

# 1. no optimizer: a round's rows are summed and replace the table (absent rows become 0)
mine = [1, 5, 30] if rank == 0 else [5, 22, 39]
if mode == "dist_sync":
    kv.push("table", rsp(mine, rank + 1))
    got = pulled("table", [39, 5, 5, 1, 0])
    out["replace_rows"] = got.indices.asnumpy().tolist()
    out["replace"] = got.asnumpy().tolist()
    full = mx.nd.zeros((rows, dim), stype="row_sparse")
    kv.pull("table", out=full, ignore_sparse=False)
    out["replace_full"] = full.asnumpy().tolist()
    # a dense key takes the same row_sparse push (sent dense)
    kv.push("dense", rsp(mine, rank + 1))
    dense = mx.nd.zeros((rows, dim))
    kv.pull("dense", out=dense)
    out["dense_key"] = dense.asnumpy().tolist()
    kv.barrier()
    before = kv._server_stats()
    kv.push("table", rsp([2, 3] if rank == 0 else [3], 1.0))
    kv.barrier()
    after = kv._server_stats()
    out["payload"] = sum(a["payload_bytes"] - b["payload_bytes"] for a, b in zip(after, before))
    kv.barrier()

# 2. with an optimizer: lazy SGD changes only the rows pushed
kv2_key = "emb"
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9, wd=0.1))
kv.init(kv2_key, mx.nd.array(start).tostype("row_sparse"))
for step in range(3):
    ids = [4, 11, 25] if (rank + step) % 2 == 0 else [11, 33]
    kv.push(kv2_key, rsp(ids, 0.1 * (step + 1)))
got = pulled(kv2_key, list(range(rows)))
out["sgd"] = got.asnumpy().tolist()

# 3. bad row ids: a clear error, nothing written
o = mx.nd.zeros((rows, dim), stype="row_sparse")
try:
    kv.row_sparse_pull(kv2_key, out=o, row_ids=mx.nd.array([3, rows + 2]))
except MXNetError as e:
    out["bad_pull"] = str(e)
out["bad_pull_rows"] = o.indices.asnumpy().tolist()
kv.barrier()
print("RESULT " + json.dumps(out), flush=True)
"""


def _results(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = [json.loads(line.split("RESULT ", 1)[1]) for line in proc.stdout.splitlines()
             if "RESULT " in line]  # fmt: skip
    assert len(found) == 2, proc.stdout[-2000:]
    return found


def _start():
    return np.arange(ROWS * DIM, dtype=np.float32).reshape(ROWS, DIM) / 100


def _lazy_sgd(workers_ids):
    """MXNet's lazy sgd_mom_update on the summed rows of each round (lr .5, mom .9, wd .1)."""
    w, mom = _start(), np.zeros((ROWS, DIM), np.float32)
    for step in range(3):
        g = np.zeros((ROWS, DIM), np.float32)
        for rank in range(2):
            ids = [4, 11, 25] if (rank + step) % 2 == 0 else [11, 33]
            g[ids] += np.float32(0.1 * (step + 1))
        rows = sorted({r for rank in range(2)
                       for r in ([4, 11, 25] if (rank + step) % 2 == 0 else [11, 33])})  # fmt: skip
        mom[rows] = 0.9 * mom[rows] - 0.5 * 0.1 * w[rows] - 0.5 * g[rows]
        w[rows] += mom[rows]
    return w


def test_dist_sync_row_sparse_push_pull(tmp_path):
    proc = launch(
        tmp_path, WORKER, args=["dist_sync"], env=["MXNET_KVSTORE_BIGARRAY_BOUND=16"]
    )  # fmt: skip  (split over 2 servers)
    for r in _results(proc):
        total = np.zeros((ROWS, DIM), np.float32)
        total[[1, 5, 30]] += 1
        total[[5, 22, 39]] += 2
        assert r["replace_rows"] == [0, 1, 5, 39]
        np.testing.assert_array_equal(np.array(r["replace"])[[0, 1, 5, 39]], total[[0, 1, 5, 39]])
        np.testing.assert_array_equal(r["replace_full"], total)
        np.testing.assert_array_equal(r["dense_key"], total)
        # 3 rows of 4 float32 plus their 8-byte ids, and the empty entry of the other server
        assert r["payload"] <= 3 * (DIM * 4 + 8) + 4 * 8, r["payload"]
        np.testing.assert_allclose(r["sgd"], _lazy_sgd(None), rtol=1e-5, atol=1e-6)
        untouched = [i for i in range(ROWS) if i not in (4, 11, 25, 33)]
        np.testing.assert_array_equal(np.array(r["sgd"])[untouched], _start()[untouched])
        assert "row id 42 is out of range for 40 rows" in r["bad_pull"]
        assert r["bad_pull_rows"] == []


def test_dist_async_row_sparse_updates_only_pushed_rows(tmp_path):
    proc = launch(tmp_path, WORKER, args=["dist_async"])
    for r in _results(proc):
        got = np.array(r["sgd"])
        untouched = [i for i in range(ROWS) if i not in (4, 11, 25, 33)]
        np.testing.assert_array_equal(got[untouched], _start()[untouched])
        assert not np.allclose(got[[4, 11, 25, 33]], _start()[[4, 11, 25, 33]])
