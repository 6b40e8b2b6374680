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
image_record_iter
    ``ImageRecordIter`` (and ``ImageRecordUInt8Iter``/``ImageRecordInt8Iter``): images of a
    RecordIO file, decoded and augmented on background threads.
_image_record_aug
    Its image pipeline: MXNet's default augmenter and the normalisation.
_record_part
    The records of a worker's part of a RecordIO file.
"""

from .batch import DataBatch, DataDesc
from .csv_iter import CSVIter
from .dataiter import DataIter
from .image_record_iter import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
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
    "ImageRecordInt8Iter",
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
    "LibSVMIter",
    "MNISTIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
    "read_idx",
]
