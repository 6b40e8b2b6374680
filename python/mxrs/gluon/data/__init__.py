"""Datasets, samplers and the DataLoader (``gluon.data``).

Layout
------
dataset
    ``Dataset`` (with ``transform``, ``transform_first``, ``filter``, ``shard``, ``take``,
    ``sample``), ``SimpleDataset``, ``ArrayDataset``, ``RecordFileDataset``.
sampler
    ``Sampler``, ``SequentialSampler``, ``RandomSampler``, ``BatchSampler``,
    ``IntervalSampler`` and ``SplitSampler`` (one worker's part of a distributed dataset).
dataloader
    ``DataLoader`` and the default batchify function.
_workers
    The worker processes and threads behind ``DataLoader(num_workers > 0)``.
vision
    ``MNIST``, ``FashionMNIST``, ``CIFAR10``, ``CIFAR100``, the image folder, list and record
    datasets, and the image ``transforms``.
"""

from . import vision
from .dataloader import DataLoader, default_batchify_fn
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import (
    BatchSampler,
    IntervalSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SplitSampler,
)

__all__ = [
    "ArrayDataset",
    "BatchSampler",
    "DataLoader",
    "Dataset",
    "IntervalSampler",
    "RandomSampler",
    "RecordFileDataset",
    "Sampler",
    "SequentialSampler",
    "SimpleDataset",
    "SplitSampler",
    "default_batchify_fn",
    "vision",
]
