"""Sparse NDArrays (row_sparse and CSR): the same script under mxrs and Apache MXNet 1.9.1 gives
the same values and storage types; bad components are refused with messages naming them."""

import mxnet_ref
import mxrs
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

SCRIPT = """
nd = mx.nd
sp = mx.nd.sparse
d = inputs["dense"]          # 6 x 4 with zero rows 1 and 4
w = nd.array(inputs["w"])    # 4 x 3
stypes = {}

def keep(name, a):
    arrays[name] = a.asnumpy()
    stypes[name] = a.stype

rsp = sp.row_sparse_array((inputs["rows"], inputs["row_ids"]), shape=(6, 4))
csr = sp.csr_matrix((inputs["csr_data"], inputs["csr_indices"], inputs["csr_indptr"]),
                    shape=(3, 4))
coo = sp.csr_matrix((inputs["coo_data"], (inputs["coo_row"], inputs["coo_col"])), shape=(3, 4))
dr = nd.array(d).tostype("row_sparse")
dc = nd.array(d).tostype("csr")
for name, a in [("rsp", rsp), ("csr", csr), ("coo", coo), ("dr", dr), ("dc", dc)]:
    keep(name, a)
arrays["dr_indices"] = dr.indices.asnumpy()
arrays["dr_data"] = dr.data.asnumpy()
arrays["dc_indices"] = dc.indices.asnumpy()
arrays["dc_indptr"] = dc.indptr.asnumpy()
arrays["dc_data"] = dc.data.asnumpy()
keep("scaled", dr * 2)
keep("divided", dr / 4)
keep("neg", -dr)
keep("sqrt", nd.sqrt(nd.abs(dr)))
keep("square", nd.square(dc))
keep("plus", dr + rsp)
keep("minus", dr - rsp)
keep("times", dr * rsp)
keep("times_dense", dr * nd.array(d + 1))
keep("csr_plus", dc + dc)
keep("csr_scaled", dc * 3)
keep("exp", nd.exp(dr))
keep("dot", nd.dot(dc, nd.array(np.ones((4, 3), np.float32))))
keep("dot_t", nd.dot(dc, nd.array(np.ones((6, 2), np.float32)), transpose_a=True))
keep("sp_dot", sp.dot(csr, w))
keep("retain", sp.retain(dr, nd.array([0, 3, 4], dtype="int64")))
keep("add_n", sp.add_n(dr, rsp, dr))
keep("sum0", nd.sum(dr, axis=0))
keep("sum1", nd.sum(dc, axis=1))
keep("slice", dc[1:5])
keep("row", dc[2])
keep("zeros_rsp", nd.zeros((3, 2), stype="row_sparse"))
keep("zeros_csr", sp.zeros("csr", (2, 3)))
keep("zeros_like", nd.zeros_like(dr))
keep("astype", dr.astype("float64"))
keep("copy", dr.copy())
keep("to_default", dr.tostype("default"))
stypes["astype_dtype"] = np.dtype(dr.astype("float64").dtype).name
target = nd.zeros((6, 4), stype="row_sparse")
dr.copyto(target)
keep("copied_into", target)
into_dense = nd.zeros((6, 4))
dc.copyto(into_dense)
keep("csr_into_dense", into_dense)
assigned = nd.zeros((6, 4), stype="row_sparse")
assigned[:] = nd.array(d) * 5
keep("assigned", assigned)
inplace = dr.copy()
inplace *= 3
keep("inplace", inplace)

# autograd: sparse gradients
table = nd.array(inputs["table"])
table.attach_grad(stype="row_sparse")
ids = nd.array([[1, 5], [5, 7]])
with mx.autograd.record():
    y = nd.Embedding(ids, table, input_dim=10, output_dim=3, sparse_grad=True)
    z = (y * nd.array(inputs["head"])).sum()
z.backward()
keep("emb_grad", table.grad)
arrays["emb_grad_rows"] = table.grad.indices.asnumpy()
wv = nd.array(inputs["w"])
wv.attach_grad(stype="row_sparse")
with mx.autograd.record():
    out = nd.dot(csr, wv)
out.backward()
keep("dot_grad", wv.grad)
x = nd.array(d).tostype("row_sparse")
x.attach_grad()
with mx.autograd.record():
    q = x * x + 1
q.backward()
keep("x_grad", x.grad)
result = stypes
"""


def _inputs():
    rng = np.random.RandomState(0)
    dense = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    dense[[1, 4]] = 0
    dense[2, 1] = 0
    return {
        "dense": dense,
        "w": rng.uniform(-1, 1, (4, 3)).astype(np.float32),
        "rows": rng.uniform(-1, 1, (3, 4)).astype(np.float32),
        "row_ids": np.array([0, 2, 5], np.int64),
        "csr_data": np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        "csr_indices": np.array([0, 2, 1, 3], np.int64),
        "csr_indptr": np.array([0, 2, 2, 4], np.int64),
        "coo_data": np.array([5.0, 6.0, 7.0], np.float32),
        "coo_row": np.array([0, 2, 2], np.int64),
        "coo_col": np.array([3, 0, 1], np.int64),
        "table": rng.uniform(-1, 1, (10, 3)).astype(np.float32),
        "head": rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32),
    }


def _run_mxrs(inputs):
    scope = {"mx": mxrs, "np": np, "inputs": inputs, "arrays": {}, "result": None}
    exec(SCRIPT, scope)  # noqa: S102  (the test's own script, run as the reference runs it)
    return scope["result"], scope["arrays"]


def test_sparse_arrays_match_mxnet(tmp_path):
    inputs = _inputs()
    ref_stypes, ref = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + SCRIPT, **inputs)
    stypes, got = _run_mxrs(inputs)
    assert stypes == ref_stypes
    assert set(got) == set(ref)
    for name in ref:
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-6, atol=1e-6, err_msg=name)
    # the embedding gradient holds exactly the rows looked up
    assert got["emb_grad_rows"].tolist() == [1, 5, 7]


def test_component_errors_name_what_is_wrong():
    sp = mx.nd.sparse
    with pytest.raises(MXNetError, match="row_sparse index 7 is out of range for an array of 4"):
        sp.row_sparse_array((np.ones((1, 2)), [7]), shape=(4, 2))
    with pytest.raises(MXNetError, match="repeated row ids"):
        sp.row_sparse_array((np.ones((2, 2)), [1, 1]), shape=(4, 2))
    with pytest.raises(MXNetError, match="one row per index"):
        sp.row_sparse_array((np.ones((3, 2)), [0, 1]), shape=(4, 2))
    with pytest.raises(MXNetError, match="indptr must hold rows \\+ 1 = 3 offsets"):
        sp.csr_matrix(([1.0], [0], [0, 1]), shape=(2, 2))
    with pytest.raises(MXNetError, match="column index 5 is out of range for 2 columns"):
        sp.csr_matrix(([1.0], [5], [0, 1, 1]), shape=(2, 2))
    with pytest.raises(MXNetError, match="indptr must not decrease"):
        sp.csr_matrix(([1.0, 2.0], [0, 1], [0, 2, 1, 2]), shape=(3, 2))
    with pytest.raises(MXNetError, match="2-dimensional"):
        mx.nd.ones((2, 2, 2)).tostype("csr")
    with pytest.raises(MXNetError, match="from row_sparse to csr is not supported"):
        mx.nd.ones((2, 2)).tostype("row_sparse").tostype("csr")
    with pytest.raises(MXNetError, match="unknown storage type 'coo'"):
        mx.nd.zeros((2, 2), stype="coo")
    rsp = mx.nd.ones((3, 2)).tostype("row_sparse")
    with pytest.raises(MXNetError, match="only supports \\[:\\]"):
        rsp[1]
    with pytest.raises(MXNetError, match="reshape is not supported for storage type row_sparse"):
        rsp.reshape((6,))


def test_unsorted_row_ids_are_sorted_with_their_rows():
    rsp = mx.nd.sparse.row_sparse_array(([[1.0, 1.0], [3.0, 3.0]], [3, 1]), shape=(4, 2))
    assert rsp.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(rsp.asnumpy(), [[0, 0], [3, 3], [0, 0], [1, 1]])


def test_sparse_arrays_pickle_and_keep_their_type():
    import pickle

    rsp = mx.nd.array([[0, 0], [1, 2]]).tostype("row_sparse")
    csr = mx.nd.array([[0, 3], [1, 0]]).tostype("csr")
    for a in (rsp, csr):
        b = pickle.loads(pickle.dumps(a))
        assert b.stype == a.stype
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_scipy_interop():
    import scipy.sparse as sps

    m = sps.random(5, 7, density=0.3, format="csr", random_state=1, dtype=np.float32)
    a = mx.nd.sparse.array(m)
    assert a.stype == "csr"
    np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    np.testing.assert_array_equal(a.asscipy().toarray(), m.toarray())
