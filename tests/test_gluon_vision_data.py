"""gluon.data.vision against Apache MXNet 1.9.1: CIFAR-10/100 read from binary files written
here, ImageFolderDataset, ImageListDataset, ImageRecordDataset and RecordFileDataset on images
written with OpenCV, the transforms' outputs; the random transforms' shapes, ranges and
reproducibility; DataLoader worker processes over these datasets; CIFAR's fetch when files are
missing."""

import io
import json
import os
import pickle
import random
import tarfile

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import gluon
from mxrs.base import MXNetError
from mxrs.gluon.data import DataLoader, RecordFileDataset
from mxrs.gluon.data.vision import (
    CIFAR10,
    CIFAR100,
    ImageFolderDataset,
    ImageListDataset,
    ImageRecordDataset,
    datasets,
    transforms,
)

RNG = np.random.RandomState(5)
CIFAR10_TRAIN = [f"data_batch_{i}.bin" for i in range(1, 6)]


def _cifar_records(n, label_bytes, rng):
    labels = rng.randint(0, 100 if label_bytes == 2 else 10, (n, label_bytes)).astype(np.uint8)
    pixels = rng.randint(0, 256, (n, 3072)).astype(np.uint8)
    return np.concatenate([labels, pixels], axis=1).tobytes()


def _write_cifar(root, rng=RNG):
    """CIFAR-10 and CIFAR-100 binary files with a few records each, in root/c10 and root/c100."""
    for sub, names, label_bytes in (
        ("c10", CIFAR10_TRAIN + ["test_batch.bin"], 1),
        ("c100", ["train.bin", "test.bin"], 2),
    ):
        os.makedirs(root / sub, exist_ok=True)
        for k, name in enumerate(names):
            (root / sub / name).write_bytes(_cifar_records(3 + k, label_bytes, rng))


def _write_images(root, rng=RNG):
    """A class folder tree of PNG (lossless) and JPEG images, a stray file, a .lst file and a
    .rec/.idx pair holding the PNGs."""
    images = {}
    for cls in ("bird", "cat"):
        os.makedirs(root / "tree" / cls, exist_ok=True)
        for i in range(3):
            img = rng.randint(0, 256, (9 + i, 13, 3)).astype(np.uint8)
            ext = ".jpg" if i == 2 else ".png"
            path = root / "tree" / cls / f"{i}{ext}"
            assert cv2.imwrite(str(path), img)
            images[f"{cls}/{i}{ext}"] = img
    (root / "list.lst").write_text(
        "0\t1\t0\ttree/cat/0.png\n5\t0\t2.5\ttree/bird/1.png\n7\t1\t1\ttree/cat/2.jpg\n"
    )
    rec = mx.recordio.MXIndexedRecordIO(str(root / "data.idx"), str(root / "data.rec"), "w")
    for i, name in enumerate(sorted(n for n in images if n.endswith(".png"))):
        label = float(i % 2) if i < 3 else [float(i), 0.5]
        header = mx.recordio.IRHeader(0, label, i, 0)
        rec.write_idx(i, mx.recordio.pack_img(header, images[name], quality=3, img_fmt=".png"))
    rec.close()
    return images


#: Run under both libraries (``mx`` either one); ``root`` is the folder of the files above.
BODY = """
import random
from mxnet_or_mxrs_vision import datasets as D, transforms as T
root = str(inputs["root"])
for name, ds in [
    ("c10_train", D.CIFAR10(root + "/c10")), ("c10_test", D.CIFAR10(root + "/c10", train=False)),
    ("c100_coarse", D.CIFAR100(root + "/c100")),
    ("c100_fine", D.CIFAR100(root + "/c100", fine_label=True, train=False)),
]:
    arrays[name + ".len"] = np.array(len(ds))
    arrays[name + ".data"] = np.stack([ds[i][0].asnumpy() for i in range(len(ds))])
    arrays[name + ".label"] = np.array([ds[i][1] for i in range(len(ds))])
    arrays[name + ".label_dtype"] = np.array(str(np.asarray(ds[0][1]).dtype))
folder = D.ImageFolderDataset(root + "/tree")
arrays["folder.synsets"] = np.array(folder.synsets)
arrays["folder.files"] = np.array([os.path.relpath(f, root) for f, _ in folder.items])
arrays["folder.labels"] = np.array([l for _, l in folder.items])
for i in range(len(folder)):
    arrays[f"folder.{i}"] = folder[i][0].asnumpy()
arrays["folder_gray.0"] = D.ImageFolderDataset(root + "/tree", flag=0)[0][0].asnumpy()
rec = D.ImageRecordDataset(root + "/data.rec")
arrays["rec.len"] = np.array(len(rec))
for i in range(len(rec)):
    arrays[f"rec.{i}"] = rec[i][0].asnumpy()
    arrays[f"rec.{i}.label"] = np.asarray(rec[i][1], dtype=np.float64)
raw = mx.gluon.data.RecordFileDataset(root + "/data.rec")
arrays["raw.1"] = np.frombuffer(raw[1], dtype=np.uint8)
img = mx.nd.array(inputs["img"], dtype="uint8")
imgf = mx.nd.array(inputs["img"], dtype="float32")
for dt, x in (("uint8", img), ("float32", imgf)):
    arrays[f"Resize.{dt}"] = T.Resize(20)(x).asnumpy()
    arrays[f"Resize_keep.{dt}"] = T.Resize(20, keep_ratio=True)(x).asnumpy()
    arrays[f"Resize_wh.{dt}"] = T.Resize((30, 12), interpolation=0)(x).asnumpy()
    arrays[f"CenterCrop.{dt}"] = T.CenterCrop(10)(x).asnumpy()
    arrays[f"CenterCrop_up.{dt}"] = T.CenterCrop((60, 40))(x).asnumpy()
    arrays[f"CenterCrop_cubic.{dt}"] = T.CenterCrop((20, 16), interpolation=2)(x).asnumpy()
    arrays[f"CropResize.{dt}"] = T.CropResize(2, 3, 10, 8)(x).asnumpy()
    arrays[f"CropResize_size.{dt}"] = T.CropResize(2, 3, 10, 8, (5, 6), 1)(x).asnumpy()
    batch = mx.nd.stack(x, x * 0 + 7)
    arrays[f"Resize4.{dt}"] = T.Resize((7, 5))(batch).asnumpy()
    arrays[f"CropResize4.{dt}"] = T.CropResize(1, 1, 4, 3)(batch).asnumpy()
pipe = T.Compose([T.Resize(24), T.CenterCrop(16), T.ToTensor(), T.Normalize((0.4, 0.5, 0.6),
                                                                            (0.2, 0.2, 0.3))])
arrays["Compose"] = pipe(img).asnumpy()
arrays["Compose.len"] = np.array(len(pipe))
arrays["Cast"] = T.Cast("float16")(img).asnumpy()
arrays["ToTensor4"] = T.ToTensor()(mx.nd.stack(img, img)).asnumpy()
random.seed(3)
arrays["RandomResizedCrop"] = np.stack(
    [T.RandomResizedCrop((12, 10), scale=(0.2, 0.9))(img).asnumpy() for _ in range(5)])
random.seed(4)
arrays["RandomApply"] = np.array(
    [T.RandomApply(T.Resize(8), 0.3)(img).shape[0] for _ in range(20)])
np.random.seed(5)
arrays["RandomRotation"] = T.RandomRotation((-30, 30), rotate_with_proba=0.5)(
    T.ToTensor()(img)).asnumpy()
arrays["Rotate"] = T.Rotate(90.0)(T.ToTensor()(img)).asnumpy()
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("vision")
    _write_cifar(root)
    images = _write_images(root)
    return root, images


@pytest.fixture(scope="module")
def both(files, tmp_path_factory):
    """mxrs's and MXNet 1.9.1's arrays of :data:`BODY`."""
    root, _ = files
    img = np.random.RandomState(2).randint(0, 256, (27, 35, 3)).astype(np.uint8)
    inputs = {"root": np.array(str(root)), "img": img}
    prelude = (
        "import os\nimport mxnet as mx\nimport sys, types\n"
        "import mxnet.gluon.data.vision.datasets as _d\n"
        "_d.check_sha1 = lambda *a: True  # the files here are not the published ones\n"
        "sys.modules['mxnet_or_mxrs_vision'] = mx.gluon.data.vision\n"
    )
    _, want = mxnet_ref.run(tmp_path_factory.mktemp("ref"), prelude + BODY, **inputs)
    import sys

    sys.modules["mxnet_or_mxrs_vision"] = gluon.data.vision
    got: dict = {}
    space = {"mx": mx, "np": np, "os": os, "json": json, "inputs": inputs, "arrays": got}
    exec(BODY, space)
    assert sorted(got) == sorted(want), set(got) ^ set(want)
    return got, want


def _compare(both, prefix, atol=0.0):
    got, want = both
    keys = [k for k in want if k.startswith(prefix)]
    assert keys, prefix
    for key in keys:
        assert got[key].shape == want[key].shape, key
        if want[key].dtype.kind in "fiu":
            assert got[key].dtype == want[key].dtype, key
            np.testing.assert_allclose(got[key], want[key], rtol=0, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.mark.parametrize("prefix", ["c10_train", "c10_test", "c100_coarse", "c100_fine"])
def test_cifar_matches_mxnet(both, prefix):
    _compare(both, prefix)


@pytest.mark.parametrize("prefix", ["folder", "rec", "raw"])
def test_image_datasets_match_mxnet(both, prefix):
    _compare(both, prefix)


@pytest.mark.parametrize(
    "prefix",
    ["Resize.uint8", "Resize_keep.uint8", "Resize_wh.", "Resize4.uint8", "CenterCrop",
     "CropResize.", "CropResize_size.uint8", "CropResize4.", "Compose", "Cast", "ToTensor4",
     "RandomResizedCrop", "RandomApply"],
)  # fmt: skip
def test_transforms_match_mxnet(both, prefix):
    _compare(both, prefix)


def test_float_resizes_match_mxnet_within_rounding(both):
    got, want = both
    for key in ("Resize.float32", "Resize_keep.float32", "Resize4.float32",
                "CropResize_size.float32"):  # fmt: skip
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=2e-3, err_msg=key)


def test_rotations_match_mxnet(both):
    _compare(both, "RandomRotation", atol=1e-6)
    _compare(both, "Rotate", atol=1e-6)


# ------------------------------------------------------------------ CIFAR
def test_cifar_samples_and_transform(files):
    root, _ = files
    train = CIFAR10(root=str(root / "c10"))
    assert len(train) == sum(3 + k for k in range(5))
    image, label = train[4]
    assert isinstance(image, mx.nd.NDArray) and image.shape == (32, 32, 3)
    assert image.dtype == np.uint8 and image.context == mx.cpu(0)
    assert isinstance(label, np.int32)
    raw = np.frombuffer((root / "c10" / "data_batch_2.bin").read_bytes(), np.uint8)
    record = raw.reshape(-1, 3073)[1]  # sample 4 is the second record of the second file
    assert int(label) == record[0]
    np.testing.assert_array_equal(image.asnumpy(), record[1:].reshape(3, 32, 32).transpose(1, 2, 0))
    ds = CIFAR10(root=str(root / "c10"), train=False, transform=lambda x, y: (x.shape, int(y) * 2))
    assert ds[0][0] == (32, 32, 3) and ds[0][1] % 2 == 0
    fine = CIFAR100(root=str(root / "c100"), fine_label=True)
    coarse = CIFAR100(root=str(root / "c100"))
    raw = np.frombuffer((root / "c100" / "train.bin").read_bytes(), np.uint8).reshape(-1, 3074)
    assert [int(fine[i][1]) for i in range(3)] == raw[:, 1].tolist()
    assert [int(coarse[i][1]) for i in range(3)] == raw[:, 0].tolist()


def test_cifar_rejects_a_file_that_is_not_whole_records(tmp_path):
    (tmp_path / "test_batch.bin").write_bytes(bytes(3073 + 5))
    with pytest.raises(MXNetError, match="not a whole number of 3073-byte CIFAR10 records"):
        CIFAR10(root=str(tmp_path), train=False)


def _archive(tmp_path, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    path = tmp_path / "served.tar.gz"
    path.write_bytes(buf.getvalue())
    return path


def test_missing_cifar_files_are_fetched_and_checked(tmp_path, monkeypatch):
    """Only when files are missing: the archive is downloaded into root, the files taken out of
    it wherever they sit, checked against their SHA-1, and the archive removed."""
    rng = np.random.RandomState(0)
    payloads = {"train.bin": _cifar_records(2, 2, rng), "test.bin": _cifar_records(1, 2, rng)}
    served = _archive(tmp_path, {f"cifar-100-binary/{k}": v for k, v in payloads.items()})
    import hashlib

    sha1 = {k: hashlib.sha1(v).hexdigest() for k, v in payloads.items()}
    monkeypatch.setattr(datasets, "_CIFAR_SHA1", {**datasets._CIFAR_SHA1, **sha1})
    calls = []

    def fake_download(url, path=None, **kwargs):
        calls.append(url)
        target = os.path.join(path, url.split("/")[-1])
        with open(target, "wb") as f:
            f.write(served.read_bytes())
        return target

    monkeypatch.setattr(datasets, "download", fake_download)
    root = tmp_path / "new" / "cifar100"
    ds = CIFAR100(root=str(root), fine_label=True, train=False)
    assert len(ds) == 1 and calls == [datasets._CIFAR_URLS["cifar100"][0]]
    assert sorted(os.listdir(root)) == ["test.bin", "train.bin"]
    assert len(CIFAR100(root=str(root))) == 2 and len(calls) == 1  # present: no fetch
    # a file with another SHA-1 in the archive is an error
    monkeypatch.setattr(datasets, "_CIFAR_SHA1", {**datasets._CIFAR_SHA1, "test.bin": "0" * 40})
    with pytest.raises(MXNetError, match="test.bin missing or with another SHA-1"):
        CIFAR100(root=str(tmp_path / "other"))


def test_missing_cifar_files_without_a_network_say_what_to_put_where(tmp_path, monkeypatch):
    def offline(url, path=None, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(datasets, "download", offline)
    (tmp_path / "data_batch_1.bin").write_bytes(bytes(3073))
    with pytest.raises(MXNetError) as info:
        CIFAR10(root=str(tmp_path))
    msg = str(info.value)
    assert "missing data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, data_batch_5.bin" in msg
    assert f"in {tmp_path}" in msg and "no route to host" in msg
    assert "cifar-10-binary.tar.gz" in msg


def test_cifar_default_root_follows_mxrs_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MXRS_HOME", str(tmp_path))
    _write_cifar(tmp_path / "datasets", np.random.RandomState(1))
    os.rename(tmp_path / "datasets" / "c10", tmp_path / "datasets" / "cifar10")
    assert len(CIFAR10(train=False)) == 8


# ------------------------------------------------------------------ image datasets
def test_image_folder_dataset(files, tmp_path):
    root, images = files
    ds = ImageFolderDataset(str(root / "tree"))
    assert ds.synsets == ["bird", "cat"] and len(ds) == 6
    assert [os.path.basename(f) for f, _ in ds.items] == ["0.png", "1.png", "2.jpg"] * 2
    img, label = ds[4]
    assert label == 1 and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), images["cat/1.png"][:, :, ::-1])  # RGB
    gray = ImageFolderDataset(str(root / "tree"), flag=0, transform=lambda x, y: (x.shape, y))
    assert gray[0] == ((9, 13, 1), 0)
    clone = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(clone[4][0].asnumpy(), img.asnumpy())
    (tmp_path / "a").mkdir()
    cv2.imwrite(str(tmp_path / "a" / "x.png"), np.zeros((2, 2, 3), np.uint8))
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    (tmp_path / "stray.png").write_bytes(b"")
    with pytest.warns(UserWarning) as record:
        odd = ImageFolderDataset(str(tmp_path))
    messages = sorted(str(w.message) for w in record)
    assert "Ignoring" in messages[0] and "notes.txt of type .txt" in messages[0]
    assert messages[1].endswith("stray.png, which is not a directory.")
    assert len(odd) == 1 and odd.synsets == ["a"]


def test_image_list_dataset(files):
    root, images = files
    ds = ImageListDataset(str(root), "list.lst")
    assert len(ds) == 3
    img, label = ds[1]
    np.testing.assert_array_equal(img.asnumpy(), images["bird/1.png"][:, :, ::-1])
    assert label.dtype == np.float32 and label.asnumpy().tolist() == [0.0, 2.5]
    entries = [[1, "cat/0.png"], [2, 3, "bird/0.png"], [[4, 5], "cat/1.png"]]
    listed = ImageListDataset(str(root / "tree"), entries, flag=0)  # paths relative to root
    assert [listed[i][1].asnumpy().tolist() for i in range(3)] == [[1.0], [2.0, 3.0], [4.0, 5.0]]
    assert listed[2][0].shape == (10, 13, 1)
    assert listed.items[0][0] == os.path.join(str(root / "tree"), "cat/0.png")
    with pytest.raises(ValueError, match="imglist must be filename or list"):
        ImageListDataset(str(root), None)


def test_record_dataset_threads_read_whole_records(tmp_path):
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "t.idx"), str(tmp_path / "t.rec"), "w")
    for i in range(64):
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), bytes(500 + i)))
    rec.close()
    ds = RecordFileDataset(str(tmp_path / "t.rec")).transform(
        lambda r: np.float32(mx.recordio.unpack(r)[0].label)
    )
    for _ in range(3):
        batches = DataLoader(ds, batch_size=2, num_workers=4, thread_pool=True)
        assert np.concatenate([b.asnumpy() for b in batches]).tolist() == list(range(64))


def test_record_datasets(files):
    root, images = files
    raw = RecordFileDataset(str(root / "data.rec"))
    assert len(raw) == 4 and raw.idx_file == str(root / "data.idx")
    header, payload = mx.recordio.unpack(raw[2])
    assert header.id == 2 and header.label == 0.0
    ds = ImageRecordDataset(str(root / "data.rec"))
    img, label = ds[3]
    np.testing.assert_array_equal(img.asnumpy(), images["cat/1.png"][:, :, ::-1])
    np.testing.assert_array_equal(label, [3.0, 0.5])
    gray = ImageRecordDataset(str(root / "data.rec"), flag=0, transform=lambda x, y: (x, y))
    assert gray[0][0].shape == (9, 13, 1)
    clone = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(clone[3][0].asnumpy(), img.asnumpy())


def test_dataloader_workers_over_the_vision_datasets(files):
    """Two worker processes give the batches one process gives (an OpenCV resize in the parent
    first, so its thread pool exists before the fork)."""
    root, _ = files
    mx.nd.image.resize(mx.nd.zeros((300, 300, 3), dtype="uint8"), (200, 100)).wait_to_read()
    pipe = transforms.Compose(
        [transforms.Resize((12, 10)), transforms.ToTensor(), transforms.Normalize(0.5, 0.25)]
    )
    cases = [
        (ImageFolderDataset(str(root / "tree")).transform_first(pipe), 4),
        (ImageRecordDataset(str(root / "data.rec")).transform_first(pipe), 3),
        (CIFAR10(root=str(root / "c10")).transform_first(transforms.ToTensor()), 4),
        (ImageListDataset(str(root), "list.lst").transform_first(pipe), 2),
    ]
    for ds, batch in cases:
        one = [[a.asnumpy() for a in b] for b in DataLoader(ds, batch_size=batch)]
        for kwargs in ({"num_workers": 2}, {"num_workers": 3, "thread_pool": True}):
            two = [[a.asnumpy() for a in b] for b in DataLoader(ds, batch_size=batch, **kwargs)]
            assert len(one) == len(two) == -(-len(ds) // batch)
            for b1, b2 in zip(one, two, strict=True):
                for a1, a2 in zip(b1, b2, strict=True):
                    np.testing.assert_array_equal(a1, a2)


# ------------------------------------------------------------------ transforms
def _img(shape=(12, 16, 3), seed=0):
    return mx.nd.array(np.random.RandomState(seed).randint(0, 256, shape), dtype="uint8")


def test_transforms_are_blocks_and_compose_groups_hybrid_runs():
    hybrid = [transforms.Resize(4), transforms.ToTensor(), transforms.Normalize(0.5, 0.2)]
    assert all(isinstance(t, gluon.HybridBlock) for t in hybrid)
    for plain in (transforms.CenterCrop(3), transforms.RandomResizedCrop(3), transforms.Rotate(9)):
        assert isinstance(plain, gluon.Block) and not isinstance(plain, gluon.HybridBlock)
    t = transforms.Compose([transforms.CenterCrop(8), *hybrid, lambda x: x * 2])
    assert len(t) == 3 and isinstance(t[1], gluon.nn.HybridSequential) and len(t[1]) == 3
    out = t(_img())
    assert out.shape == (3, 4, 4) and out.dtype == np.float32
    net = gluon.nn.HybridSequential()
    net.add(transforms.Resize((6, 5)), transforms.ToTensor())
    net.hybridize()
    assert net(_img()).shape == (3, 5, 6)
    sym = net(mx.sym.var("data"))
    assert sym.infer_shape(data=(12, 16, 3))[1] == [(3, 5, 6)]
    hc = transforms.HybridCompose([transforms.Resize(5), transforms.RandomFlipLeftRight()])
    assert hc(_img()).shape == (5, 5, 3)
    with pytest.raises(ValueError, match="is not a HybridBlock"):
        transforms.HybridCompose([transforms.CenterCrop(3)])
    assert transforms.ToTensor()(np.zeros((2, 2, 1), np.uint8)).shape == (1, 2, 2)  # NumPy in


@pytest.mark.parametrize(
    "make",
    [
        lambda: transforms.RandomFlipLeftRight(),
        lambda: transforms.RandomFlipTopBottom(),
        lambda: transforms.RandomBrightness(0.5),
        lambda: transforms.RandomContrast(0.5),
        lambda: transforms.RandomSaturation(0.5),
        lambda: transforms.RandomHue(0.2),
        lambda: transforms.RandomColorJitter(0.3, 0.3, 0.3, 0.1),
        lambda: transforms.RandomLighting(0.3),
        lambda: transforms.RandomCrop(8, pad=2),
        lambda: transforms.RandomGray(0.5),
        lambda: transforms.HybridRandomApply(transforms.RandomBrightness(0.9), 0.5),
    ],
)
def test_random_transforms_repeat_under_a_seed(make):
    t, x = make(), _img()
    mx.random.seed(21)
    first = [t(x).asnumpy() for _ in range(6)]
    mx.random.seed(21)
    again = [t(x).asnumpy() for _ in range(6)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
        assert 0 <= a.min() and a.max() <= 255
    assert any(not np.array_equal(a, first[0]) for a in first[1:])


def test_random_crop_pads_then_crops():
    x = _img((4, 5, 3))
    out = transforms.RandomCrop((5, 4), pad=1, pad_value=9)(x).asnumpy()
    assert out.shape == (4, 5, 3)
    padded = np.full((6, 7, 3), 9, np.uint8)
    padded[1:5, 1:6] = x.asnumpy()
    windows = [padded[r : r + 4, c : c + 5] for r in range(3) for c in range(3)]
    assert any(np.array_equal(out, w) for w in windows)
    batch = transforms.RandomCrop(3, pad=(0, 0, 1, 1))(mx.nd.stack(x, x))
    assert batch.shape == (2, 3, 3, 3)


def test_random_gray_and_random_apply():
    x = _img()
    gray = transforms.RandomGray(p=1.0)(x).asnumpy()
    rgb = x.asnumpy().astype(np.float32)
    luma = rgb[..., 0] * 0.2989 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114
    np.testing.assert_allclose(gray, np.repeat(luma[..., None], 3, axis=2), rtol=1e-5)
    np.testing.assert_array_equal(transforms.RandomGray(p=0.0)(x).asnumpy(), rgb)
    resize = transforms.Resize(5)
    assert transforms.RandomApply(resize, p=1.0)(x).shape == (5, 5, 3)
    assert transforms.RandomApply(resize, p=0.0)(x) is x
    assert transforms.HybridRandomApply(resize, p=0.0)(x) is x
    with pytest.raises(ValueError, match="is not a HybridBlock"):
        transforms.HybridRandomApply(transforms.CenterCrop(3))
    random.seed(0)
    shapes = [transforms.RandomApply(resize, 0.5)(x).shape[0] for _ in range(400)]
    assert 150 < shapes.count(5) < 250


def test_transform_errors():
    with pytest.raises(TypeError, match="only supports float32"):
        transforms.Rotate(10)(mx.nd.ones((3, 4, 4), dtype="uint8"))
    with pytest.raises(ValueError, match="ordered tuple"):
        transforms.RandomRotation((10, -10))
    with pytest.raises(ValueError, match="between 0 and 1"):
        transforms.RandomRotation((-10, 10), rotate_with_proba=1.5)
    with pytest.raises(MXNetError, match="greater than 0"):
        transforms.Resize(-3, keep_ratio=True)(_img())
    with pytest.raises(MXNetError, match="input width"):
        transforms.CropResize(10, 0, 10, 2)(_img())
    with pytest.raises(MXNetError, match="pad must be one number or"):
        transforms.RandomCrop(3, pad=(1, 2))
    with pytest.raises(MXNetError, match="no symbolic form"):
        transforms.HybridRandomApply(transforms.Resize(3))(mx.sym.var("data"))
