"""Samplers: the order in which a DataLoader reads a dataset, and how it groups it into batches.

A sampler is an iterable of sample indices with a length; a batch sampler is an iterable of
lists of indices. Random samplers draw from NumPy's global generator, so ``np.random.seed``
makes their order reproducible, and a new order is drawn each time iteration starts (each epoch).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "BatchSampler",
    "IntervalSampler",
    "SplitSampler",
]

_LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` (indices) and ``__len__``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Yield ``start, start + 1, ..., start + length - 1`` in order.

    Parameters
    ----------
    length : int
        How many indices.
    start : int, default 0
        The first index.

    Examples
    --------
    >>> list(gluon.data.SequentialSampler(3, start=2))
    [2, 3, 4]
    """

    def __init__(self, length: int, start: int = 0) -> None:
        self._length = int(length)
        self._start = int(start)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """Yield a fresh random permutation of ``range(length)`` each epoch.

    Parameters
    ----------
    length : int
        How many indices.
    """

    def __init__(self, length: int) -> None:
        self._length = int(length)

    def __iter__(self) -> Iterator[int]:
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self) -> int:
        return self._length


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``.

    Parameters
    ----------
    sampler : Sampler
        Where the indices come from.
    batch_size : int
        Indices per batch.
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a final batch shorter than ``batch_size``: 'keep' yields it,
        'discard' drops it, 'rollover' puts its indices at the front of the next epoch.

    Raises
    ------
    ValueError
        For an unknown ``last_batch`` or a ``batch_size`` below 1.

    Examples
    --------
    >>> bs = gluon.data.BatchSampler(gluon.data.SequentialSampler(5), 2, 'rollover')
    >>> list(bs), list(bs)
    ([[0, 1], [2, 3]], [[4, 0], [1, 2], [3, 4]])
    """

    def __init__(self, sampler: Sampler, batch_size: int, last_batch: str = "keep") -> None:
        if last_batch not in _LAST_BATCH:
            raise ValueError(
                "last_batch must be one of 'keep', 'discard', or 'rollover', "
                f"but got {last_batch!r}"
            )
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev: list[int] = []

    def __iter__(self) -> Iterator[list[int]]:
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size


class IntervalSampler(Sampler):
    """Yield ``0, interval, 2 * interval, ...``, then (with rollover) ``1, 1 + interval, ...``.

    Parameters
    ----------
    length : int
        Indices are taken from ``range(length)``.
    interval : int
        The step between consecutive indices, smaller than ``length``.
    rollover : bool, default True
        True continues from offsets 1, 2, ..., ``interval - 1`` so every index appears once;
        False stops after the first pass.

    Examples
    --------
    >>> list(gluon.data.IntervalSampler(7, 3))
    [0, 3, 6, 1, 4, 2, 5]
    >>> list(gluon.data.IntervalSampler(7, 3, rollover=False))
    [0, 3, 6]
    """

    def __init__(self, length: int, interval: int, rollover: bool = True) -> None:
        if not 0 < interval < length:
            raise ValueError(
                f"interval {interval} must be positive and smaller than length {length}"
            )
        self._length = int(length)
        self._interval = int(interval)
        self._rollover = bool(rollover)

    def __iter__(self) -> Iterator[int]:
        for offset in range(self._interval if self._rollover else 1):
            yield from range(offset, self._length, self._interval)

    def __len__(self) -> int:
        if self._rollover:
            return self._length
        return (self._length + self._interval - 1) // self._interval


class SplitSampler(Sampler):
    """Sample one of ``num_parts`` contiguous parts of a dataset, shuffled anew each epoch.

    This is the sampler of MXNet's distributed-training tutorial: with ``num_parts`` workers,
    worker ``part_index`` trains on indices ``[part_index * p, (part_index + 1) * p)`` where
    ``p = length // num_parts``. The parts are disjoint; the last ``length % num_parts``
    samples belong to no part, so every worker runs the same number of batches.

    Parameters
    ----------
    length : int
        Number of samples in the dataset.
    num_parts : int, default 1
        Number of parts, usually ``kvstore.num_workers``.
    part_index : int, default 0
        Which part this sampler yields, usually ``kvstore.rank``.

    Raises
    ------
    ValueError
        For ``num_parts < 1`` or ``part_index`` outside ``[0, num_parts)``.

    Examples
    --------
    >>> store = mx.kv.create('dist_sync')
    >>> loader = gluon.data.DataLoader(
    ...     gluon.data.vision.MNIST(train=True).transform_first(transforms.ToTensor()),
    ...     batch_size=64, sampler=gluon.data.SplitSampler(60000, store.num_workers, store.rank))
    """

    def __init__(self, length: int, num_parts: int = 1, part_index: int = 0) -> None:
        if int(num_parts) < 1:
            raise ValueError(f"num_parts must be at least 1, got {num_parts}")
        if not 0 <= int(part_index) < int(num_parts):
            raise ValueError(f"part_index {part_index} is out of range for {num_parts} parts")
        self.part_len = int(length) // int(num_parts)
        self.start = self.part_len * int(part_index)
        self.end = self.start + self.part_len

    def __iter__(self) -> Iterator[int]:
        indices = np.arange(self.start, self.end)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self) -> int:
        return self.part_len
