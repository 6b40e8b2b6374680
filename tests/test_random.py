"""Random sampling: seeding, shapes, dtypes, ranges, per-context generators, shuffle."""

import mxrs as mx
import numpy as np
from mxrs import nd


def test_seed_reproduces_draws():
    mx.random.seed(42)
    a = mx.random.uniform(-1, 1, shape=(3, 4)).asnumpy()
    b = mx.random.normal(0, 1, shape=(5,)).asnumpy()
    mx.random.seed(42)
    np.testing.assert_array_equal(mx.random.uniform(-1, 1, shape=(3, 4)).asnumpy(), a)
    np.testing.assert_array_equal(mx.random.normal(0, 1, shape=(5,)).asnumpy(), b)


def test_shapes_dtypes_and_ranges():
    assert mx.random.uniform().shape == (1,)
    u = mx.random.uniform(2, 3, shape=(1000,))
    assert u.dtype == np.float32 and 2 <= u.asnumpy().min() and u.asnumpy().max() < 3
    n = mx.random.normal(5, 2, shape=(4000,), dtype="float64").asnumpy()
    assert n.dtype == np.float64 and abs(n.mean() - 5) < 0.2 and abs(n.std() - 2) < 0.2
    r = mx.random.randint(0, 5, shape=(500,))
    assert r.dtype == np.int32 and set(np.unique(r.asnumpy())) == set(range(5))
    assert nd.random.normal(shape=2).dtype == np.float32
    assert mx.random.randn(2, 3).shape == (2, 3)
    out = nd.zeros((2, 2), ctx=mx.cpu(1))
    assert mx.random.uniform(out=out) is out and out.asnumpy().sum() > 0


def test_each_context_has_its_own_generator():
    mx.random.seed(3)
    a = mx.random.uniform(shape=(6,), ctx=mx.cpu(0))
    b = mx.random.uniform(shape=(6,), ctx=mx.cpu(1))
    assert a.context == mx.cpu(0) and b.context == mx.cpu(1)
    assert not np.array_equal(a.asnumpy(), b.asnumpy())
    mx.random.seed(3)
    mx.random.uniform(shape=(100,), ctx=mx.cpu(0))  # draws on cpu(0) do not move cpu(1)
    np.testing.assert_array_equal(
        mx.random.uniform(shape=(6,), ctx=mx.cpu(1)).asnumpy(), b.asnumpy()
    )
    mx.random.seed(9, ctx=mx.cpu(1))
    c = mx.random.uniform(shape=(6,), ctx=mx.cpu(1)).asnumpy()
    mx.random.seed(9, ctx=mx.cpu(1))
    np.testing.assert_array_equal(mx.random.uniform(shape=(6,), ctx=mx.cpu(1)).asnumpy(), c)


def test_shuffle_permutes_rows():
    x = nd.array(np.arange(20).reshape(10, 2))
    mx.random.seed(1)
    s = mx.random.shuffle(x).asnumpy()
    assert not np.array_equal(s, x.asnumpy())
    np.testing.assert_array_equal(np.sort(s[:, 0]), np.arange(0, 20, 2))
    np.testing.assert_array_equal(s[:, 1] - s[:, 0], np.ones(10))
