"""mx.image.detection against Apache MXNet 1.9.1: the detection augmenters (random ones under
the same seed of Python's generator, which both libraries draw from in one order), their
``dumps``, ``CreateDetAugmenter``, and ``ImageDetIter`` batches (labels with wider headers and
objects, from lists and RecordIO files, every last-batch handling, ``reshape``,
``sync_label_shape``); and the errors for bad input.

One MXNet process runs every section of ``SECTIONS``; each test runs its section under mxrs and
compares."""

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest

SETUP = """
import os, random, json, warnings
import numpy as np
warnings.simplefilter('ignore')
D = str(inputs['root'])
FILES = ['a.jpg', 'b.png', 'c.jpg', 'd.jpg', 'e.png']
def objects(seed, n, width=5):
    rs = np.random.RandomState(seed)
    xy = rs.rand(n, 2) * 0.7
    wh = rs.rand(n, 2) * 0.3 + 0.05
    out = np.zeros((n, width))
    out[:, 0] = rs.randint(0, 20, n)
    out[:, 1:3] = xy
    out[:, 3:5] = xy + wh
    out[:, 5:] = rs.rand(n, width - 5)
    return out
def raw_label(seed, n, width=5, header=2):
    extra = [9.0] * (header - 2)
    return [float(header), float(width)] + extra + objects(seed, n, width).ravel().tolist()
def image(name='a.jpg'):
    with open(os.path.join(D, name), 'rb') as f:
        return mx.image.imdecode(f.read())
"""

SECTIONS = {
    "augmenters": """
src = image()
label = objects(0, 4)
for p in (0, 1):
    aug = mx.image.DetHorizontalFlipAug(p)
    out, lab = aug(src, label.copy())
    arrays[f'flip{p}'] = out.asnumpy()
    arrays[f'flip{p}_label'] = lab
    result[f'flip{p}'] = aug.dumps()
borrow = mx.image.DetBorrowAug(mx.image.ForceResizeAug((20, 30)))
out, lab = borrow(src, label)
arrays['borrow'] = out.asnumpy()
arrays['borrow_label'] = lab
result['borrow'] = borrow.dumps()
for k, kw in enumerate([{}, {'min_object_covered': 0.5, 'aspect_ratio_range': 1.0},
                        {'area_range': (0.3, 0.6), 'min_eject_coverage': 0.6},
                        {'area_range': 0.5, 'max_attempts': 3}]):
    aug = mx.image.DetRandomCropAug(**kw)
    result[f'crop{k}'] = [aug.dumps(), aug.enabled]
    for seed in range(4):
        random.seed(seed)
        out, lab = aug(src, objects(seed, 3))
        arrays[f'crop{k}_{seed}'] = out.asnumpy()
        arrays[f'crop{k}_{seed}_label'] = lab
for k, kw in enumerate([{}, {'area_range': (1.5, 4.0), 'pad_val': (1, 2, 3)},
                        {'aspect_ratio_range': 2.0, 'area_range': 3.0}]):
    aug = mx.image.DetRandomPadAug(**kw)
    result[f'pad{k}'] = [aug.dumps(), aug.enabled]
    for seed in range(4):
        random.seed(seed)
        out, lab = aug(src, objects(seed, 3))
        arrays[f'pad{k}_{seed}'] = out.asnumpy()
        arrays[f'pad{k}_{seed}_label'] = lab
multi = mx.image.det.CreateMultiRandCropAugmenter(
    min_object_covered=[0.1, 0.3, 0.5], aspect_ratio_range=(0.75, 1.33),
    area_range=[(0.1, 1.0), (0.2, 1.0), (0.5, 1.0)], min_eject_coverage=0.3, skip_prob=0.2)
result['multi'] = multi.dumps()
for seed in range(6):
    random.seed(seed)
    out, lab = multi(src, objects(seed, 5))
    arrays[f'multi_{seed}'] = out.asnumpy()
    arrays[f'multi_{seed}_label'] = lab
empty = mx.image.DetRandomSelectAug([])
result['empty'] = [empty.dumps(), empty.skip_prob]
""",
    "create": """
augs = mx.image.CreateDetAugmenter((3, 30, 40), resize=50, rand_crop=0.5, rand_pad=0.4,
                                   rand_gray=0.1, rand_mirror=True, mean=True, std=True,
                                   brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1,
                                   hue=0.1, inter_method=10, min_object_covered=[0.3, 0.5, 0.9],
                                   area_range=(0.3, 3.0))
result['full'] = [a.dumps() for a in augs]
augs = mx.image.CreateDetAugmenter((3, 30, 40), mean=np.array([1.0, 2.0, 3.0]),
                                   std=np.array([2.0, 3.0, 4.0]))
result['plain'] = [a.dumps() for a in augs]
src = image()
label = objects(1, 3)
for seed in range(3):
    random.seed(seed)
    np.random.seed(seed)
    augs = mx.image.CreateDetAugmenter((3, 30, 40), resize=40, rand_crop=0.7, rand_pad=0.7,
                                       rand_mirror=True, mean=True, std=True,
                                       brightness=0.2, contrast=0.2, saturation=0.2,
                                       pca_noise=0.1, hue=0.2, min_object_covered=0.2,
                                       area_range=(0.2, 2.5))
    x, lab = src, label.copy()
    for aug in augs:
        x, lab = aug(x, lab)
    arrays[f'chain_{seed}'] = x.asnumpy()
    arrays[f'chain_{seed}_label'] = lab
""",
    "iterator": """
lst = os.path.join(D, 'det.lst')
rec = os.path.join(D, 'det.rec')
idx = os.path.join(D, 'det.idx')
imglist = [raw_label(i, i % 3 + 1) + [name] for i, name in enumerate(FILES)]
for source in ('imglist', 'path_imglist', 'rec', 'rec_idx'):
    for handle in ('pad', 'discard', 'roll_over'):
        kw = {'imglist': imglist} if source == 'imglist' else \\
            {'path_imglist': lst} if source == 'path_imglist' else {'path_imgrec': rec}
        if source == 'rec_idx':
            kw['path_imgidx'] = idx
        it = mx.image.ImageDetIter(2, (3, 24, 20), path_root=D, last_batch_handle=handle, **kw)
        result[f'{source}_{handle}_shapes'] = [list(it.label_shape), list(it.provide_label[0][1]),
                                               it.provide_label[0][0]]
        for epoch in range(3):
            for b, batch in enumerate(it):
                arrays[f'{source}_{handle}_{epoch}_{b}_data'] = batch.data[0].asnumpy()
                arrays[f'{source}_{handle}_{epoch}_{b}_label'] = batch.label[0].asnumpy()
                result[f'{source}_{handle}_{epoch}_{b}_pad'] = batch.pad
            it.reset()
wide = mx.image.ImageDetIter(2, (3, 16, 16), path_imglist=os.path.join(D, 'wide.lst'),
                             path_root=D)
result['wide_shape'] = list(wide.label_shape)
for b, batch in enumerate(wide):
    arrays[f'wide_{b}'] = batch.label[0].asnumpy()
small = mx.image.ImageDetIter(3, (3, 16, 16), imglist=imglist[:2], path_root=D)
big = mx.image.ImageDetIter(3, (3, 16, 16), imglist=imglist, path_root=D)
result['before_sync'] = [list(small.label_shape), list(big.label_shape)]
other = small.sync_label_shape(big)
result['after_sync'] = [list(small.label_shape), list(big.label_shape), other is big,
                        list(small.provide_label[0][1])]
arrays['synced'] = small.next().label[0].asnumpy()
small.reshape((3, 20, 12), (7, 5))
result['reshaped'] = [list(small.provide_data[0][1]), list(small.provide_label[0][1])]
small.reshape((3, 16, 16))
small.reset()
arrays['reshaped'] = small.next().label[0].asnumpy()
for seed in range(2):
    random.seed(seed)
    np.random.seed(seed)
    it = mx.image.ImageDetIter(2, (3, 24, 20), imglist=imglist, path_root=D, shuffle=True,
                               resize=30, rand_crop=1, rand_pad=0.5, rand_gray=0.1,
                               rand_mirror=True, mean=True, std=np.array([1.1, 1.03, 1.05]),
                               brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1,
                               hue=0.1, inter_method=10, min_object_covered=0.5,
                               aspect_ratio_range=(0.2, 5), area_range=(0.1, 4.0),
                               min_eject_coverage=0.5)
    for b, batch in enumerate(it):
        arrays[f'augmented_{seed}_{b}_data'] = batch.data[0].asnumpy()
        arrays[f'augmented_{seed}_{b}_label'] = batch.label[0].asnumpy()
""",
}

TOLERANCE = {"create": (1e-5, 1e-3), "iterator": (1e-5, 1e-3), "augmenters": (1e-6, 1e-6)}


def _write_files(root):
    rs = np.random.RandomState(7)
    names = ["a.jpg", "b.png", "c.jpg", "d.jpg", "e.png"]
    for k, name in enumerate(names):
        h, w = 30 + 7 * k, 45 - 4 * k
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([(x * 5) % 256, (y * 7) % 256, (x * y) % 256], -1)
        img = np.clip(img + rs.randint(-20, 20, img.shape), 0, 255).astype(np.uint8)
        cv2.imwrite(str(root / name), img)
    ns = {"inputs": {"root": str(root)}}
    exec(SETUP, ns)
    raw_label = ns["raw_label"]
    with open(root / "det.lst", "w") as f:
        for i, name in enumerate(names):
            fields = [str(i)] + [str(v) for v in raw_label(i, i % 3 + 1)] + [name]
            f.write("\t".join(fields) + "\n")
    with open(root / "wide.lst", "w") as f:
        for i, name in enumerate(names[:3]):
            fields = [str(i)] + [str(v) for v in raw_label(i, i + 1, 7, 4)] + [name]
            f.write("\t".join(fields) + "\n")
    rec = mx.recordio.MXIndexedRecordIO(str(root / "det.idx"), str(root / "det.rec"), "w")
    for i, name in enumerate(names):
        header = mx.recordio.IRHeader(0, raw_label(i, i % 3 + 1), i, 0)
        rec.write_idx(i, mx.recordio.pack(header, (root / name).read_bytes()))
    rec.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("det_images")
    _write_files(path)
    return path


@pytest.fixture(scope="module")
def reference(root, tmp_path_factory):
    """Every section's arrays and results under MXNet 1.9.1, by section name."""
    tmp = tmp_path_factory.mktemp("ref")
    return mxnet_ref.run_sections(tmp, SECTIONS, SETUP, root=np.asarray(str(root)))


def _run_section(name, root):
    return mxnet_ref.mxrs_section(SECTIONS[name], SETUP, root=np.asarray(str(root)))


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_section_matches_mxnet(section, root, reference):
    want_arrays, want_result = reference[section]
    got_arrays, got_result = _run_section(section, root)
    assert sorted(got_arrays) == sorted(want_arrays)
    rtol, atol = TOLERANCE.get(section, (0, 0))
    for key in sorted(want_arrays):
        got, want = np.asarray(got_arrays[key]), want_arrays[key]
        assert got.shape == want.shape, (key, got.shape, want.shape)
        tol = (rtol, atol) if got.dtype.kind == "f" else (0, 0)
        np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1], err_msg=key)
    assert got_result == want_result


def _iter(root, **kw):
    ns = {"inputs": {"root": str(root)}}
    exec(SETUP, ns)
    imglist = [ns["raw_label"](i, 2) + [name] for i, name in enumerate(ns["FILES"])]
    return mx.image.ImageDetIter(2, (3, 16, 16), imglist=imglist, path_root=str(root), **kw)


def test_label_parsing(root):
    it = _iter(root)
    parsed = it._parse_label(
        mx.nd.array([2, 6, 1, 0.1, 0.1, 0.5, 0.5, 7, 2, 0.5, 0.5, 0.4, 0.9, 8])
    )
    # the second object's box is empty (xmax < xmin): dropped
    np.testing.assert_allclose(parsed, [[1, 0.1, 0.1, 0.5, 0.5, 7]], rtol=1e-6)
    with pytest.raises(RuntimeError, match="Label shape is invalid"):
        it._parse_label(np.array([2, 5, 1, 0.1, 0.1]))
    with pytest.raises(RuntimeError, match="inconsistent with annotation width 5"):
        it._parse_label(np.array([2, 5, 1, 0.1, 0.1, 0.5, 0.5, 3]))
    with pytest.raises(RuntimeError, match="no valid label"):
        it._parse_label(np.array([2, 5, 1, 0.5, 0.1, 0.1, 0.5]))
    with pytest.raises(RuntimeError, match=r"shape \(1\+, 5\+\) required"):
        it._check_valid_label(np.zeros((2, 4)))
    with pytest.raises(RuntimeError, match="Invalid label occurs"):
        it._check_valid_label(np.array([[-1, 0.1, 0.1, 0.5, 0.5]]))


def test_reshape_checks(root):
    it = _iter(root)
    assert it.label_shape == (2, 5)
    with pytest.raises(ValueError, match="length 2"):
        it.reshape(label_shape=(3,))
    with pytest.raises(ValueError, match="reduce label count from 2 to 1"):
        it.reshape(label_shape=(1, 5))
    with pytest.raises(ValueError, match="object width inconsistent: 5 vs 6"):
        it.reshape(label_shape=(3, 6))
    with pytest.raises(ValueError, match="3 channels"):
        it.reshape(data_shape=(1, 16, 16))
    it.reshape((3, 8, 10), (4, 5))
    assert it.provide_data == [("data", (2, 3, 8, 10))]
    it.reshape((3, 16, 16))
    batch = it.next()
    assert batch.data[0].shape == (2, 3, 16, 16) and batch.label[0].shape == (2, 4, 5)
    assert (batch.label[0].asnumpy()[:, 2:] == -1).all()


def test_augmenter_errors(root):
    with pytest.raises(TypeError, match="invalid Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))
    with pytest.raises(ValueError, match="DetAugmenter in list only"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(AssertionError, match="one length"):
        mx.image.det.CreateMultiRandCropAugmenter(
            min_object_covered=[0.1, 0.2], area_range=[(0.1, 1), (0.2, 1), (0.3, 1)]
        )
    # (MXNet 1.9.1 means to warn here but passes warnings.warn a tuple as category)
    with pytest.warns(UserWarning, match="invalid area_range"):
        assert not mx.image.DetRandomCropAug(area_range=(0.8, 0.2)).enabled
    with pytest.warns(UserWarning, match="invalid aspect_ratio_range"):
        assert not mx.image.DetRandomCropAug(aspect_ratio_range=(0, 1)).enabled
    with pytest.warns(UserWarning, match="invalid parameters"):
        pad = mx.image.DetRandomPadAug(area_range=(1.0, 1.0))
    src, label = mx.nd.zeros((4, 4, 3)), np.array([[0, 0.1, 0.1, 0.5, 0.5]])
    assert pad(src, label) == (src, label)
    with pytest.raises(AssertionError, match="invalid iterator"):
        _iter(root).sync_label_shape(object())
    with pytest.raises(AssertionError, match="no images"):
        mx.image.ImageDetIter(2, (3, 16, 16), imglist=[], path_root=str(root))


def test_pad_with_one_value():
    # one pad value fills every channel (MXNet 1.9.1 fills the other channels with whatever its
    # parameter parser left there)
    pad = mx.image.DetRandomPadAug(area_range=(2.0, 3.0), pad_val=50)
    src = mx.nd.ones((10, 12, 3), dtype="uint8")
    out, label = pad(src, np.array([[0, 0.0, 0.0, 1.0, 1.0]]))
    out = out.asnumpy()
    assert out.size >= 2 * src.size
    assert set(np.unique(out)) == {1, 50}
    ones = np.argwhere(out[:, :, 0] == 1)
    (y0, x0), (y1, x1) = ones.min(0), ones.max(0) + 1
    assert (y1 - y0, x1 - x0) == (10, 12)
    assert (out[y0:y1, x0:x1] == 1).all()
    h, w = out.shape[:2]
    np.testing.assert_allclose(label, [[0, x0 / w, y0 / h, x1 / w, y1 / h]])


def test_draw_next(root):
    it = _iter(root, rand_mirror=True)
    images = list(it.draw_next(color=(255, 0, 0), mean=True, std=True, id2labels={0: "zero"}))
    assert len(images) == 5
    assert all(im.dtype == np.uint8 and im.shape == (16, 16, 3) for im in images)
