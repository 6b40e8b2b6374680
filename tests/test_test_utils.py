"""mxrs.test_utils, mxrs.runtime and base.py_str: helpers users' (and MXNet's) tests call."""

import os

import mxrs as mx
import numpy as np
import pytest
from mxrs import test_utils as tu


def test_assert_almost_equal_uses_the_dtypes_tolerance_and_names_the_worst_element():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    tu.assert_almost_equal(a, a + 5e-5)  # within float32's 1e-4 relative
    with pytest.raises(AssertionError) as e:
        tu.assert_almost_equal(mx.nd.array(a), a + np.array([0, 0.5, 0.01], dtype=np.float32))
    msg = str(e.value)
    assert "differ at 2 of 3 elements" in msg and "worst at (1,)" in msg, msg
    # float16 is compared loosely by default, float64 tightly.
    tu.assert_almost_equal(a.astype(np.float16), a.astype(np.float16) + np.float16(0.01))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a.astype(np.float64), a.astype(np.float64) + 1e-3)
    with pytest.raises(AssertionError, match=r"a.shape = \(3,\) and b.shape = \(1, 3\) are not"):
        tu.assert_almost_equal(np.ones(3), np.ones((1, 3)), use_broadcast=False)


def test_almost_equal_and_same():
    assert tu.almost_equal([1.0, 2.0], mx.nd.array([1.0, 2.0]))
    assert not tu.almost_equal(np.ones(2), np.ones(2) + 1e-3)
    assert tu.almost_equal(np.ones(2), np.ones(2) + 1e-3, rtol=1e-2)
    assert tu.almost_equal(np.nan, np.nan, equal_nan=True)
    assert tu.same(mx.nd.array([1, 2]), np.array([1, 2], dtype=np.float32))
    assert not tu.same(np.ones(2), np.ones(3))


def test_random_shapes_and_arrays():
    np.random.seed(3)
    for _ in range(50):
        d0, d1 = tu.rand_shape_2d(4, 5)
        assert 1 <= d0 <= 4 and 1 <= d1 <= 5
        shape = tu.rand_shape_nd(3, 2)
        assert len(shape) == 3 and all(1 <= s <= 2 for s in shape)
    x = tu.rand_ndarray((2, 3), dtype=np.float64)
    assert isinstance(x, mx.nd.NDArray) and x.shape == (2, 3) and x.dtype == np.float64
    assert x.context == tu.default_context()
    c = tu.rand_ndarray((20, 30), stype="csr", density=0.25)
    assert c.stype == "csr" and c.shape == (20, 30)
    assert 0.1 < (c.asnumpy() != 0).mean() < 0.4
    r, (values, rows) = tu.rand_sparse_ndarray((9, 2), "row_sparse", rsp_indices=[7, 2])
    assert r.indices.asnumpy().tolist() == [2, 7] == rows.tolist()
    np.testing.assert_array_equal(r.asnumpy()[[2, 7]], values)
    with pytest.raises(ValueError, match="unknown storage type 'coo'"):
        tu.rand_ndarray((2, 2), stype="coo")


def test_default_context_can_be_set():
    assert tu.default_context() == mx.cpu(0)
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1)
    finally:
        tu.set_default_context(None)
    assert tu.default_context() == mx.cpu(0)


def test_environment_sets_and_restores():
    os.environ["MXRS_TU_A"] = "old"
    os.environ.pop("MXRS_TU_B", None)
    with tu.environment({"MXRS_TU_A": "new", "MXRS_TU_B": 1}):
        assert (os.environ["MXRS_TU_A"], os.environ["MXRS_TU_B"]) == ("new", "1")
    assert os.environ["MXRS_TU_A"] == "old" and "MXRS_TU_B" not in os.environ
    with tu.environment("MXRS_TU_A", None):
        assert "MXRS_TU_A" not in os.environ
    assert os.environ.pop("MXRS_TU_A") == "old"
    with pytest.raises(ValueError):
        with tu.environment("a", "b", "c"):
            pass


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise ValueError"):
        tu.assert_exception(int, ValueError, "1")


def test_compare_optimizer_accepts_equal_rules_and_catches_different_ones():
    sgd = mx.optimizer.SGD
    tu.compare_optimizer(
        sgd(learning_rate=0.1, momentum=0.9),
        sgd(learning_rate=0.1, momentum=0.9),
        (3, 4),
        np.float32,
    )
    with pytest.raises(AssertionError):
        tu.compare_optimizer(sgd(learning_rate=0.1), sgd(learning_rate=0.2), (3, 4), np.float32)
    tu.compare_ndarray_tuple((None, mx.nd.ones(2)), (None, np.ones(2)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((None, mx.nd.ones(2)), (mx.nd.ones(2), None))


def test_check_numeric_gradient_agrees_with_autograd_and_catches_a_wrong_gradient():
    tu.check_numeric_gradient(lambda x, y: x * y + x.exp(), [np.random.rand(3), np.random.rand(3)])

    class Wrong(mx.autograd.Function):
        def forward(self, x):
            return x * x

        def backward(self, dy):
            return dy * 3  # should be 2 x

    with pytest.raises(AssertionError, match="autograd gradient of input 0"):
        tu.check_numeric_gradient(lambda x: Wrong()(x), [np.random.rand(4) + 1])


def test_py_str_and_runtime_features():
    assert mx.base.py_str(b"caf\xc3\xa9") == "café" and mx.base.py_str("x") == "x"
    features = mx.runtime.Features()
    assert features.is_enabled("dist_kvstore") and not features.is_enabled("MKLDNN")
    try:
        import cupy  # noqa: F401

        has_cupy = True
    except ImportError:
        has_cupy = False
    if not has_cupy:
        assert not features.is_enabled("CUDA")
    with pytest.raises(RuntimeError, match="feature 'FOO' is unknown"):
        features.is_enabled("FOO")
    assert [f.name for f in mx.runtime.feature_list()] == list(features)


def test_star_import_brings_what_mxnets_test_files_use_through_it():
    names = {}
    exec("from mxrs.test_utils import *", names)
    used = {"np", "mx", "rnd", "npt", "NDArray", "Symbol", "array", "os", "sys", "time"}
    assert used <= set(names)
    assert names["rnd"].randint(5, 6) == 5  # numpy.random, as in MXNet
    assert {"assert_almost_equal", "verify_generator", "check_numeric_gradient"} <= set(names)
