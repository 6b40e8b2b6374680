"""Vision data sets and image transforms (``gluon.data.vision``).

Layout
------
datasets
    ``MNIST`` and ``FashionMNIST`` (gzip'd IDX files in a local folder), ``CIFAR10`` and
    ``CIFAR100`` (their binary files), ``ImageFolderDataset``, ``ImageListDataset`` and
    ``ImageRecordDataset``.
transforms
    ``ToTensor``, ``Normalize``, ``Resize``, crops, flips, colour jitter, ``Compose``...
fetch_mnist
    ``python -m mxrs.gluon.data.vision.fetch_mnist``: fetch and convert the full MNIST once.
_idx
    Reading and writing the IDX format.
"""

from . import transforms
from .datasets import (
    CIFAR10,
    CIFAR100,
    MNIST,
    FashionMNIST,
    ImageFolderDataset,
    ImageListDataset,
    ImageRecordDataset,
)

__all__ = [
    "MNIST",
    "FashionMNIST",
    "CIFAR10",
    "CIFAR100",
    "ImageFolderDataset",
    "ImageListDataset",
    "ImageRecordDataset",
    "transforms",
]
