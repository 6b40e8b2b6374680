"""mx.io.ImageRecordIter: batches equal to MXNet 1.9.1's on the same .rec without random
augmentation (decode, resize, crop, pad, mirror, normalisation, dtypes, labels, image lists,
mean images), its epochs, last batches and worker parts; random augmentations by shape,
range and seeding; errors from the worker threads; shutting the threads down."""

import gc
import threading

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

#: (height, width) of the test images: larger and smaller than the crops, both orientations
SIZES = [(40, 50), (50, 40), (20, 30), (33, 33), (64, 48), (12, 40), (70, 70), (25, 60), (30, 31)]

#: ImageRecordIter arguments whose batches must equal MXNet's (no random augmentation)
CONFIGS = [
    dict(data_shape=(3, 24, 24)),
    dict(data_shape=(3, 24, 24), resize=28),
    dict(
        data_shape=(3, 24, 20),
        resize=30,
        mean_r=123.68,
        mean_g=116.28,
        mean_b=103.53,
        std_r=58.4,
        std_g=57.1,
        std_b=57.4,
        scale=0.5,
    ),
    dict(data_shape=(1, 16, 16), resize=20),
    dict(data_shape=(3, 24, 24), resize=16, inter_method=3),
    dict(data_shape=(3, 24, 24), resize=20, dtype="uint8"),
    dict(data_shape=(3, 24, 24), resize=20, dtype="int8", mean_r=100, mean_g=50.5, mean_b=10),
    dict(data_shape=(3, 24, 24), pad=4, fill_value=7),
    dict(data_shape=(3, 24, 24), mirror=True, mean_r=10, std_g=2),
    dict(data_shape=(3, 24, 24), resize=20, inter_method=9),
    dict(data_shape=(3, 24, 24), resize=26, inter_method=0),
    dict(data_shape=(3, 24, 24), resize=26, inter_method=4),
]

_MXNET_SCRIPT = """
import os
import mxnet as mx
CONFIGS = {configs!r}

def batches(it):
    return [b for b in it]

def data(it):
    return np.concatenate([b.data[0].asnumpy() for b in it])

for k, cfg in enumerate(CONFIGS):
    arrays['c%d' % k] = data(mx.io.ImageRecordIter(
        path_imgrec='img.rec', batch_size=4, preprocess_threads=2, **cfg))
arrays['u8'] = data(mx.io.ImageRecordUInt8Iter(
    path_imgrec='img.rec', batch_size=4, data_shape=(3, 20, 20), resize=22))
arrays['rgba'] = data(mx.io.ImageRecordIter(
    path_imgrec='rgba.rec', batch_size=2, data_shape=(4, 16, 16), mean_a=5))
it = mx.io.ImageRecordIter(path_imgrec='img.rec', batch_size=4, data_shape=(3, 16, 16),
                           path_imglist='img.lst', label_width=3)
arrays['lst_labels'] = np.concatenate([b.label[0].asnumpy() for b in it])
it = mx.io.ImageRecordIter(path_imgrec='multi.rec', batch_size=4, data_shape=(3, 16, 16),
                           label_width=2)
arrays['multi_labels'] = np.concatenate([b.label[0].asnumpy() for b in it])
arrays['multi_data'] = data(mx.io.ImageRecordIter(
    path_imgrec='multi.rec', batch_size=4, data_shape=(3, 16, 16), label_width=2))

it = mx.io.ImageRecordIter(path_imgrec='img.rec', batch_size=4, data_shape=(3, 24, 24),
                           mean_img='mean_mx.bin')
arrays['with_mean'] = data(it)
arrays['mean'] = mx.nd.load('mean_mx.bin')['mean_img'].asnumpy()

epochs = {{}}
for name, kw in (('plain', {{}}), ('idx', dict(path_imgidx='img.idx'))):
    it = mx.io.ImageRecordIter(path_imgrec='img.rec', batch_size=4, data_shape=(3, 8, 8), **kw)
    runs = []
    for _ in range(3):
        runs.append([[b.label[0].asnumpy().astype(int).tolist(), b.pad] for b in it])
        it.reset()
    epochs[name] = runs
parts = {{}}
for name, kw in (('plain', {{}}), ('idx', dict(path_imgidx='img.idx'))):
    for n in (2, 3, 4):
        for k in range(n):
            try:
                it = mx.io.ImageRecordIter(path_imgrec='img.rec', batch_size=1,
                                           data_shape=(3, 8, 8), num_parts=n, part_index=k, **kw)
            except StopIteration:  # MXNet's way of saying the part is empty
                parts['%s %d %d' % (name, n, k)] = []
                continue
            parts['%s %d %d' % (name, n, k)] = [int(b.label[0].asnumpy()[0]) for b in it]
it = mx.io.ImageRecordIter(path_imgrec='img.rec', batch_size=1, data_shape=(3, 8, 8))
result = dict(epochs=epochs, parts=parts,
              provide=[list(d.shape) for d in it.provide_data + it.provide_label])
"""


def _image(rng, h, w, channels=3):
    base = rng.integers(0, 256, (h // 4 + 1, w // 4 + 1, channels), dtype=np.uint8)
    return cv2.resize(base, (w, h), interpolation=cv2.INTER_LINEAR)


def _encode(img, fmt):
    params = [cv2.IMWRITE_JPEG_QUALITY, 90] if fmt == ".jpg" else []
    ok, buf = cv2.imencode(fmt, img, params)
    assert ok
    return buf.tobytes()


def _write_rec(folder, name, payloads, headers):
    rec = mx.recordio.MXIndexedRecordIO(
        str(folder / f"{name}.idx"), str(folder / f"{name}.rec"), "w"
    )
    for i, (header, payload) in enumerate(zip(headers, payloads, strict=True)):
        rec.write_idx(i, mx.recordio.pack(header, payload))
    rec.close()
    return str(folder / f"{name}.rec")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The test records (written by mxrs) and MXNet 1.9.1's batches of them."""
    folder = tmp_path_factory.mktemp("image_record_iter")
    rng = np.random.default_rng(1)
    images = [_image(rng, h, w) for h, w in SIZES]
    payloads = [_encode(img, ".png" if i % 2 else ".jpg") for i, img in enumerate(images)]
    headers = [mx.recordio.IRHeader(0, float(i), 100 + i, 0) for i in range(len(images))]
    _write_rec(folder, "img", payloads, headers)
    with open(folder / "img.lst", "w") as f:
        for i in range(len(images)):
            f.write(f"{100 + i}\t{2 * i}\t{3 * i}\t{4 * i}\timg{i}.jpg\n")
    multi = [mx.recordio.IRHeader(0, [i, -i], i, 0) for i in range(len(images))]
    _write_rec(folder, "multi", payloads, multi)
    rgba = [_encode(_image(rng, 20, 18 + i, 4), ".png") for i in range(4)]
    _write_rec(folder, "rgba", rgba, [(0, float(i), i, 0) for i in range(4)])
    result, arrays = mxnet_ref.run(folder, _MXNET_SCRIPT.format(configs=CONFIGS))
    return folder, result, arrays


def _all(it):
    return [b for b in it]


def _data(it):
    return np.concatenate([b.data[0].asnumpy() for b in it])


def _tolerance(cfg):
    """One step of uint8 in the output's units (OpenCV's rounding may differ by one)."""
    stds = [cfg.get(f"std_{c}", 1.0) for c in "rgb"]
    return cfg.get("scale", 1.0) / min(stds) + 1e-4


@pytest.mark.parametrize("k", range(len(CONFIGS)))
def test_batches_equal_mxnet(data, k):
    folder, _, want = data
    cfg = CONFIGS[k]
    it = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "img.rec"), batch_size=4, preprocess_threads=2, **cfg
    )
    got = _data(it)
    ref = want[f"c{k}"]
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(
        got.astype(np.float64), ref.astype(np.float64), rtol=0, atol=_tolerance(cfg), err_msg=cfg
    )


def test_uint8_rgba_labels_and_mean_image_equal_mxnet(data):
    folder, _, want = data
    u8 = mx.io.ImageRecordUInt8Iter(
        path_imgrec=str(folder / "img.rec"), batch_size=4, data_shape=(3, 20, 20), resize=22
    )
    assert u8.provide_data[0].dtype == np.uint8
    got = _data(u8)
    assert got.dtype == np.uint8
    np.testing.assert_allclose(got.astype(int), want["u8"].astype(int), atol=1)
    rgba = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "rgba.rec"), batch_size=2, data_shape=(4, 16, 16), mean_a=5
    )
    np.testing.assert_allclose(_data(rgba), want["rgba"], atol=1)

    lst = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "img.rec"),
        batch_size=4,
        data_shape=(3, 16, 16),
        path_imglist=str(folder / "img.lst"),
        label_width=3,
    )
    assert lst.provide_label[0].shape == (4, 3)
    np.testing.assert_array_equal(
        np.concatenate([b.label[0].asnumpy() for b in lst]), want["lst_labels"]
    )
    multi = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "multi.rec"), batch_size=4, data_shape=(3, 16, 16), label_width=2
    )
    batches = _all(multi)
    np.testing.assert_array_equal(
        np.concatenate([b.label[0].asnumpy() for b in batches]), want["multi_labels"]
    )
    np.testing.assert_allclose(
        np.concatenate([b.data[0].asnumpy() for b in batches]), want["multi_data"], atol=1
    )

    # the mean image: computed over the data and saved when missing, then subtracted
    mean_path = folder / "mean_rs.bin"
    it = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "img.rec"),
        batch_size=4,
        data_shape=(3, 24, 24),
        mean_img=str(mean_path),
    )
    assert mean_path.exists()
    np.testing.assert_allclose(
        mx.nd.load(str(mean_path))["mean_img"].asnumpy(), want["mean"], atol=0.2
    )
    np.testing.assert_allclose(_data(it), want["with_mean"], atol=1.2)
    # read back from the file MXNet saved
    it = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "img.rec"),
        batch_size=4,
        data_shape=(3, 24, 24),
        mean_img=str(folder / "mean_mx.bin"),
    )
    np.testing.assert_allclose(_data(it), want["with_mean"], atol=1e-3)


def test_epochs_and_round_batch_equal_mxnet(data):
    """With round_batch the last batch is completed from the start (pad counts those) and the
    next epoch starts after them, as MXNet does."""
    folder, result, _ = data
    for name, kw in (("plain", {}), ("idx", dict(path_imgidx=str(folder / "img.idx")))):
        it = mx.io.ImageRecordIter(
            path_imgrec=str(folder / "img.rec"), batch_size=4, data_shape=(3, 8, 8), **kw
        )
        runs = []
        for _ in range(3):
            runs.append([[b.label[0].asnumpy().astype(int).tolist(), b.pad] for b in it])
            it.reset()
        want = result["epochs"][name]
        # MXNet leaves the previous pad on a full last batch now and then; compare the labels
        assert [[b[0] for b in r] for r in runs] == [[b[0] for b in r] for r in want], name
        assert runs[0][-1][1] == want[0][-1][1] == 3
        assert all(b[1] == 0 for r in runs[1:] for b in r[:-1])


def test_parts_equal_mxnet(data):
    folder, result, _ = data
    for name, kw in (("plain", {}), ("idx", dict(path_imgidx=str(folder / "img.idx")))):
        for n in (2, 3, 4):
            for k in range(n):
                it = mx.io.ImageRecordIter(
                    path_imgrec=str(folder / "img.rec"),
                    batch_size=1,
                    data_shape=(3, 8, 8),
                    num_parts=n,
                    part_index=k,
                    **kw,
                )
                labels = [int(b.label[0].asnumpy()[0]) for b in it]
                assert labels == result["parts"][f"{name} {n} {k}"], (name, n, k)
    assert result["provide"] == [[1, 3, 8, 8], [1]]


def test_without_round_batch_pad_counts_empty_slots(data):
    folder, _, _ = data
    it = mx.io.ImageRecordIter(
        path_imgrec=str(folder / "img.rec"), batch_size=4, data_shape=(3, 8, 8), round_batch=False
    )
    for _ in range(2):
        batches = _all(it)
        assert [b.pad for b in batches] == [0, 0, 3]
        last = batches[-1]
        assert last.label[0].asnumpy().tolist() == [8, 0, 0, 0]
        assert not last.data[0].asnumpy()[1:].any()
        assert last.index.tolist() == [108, 0, 0, 0]
        it.reset()
    assert batches[0].index.tolist() == [100, 101, 102, 103]


def test_random_augmentations_shapes_ranges_and_seeds(data):
    folder, _, _ = data
    rec = str(folder / "img.rec")
    aug = dict(
        path_imgrec=rec,
        batch_size=3,
        data_shape=(3, 20, 18),
        rand_crop=True,
        rand_mirror=True,
        max_rotate_angle=15,
        max_shear_ratio=0.2,
        max_aspect_ratio=0.25,
        min_random_scale=0.8,
        max_random_scale=1.2,
        brightness=0.3,
        contrast=0.3,
        saturation=0.3,
        pca_noise=0.1,
        random_h=10,
        random_s=20,
        random_l=20,
        max_random_contrast=0.2,
        max_random_illumination=10,
        inter_method=10,
        shuffle=True,
        preprocess_threads=3,
    )
    first = mx.io.ImageRecordIter(seed=5, **aug)
    a = _all(first)
    assert [b.data[0].shape for b in a] == [(3, 3, 20, 18)] * 3
    values = np.concatenate([b.data[0].asnumpy() for b in a])
    assert values.min() >= -40 and values.max() <= 300 and values.std() > 10
    assert sorted(np.concatenate([b.label[0].asnumpy() for b in a]).tolist()) == list(range(9))
    again = _data(mx.io.ImageRecordIter(seed=5, **aug))
    np.testing.assert_array_equal(values, again)
    other = _data(mx.io.ImageRecordIter(seed=6, **aug))
    assert not np.array_equal(values, other)
    first.reset()
    assert not np.array_equal(values, _data(first))  # a new epoch draws anew

    fixed = dict(aug, shuffle=False, seed_aug=3)
    it = mx.io.ImageRecordIter(**fixed)
    one = _data(it)
    it.reset()
    np.testing.assert_array_equal(one, _data(it))  # seed_aug: the same every epoch
    assert not np.array_equal(one, _data(mx.io.ImageRecordIter(**dict(fixed, seed_aug=4))))

    for extra in (
        dict(
            random_resized_crop=True,
            min_random_area=0.3,
            max_aspect_ratio=1.3,
            min_aspect_ratio=0.75,
        ),
        dict(max_crop_size=12, min_crop_size=8, rand_crop=True),
        dict(rotate=30, fill_value=0, pad=2),
        dict(max_img_size=30, min_img_size=10, max_random_scale=1.5),
    ):
        it = mx.io.ImageRecordIter(
            path_imgrec=rec, batch_size=3, data_shape=(3, 12, 12), dtype="uint8", **extra
        )
        got = _data(it)
        assert got.shape == (9, 3, 12, 12) and got.dtype == np.uint8, extra


def test_rand_mirror_flips_some(data):
    folder, _, _ = data
    args = dict(path_imgrec=str(folder / "img.rec"), batch_size=9, data_shape=(3, 16, 16))
    plain = _data(mx.io.ImageRecordIter(**args))
    flipped = _data(mx.io.ImageRecordIter(rand_mirror=True, seed=1, **args))
    same = [np.array_equal(p, f) for p, f in zip(plain, flipped, strict=True)]
    mirrored = [np.array_equal(p[:, :, ::-1], f) for p, f in zip(plain, flipped, strict=True)]
    assert all(s or m for s, m in zip(same, mirrored, strict=True))
    assert any(mirrored) and any(same)


def test_worker_errors_surface_at_next(tmp_path):
    rng = np.random.default_rng(0)
    payloads = [_encode(_image(rng, 16, 16), ".png") for _ in range(6)]
    payloads[5] = b"this is no image"
    rec = _write_rec(tmp_path, "bad", payloads, [(0, float(i), i, 0) for i in range(6)])
    it = mx.io.ImageRecordIter(
        path_imgrec=rec, batch_size=4, data_shape=(3, 8, 8), preprocess_threads=2
    )
    assert it.next().data[0].shape == (4, 3, 8, 8)
    with pytest.raises(MXNetError, match=r"record 5 .*bad.rec.*cannot decode the image"):
        it.next()
    with pytest.raises(MXNetError, match="cannot decode"):
        it.next()  # not lost, nor turned into the end of the epoch
    it.reset()
    assert it.next().label[0].asnumpy().tolist() == [0, 1, 2, 3]

    wide = mx.io.ImageRecordIter(path_imgrec=rec, batch_size=2, data_shape=(3, 8, 8), label_width=2)
    with pytest.raises(MXNetError, match="label_width must be 1 unless an imglist"):
        wide.next()
    lst = tmp_path / "short.lst"
    lst.write_text("0\t1\ta.jpg\n")
    listed = mx.io.ImageRecordIter(
        path_imgrec=rec, batch_size=2, data_shape=(3, 8, 8), path_imglist=str(lst)
    )
    with pytest.raises(MXNetError, match="fail to find imagelabel for id 1"):
        listed.next()
    four = mx.io.ImageRecordIter(path_imgrec=rec, batch_size=2, data_shape=(4, 8, 8))
    with pytest.raises(MXNetError, match="Expected 4 channels, got 3"):
        four.next()


def _threads():
    return [t for t in threading.enumerate() if t.name.startswith("mxrs-image")]


def test_threads_end_on_reset_close_and_del(data):
    folder, _, _ = data
    gc.collect()  # iterators other tests dropped
    before = len(_threads())
    args = dict(
        path_imgrec=str(folder / "img.rec"),
        batch_size=2,
        data_shape=(3, 8, 8),
        preprocess_threads=3,
        prefetch_buffer=1,
    )
    it = mx.io.ImageRecordIter(**args)
    assert it._state["producer"].queue.maxsize == 1  # at most prefetch_buffer batches wait
    it.next()
    for _ in range(5):
        it.reset()  # mid-epoch, with the queue full
    assert len(_all(it)) == 5
    it.close()
    assert len(_threads()) == before
    with pytest.raises(MXNetError, match="closed"):
        it.next()
    it = mx.io.ImageRecordIter(**args)
    it.next()
    del it
    gc.collect()
    assert len(_threads()) == before
    with mx.io.ImageRecordIter(**args) as it:
        assert it.getpad is not None
    assert len(_threads()) == before


def test_parameters(data):
    folder, _, _ = data
    rec = str(folder / "img.rec")
    it = mx.io.ImageRecordIter(
        path_imgrec=rec,
        data_shape="(3, 8, 8)",
        batch_size="2",
        and_mirror=False,
        verbose=False,
        ctx="cpu",
        data_name="img",
        label_name="lab",
        shuffle="False",
    )
    assert it.provide_data[0].name == "img" and it.provide_data[0].shape == (2, 3, 8, 8)
    assert it.provide_label[0].name == "lab" and it.provide_label[0].shape == (2,)
    assert it.batch_size == 2
    batch = it.next()
    assert batch.index.tolist() == [100, 101]
    assert isinstance(batch.data[0], mx.nd.NDArray) and batch.data[0].dtype == np.float32
    assert it.getpad() == 0 and it.getdata().shape == (2, 3, 8, 8)
    with pytest.raises(TypeError):
        mx.io.ImageRecordIter(rec, data_shape=(3, 8, 8), batch_size=2)
    bad = [
        (dict(batch_size=2), "data_shape"),
        (dict(data_shape=(3, 8, 8)), "batch_size"),
        (dict(path_imgrec="", data_shape=(3, 8, 8), batch_size=2), "path_imgrec"),
        (dict(data_shape=(5, 8, 8), batch_size=2), "Invalid output shape"),
        (dict(data_shape=(3, 8), batch_size=2), "data_shape must be"),
        (dict(data_shape=(3, 8, 8), batch_size=2, inter_method=5), "invalid inter_method"),
        (dict(data_shape=(3, 8, 8), batch_size=2, inter_method=0, max_rotate_angle=3), "nearest"),
        (
            dict(data_shape=(3, 8, 8), batch_size=2, random_resized_crop=True, rand_crop=True),
            "conflicts",
        ),
        (dict(data_shape=(1, 8, 8), batch_size=2, brightness=0.1), "3-channel"),
        (dict(data_shape=(3, 8, 8), batch_size=2, num_parts=2, part_index=2), "part_index"),
        (dict(data_shape=(3, 8, 8), batch_size=2, dtype="float16"), "unknown dtype"),
        (
            dict(data_shape=(3, 8, 8), batch_size=2, mean_img=str(folder / "img.lst")),
            "cannot read the mean image",
        ),
    ]
    for kwargs, match in bad:
        kwargs.setdefault("path_imgrec", rec)
        with pytest.raises(MXNetError, match=match):
            mx.io.ImageRecordIter(**kwargs)
    with pytest.raises(MXNetError, match="does not exist"):
        mx.io.ImageRecordIter(
            path_imgrec=str(folder / "none.rec"), data_shape=(3, 8, 8), batch_size=2
        )
