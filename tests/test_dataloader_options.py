"""gluon.data.DataLoader options of MXNet 1.9.1: pin_memory, pin_device_id, prefetch,
thread_pool, timeout, auto_reload."""

from __future__ import annotations

import multiprocessing

import mxrs as mx
import numpy as np
import pytest
from mxrs.gluon import data

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int32)


def _expected_batches(batch_size: int) -> list[list[float]]:
    return [X[i : i + batch_size].tolist() for i in range(0, len(X), batch_size)]


@pytest.mark.parametrize("num_workers, thread_pool", [(0, False), (2, False), (2, True)])
@pytest.mark.parametrize("pin_device_id", [0, 1])
def test_pin_memory_puts_every_batch_on_cpu_pinned(
    num_workers: int, thread_pool: bool, pin_device_id: int
) -> None:
    loader = data.DataLoader(
        data.ArrayDataset(X, Y),
        batch_size=4,
        pin_memory=True,
        pin_device_id=pin_device_id,
        num_workers=num_workers,
        thread_pool=thread_pool,
    )
    it = iter(loader)
    assert len(it) == 3  # type: ignore[arg-type]
    batches = list(it)
    assert len(batches) == 3
    pinned = mx.cpu_pinned(pin_device_id)
    for i, (x, y) in enumerate(batches):
        assert x.context == pinned and y.context == pinned
        assert x.asnumpy().tolist() == _expected_batches(4)[i]
        assert y.asnumpy().tolist() == list(range(4 * i, min(4 * i + 4, 10)))
        assert (x * 2).context == pinned  # computes where it lives
    assert multiprocessing.active_children() == []


def test_without_pin_memory_batches_are_on_cpu0() -> None:
    for x in data.DataLoader(data.ArrayDataset(X), batch_size=8, pin_memory=False):
        assert x.context == mx.cpu(0)


def test_pin_memory_moves_nested_batches_and_leaves_other_values() -> None:
    def batchify(samples: list[int]) -> tuple[object, ...]:
        arr = mx.nd.array(np.array(samples, dtype=np.float32))
        return (arr, [arr + 1, "tag"], len(samples))

    loader = data.DataLoader(
        list(range(5)), batch_size=5, batchify_fn=batchify, pin_memory=True, pin_device_id=2
    )
    (batch,) = list(loader)
    assert isinstance(batch, tuple)
    arr, (plus_one, tag), n = batch
    assert arr.context == mx.cpu_pinned(2) and plus_one.context == mx.cpu_pinned(2)
    assert plus_one.asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert (tag, n) == ("tag", 5)


@pytest.mark.parametrize("auto_reload", [True, False])
@pytest.mark.parametrize("thread_pool", [True, False])
def test_auto_reload_is_accepted_and_workers_stop_each_epoch(
    auto_reload: bool, thread_pool: bool
) -> None:
    loader = data.DataLoader(
        data.ArrayDataset(X),
        batch_size=3,
        num_workers=2,
        thread_pool=thread_pool,
        auto_reload=auto_reload,
    )
    for _ in range(2):  # two epochs, same batches, no worker left between them
        assert [b.asnumpy().tolist() for b in loader] == _expected_batches(3)
        assert multiprocessing.active_children() == []


@pytest.mark.parametrize("prefetch", [0, 1, 5, None])
def test_prefetch_values_give_the_same_batches(prefetch: int | None) -> None:
    loader = data.DataLoader(data.ArrayDataset(X), batch_size=2, num_workers=2, prefetch=prefetch)
    assert [b.asnumpy().tolist() for b in loader] == _expected_batches(2)


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        data.DataLoader(data.ArrayDataset(X), batch_size=2, timeout=0)
    loader = data.DataLoader(data.ArrayDataset(X), batch_size=5, num_workers=1, timeout=30)
    assert [b.shape for b in loader] == [(5, 3), (5, 3)]


def test_all_mxnet_keywords_together() -> None:
    loader = data.DataLoader(
        data.ArrayDataset(X),
        batch_size=4,
        shuffle=False,
        last_batch="discard",
        num_workers=0,
        pin_memory=False,
        pin_device_id=0,
        prefetch=None,
        thread_pool=False,
        timeout=120,
        auto_reload=True,
    )
    assert len(loader) == 2
    assert [b.asnumpy().tolist() for b in loader] == _expected_batches(4)[:2]
