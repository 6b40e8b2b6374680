"""``DataDesc`` (what an input is called and how it is shaped) and ``DataBatch`` (one batch)."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DataDesc", "DataBatch"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input or label of a data iterator.

    A ``(name, shape)`` namedtuple, so it unpacks and compares like the plain pairs older code
    uses; ``dtype`` and ``layout`` ride along as attributes.

    Attributes
    ----------
    name : str
        The input's name (``'data'``, ``'softmax_label'``...).
    shape : tuple of int
        The shape of one batch of it.
    dtype : numpy dtype
        numpy.float32 unless given.
    layout : str
        What each axis means (``'NCHW'`` unless given); ``'N'`` marks the batch axis.
    """

    dtype: Any
    layout: str

    def __new__(
        cls, name: str, shape: Sequence[int], dtype: Any = np.float32, layout: str = "NCHW"
    ) -> DataDesc:
        desc = super().__new__(cls, name, tuple(shape))
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __getnewargs__(self) -> tuple[Any, ...]:
        """Pickling keeps dtype and layout too."""
        return (self.name, self.shape, self.dtype, self.layout)

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The batch axis of ``layout``: where ``'N'`` is in it; 0 for ``None``, -1 without N."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(
        shapes: Sequence[tuple[str, Sequence[int]]],
        types: Sequence[tuple[str, Any]] | None = None,
    ) -> list[DataDesc]:
        """``DataDesc`` objects from ``(name, shape)`` pairs and ``(name, dtype)`` pairs."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch from a data iterator.

    Parameters
    ----------
    data : list of NDArray
        The inputs, one array per entry of ``provide_data``.
    label : list of NDArray or None
        The labels, one array per entry of ``provide_label``.
    pad : int or None
        How many samples at the end of the batch are filler (repeated from elsewhere) rather
        than new data.
    index : array of int or None
        The indices of the batch's samples in the data set.
    bucket_key : any, optional
        Key of the bucket the batch belongs to (for bucketing iterators).
    provide_data, provide_label : list of DataDesc, optional
        Descriptions of ``data`` / ``label``.
    """

    def __init__(
        self,
        data: Sequence[Any] | None,
        label: Sequence[Any] | None = None,
        pad: int | None = None,
        index: Any = None,
        bucket_key: Any = None,
        provide_data: list[DataDesc] | None = None,
        provide_label: list[DataDesc] | None = None,
    ) -> None:
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(
                f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}"
            )
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(
                f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}"
            )
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data] if self.data is not None else None
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"
