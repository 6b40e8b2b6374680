"""gluon.data datasets: SimpleDataset, ArrayDataset and the derived views."""

import mxrs as mx
import numpy as np
import pytest
from mxrs.gluon import data


def test_base_dataset_is_abstract():
    ds = data.Dataset()
    with pytest.raises(NotImplementedError):
        len(ds)
    with pytest.raises(NotImplementedError):
        ds[0]


def test_simple_dataset_wraps_any_sequence():
    ds = data.SimpleDataset(["a", "b", "c"])
    assert len(ds) == 3
    assert ds[1] == "b"
    arr = data.SimpleDataset(np.arange(6).reshape(3, 2))
    assert arr[2].tolist() == [4, 5]


def test_array_dataset_zips_numpy_lists_and_ndarrays():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = [10, 11, 12, 13]
    z = mx.nd.array([[1, 2], [3, 4], [5, 6], [7, 8]])
    ds = data.ArrayDataset(x, y, z)
    assert len(ds) == 4
    sx, sy, sz = ds[2]
    assert sx.tolist() == [6.0, 7.0, 8.0]
    assert sy == 12
    assert isinstance(sz, mx.nd.NDArray) and sz.asnumpy().tolist() == [5.0, 6.0]


def test_array_dataset_keeps_1d_ndarrays_as_numpy_scalars():
    ds = data.ArrayDataset(mx.nd.array([1, 2, 3]), mx.nd.array([[1], [2], [3]]))
    label, feat = ds[1]
    assert isinstance(label, np.floating) and label == 2.0
    assert isinstance(feat, mx.nd.NDArray)


def test_array_dataset_single_array_returns_samples_not_tuples():
    ds = data.ArrayDataset(np.arange(5))
    assert ds[3] == 3


def test_array_dataset_length_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match=r"array\[0\] has length 4 while array\[1\] has 3"):
        data.ArrayDataset(np.zeros(4), [1, 2, 3])
    with pytest.raises(ValueError, match="at least one"):
        data.ArrayDataset()


def test_lazy_transform_runs_on_each_read():
    calls = []

    def double(x):
        calls.append(x)
        return x * 2

    ds = data.SimpleDataset([1, 2, 3]).transform(double)
    assert calls == []
    assert [ds[i] for i in range(3)] == [2, 4, 6]
    assert ds[0] == 2
    assert calls == [1, 2, 3, 1]


def test_eager_transform_runs_once_per_sample():
    calls = []

    def double(x):
        calls.append(x)
        return x * 2

    ds = data.SimpleDataset([1, 2, 3]).transform(double, lazy=False)
    assert calls == [1, 2, 3]
    assert isinstance(ds, data.SimpleDataset)
    assert [ds[i] for i in range(3)] == [2, 4, 6]
    assert calls == [1, 2, 3]


def test_transform_unpacks_tuple_samples():
    ds = data.ArrayDataset([1, 2], [10, 20]).transform(lambda x, y: (x + y, y - x))
    assert ds[1] == (22, 18)


def test_transform_first_leaves_the_rest_alone():
    ds = data.ArrayDataset([1, 2], ["a", "b"], [5, 6]).transform_first(lambda x: x * 100)
    assert ds[0] == (100, "a", 5)
    assert len(ds) == 2
    plain = data.SimpleDataset([3, 4]).transform_first(lambda x: -x)
    assert plain[1] == -4


def test_filter_keeps_matching_samples_in_order():
    ds = data.SimpleDataset(list(range(10))).filter(lambda x: x % 3 == 0)
    assert len(ds) == 4
    assert [ds[i] for i in range(len(ds))] == [0, 3, 6, 9]


def test_shard_is_contiguous_disjoint_and_covering():
    base = data.SimpleDataset(list(range(10)))
    shards = [base.shard(3, i) for i in range(3)]
    contents = [[s[i] for i in range(len(s))] for s in shards]
    assert contents == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError, match="out of range"):
        base.shard(3, 3)
    with pytest.raises(ValueError, match="at least 1"):
        base.shard(0, 0)


def test_take_and_sample():
    base = data.SimpleDataset(list("abcdef"))
    assert [base.take(2)[i] for i in range(2)] == ["a", "b"]
    assert len(base.take(None)) == 6
    assert len(base.take(100)) == 6
    picked = base.sample(data.SequentialSampler(3, start=2))
    assert [picked[i] for i in range(3)] == ["c", "d", "e"]
    with pytest.raises(TypeError, match="Sampler"):
        base.sample([0, 1])


def test_views_compose():
    base = data.ArrayDataset(np.arange(20), np.arange(20) * 10)
    view = base.shard(2, 1).filter(lambda s: s[0] % 2 == 0).transform_first(lambda x: x + 1000)
    assert [view[i] for i in range(len(view))] == [
        (1010, 100),
        (1012, 120),
        (1014, 140),
        (1016, 160),
        (1018, 180),
    ]
