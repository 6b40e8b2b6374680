"""``kv.stats()``: the keys, bytes and waits of a worker's pushes and pulls."""

import json

import mxrs as mx
import pytest
from jobs import launch

# float32 (3, 4) is 48 bytes, float32 (10,) is 40
ROUNDS = """
import json, os, sys
import mxrs as mx

kv = mx.kv.create(sys.argv[1])
a, b = mx.nd.ones((3, 4)), mx.nd.ones((10,))
kv.init([0, 1], [a, b])
start = kv.stats()
kv.push(0, a)
kv.push(0, [a, a])                      # one key: its values go as one sum
o0, o1 = mx.nd.zeros((3, 4)), mx.nd.zeros((10,))
kv.pull(0, out=o0)
kv.pushpull([0, 1], [a, b], out=[o0, o1])
kv.pull([0, 1], out=[o0, o1])
mx.nd.waitall()
dense = kv.stats()
# a row key: 2 rows of 4 float32 (32 bytes) each way, ids aside
kv.init(2, mx.nd.ones((6, 4)).tostype("row_sparse"))
rows = mx.nd.sparse.row_sparse_array((mx.nd.ones((2, 4)), mx.nd.array([1, 4])), shape=(6, 4))
kv.push(2, rows)
out = mx.nd.sparse.zeros("row_sparse", (6, 4))
kv.row_sparse_pull(2, out=out, row_ids=mx.nd.array([0, 2]))
mx.nd.waitall()
with open(f"stats{os.environ.get('DMLC_WORKER_ID', 0)}.json", "w") as f:
    json.dump([start, dense, kv.stats()], f)
"""


def test_a_new_store_counts_nothing():
    assert mx.kv.create("local").stats() == {
        "pushes": 0,
        "pulls": 0,
        "push_bytes": 0,
        "pull_bytes": 0,
        "wait_seconds": 0.0,
    }


@pytest.mark.parametrize("name", ["local", "device"])
def test_a_single_process_store_counts_the_arrays_it_is_given_and_writes(name):
    kv = mx.kv.create(name)
    a, b = mx.nd.ones((3, 4)), mx.nd.ones((10,))
    kv.init([0, 1], [a, b])
    kv.push(0, a)
    kv.push(0, [a, a])  # both arrays are read
    kv.pull(0, out=[mx.nd.zeros((3, 4)), mx.nd.zeros((3, 4))])  # both are written
    kv.pushpull([0, 1], [a, b])
    assert kv.stats() == {
        "pushes": 4,
        "pulls": 3,
        "push_bytes": 48 + 96 + 48 + 40,
        "pull_bytes": 96 + 48 + 40,
        "wait_seconds": 0.0,
    }


def test_a_row_sparse_pull_counts_the_rows_it_writes():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((6, 4)))
    out = mx.nd.sparse.zeros("row_sparse", (6, 4))
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([0, 2, 2]))
    assert kv.stats()["pulls"] == 1 and kv.stats()["pull_bytes"] == 2 * 4 * 4


def test_a_dist_sync_worker_counts_what_it_sent_and_received(tmp_path):
    res = launch(tmp_path, ROUNDS, n=2, s=2, args=["dist_sync"])
    assert res.returncode == 0, res.stderr
    for rank in (0, 1):
        start, end, rows = json.loads((tmp_path / f"stats{rank}.json").read_text())
        assert start == {
            "pushes": 0,
            "pulls": 0,
            "push_bytes": 0,
            "pull_bytes": 0,
            "wait_seconds": 0.0,
        }  # init is not a push
        wait = end.pop("wait_seconds")
        assert end == {
            "pushes": 4,
            "pulls": 5,
            "push_bytes": 48 + 48 + (48 + 40),
            "pull_bytes": 48 + (48 + 40) + (48 + 40),
        }
        assert 0 < wait < 60
        assert rows["wait_seconds"] > wait
        assert rows["pushes"] == 5 and rows["push_bytes"] == end["push_bytes"] + 32
        assert rows["pulls"] == 6 and rows["pull_bytes"] == end["pull_bytes"] + 32
