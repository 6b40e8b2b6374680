"""gluon.data samplers: exact index sequences, batching modes, and the distributed SplitSampler."""

import numpy as np
import pytest
from mxrs.gluon import data


def test_sequential_sampler():
    assert list(data.SequentialSampler(5)) == [0, 1, 2, 3, 4]
    s = data.SequentialSampler(3, start=7)
    assert list(s) == [7, 8, 9]
    assert len(s) == 3


def test_random_sampler_is_a_fresh_permutation_each_epoch():
    np.random.seed(0)
    s = data.RandomSampler(50)
    first, second = list(s), list(s)
    assert len(s) == 50
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second
    assert first != list(range(50))
    assert all(type(i) is int for i in first)
    np.random.seed(0)
    assert list(s) == first


def _two_epochs(last_batch):
    bs = data.BatchSampler(data.SequentialSampler(10), 3, last_batch)
    lengths = [len(bs)]
    first = list(bs)
    lengths.append(len(bs))
    second = list(bs)
    return first, second, lengths


def test_batch_sampler_keep():
    first, second, lengths = _two_epochs("keep")
    assert first == second == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert lengths == [4, 4]


def test_batch_sampler_discard():
    first, second, lengths = _two_epochs("discard")
    assert first == second == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert lengths == [3, 3]


def test_batch_sampler_rollover_carries_the_remainder_into_the_next_epoch():
    bs = data.BatchSampler(data.SequentialSampler(10), 3, "rollover")
    assert len(bs) == 3
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(bs) == 3  # (1 carried + 10) // 3
    assert list(bs) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert len(bs) == 4  # (2 carried + 10) // 3
    assert list(bs) == [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_batch_sampler_rejects_bad_arguments():
    with pytest.raises(ValueError, match="last_batch must be one of"):
        data.BatchSampler(data.SequentialSampler(4), 2, "drop")
    with pytest.raises(ValueError, match="positive"):
        data.BatchSampler(data.SequentialSampler(4), 0)


def test_interval_sampler():
    assert list(data.IntervalSampler(13, 3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert len(data.IntervalSampler(13, 3)) == 13
    short = data.IntervalSampler(13, 3, rollover=False)
    assert list(short) == [0, 3, 6, 9, 12]
    assert len(short) == 5
    with pytest.raises(ValueError):
        data.IntervalSampler(3, 3)


def test_split_sampler_parts_are_disjoint_contiguous_and_cover_the_data():
    length, parts = 103, 4
    samplers = [data.SplitSampler(length, parts, i) for i in range(parts)]
    seen = [sorted(s) for s in samplers]
    part = length // parts
    for i, indices in enumerate(seen):
        assert indices == list(range(i * part, (i + 1) * part))
        assert len(samplers[i]) == part
    assert sorted(sum(seen, [])) == list(range(parts * part))  # the last 3 samples are left out


def test_split_sampler_shuffles_within_its_part_each_epoch():
    np.random.seed(1)
    s = data.SplitSampler(1000, num_parts=2, part_index=1)
    first, second = list(s), list(s)
    assert first != sorted(first) and second != sorted(second)
    assert first != second
    assert sorted(first) == sorted(second) == list(range(500, 1000))
    assert all(type(i) is int for i in first)


def test_split_sampler_defaults_and_errors():
    assert sorted(data.SplitSampler(5)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="out of range"):
        data.SplitSampler(10, 2, 2)
    with pytest.raises(ValueError, match="at least 1"):
        data.SplitSampler(10, 0, 0)


def test_split_sampler_drives_a_dataloader_as_in_the_distributed_tutorial():
    ds = data.ArrayDataset(np.arange(60, dtype=np.float32), np.arange(60))
    loaders = [
        data.DataLoader(ds, batch_size=8, sampler=data.SplitSampler(60, 3, rank))
        for rank in range(3)
    ]
    labels = []
    for rank, loader in enumerate(loaders):
        assert len(loader) == 3
        got = np.concatenate([label.asnumpy() for _, label in loader])
        assert sorted(got.tolist()) == list(range(rank * 20, rank * 20 + 20))
        labels.append(got)
    assert len(set(np.concatenate(labels).tolist())) == 60
