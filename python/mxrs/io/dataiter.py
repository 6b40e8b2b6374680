"""``DataIter``: the base class of mxrs's data iterators."""

from __future__ import annotations

from typing import Any

from .batch import DataBatch

__all__ = ["DataIter"]


class DataIter:
    """An iterator over ``DataBatch`` objects, restartable with ``reset``.

    Subclasses either override ``next`` or implement the cursor protocol: ``iter_next`` moves
    to the next batch and says whether there is one, ``getdata`` / ``getlabel`` / ``getpad`` /
    ``getindex`` describe the batch at the cursor; ``next`` then assembles them.

    Every iterator also has ``provide_data`` and ``provide_label``: lists of ``DataDesc`` (name,
    shape, dtype) of the arrays in a batch. The base class leaves them to subclasses, which may
    make them properties or plain attributes.

    ``getdata``/``getlabel`` return lists of NDArrays, or, where a subclass sets
    ``_one_array`` (MXNet's built-in iterators: ``MNISTIter``, ``CSVIter``, ``LibSVMIter``),
    one NDArray each, which ``next`` puts in the batch's lists.

    Parameters
    ----------
    batch_size : int, default 0
        Samples per batch.
    """

    _one_array = False

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def __iter__(self) -> DataIter:
        return self

    def __next__(self) -> DataBatch:
        return self.next()

    def reset(self) -> None:
        """Go back to the start of the data."""

    def next(self) -> DataBatch:
        """The next batch; raises ``StopIteration`` at the end of the data."""
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if self._one_array:
            data, label = [data], [label]
        return DataBatch(data=data, label=label, pad=self.getpad(), index=self.getindex())

    def iter_next(self) -> bool:
        """Move to the next batch; ``False`` when there is none."""
        return False

    def getdata(self) -> Any:
        """The data arrays of the current batch (a list of NDArray)."""
        return None

    def getlabel(self) -> Any:
        """The label arrays of the current batch (a list of NDArray)."""
        return None

    def getindex(self) -> Any:
        """The sample indices of the current batch, or ``None``."""
        return None

    def getpad(self) -> int | None:
        """How many samples at the end of the current batch are filler."""
        return None
