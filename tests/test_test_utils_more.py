"""mxrs.test_utils beyond comparisons: tolerances, NumPy references, random helpers, matrices,
numeric gradients, consistency and speed checks, data helpers, platform checks; numbers
against MXNet 1.9.1's own helpers run on the same inputs and NumPy random state."""

import ast
import bz2
import gzip
import io
import os
import struct
import types
import zipfile

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
import requests
from mxrs import test_utils as tu

MXNET_TEST_UTILS = (
    mxnet_ref.ROOT / "bench/.venv-mxnet/lib/python3.11/site-packages/mxnet/test_utils.py"
)

# Runs under MXNet 1.9.1 and under mxrs alike (``mx`` is either), filling ``arrays``.
_SAME_DRAWS_BODY = """
tu = mx.test_utils
x, y, z = inputs["x"], inputs["y"], inputs["z"]
np.random.seed(7)
arrays["uniform"] = np.stack(tu.random_uniform_arrays((2, 3), (2, 3), low=-2.0, high=3.0,
                                                      dtype=np.float64))
arrays["sample"] = np.array(tu.random_sample(list(range(10)), 4))
arrays["coord"] = np.array(tu.rand_coord_2d(0, 5, 10, 20))
arrays["shapes"] = np.array(tu.rand_shape_2d(3, 4, allow_zero_size=True)
                            + tu.rand_shape_3d(2, 3, 4, True) + tu.rand_shape_nd(3, 5, True))
arrays["randn"] = tu.random_arrays((2, 3))
arrays["each"] = tu.assign_each(x.T, lambda v: v * 2 + 1)
arrays["each_none"] = tu.assign_each(x, None)
arrays["each2"] = tu.assign_each2(x, y, lambda a, b: a * b - 1)
arrays["reduce_sum"] = tu.np_reduce(z, (0, 2), True, np.sum)
arrays["reduce_max"] = tu.np_reduce(z, None, False, np.max)
arrays["reduce_int"] = tu.np_reduce(z, 1, True, np.prod)
arrays["collapse"] = tu.collapse_sum_like(z, (3, 1))
arrays["collapse_lead"] = tu.collapse_sum_like(z, (4,))
arrays["collapse_empty"] = tu.collapse_sum_like(np.ones((2, 0, 3)), (0, 3))
np.random.seed(3)
arrays["eig2d"] = tu.new_matrix_with_real_eigvals_2d(4)
arrays["eignd"] = tu.new_matrix_with_real_eigvals_nd((2, 3, 3))
arrays["ortho"] = tu.new_orthonormal_matrix_2d(4)
arrays["sym2d"] = tu.new_sym_matrix_with_real_eigvals_2d(4)
arrays["symnd"] = tu.new_sym_matrix_with_real_eigvals_nd((2, 2, 3, 3))
arrays["tensor2d"] = tu.create_2d_tensor(3, 4).asnumpy()
arrays["vector"] = tu.create_vector(5, dtype=np.int32).asnumpy()
arrays["eye"] = tu.get_identity_mat(3).asnumpy()
arrays["eye_batch"] = tu.get_identity_mat_batch(2).asnumpy()
"""

# Finite differences and a multi-dtype consistency run: float32 arithmetic may round apart.
_COMPUTED_BODY = """
tu = mx.test_utils
a0, b0 = inputs["a"], inputs["b"]
a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
sym = mx.sym.sin(a) * b + mx.sym.square(a)
for name, dt in (("f32", np.float32), ("f64", np.float64)):
    exe = sym.bind(mx.cpu(), args={"a": mx.nd.array(a0, dtype=dt), "b": mx.nd.array(b0, dtype=dt)})
    grads = tu.numeric_grad(exe, {"a": a0.astype(dt), "b": b0.astype(dt)}, eps=1e-2, dtype=dt)
    arrays["ng_a_" + name], arrays["ng_b_" + name] = grads["a"], grads["b"]
fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
np.random.seed(5)
ctx_list = [{"ctx": mx.cpu(0), "data": (2, 4), "type_dict": {"data": np.float64}},
            {"ctx": mx.cpu(0), "data": (2, 4), "type_dict": {"data": np.float32}}]
gt = tu.check_consistency(fc, ctx_list)
for key in ("fc_output", "data", "fc_weight", "fc_bias"):
    arrays["cc_" + key] = gt[key].asnumpy()
"""


@pytest.fixture(scope="module")
def draws_inputs():
    rng = np.random.default_rng(11)
    return {
        "x": rng.normal(size=(3, 4)),
        "y": rng.normal(size=(3, 4)),
        "z": rng.uniform(0.5, 1.5, size=(2, 3, 4)),
    }


def test_random_and_reference_helpers_draw_and_compute_as_mxnets(tmp_path, draws_inputs):
    want = mxnet_ref.check_body(tmp_path, _SAME_DRAWS_BODY, draws_inputs, rtol=1e-12, atol=1e-12)
    # the matrices have the properties promised
    for m in list(want["eignd"]) + [want["eig2d"]]:
        ev = np.linalg.eigvals(m)
        np.testing.assert_allclose(ev.imag, 0, atol=1e-9)
        assert np.all(np.abs(ev.real) <= 10)
    ortho = want["ortho"]
    np.testing.assert_allclose(ortho @ ortho.T, np.eye(4), atol=1e-12)
    for m in list(want["symnd"].reshape(-1, 3, 3)) + [want["sym2d"]]:
        np.testing.assert_allclose(m, m.T, atol=1e-12)
        assert np.all(np.abs(np.linalg.eigvalsh(m)) <= 10)
    assert want["eignd"].shape == (2, 3, 3) and want["symnd"].shape == (2, 2, 3, 3)


def test_numeric_grad_and_check_consistency_match_mxnet(tmp_path):
    rng = np.random.default_rng(5)
    inputs = {"a": rng.uniform(-1, 1, (2, 3)), "b": rng.uniform(-1, 1, (2, 3))}
    want = mxnet_ref.check_body(tmp_path, _COMPUTED_BODY, inputs, rtol=2e-3, atol=1e-4)
    # and the estimates are close to the true gradient
    a0, b0 = inputs["a"], inputs["b"]
    np.testing.assert_allclose(want["ng_a_f64"], np.cos(a0) * b0 + 2 * a0, rtol=1e-4)
    np.testing.assert_allclose(want["ng_b_f64"], np.sin(a0), rtol=1e-4)


def test_tolerance_tables_and_lookups():
    assert tu.default_dtype() is np.float32
    rtols, atols, eps = tu.default_rtols(), tu.default_atols(), tu.default_numeric_eps()
    assert rtols[np.dtype(np.float16)] == 1e-2 and rtols[np.dtype(np.float64)] == 1e-5
    assert atols[np.dtype(np.float32)] == 1e-3 and atols[np.dtype(np.float64)] == 1e-20
    assert rtols[np.dtype(np.bool_)] == 0 and atols[np.dtype(np.uint64)] == 0
    assert eps == {np.dtype(np.float16): 2**-6, np.dtype(np.float32): 2**-9,
                   np.dtype(np.float64): 2**-14}  # fmt: skip
    f16 = np.ones(2, np.float16)
    assert tu.get_tolerance(f16, None, rtols) == 1e-2
    assert tu.get_tolerance(f16, 0.5, rtols) == 0.5
    assert tu.get_tolerance(f16, {np.dtype(np.float16): 0.3}, rtols) == 0.3
    assert tu.get_tolerance(f16, {np.dtype(np.float32): 0.3}, rtols) == 1e-2
    # the larger of the two data's defaults; numbers count as float64
    assert tu.get_tols(f16, mx.nd.ones(2), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(1.0, np.ones(2, np.int32), None, 0.25) == (1e-5, 0.25)
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20 and tu.get_etol() == 0
    assert tu.get_rtol(None, np.float32) == 1e-4 and tu.get_atol(0.5) == 0.5
    assert tu.get_etol(0.1) == 0.1


def test_assert_almost_equal_takes_dict_tolerances_and_reports_as_mxnet():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = a + np.array([0, 0.02, 0], np.float32)
    with pytest.raises(AssertionError) as e:
        tu.assert_almost_equal(a, b, names=("x", "y"))
    msg = str(e.value)
    assert "exceeds tolerance rtol=1.000000e-04, atol=1.000000e-03 (mismatch 33.3" in msg, msg
    assert "Location of maximum error: (1,), x=2.00000000, y=2.01999998" in msg, msg
    tu.assert_almost_equal(a, b, rtol={np.dtype(np.float32): 1e-2})
    tu.assert_almost_equal(a, b, atol={np.dtype(np.float32): 0.1})
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    # almost_equal's own defaults are float64's; unequal shapes with use_broadcast=False raise
    assert not tu.almost_equal(a, b) and tu.almost_equal(a, b, rtol=0.1)
    with pytest.raises(AssertionError, match=r"a.shape = \(3,\) and b.shape = \(1, 3\)"):
        tu.almost_equal(a, a[None], use_broadcast=False)
    tu.checkShapes(a, b)
    loc = tu.locationError(a, b, (2,), ("p", "q"))
    assert loc == "Location of error: (2,), p=3.00000000, q=3.00000000"


def test_assert_almost_equal_with_err_and_ignore_nan():
    a = np.zeros(10, np.float32)
    b = a.copy()
    b[0] = 1.0
    tu.assert_almost_equal_with_err(a, b, etol=0.1)
    with pytest.raises(AssertionError, match=r"10.00% of the elements differ, more than etol=0.05"):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError, match="exceeds tolerance"):
        tu.assert_almost_equal_with_err(a, b)  # etol 0: a plain comparison
    c = np.array([1.0, np.nan, 3.0])
    tu.assert_almost_equal_ignore_nan(c, np.array([1.0, 5.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(c, np.array([2.0, np.nan, 3.0]))


def test_random_helpers_validate_their_arguments():
    with pytest.raises(TypeError, match="unexpected argument"):
        tu.random_uniform_arrays((2,), scale=3)
    assert tu.random_uniform_arrays((2, 2))[0].dtype == np.float32
    with pytest.raises(AssertionError, match="k=11"):
        tu.random_sample(list(range(10)), 11)
    assert sorted(tu.random_sample(list(range(5)), 5)) == list(range(5))
    np.random.seed(0)
    assert {tu.rand_shape_nd(1, 1, allow_zero_size=True)[0] for _ in range(40)} == {0, 1}


def test_sparse_helpers():
    import scipy.sparse as sp

    np.random.seed(1)
    dense = np.arange(1, 21, dtype=np.float32).reshape(4, 5) * (np.random.rand(4, 5) < 0.7)
    csr = sp.csr_matrix(dense)
    before = [sorted(csr.indices[csr.indptr[i] : csr.indptr[i + 1]]) for i in range(4)]
    tu.shuffle_csr_column_indices(csr)
    after = [sorted(csr.indices[csr.indptr[i] : csr.indptr[i + 1]]) for i in range(4)]
    assert before == after
    arr, (indptr, indices, _) = tu.rand_sparse_ndarray(
        (30, 40), "csr", density=0.5, shuffle_csr_indices=True
    )
    rows = [indices[indptr[i] : indptr[i + 1]] for i in range(30)]
    assert any(np.any(np.diff(r) < 0) for r in rows)  # some row came out of order
    want = np.zeros((30, 40), bool)
    for i, r in enumerate(rows):
        want[i, r] = True
    np.testing.assert_array_equal(arr.asnumpy() != 0, want)
    rsp = tu.create_sparse_array_zd((6, 2), "row_sparse", density=0.9, rsp_indices=[4, 1])
    assert rsp.indices.asnumpy().tolist() == [1, 4]
    empty = tu.create_sparse_array_zd((6, 2), "row_sparse", density=0.9)
    assert empty.indices.shape == (0,) and not empty.asnumpy().any()


def test_same_array_tells_shared_memory():
    a = mx.nd.arange(6).reshape((3, 2))
    assert tu.same_array(a, a)
    assert not tu.same_array(a, a.copy())
    np.testing.assert_array_equal(a.asnumpy(), np.arange(6).reshape(3, 2))  # restored


def test_check_numeric_gradient_follows_grad_req_and_checks_its_arguments():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.sin(a) * b
    loc = [np.random.rand(2, 3), np.random.rand(2, 3)]
    tu.check_numeric_gradient(sym, loc, rtol=1e-2, atol=1e-3)
    tu.check_numeric_gradient(sym, loc, grad_nodes={"a": "add", "b": "null"}, rtol=1e-2,
                              atol=1e-3)  # fmt: skip
    eps64 = {np.dtype(np.float64): 1e-6}
    tu.check_numeric_gradient(sym, {"a": loc[0], "b": loc[1]}, grad_nodes=("b",),
                              numeric_eps=eps64, dtype=np.float64)  # fmt: skip
    blocked = mx.sym.BlockGrad(a) * b
    with pytest.raises(AssertionError, match="NUMERICAL_a"):
        tu.check_numeric_gradient(blocked, loc, grad_nodes={"a": "add"}, rtol=1e-2, atol=1e-3)
    with pytest.raises(AssertionError, match="too small"):
        tu.check_numeric_gradient(sym, loc, numeric_eps=1e-6)
    with pytest.raises(AssertionError, match="dtype must be float16, float32 or float64"):
        tu.check_numeric_gradient(sym, loc, dtype=np.int32)
    with pytest.raises(AssertionError, match="one output"):
        tu.check_numeric_gradient(mx.sym.Group([a * b, a + b]), loc)
    with pytest.raises(ValueError, match="grad_nodes must be"):
        tu.check_numeric_gradient(sym, loc, grad_nodes="a")
    with pytest.raises(ValueError, match="Invalid grad_req nope for argument a"):
        tu.check_numeric_gradient(sym, loc, grad_nodes={"a": "nope"})
    # a row_sparse gradient array
    w = mx.sym.Variable("w")
    emb = mx.sym.dot(a, w)
    tu.check_numeric_gradient(emb, [np.random.rand(2, 3), np.random.rand(3, 4)], rtol=1e-2,
                              atol=1e-3, grad_stype_dict={"w": "row_sparse"})  # fmt: skip


def test_simple_forward_symbol_structure_and_speed():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    out = tu.simple_forward(fc, data=np.ones((2, 4)), fc_weight=np.ones((3, 4)),
                            fc_bias=np.arange(3.0))  # fmt: skip
    np.testing.assert_array_equal(out, [[4, 5, 6], [4, 5, 6]])
    two = tu.simple_forward(mx.sym.Group([fc, fc * 2]), data=np.ones((1, 4)),
                            fc_weight=np.ones((3, 4)), fc_bias=np.zeros(3))  # fmt: skip
    assert isinstance(two, list) and two[1].tolist() == [[8, 8, 8]]
    other = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=7)
    assert tu.same_symbol_structure(fc, other)
    assert not tu.same_symbol_structure(fc, mx.sym.relu(mx.sym.Variable("x")))
    assert tu.check_speed(fc, N=2, data=(2, 4)) > 0
    loc = {"data": np.ones((2, 4)), "fc_weight": np.ones((3, 4)), "fc_bias": np.ones(3)}
    assert tu.check_speed(fc, location=loc, typ="forward", N=2) > 0
    with pytest.raises(ValueError, match='typ can only be "whole" or "forward"'):
        tu.check_speed(fc, location=loc, typ="backward")


def test_check_consistency_finds_a_wrong_ground_truth(capsys):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ctx_list = [{"ctx": mx.cpu(0), "data": (2, 4), "type_dict": {"data": t}}
                for t in (np.float16, np.float64, np.float32)]  # fmt: skip
    params = {}
    gt = tu.check_consistency(fc, ctx_list, arg_params=params, use_uniform=True, scale=0.5)
    assert gt["fc_output"].dtype == np.float64  # the most precise entry is the reference
    assert sorted(params) == ["data", "fc_bias", "fc_weight"]  # the drawn inputs, filled in
    assert np.abs(params["data"]).max() <= 0.46
    bad = {k: v * 2 for k, v in gt.items()}
    with pytest.raises(AssertionError):
        tu.check_consistency(fc, ctx_list, ground_truth=bad, grad_req="null")
    tu.check_consistency(fc, ctx_list, ground_truth=bad, raise_on_err=False)
    assert "Predict Err: ctx 0 vs ctx 1 at fc_output" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="at least two"):
        tu.check_consistency(fc, ctx_list[:1])


def test_check_gluon_hybridize_consistency():
    def build(prefix):
        net = mx.gluon.nn.HybridSequential(prefix=prefix)
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(4, activation="tanh"), mx.gluon.nn.Dense(2))
        return net

    tu.check_gluon_hybridize_consistency(build, [mx.nd.array(np.random.rand(3, 5))])

    class Square(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * x

    data = mx.nd.array(np.random.rand(2, 3))
    tu.check_gluon_hybridize_consistency(lambda prefix: Square(prefix=prefix), [data],
                                         numpy_func=lambda x: x * x)  # fmt: skip
    with pytest.raises(AssertionError):
        tu.check_gluon_hybridize_consistency(lambda prefix: Square(prefix=prefix), [data],
                                             numpy_func=lambda x: x)  # fmt: skip


def test_platform_checks(monkeypatch):
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run()
    monkeypatch.setenv("CD_JOB", "0")
    assert not tu.is_cd_run()
    assert tu.is_aarch64_run() == (os.uname().machine == "aarch64")
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True


# --- data helpers: the files are prepared locally, the network is never reached ----------


def _idx(array: np.ndarray) -> bytes:
    """``array`` (uint8) in the idx format of MNIST's files."""
    magic = 0x0800 | array.ndim
    return struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def _mnist_arrays(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, n, dtype=np.uint8))  # fmt: skip


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Work in ``tmp_path``; any download attempt fails as without a network."""

    def no_network(url, *args, **kwargs):
        raise requests.ConnectionError(f"Failed to resolve host of {url}")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_get_mnist_reads_the_gzipped_files_in_the_current_folder(offline):
    sets = {"train": _mnist_arrays(6, 0), "t10k": _mnist_arrays(4, 1)}
    for name, (images, labels) in sets.items():
        with gzip.open(offline / f"{name}-images-idx3-ubyte.gz", "wb") as f:
            f.write(_idx(images))
        with gzip.open(offline / f"{name}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(_idx(labels))
    mnist = tu.get_mnist()
    assert mnist["train_data"].shape == (6, 1, 28, 28) and mnist["train_data"].dtype == np.float32
    np.testing.assert_allclose(mnist["test_data"][:, 0], sets["t10k"][0] / np.float32(255))
    assert mnist["train_label"].dtype == np.int8
    np.testing.assert_array_equal(mnist["test_label"], sets["t10k"][1])
    os.remove(offline / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(OSError) as e:
        tu.get_mnist()
    msg = str(e.value)
    assert "http://data.mxnet.io/data/mnist/t10k-labels-idx1-ubyte.gz" in msg, msg
    assert str(offline / "t10k-labels-idx1-ubyte.gz") in msg and "ConnectionError" in msg


def test_get_mnist_ubyte_and_iterator_unzip_a_local_archive(offline):
    with zipfile.ZipFile(offline / "mnist.zip", "w") as zf:
        for name, seed, n in (("train", 0, 8), ("t10k", 1, 4)):
            images, labels = _mnist_arrays(n, seed)
            zf.writestr(f"{name}-images-idx3-ubyte", _idx(images))
            zf.writestr(f"{name}-labels-idx1-ubyte", _idx(labels))
    os.makedirs("data")
    os.rename("mnist.zip", "data/mnist.zip")
    train, val = tu.get_mnist_iterator(batch_size=2, input_shape=(784,))
    assert sorted(os.listdir("data"))[0] == "mnist.zip"
    assert train.provide_data[0].shape == (2, 784)
    assert len(list(train)) == 4 and len(list(val)) == 2
    images, _ = _mnist_arrays(4, 1)
    val.reset()  # MNISTIter shuffles by default, the validation one too (as in MXNet)
    seen = np.concatenate([b.data[0].asnumpy() for b in val])
    order = np.argsort(seen[:, 0] * 1e6 + seen[:, 1])
    want = images.reshape(4, -1) / np.float32(256)
    np.testing.assert_allclose(seen[order], want[np.argsort(want[:, 0] * 1e6 + want[:, 1])])
    image_iter, _ = tu.get_mnist_iterator(4, (1, 28, 28), num_parts=2, part_index=1)
    assert image_iter.provide_data[0].shape == (4, 1, 28, 28)
    os.remove("data/train-images-idx3-ubyte")
    os.remove("data/mnist.zip")
    with pytest.raises(OSError, match="mxnet/data/mnist.zip"):
        tu.get_mnist_ubyte()


def test_get_cifar10_and_get_mnist_pkl_use_present_files(offline):
    names = ["cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst"]
    os.makedirs("data")
    with zipfile.ZipFile("data/cifar10.zip", "w") as zf:
        for n in names:
            zf.writestr(n, n.encode())
    tu.get_cifar10()
    for n in names:
        assert (offline / "data" / n).read_bytes() == n.encode()
    with pytest.raises(OSError, match="mnist.pkl.gz"):
        tu.get_mnist_pkl()
    (offline / "data" / "mnist.pkl.gz").write_bytes(b"x")
    tu.get_mnist_pkl()


def test_zip_and_bz2_data(offline):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ratings.dat", "1::2::5\n")
    os.makedirs("ml")
    (offline / "ml" / "ml.zip").write_bytes(buf.getvalue())
    tu.get_zip_data("ml", "http://example.invalid/ml.zip", "ml.zip")  # present: left alone
    assert not (offline / "ml" / "ratings.dat").exists()
    with pytest.raises(OSError, match="example.invalid/other.zip"):
        tu.get_zip_data("ml", "http://example.invalid/other.zip", "other.zip")
    (offline / "ml" / "kdd.t.bz2").write_bytes(bz2.compress(b"1 1:0.5\n0 2:1\n"))
    tu.get_bz2_data("ml", "kdd.t", "http://example.invalid/kdd.t.bz2", "kdd.t.bz2")
    assert (offline / "ml" / "kdd.t").read_bytes() == b"1 1:0.5\n0 2:1\n"
    assert not (offline / "ml" / "kdd.t.bz2").exists()


class _Response:
    """What ``requests.get`` returns for a successful download."""

    def __init__(self, body: bytes):
        self.status_code, self._body = 200, body

    def iter_content(self, chunk_size):
        return [self._body]

    def close(self):
        pass


def test_download_and_download_model(monkeypatch, tmp_path):
    fetched = []

    def fake_get(url, *args, **kwargs):
        fetched.append(url)
        return _Response(url.encode())

    monkeypatch.setattr(requests, "get", fake_get)
    monkeypatch.chdir(tmp_path)
    assert tu.download("http://h/a/b.txt") == "b.txt" and (tmp_path / "b.txt").read_bytes()
    assert tu.download("http://h/a/b.txt", fname="c.txt", dirname="sub") == "sub/c.txt"
    (tmp_path / "sub" / "c.txt").write_bytes(b"mine")
    tu.download("http://h/a/b.txt", fname="c.txt", dirname="sub")
    assert (tmp_path / "sub" / "c.txt").read_bytes() == b"mine" and len(fetched) == 2
    tu.download("http://h/a/b.txt", fname="c.txt", dirname="sub", overwrite=True)
    assert (tmp_path / "sub" / "c.txt").read_bytes() == b"http://h/a/b.txt"
    with pytest.raises(AssertionError, match="retries"):
        tu.download("http://h/x", retries=-1)
    meta = {"tiny": {"symbol": "http://h/tiny-symbol.json", "params": "http://h/tiny.params"}}
    prefix, epoch = tu.download_model("tiny", dst_dir="models", meta_info=meta)
    assert (prefix, epoch) == (os.path.join("models", "tiny"), 0)
    assert (tmp_path / "models" / "tiny-0000.params").read_bytes() == b"http://h/tiny.params"
    assert tu.download_model("unknown", meta_info=meta) == (None, 0)
    fetched.clear()
    tu.download_model("imagenet1k-resnet-18", dst_dir="models")
    assert fetched == [
        "http://data.mxnet.io/models/imagenet/resnet/18-layers/resnet-18-symbol.json",
        "http://data.mxnet.io/models/imagenet/resnet/18-layers/resnet-18-0000.params",
    ]


def test_get_im2rec_path_and_dummy_iter(monkeypatch, tmp_path):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    path = tu.get_im2rec_path()
    assert os.path.isfile(path) and path.endswith(os.path.join("tools", "im2rec.py"))
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "im2rec.py").write_text("# im2rec\n")
    monkeypatch.setenv("MY_HOME", str(tmp_path))
    assert tu.get_im2rec_path("MY_HOME") == str(tmp_path / "tools" / "im2rec.py")
    monkeypatch.setenv("MY_HOME", str(tmp_path / "nowhere"))
    assert tu.get_im2rec_path("MY_HOME") == path  # mxrs's own tool
    real = mx.io.NDArrayIter(np.arange(12.0).reshape(6, 2), np.arange(6.0), batch_size=2)
    dummy = tu.DummyIter(real)
    assert dummy.batch_size == 2 and dummy.provide_data == real.provide_data
    batches = [b for _, b in zip(range(5), dummy, strict=False)]
    assert len(batches) == 5 and all(b is batches[0] for b in batches)
    assert isinstance(dummy, mx.io.DataIter)


# --- the rest: existing helpers' MXNet arguments, the module's names ---------------------


def test_chi_square_check_allows_truncated_expected_counts():
    """Expected counts are truncated (as MXNet's): their total may fall short of the draws."""
    rng = np.random.default_rng(0)
    p, obs, expected = tu.chi_square_check(lambda n: rng.integers(0, 3, n), [0, 1, 2],
                                           [1 / 3] * 3, nsamples=1000)  # fmt: skip
    assert expected.tolist() == [333, 333, 333] and obs.sum() == 1000
    stat = float((((obs - expected) ** 2) / expected).sum())
    import scipy.stats as ss

    assert p == pytest.approx(ss.chi2.sf(stat, 2))
    assert p > 0.001


def test_existing_helpers_take_mxnets_keywords():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
                         shape=(2, 3), dtype=np.float32)  # fmt: skip
    assert len(tu.rand_shape_3d(2, 2, 2, allow_zero_size=True)) == 3
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, no_bias=True, name="fc")
    with pytest.raises(AssertionError, match="dtype must be"):
        tu.check_symbolic_forward(fc, [np.ones((1, 2)), np.ones((2, 2))], [np.ones((1, 2))],
                                  dtype=np.int32)  # fmt: skip


def _mxnet_public_names() -> list[str]:
    if not MXNET_TEST_UTILS.exists():
        mxnet_ref.python()  # fails the test, saying how to set MXNet up
    tree = ast.parse(MXNET_TEST_UTILS.read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_every_public_helper_of_mxnets_module_is_here_and_star_imported():
    names = _mxnet_public_names()
    assert len(names) > 80
    assert [n for n in names if not hasattr(tu, n)] == []
    star: dict = {}
    exec("from mxrs.test_utils import *", star)
    assert [n for n in names if n not in star] == []
    assert isinstance(star["get_mnist"], types.FunctionType)
