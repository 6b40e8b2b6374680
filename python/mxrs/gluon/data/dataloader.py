"""DataLoader: read a dataset in mini-batches, in this process or in parallel workers.

With ``num_workers=0`` batches are loaded in the training process when asked for. With
``num_workers > 0`` each epoch (each ``iter(loader)``) forks that many worker processes that
load batches ahead of the training loop; batches still arrive in sampler order, and the workers
are stopped when the epoch ends, when the iterator is dropped, or when loading fails. With
``thread_pool=True`` the workers are threads of this process instead. See :mod:`._workers`.
With ``pin_memory=True`` every batch is moved to ``cpu_pinned(pin_device_id)`` as it is returned.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ... import ndarray as nd
from ...context import Context, cpu_pinned
from . import sampler as _sampler
from ._workers import _ProcessPool, _ThreadPool

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data: list[Any]) -> nd.NDArray | list[Any]:
    """Stack a list of samples into a batch.

    NDArray samples are stacked along a new first axis; tuple samples are batched element by
    element into a list (``[data_batch, label_batch]``); anything else (NumPy arrays, NumPy or
    Python numbers) becomes one NDArray of NumPy's dtype for the stacked values.

    Parameters
    ----------
    data : list
        The samples of one batch.

    Returns
    -------
    NDArray or list

    Examples
    --------
    >>> batch = default_batchify_fn([(mx.nd.ones((2,)), 0), (mx.nd.zeros((2,)), 1)])
    >>> batch[0].shape, batch[1].asnumpy()
    ((2, 2), array([0, 1]))
    """
    first = data[0]
    if isinstance(first, nd.NDArray):
        return nd.stack(*data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(column)) for column in zip(*data, strict=True)]
    arr = np.asarray(data)
    return nd.array(arr, dtype=arr.dtype)


#: The batchify function used inside worker processes; the same stacking as
#: :func:`default_batchify_fn` (batches travel back to the parent as NumPy arrays).
default_mp_batchify_fn = default_batchify_fn


class DataLoader:
    """Load a dataset and return it in mini-batches.

    Parameters
    ----------
    dataset : Dataset
        The samples; NumPy arrays, NDArrays and lists work directly too.
    batch_size : int, optional
        Samples per batch. Required unless ``batch_sampler`` is given.
    shuffle : bool, default False
        Visit the samples in a new random order each epoch. Not with ``sampler``.
    sampler : Sampler, optional
        The order of the sample indices (e.g. :class:`SplitSampler`). Not with ``shuffle``.
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a final batch shorter than ``batch_size``: 'keep' returns it,
        'discard' drops it, 'rollover' carries its samples into the next epoch.
    batch_sampler : Sampler, optional
        Yields lists of indices, one list per batch. Excludes ``batch_size``, ``shuffle``,
        ``sampler`` and ``last_batch``.
    batchify_fn : callable, optional
        Turns a list of samples into a batch; :func:`default_batchify_fn` by default.
    num_workers : int, default 0
        Worker processes (or threads) loading batches ahead; 0 loads them when asked for.
    pin_memory : bool, default False
        Return batches on ``cpu_pinned(pin_device_id)`` instead of ``cpu(0)``: every NDArray of
        a batch (also inside lists and tuples) is moved there as the batch is returned, in the
        training process. Without it batches are on ``cpu(0)``.
    pin_device_id : int, default 0
        The device id of the ``cpu_pinned`` context used with ``pin_memory=True``.
    prefetch : int, optional
        Batches requested ahead of the training loop with ``num_workers > 0``; by default
        ``2 * num_workers``, at least 1.
    thread_pool : bool, default False
        Use threads of this process instead of worker processes.
    timeout : float, default 120
        Seconds to wait for a worker's batch before raising :class:`~mxrs.base.MXNetError`.
    auto_reload : bool, default True
        Accepted for compatibility; it changes nothing in mxrs. MXNet uses it to start loading
        the next epoch as soon as one ends. mxrs does not keep workers between epochs: each
        ``iter(loader)`` starts its own workers and they stop when that epoch ends (or its
        iterator is dropped), whatever ``auto_reload`` is, so no worker is left running between
        epochs and the next epoch's shuffle order is drawn when that epoch begins.

    Raises
    ------
    ValueError
        For contradictory arguments (``batch_size`` with ``batch_sampler``, ``shuffle`` with
        ``sampler``, no ``batch_size``), an unknown ``last_batch`` or a non-positive ``timeout``.

    Notes
    -----
    Worker processes are forked, inherit the dataset, and run on the CPU only: keep datasets and
    transforms on the CPU and move each batch to its device in the training loop. Batches made
    by workers are NDArrays on ``cpu(0)``. An exception raised in a worker is re-raised by the
    loop that reads the batch, with the worker's traceback as its cause.

    Examples
    --------
    >>> train = gluon.data.vision.MNIST(train=True).transform_first(transforms.ToTensor())
    >>> loader = gluon.data.DataLoader(train, batch_size=128, shuffle=True, num_workers=2)
    >>> for data, label in loader:
    ...     data.shape, label.shape            # ((128, 1, 28, 28), (128,)) ...
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = None,
        shuffle: bool = False,
        sampler: _sampler.Sampler | None = None,
        last_batch: str | None = None,
        batch_sampler: _sampler.Sampler | None = None,
        batchify_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0,
        pin_memory: bool = False,
        pin_device_id: int = 0,
        prefetch: int | None = None,
        thread_pool: bool = False,
        timeout: float = 120,
        auto_reload: bool = True,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, given {timeout}")
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = (
                    _sampler.RandomSampler(len(dataset))
                    if shuffle
                    else _sampler.SequentialSampler(len(dataset))
                )
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError(
                "batch_size, shuffle, sampler and last_batch must not be specified "
                "if batch_sampler is specified."
            )
        self._dataset = dataset
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._num_workers = max(0, int(num_workers))
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        self._auto_reload = bool(auto_reload)

    def __iter__(self) -> Iterator[Any]:
        if self._num_workers == 0:
            batches: Iterator[Any] = self._same_process_iter()
        else:
            pool_cls = _ThreadPool if self._thread_pool else _ProcessPool
            pool = pool_cls(self._num_workers, self._dataset, self._batchify_fn)
            batches = _WorkerIter(pool, self._batch_sampler, self._prefetch, self._timeout)
        if self._pin_memory:
            return _PinnedIter(batches, cpu_pinned(self._pin_device_id), len(self))
        return batches

    def _same_process_iter(self) -> Iterator[Any]:
        for indices in self._batch_sampler:
            yield self._batchify_fn([self._dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self._batch_sampler)


def _move_to(batch: Any, ctx: Context) -> Any:
    """``batch`` with each NDArray (also inside lists and tuples) moved to ``ctx``."""
    if isinstance(batch, nd.NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, list | tuple):
        return type(batch)(_move_to(item, ctx) for item in batch)
    return batch


class _PinnedIter:
    """One epoch's batches, each moved to a ``cpu_pinned`` context as it is returned."""

    def __init__(self, batches: Iterator[Any], ctx: Context, length: int) -> None:
        self._batches = batches
        self._ctx = ctx
        self._length = length

    def __iter__(self) -> _PinnedIter:
        return self

    def __next__(self) -> Any:
        return _move_to(next(self._batches), self._ctx)

    def __len__(self) -> int:
        return self._length


class _WorkerIter:
    """One epoch over a worker pool: requests batches ahead, returns them in order.

    The pool is shut down when the epoch ends, when loading fails, and when the iterator is
    garbage-collected (or the interpreter exits) before that.
    """

    def __init__(
        self,
        pool: _ProcessPool | _ThreadPool,
        batch_sampler: _sampler.Sampler,
        prefetch: int,
        timeout: float,
    ) -> None:
        self._pool = pool
        self._close = weakref.finalize(self, pool.shutdown)
        self._timeout = timeout
        self._length = len(batch_sampler)
        self._sent = self._rcvd = 0
        try:
            self._batches = iter(batch_sampler)
            for _ in range(max(1, prefetch)):
                if not self._push():
                    break
        except BaseException:
            self._close()
            raise

    def _push(self) -> bool:
        indices = next(self._batches, None)
        if indices is None:
            return False
        self._pool.submit(self._sent, indices)
        self._sent += 1
        return True

    def __iter__(self) -> _WorkerIter:
        return self

    def __next__(self) -> Any:
        if self._rcvd == self._sent:
            self._close()
            raise StopIteration
        try:
            batch = self._pool.get(self._rcvd, self._timeout)
            self._rcvd += 1
            self._push()
        except BaseException:
            self._rcvd = self._sent
            self._close()
            raise
        return batch

    def __len__(self) -> int:
        return self._length
