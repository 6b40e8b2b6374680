"""``PrefetchingIter``: reads the next batch of other iterators on background threads."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import MXNetError
from .batch import DataBatch, DataDesc
from .dataiter import DataIter

__all__ = ["PrefetchingIter"]


class _Prefetcher:
    """One daemon thread that fetches the next batch of one iterator while the last is used.

    The thread holds this object and the iterator only, never the ``PrefetchingIter``, so that
    dropping the ``PrefetchingIter`` lets its finalizer stop the thread.
    """

    def __init__(self, it: Any, number: int) -> None:
        self.it = it
        self.wanted = threading.Event()  # set: fetch one more batch (or quit when stopping)
        self.ready = threading.Event()  # set: ``batch`` / ``error`` hold the fetch's outcome
        self.batch: DataBatch | None = None
        self.error: BaseException | None = None
        self.stopping = False
        self.thread = threading.Thread(
            target=self._run, name=f"mxrs-io-prefetch-{number}", daemon=True
        )
        self.wanted.set()
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.wanted.wait()
            self.wanted.clear()
            if self.stopping:
                return
            try:
                self.batch, self.error = next(self.it), None
            except StopIteration:
                self.batch, self.error = None, None
            except BaseException as err:  # handed to the consumer's thread by ``take``
                self.batch, self.error = None, err
            self.ready.set()

    def take(self) -> DataBatch | None:
        """The fetched batch (``None`` at the end of the epoch); re-raises the fetch's error."""
        self.ready.wait()
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        return self.batch

    def settle(self) -> None:
        """Wait for the fetch under way and drop its outcome."""
        self.ready.wait()
        self.batch, self.error = None, None

    def request(self) -> None:
        """Start fetching the next batch."""
        self.ready.clear()
        self.wanted.set()

    def stop(self) -> None:
        """End the thread (after the fetch under way, if any) and wait for it."""
        self.stopping = True
        self.wanted.set()
        if self.thread is not threading.current_thread():
            self.thread.join()


def _stop_all(workers: list[_Prefetcher]) -> None:
    for w in workers:
        w.stop()


class PrefetchingIter(DataIter):
    """Joins one or more iterators and reads their next batches ahead, on background threads.

    Each batch holds the data (and labels) of one batch of every iterator, in the order of
    ``iters``. The threads stop when ``close()`` is called, when the iterator is used as a
    context manager and the ``with`` block ends, or when it is garbage collected.

    Parameters
    ----------
    iters : DataIter or list of DataIter
        Iterators with the same number of batches per epoch and the same ``pad``.
    rename_data, rename_label : list of dict, optional
        One dict per iterator, old name -> new name, applied to ``provide_data`` /
        ``provide_label``.
    """

    def __init__(
        self,
        iters: Any,
        rename_data: Sequence[Mapping[str, str]] | None = None,
        rename_label: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(iters, (list, tuple)):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: iters is empty")
        for what, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise ValueError(
                    f"PrefetchingIter: {what} has {len(renames)} entries for {len(iters)} iterators"
                )
        self.iters = list(iters)
        self.n_iter = len(self.iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        provided = self.provide_data
        self.batch_size = provided[0].shape[0] if provided else getattr(iters[0], "batch_size", 0)
        self.current_batch: DataBatch | None = None
        self._closed = False
        self._workers = [_Prefetcher(it, i) for i, it in enumerate(self.iters)]
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    # ------------------------------------------------------------------ descriptions
    @staticmethod
    def _renamed(
        descs: list[Any], renames: Sequence[Mapping[str, str]] | None, index: int
    ) -> list[DataDesc]:
        out = []
        for d in descs:
            desc = d if isinstance(d, DataDesc) else DataDesc(*d)
            if renames is not None:
                desc = DataDesc(
                    renames[index].get(desc.name, desc.name), desc.shape, desc.dtype, desc.layout
                )
            out.append(desc)
        return out

    @property
    def provide_data(self) -> list[DataDesc]:
        """The ``provide_data`` of every iterator, in order, renamed by ``rename_data``."""
        return [
            d
            for i, it in enumerate(self.iters)
            for d in self._renamed(it.provide_data, self.rename_data, i)
        ]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The ``provide_label`` of every iterator, in order, renamed by ``rename_label``."""
        return [
            d
            for i, it in enumerate(self.iters)
            for d in self._renamed(it.provide_label, self.rename_label, i)
        ]

    # ------------------------------------------------------------------ life cycle
    def close(self) -> None:
        """Stop the background threads; the iterator cannot be used afterwards."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> PrefetchingIter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise MXNetError("PrefetchingIter: the iterator is closed")

    # ------------------------------------------------------------------ epochs
    def reset(self) -> None:
        """Reset every iterator and start prefetching the new epoch."""
        self._check_open()
        for w in self._workers:
            w.settle()
        for it in self.iters:
            it.reset()
        for w in self._workers:
            w.request()

    def iter_next(self) -> bool:
        """Take the prefetched batches (``False`` at the end) and start fetching the next."""
        self._check_open()
        batches = [w.take() for w in self._workers]
        if all(b is None for b in batches):
            return False
        if any(b is None for b in batches):
            ended = [i for i, b in enumerate(batches) if b is None]
            raise MXNetError(
                f"PrefetchingIter: iterators {ended} ended before the others; all must yield "
                "the same number of batches"
            )
        full = [b for b in batches if b is not None]
        pads = {b.pad for b in full}
        if len(pads) > 1:
            raise MXNetError(f"PrefetchingIter: the iterators' batches differ in pad: {pads}")
        self.current_batch = DataBatch(
            data=[d for b in full for d in (b.data or [])],
            label=[lab for b in full for lab in (b.label or [])],
            pad=full[0].pad,
            index=full[0].index,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        for w in self._workers:
            w.request()
        return True

    def next(self) -> DataBatch:
        """The next joined batch; ``StopIteration`` at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        assert self.current_batch is not None
        return self.current_batch

    def _current(self) -> DataBatch:
        if self.current_batch is None:
            raise RuntimeError("PrefetchingIter: no current batch; call next() first")
        return self.current_batch

    def getdata(self) -> Any:
        """The data arrays of the current batch."""
        return self._current().data

    def getlabel(self) -> Any:
        """The label arrays of the current batch."""
        return self._current().label

    def getindex(self) -> Any:
        """The sample indices of the current batch."""
        return self._current().index

    def getpad(self) -> int | None:
        """Filler samples at the end of the current batch."""
        return self._current().pad
