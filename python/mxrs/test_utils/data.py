"""Test data: downloading files and models, MNIST and CIFAR-10 in the layouts MXNet 1.9.1's
tests read them from, zip and bz2 archives, the path of the ``im2rec`` tool, an iterator that
repeats one batch.

Files already present are used as they are; missing ones are fetched with
:func:`mxrs.gluon.utils.download`. On a machine without network access, put the files where
the helper looks for them (each docstring says where): the error of a failed download names
the URL and that path.
"""

from __future__ import annotations

import bz2
import gzip
import logging
import os
import struct
import zipfile
from typing import Any

import numpy as np

from ..io import DataIter, MNISTIter

__all__ = [
    "download",
    "download_model",
    "get_mnist",
    "get_mnist_pkl",
    "get_mnist_ubyte",
    "get_cifar10",
    "get_mnist_iterator",
    "get_zip_data",
    "get_bz2_data",
    "get_im2rec_path",
    "DummyIter",
]

_log = logging.getLogger(__name__)

_MNIST_URL = "http://data.mxnet.io/data/mnist/"
_MODEL_URL = "http://data.mxnet.io/models/"
#: model name -> (folder under _MODEL_URL, file prefix, epoch of the parameters file)
_MODELS = {
    "imagenet1k-inception-bn": ("imagenet/inception-bn/", "Inception-BN", "0126"),
    "imagenet1k-resnet-18": ("imagenet/resnet/18-layers/", "resnet-18", "0000"),
    "imagenet1k-resnet-34": ("imagenet/resnet/34-layers/", "resnet-34", "0000"),
    "imagenet1k-resnet-50": ("imagenet/resnet/50-layers/", "resnet-50", "0000"),
    "imagenet1k-resnet-101": ("imagenet/resnet/101-layers/", "resnet-101", "0000"),
    "imagenet1k-resnet-152": ("imagenet/resnet/152-layers/", "resnet-152", "0000"),
    "imagenet1k-resnext-50": ("imagenet/resnext/50-layers/", "resnext-50", "0000"),
    "imagenet1k-resnext-101": ("imagenet/resnext/101-layers/", "resnext-101", "0000"),
    "imagenet1k-resnext-101-64x4d": ("imagenet/resnext/101-layers/", "resnext-101-64x4d", "0000"),
    "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/", "resnet-152", "0000"),
    "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/", "resnet-152", "0000"),
    "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/", "resnet-50", "0000"),
}


def download(
    url: str,
    fname: str | None = None,
    dirname: str | None = None,
    overwrite: bool = False,
    retries: int = 5,
) -> str:
    """Download ``url`` to a file, unless it is there already.

    Parameters
    ----------
    url : str
    fname : str, optional
        The file to write; by default the URL's last path component.
    dirname : str, optional
        A folder ``fname`` is put in (created if missing); by default ``fname``'s own folder.
    overwrite : bool, default False
        Download even if the file exists.
    retries : int, default 5
        Attempts before giving up (0 still makes one).

    Returns
    -------
    str
        The file's path.

    Raises
    ------
    AssertionError
        If ``retries`` is negative.
    OSError
        If the download fails (no network, an HTTP error): the message names the URL and the
        path to place the file at by hand.
    """
    if retries < 0:
        raise AssertionError(f"Number of retries should be at least 0, got {retries}")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        _log.info("%s exists, skipping download", fname)
        return fname
    from ..gluon.utils import download as fetch

    try:
        fetch(url, path=fname, overwrite=True, retries=retries)
    except Exception as err:
        raise OSError(
            f"could not download {url} ({type(err).__name__}: {err}); without network access, "
            f"put the file at {os.path.abspath(fname)} and call again"
        ) from err
    _log.info("downloaded %s into %s successfully", url, fname)
    return fname


def download_model(
    model_name: str, dst_dir: str = "./", meta_info: dict | None = None
) -> tuple[str | None, int]:
    """Download a model's symbol and parameters (epoch 0) from data.mxnet.io.

    Parameters
    ----------
    model_name : str
        E.g. ``'imagenet1k-resnet-18'``.
    dst_dir : str, default './'
        Folder to write ``<model_name>-symbol.json`` and ``<model_name>-0000.params`` to.
    meta_info : dict, optional
        ``{model_name: {'symbol': url, 'params': url}}``, replacing the known models.

    Returns
    -------
    (str or None, int)
        The prefix ``dst_dir/model_name`` and epoch 0 for ``mx.model.load_checkpoint``;
        ``(None, 0)`` for a model ``meta_info`` does not know.
    """
    if meta_info is None:
        meta_info = {
            name: {
                "symbol": f"{_MODEL_URL}{folder}{prefix}-symbol.json",
                "params": f"{_MODEL_URL}{folder}{prefix}-{epoch}.params",
            }
            for name, (folder, prefix, epoch) in _MODELS.items()
        }
    meta_info = dict(meta_info)
    if model_name not in meta_info:
        return (None, 0)
    if not os.path.isdir(dst_dir):
        os.mkdir(dst_dir)
    meta = dict(meta_info[model_name])
    if "symbol" not in meta:
        raise AssertionError(f"download_model: no 'symbol' URL for {model_name}")
    prefix = os.path.join(dst_dir, model_name)
    download(meta["symbol"], prefix + "-symbol.json")
    if "params" not in meta:
        raise AssertionError(f"download_model: no 'params' URL for {model_name}")
    download(meta["params"], prefix + "-0000.params")
    return (prefix, 0)


def _read_mnist(label_url: str, image_url: str) -> tuple[np.ndarray, np.ndarray]:
    with gzip.open(download(label_url)) as f:
        struct.unpack(">II", f.read(8))
        label = np.frombuffer(f.read(), dtype=np.int8)
    with gzip.open(download(image_url), "rb") as f:
        _, _, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = np.frombuffer(f.read(), dtype=np.uint8).reshape(len(label), rows, cols)
    image = pixels.reshape(pixels.shape[0], 1, 28, 28).astype(np.float32) / 255
    return label, image


def get_mnist() -> dict[str, np.ndarray]:
    """MNIST as NumPy arrays, from the gzipped idx files ``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz`` and
    ``t10k-labels-idx1-ubyte.gz`` in the current folder (downloaded when missing).

    Returns
    -------
    dict
        ``train_data`` and ``test_data``: float32 images ``(n, 1, 28, 28)`` scaled to [0, 1];
        ``train_label`` and ``test_label``: int8 labels ``(n,)``.
    """
    train_lbl, train_img = _read_mnist(
        _MNIST_URL + "train-labels-idx1-ubyte.gz", _MNIST_URL + "train-images-idx3-ubyte.gz"
    )
    test_lbl, test_img = _read_mnist(
        _MNIST_URL + "t10k-labels-idx1-ubyte.gz", _MNIST_URL + "t10k-images-idx3-ubyte.gz"
    )
    return {
        "train_data": train_img,
        "train_label": train_lbl,
        "test_data": test_img,
        "test_label": test_lbl,
    }


def get_mnist_pkl() -> None:
    """Make sure ``data/mnist.pkl.gz`` exists under the current folder (downloading it)."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists("data/mnist.pkl.gz"):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data")


def _ensure_unzipped(files: tuple[str, ...], url: str) -> None:
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(f) for f in files):
        return
    archive = download(url, dirname="data")
    with zipfile.ZipFile(archive) as zf:
        zf.extractall("data")


def get_mnist_ubyte() -> None:
    """Make sure the MNIST idx files ``data/train-images-idx3-ubyte``,
    ``data/train-labels-idx1-ubyte``, ``data/t10k-images-idx3-ubyte`` and
    ``data/t10k-labels-idx1-ubyte`` exist under the current folder: if one is missing,
    ``data/mnist.zip`` (downloaded when missing) is extracted into ``data``."""
    _ensure_unzipped(
        (
            "data/train-images-idx3-ubyte",
            "data/train-labels-idx1-ubyte",
            "data/t10k-images-idx3-ubyte",
            "data/t10k-labels-idx1-ubyte",
        ),
        "http://data.mxnet.io/mxnet/data/mnist.zip",
    )


def get_cifar10() -> None:
    """Make sure CIFAR-10's ``data/cifar/train.rec``, ``test.rec``, ``train.lst`` and
    ``test.lst`` exist under the current folder: if one is missing, ``data/cifar10.zip``
    (downloaded when missing) is extracted into ``data``."""
    _ensure_unzipped(
        ("data/cifar/train.rec", "data/cifar/test.rec", "data/cifar/train.lst",
         "data/cifar/test.lst"),
        "http://data.mxnet.io/mxnet/data/cifar10.zip",
    )  # fmt: skip


def get_mnist_iterator(
    batch_size: int, input_shape: tuple[int, ...], num_parts: int = 1, part_index: int = 0
) -> tuple[MNISTIter, MNISTIter]:
    """MNIST training and validation iterators over ``data/`` (see :func:`get_mnist_ubyte`).

    Parameters
    ----------
    batch_size : int
    input_shape : tuple
        ``(1, 28, 28)`` for images, anything of another length (``(784,)``) for flat rows.
    num_parts, part_index : int
        Read only part ``part_index`` of ``num_parts`` of each set.

    Returns
    -------
    (MNISTIter, MNISTIter)
        The training iterator (shuffled) and the validation one.
    """
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    common: dict[str, Any] = dict(input_shape=input_shape, batch_size=batch_size, flat=flat,
                  num_parts=num_parts, part_index=part_index)  # fmt: skip
    train = MNISTIter(
        image="data/train-images-idx3-ubyte",
        label="data/train-labels-idx1-ubyte",
        shuffle=True,
        **common,
    )
    val = MNISTIter(
        image="data/t10k-images-idx3-ubyte", label="data/t10k-labels-idx1-ubyte", **common
    )
    return train, val


def get_zip_data(data_dir: str, url: str, data_origin_name: str) -> None:
    """Download the zip archive ``url`` into ``data_dir`` as ``data_origin_name`` and extract
    it there, unless ``data_dir/data_origin_name`` is already there (then nothing is done)."""
    archive = os.path.join(data_dir, data_origin_name)
    if os.path.exists(archive):
        return
    download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(path=data_dir)


def get_bz2_data(data_dir: str, data_name: str, url: str, data_origin_name: str) -> None:
    """Make sure ``data_dir/data_name`` exists: download the bz2 file ``url`` to
    ``data_dir/data_origin_name`` (unless it is there), decompress it into
    ``data_dir/data_name`` and remove the compressed file."""
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    archive = download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
    with bz2.BZ2File(archive, "rb") as src, open(target, "wb") as dst:
        for line in src:
            dst.write(line)
    os.remove(archive)


def get_im2rec_path(home_env: str = "MXNET_HOME") -> str:
    """The path of the ``im2rec.py`` tool (run it with ``python``; mxrs also installs it as
    the ``im2rec`` command).

    Looked for in ``$home_env/tools/im2rec.py`` and ``$home_env/../../tools/im2rec.py`` when
    the variable is set, then in mxrs's own ``tools`` package.

    Raises
    ------
    OSError
        If none of these exists.
    """
    roots = [os.environ[home_env]] if home_env in os.environ else []
    roots.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tried = []
    for root in roots:
        for path in (
            os.path.join(root, "tools", "im2rec.py"),
            os.path.join(root, "..", "..", "tools", "im2rec.py"),
        ):
            if os.path.isfile(path):
                return path
            tried.append(path)
    raise OSError(f"Could not find path to tools/im2rec.py (looked at {', '.join(tried)})")


class DummyIter(DataIter):
    """An iterator that returns the first batch of ``real_iter`` forever (for timing a model
    without the cost of reading data); it never raises ``StopIteration``.

    Parameters
    ----------
    real_iter : DataIter
        Its first batch is read on construction.
    """

    def __init__(self, real_iter: Any) -> None:
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self) -> DummyIter:
        return self

    def next(self) -> Any:
        """The first batch of the real iterator, again."""
        return self.the_batch
