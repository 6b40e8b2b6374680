"""Datasets: indexable collections of samples, and the views derived from them.

A dataset is anything with ``__len__`` and ``__getitem__``; :class:`Dataset` adds the derived
views MXNet 1.x offers (``transform``, ``transform_first``, ``filter``, ``shard``, ``take``,
``sample``). Views are cheap: they keep a reference to their source and, where they select
samples, a list of source indices. :class:`RecordFileDataset` reads the records of a RecordIO
file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ... import recordio
from ...ndarray import NDArray
from .sampler import Sampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Base class of every dataset: a sized collection whose samples are read by index.

    Subclasses implement ``__getitem__`` (return sample ``idx``) and ``__len__``. A sample is
    usually one array or a tuple ``(data, label)``; :class:`~mxrs.gluon.data.DataLoader` stacks
    samples into batches. NumPy arrays, NDArrays and lists can be used directly as datasets too.

    Examples
    --------
    >>> class Squares(gluon.data.Dataset):
    ...     def __getitem__(self, idx):
    ...         return idx * idx
    ...     def __len__(self):
    ...         return 10
    >>> Squares().take(3)[2]
    4
    """

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def filter(self, fn: Callable[[Any], object]) -> Dataset:
        """Return a view holding only the samples for which ``fn(sample)`` is true.

        ``fn`` runs once on every sample when the view is made; the kept indices are stored.

        Parameters
        ----------
        fn : callable
            Takes one sample, returns a truth value.

        Returns
        -------
        Dataset
        """
        return _SampledDataset(self, [i for i in range(len(self)) if fn(self[i])])

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Return shard ``index`` of ``num_shards`` contiguous, near-equal parts of the dataset.

        The first ``len(self) % num_shards`` shards hold one sample more than the others, so
        every sample belongs to exactly one shard. Shard before shuffling when each distributed
        worker should see its own part.

        Parameters
        ----------
        num_shards : int
            How many parts, at least 1.
        index : int
            Which part, ``0 <= index < num_shards``.

        Returns
        -------
        Dataset

        Raises
        ------
        ValueError
            For a non-positive ``num_shards`` or an ``index`` outside ``[0, num_shards)``.
        """
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}")
        if not 0 <= index < num_shards:
            raise ValueError(f"shard index {index} is out of range for {num_shards} shards")
        size, rest = divmod(len(self), num_shards)
        start = size * index + min(index, rest)
        stop = start + size + (1 if index < rest else 0)
        return _SampledDataset(self, range(start, stop))

    def take(self, count: int | None) -> Dataset:
        """Return a view of the first ``count`` samples (all of them when ``count`` is None).

        Parameters
        ----------
        count : int or None
            At most this many samples; None or a count past the end keeps every sample.

        Returns
        -------
        Dataset
        """
        n = len(self)
        if count is None or count > n:
            count = n
        return _SampledDataset(self, range(max(0, int(count))))

    def sample(self, sampler: Sampler) -> Dataset:
        """Return a view holding the samples a sampler picks, in the sampler's order.

        Parameters
        ----------
        sampler : Sampler
            Iterated once, when the view is made.

        Returns
        -------
        Dataset

        Raises
        ------
        TypeError
            When ``sampler`` is not a :class:`~mxrs.gluon.data.Sampler`.
        """
        if not isinstance(sampler, Sampler):
            raise TypeError(f"sample() expects a gluon.data.Sampler, got {type(sampler).__name__}")
        return _SampledDataset(self, list(sampler))

    def transform(self, fn: Callable[..., Any], lazy: bool = True) -> Dataset:
        """Return a dataset whose samples are ``fn`` applied to this dataset's samples.

        A tuple sample is unpacked into ``fn``'s arguments: ``fn(data, label)``.

        Parameters
        ----------
        fn : callable
            Takes a sample (or its elements) and returns the new sample.
        lazy : bool, default True
            True applies ``fn`` each time a sample is read (needed for random augmentation);
            False applies it to every sample now and keeps the results in memory.

        Returns
        -------
        Dataset

        Examples
        --------
        >>> ds = gluon.data.SimpleDataset([1, 2, 3]).transform(lambda x: x * 10)
        >>> ds[2]
        30
        """
        view = _LazyTransformDataset(self, fn)
        if lazy:
            return view
        return SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn: Callable[[Any], Any], lazy: bool = True) -> Dataset:
        """Return a dataset with ``fn`` applied to the first element of each sample only.

        The usual way to transform images while leaving labels alone:
        ``mnist.transform_first(transforms.ToTensor())``. A sample that is not a tuple is
        transformed whole.

        Parameters
        ----------
        fn : callable
            Takes the first element and returns its replacement.
        lazy : bool, default True
            As in :meth:`transform`.

        Returns
        -------
        Dataset
        """
        return self.transform(_TransformFirst(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object that has ``len()`` and ``[]``: a list, a NumPy array, ...

    Parameters
    ----------
    data : sequence
        The samples.

    Examples
    --------
    >>> ds = gluon.data.SimpleDataset(['a', 'b'])
    >>> len(ds), ds[1]
    (2, 'b')
    """

    def __init__(self, data: Any) -> None:
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class ArrayDataset(Dataset):
    """A dataset that zips several arrays: sample ``i`` is ``(a[i], b[i], ...)``.

    With one array, sample ``i`` is ``a[i]`` itself. One-dimensional NDArrays are kept as
    NumPy arrays, so their samples are NumPy scalars (which batch into 1-D NDArrays) rather
    than one-element NDArrays, as in MXNet 1.x.

    Parameters
    ----------
    *args : NDArray, numpy.ndarray, list or Dataset
        One or more sequences of one length.

    Raises
    ------
    ValueError
        With no arrays, or when their lengths differ.

    Examples
    --------
    >>> x = np.zeros((4, 2)); y = np.arange(4)
    >>> ds = gluon.data.ArrayDataset(x, y)
    >>> len(ds), int(ds[3][1])
    (4, 3)
    """

    def __init__(self, *args: Any) -> None:
        if not args:
            raise ValueError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        self._data: list[Any] = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(
                    f"All arrays must have the same length; array[0] has length {self._length} "
                    f"while array[{i}] has {len(data)}."
                )
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """A dataset over a RecordIO file: sample ``i`` is the raw bytes of the file's ``i``-th
    record (in the order of its index file).

    Parameters
    ----------
    filename : str
        The ``.rec`` file; its index is the ``.idx`` file of the same name beside it.

    Raises
    ------
    MXNetError
        When the record file or its index cannot be opened.

    Notes
    -----
    The file is reopened in each DataLoader worker process, so workers never share a read
    position; threads (``DataLoader(thread_pool=True)``) read one record at a time.

    Examples
    --------
    >>> ds = gluon.data.RecordFileDataset('data.rec')
    >>> header, payload = mx.recordio.unpack(ds[0])
    """

    def __init__(self, filename: str) -> None:
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")
        self._lock = threading.Lock()
        self._lock_pid = os.getpid()

    def _read_lock(self) -> threading.Lock:
        """The lock making a seek and its read one step: this process's (a forked copy of a
        lock another thread held would never be released)."""
        if self._lock_pid != os.getpid():
            self._lock, self._lock_pid = threading.Lock(), os.getpid()
        return self._lock

    def __getitem__(self, idx: int) -> Any:
        with self._read_lock():
            return self._record.read_idx(self._record.keys[idx])

    def __len__(self) -> int:
        return len(self._record.keys)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"], state["_lock_pid"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._lock_pid = threading.Lock(), os.getpid()


class _LazyTransformDataset(Dataset):
    """A view applying ``fn`` to each sample as it is read."""

    def __init__(self, data: Dataset, fn: Callable[..., Any]) -> None:
        self._data = data
        self._fn = fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirst:
    """Apply a function to the first of several arguments (a class, so that it pickles)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def __call__(self, first: Any, *rest: Any) -> Any:
        if rest:
            return (self._fn(first),) + rest
        return self._fn(first)


class _SampledDataset(Dataset):
    """A view holding the source samples at a fixed list of indices."""

    def __init__(self, dataset: Dataset, indices: Iterable[int]) -> None:
        self._dataset = dataset
        self._indices: Sequence[int] = indices if isinstance(indices, range) else list(indices)

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx: int) -> Any:
        return self._dataset[self._indices[idx]]
