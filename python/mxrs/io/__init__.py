"""Data iterators (``mx.io``): batches of inputs and labels for training loops.

Layout
------
batch
    ``DataDesc`` (name, shape, dtype, layout of an input) and ``DataBatch`` (one batch).
dataiter
    ``DataIter``, the base class: ``next``/``reset`` and the ``iter_next``/``getdata`` protocol.
ndarray_iter
    ``NDArrayIter``: batches over arrays in memory (pad, discard or roll over the last batch).
resize
    ``ResizeIter``: a fixed number of batches per epoch from another iterator.
prefetch
    ``PrefetchingIter``: joins iterators and reads their next batches on background threads.
mnist
    ``MNISTIter``: MNIST from IDX files (``read_idx`` reads one).
csv_iter
    ``CSVIter``: rows of CSV files.
libsvm_iter
    ``LibSVMIter``: sparse rows of LibSVM files, as CSR batches.
_row_batches
    The batching over a file's rows that ``CSVIter`` and ``LibSVMIter`` share.
"""

from .batch import DataBatch, DataDesc
from .csv_iter import CSVIter
from .dataiter import DataIter
from .libsvm_iter import LibSVMIter
from .mnist import MNISTIter, read_idx
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter
from .resize import ResizeIter

__all__ = [
    "CSVIter",
    "DataBatch",
    "DataDesc",
    "DataIter",
    "LibSVMIter",
    "MNISTIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
    "read_idx",
]
