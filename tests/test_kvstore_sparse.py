"""row_sparse values on the single-process stores ('local', 'device'): pushes summed sparsely,
``row_sparse_pull`` of some rows, ``pull`` skipping sparse outputs, an optimizer's lazy update,
and errors that write nothing; the same script under mxrs and Apache MXNet 1.9.1."""

import mxnet_ref
import mxrs
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

SCRIPT = """
sp = mx.nd.sparse
stypes = {}
shape = (8, 3)
for kind in ("local", "device"):
    kv = mx.kv.create(kind)
    kv.init("w", mx.nd.array(inputs["w"]).tostype("row_sparse"))
    kv.init("d", mx.nd.array(inputs["w"]))
    devs = [mx.cpu(0), mx.cpu(1)]
    g0 = sp.row_sparse_array((inputs["g0"], [1, 4]), shape=shape, ctx=devs[0])
    g1 = sp.row_sparse_array((inputs["g1"], [4, 6, 7]), shape=shape, ctx=devs[1])
    kv.push("w", [g0, g1])
    outs = [mx.nd.zeros(shape, ctx=d, stype="row_sparse") for d in devs]
    kv.row_sparse_pull("w", out=outs, row_ids=[mx.nd.array([7, 1, 1, 0]), mx.nd.array([4])])
    for i, o in enumerate(outs):
        arrays[f"{kind}_pulled{i}"] = o.asnumpy()
        arrays[f"{kind}_pulled{i}_rows"] = o.indices.asnumpy()
        stypes[f"{kind}_pulled{i}"] = o.stype
    # pull skips sparse outputs by default, fills them with ignore_sparse=False
    skipped = mx.nd.ones(shape).tostype("row_sparse")
    kv.pull("w", out=skipped)
    arrays[f"{kind}_skipped"] = skipped.asnumpy()
    full = mx.nd.zeros(shape, stype="row_sparse")
    kv.pull("w", out=full, ignore_sparse=False)
    arrays[f"{kind}_full"] = full.asnumpy()
    # a dense key takes a row_sparse push (the sum replaces its value) and row_sparse_pull
    kv.push("d", [g0, g1])
    dense_out = mx.nd.zeros(shape)
    kv.pull("d", out=dense_out)
    arrays[f"{kind}_dense_key"] = dense_out.asnumpy()
    # an optimizer updates only the rows pushed (lazy SGD with momentum and wd)
    kv2 = mx.kv.create(kind)
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9, wd=0.1))
    kv2.init(3, mx.nd.array(inputs["w"]).tostype("row_sparse"))
    for step in range(2):
        kv2.push(3, [g0, g1] if step == 0 else [g1])
    got = mx.nd.zeros(shape, stype="row_sparse")
    kv2.row_sparse_pull(3, out=got, row_ids=mx.nd.arange(0, 8))
    arrays[f"{kind}_sgd"] = got.asnumpy()
result = stypes
"""


def _inputs():
    rng = np.random.RandomState(3)
    return {
        "w": rng.uniform(-1, 1, (8, 3)).astype(np.float32),
        "g0": rng.uniform(-1, 1, (2, 3)).astype(np.float32),
        "g1": rng.uniform(-1, 1, (3, 3)).astype(np.float32),
    }


def test_row_sparse_on_local_stores_matches_mxnet(tmp_path):
    inputs = _inputs()
    ref_stypes, ref = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + SCRIPT, **inputs)
    scope = {"mx": mxrs, "np": np, "inputs": inputs, "arrays": {}, "result": None}
    exec(SCRIPT, scope)  # noqa: S102  (the test's own script, as the reference runs it)
    got = scope["arrays"]
    assert scope["result"] == ref_stypes
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-6, atol=1e-6, err_msg=name)
    # the rows asked for, sorted and unique, and nothing else
    assert got["local_pulled0_rows"].tolist() == [0, 1, 7]
    assert got["local_pulled1_rows"].tolist() == [4]
    # rows no push touched kept their value under the optimizer
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(got["local_sgd"][untouched], inputs["w"][untouched])


def test_row_sparse_pull_errors_write_nothing():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((4, 2)).tostype("row_sparse"))
    first = mx.nd.zeros((4, 2), stype="row_sparse")
    second = mx.nd.zeros((4, 2), stype="row_sparse")
    with pytest.raises(MXNetError, match="key 'w': row id 9 is out of range for 4 rows"):
        kv.row_sparse_pull("w", out=[first, second], row_ids=[mx.nd.array([0]), mx.nd.array([9])])
    assert first.indices.asnumpy().size == 0 and second.indices.asnumpy().size == 0
    with pytest.raises(MXNetError, match="must be row_sparse, not default"):
        kv.row_sparse_pull("w", out=mx.nd.zeros((4, 2)), row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="out and row_ids are both required"):
        kv.row_sparse_pull("w", out=first)
    with pytest.raises(MXNetError, match="was never initialised"):
        kv.row_sparse_pull("v", out=first, row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="this store holds str keys"):
        kv.push(3, mx.nd.ones((4, 2)))
