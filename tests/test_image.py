"""mx.image against Apache MXNet 1.9.1: decoding, resizing (every interpolation), crops,
borders, normalization, the augmenters (the random ones under the same seeds of Python's and
NumPy's generators, which both libraries draw from in one order), ``ImageIter`` batches from
lists and RecordIO files, ``imrotate``; and the errors for bad input.

One MXNet process runs every section of ``SECTIONS`` on images written here with OpenCV; each
test runs its section under mxrs and compares."""

import random

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

#: Code run before every section, under both libraries: ``D`` is the folder of the images.
SETUP = """
import os, random, json
import numpy as np
D = str(inputs['root'])
FILES = ['color.jpg', 'color.png', 'gray.png', 'gray.jpg', 'noise.png', 'wide.jpg']
def read(name):
    with open(os.path.join(D, name), 'rb') as f:
        return f.read()
def img(name='color.png'):
    return mx.image.imdecode(read(name))
"""

#: name -> code; each fills ``arrays`` (compared as arrays) and ``result`` (compared as JSON).
SECTIONS = {
    "decode": """
for name in FILES:
    buf = read(name)
    for flag in (0, 1):
        for rgb in (0, 1):
            arrays[f'{name}_{flag}_{rgb}'] = mx.image.imdecode(buf, flag=flag, to_rgb=rgb).asnumpy()
    arrays[name + '_imread'] = mx.image.imread(os.path.join(D, name)).asnumpy()
    arrays[name + '_imread_gray_bgr'] = mx.image.imread(os.path.join(D, name), 0, 0).asnumpy()
    arrays[name + '_bytearray'] = mx.image.imdecode(bytearray(buf)).asnumpy()
    arrays[name + '_numpy'] = mx.image.imdecode(np.frombuffer(buf, np.uint8)).asnumpy()
    nd_buf = mx.nd.array(np.frombuffer(buf, np.uint8), dtype='uint8')
    arrays[name + '_nd'] = mx.image.imdecode(nd_buf, 1, 0).asnumpy()
buf = read('color.jpg')
out = mx.nd.zeros(mx.image.imdecode(buf).shape, dtype='uint8')
ret = mx.image.imdecode(buf, out=out)
arrays['out'] = out.asnumpy()
result['out_is_returned'] = ret is out
result['dtype'] = str(np.dtype(ret.dtype))
""",
    "decode_errors": """
bad = {'empty': b'', 'text': b'clearly not image content', 'header_only': read('color.jpg')[:2],
       'png_truncated': read('color.png')[:100]}
for key, buf in bad.items():
    try:
        arrays[key] = mx.image.imdecode(buf).asnumpy()
        result[key] = 'decoded'
    except Exception as e:
        result[key] = type(e).__name__
try:
    mx.image.imdecode(mx.nd.array(np.frombuffer(read('color.png'), np.uint8)))
    result['float_nd'] = 'decoded'
except Exception as e:
    result['float_nd'] = type(e).__name__
try:
    mx.image.imdecode('a string')
except Exception as e:
    result['str'] = type(e).__name__
try:
    mx.image.imread(os.path.join(D, 'no_such_file.jpg'))
except Exception as e:
    result['missing'] = type(e).__name__
""",
    "resize": """
src = img('color.jpg')
h, w, _ = src.shape
for interp in range(6):
    for (nw, nh) in [(20, 15), (90, 70), (w, h), (7, 61), (w + 1, h - 2)]:
        arrays[f'u8_{interp}_{nw}_{nh}'] = mx.image.imresize(src, nw, nh, interp=interp).asnumpy()
        if interp < 5:
            f = src.astype('float32') * 0.37
            arrays[f'f32_{interp}_{nw}_{nh}'] = mx.image.imresize(f, nw, nh, interp).asnumpy()
        if interp in (1, 2):
            d = src.astype('float64')
            arrays[f'f64_{interp}_{nw}_{nh}'] = mx.image.imresize(d, nw, nh, interp).asnumpy()
gray = mx.image.imdecode(read('gray.png'), flag=0)
noise = img('noise.png')
four = mx.nd.concat(noise, noise[:, :, :1], dim=2)
for interp in range(5):
    arrays[f'gray_{interp}'] = mx.image.imresize(gray, 33, 21, interp=interp).asnumpy()
    arrays[f'four_{interp}'] = mx.image.imresize(four, 41, 50, interp=interp).asnumpy()
    arrays[f'noise_{interp}'] = mx.image.imresize(noise, 13, 9, interp=interp).asnumpy()
out = mx.nd.zeros((30, 40, 3), dtype='uint8')
mx.image.imresize(src, 40, 30, interp=2, out=out)
arrays['out'] = out.asnumpy()
""",
    "resize_short": """
for name in ('color.jpg', 'wide.jpg', 'gray.jpg'):
    src = img(name)
    for size in (9, 40, 100):
        for interp in (0, 1, 2, 3, 4, 9):
            arrays[f'{name}_{size}_{interp}'] = mx.image.resize_short(src, size, interp).asnumpy()
""",
    "crops": """
src = img('color.jpg')
arrays['fixed'] = mx.image.fixed_crop(src, 3, 5, 20, 17).asnumpy()
arrays['fixed_past_edge'] = mx.image.fixed_crop(src, 40, 30, 50, 50).asnumpy()
for interp in (0, 1, 2, 3, 4, 9):
    out = mx.image.fixed_crop(src, 3, 5, 20, 17, (31, 12), interp)
    arrays[f'fixed_resized_{interp}'] = out.asnumpy()
for size in [(20, 20), (53, 37), (100, 30), (10, 90), (1, 1)]:
    out, rect = mx.image.center_crop(src, size)
    arrays[f'center_{size}'] = out.asnumpy()
    result[f'center_{size}'] = list(rect)
result['scale_down'] = [mx.image.scale_down(a, b) for a, b in
                        [((640, 480), (720, 120)), ((360, 1000), (480, 500)), ((300, 400), (0, 0))]]
""",
    "border": """
src = img('noise.png')[:9, :11]
for t in range(5):
    out = mx.image.copyMakeBorder(src, 1, 2, 3, 4, type=t, values=(7, 99, 200))
    arrays[f'type{t}'] = out.asnumpy()
arrays['value'] = mx.image.copyMakeBorder(src, 2, 0, 0, 5, value=9).asnumpy()
arrays['isolated'] = mx.image.copyMakeBorder(src, 3, 1, 2, 6, 16, values=(1, 2, 3)).asnumpy()
out = mx.image.copyMakeBorder(src.astype('float32') / 3, 1, 1, 1, 1, values=(0.5, 1.5, 2.5))
arrays['float'] = out.asnumpy()
out = mx.nd.zeros((12, 18, 3), dtype='uint8')
mx.image.copyMakeBorder(src, 1, 2, 3, 4, type=3, out=out)
arrays['out'] = out.asnumpy()
""",
    "normalize": """
rs = np.random.RandomState(0)
src = rs.rand(13, 17, 3) * 255
mean, std = rs.rand(3) * 255, rs.rand(3) + 1
out = mx.image.color_normalize(mx.nd.array(src), mx.nd.array(mean), mx.nd.array(std))
arrays['both'] = out.asnumpy()
arrays['mean'] = mx.image.color_normalize(mx.nd.array(src), mx.nd.array(mean)).asnumpy()
arrays['std'] = mx.image.color_normalize(mx.nd.array(src), None, mx.nd.array(std)).asnumpy()
x = mx.nd.array(src)
mx.image.color_normalize(x, mx.nd.array(mean), mx.nd.array(std))
arrays['in_place'] = x.asnumpy()
aug = mx.image.ColorNormalizeAug(mean=mx.nd.array(mean), std=std)
arrays['aug'] = aug(mx.nd.array(src)).asnumpy()
arrays['aug_np'] = mx.image.ColorNormalizeAug(mean, None)(mx.nd.array(src)).asnumpy()
""",
    "augmenters": """
src = img('color.jpg')
f = src.astype('float32')
augs = {
    'resize': mx.image.ResizeAug(25),
    'resize_area': mx.image.ResizeAug(25, 3),
    'resize_auto': mx.image.ResizeAug(80, 9),
    'force': mx.image.ForceResizeAug((30, 44)),
    'force_auto': mx.image.ForceResizeAug((30, 20), 9),
    'center': mx.image.CenterCropAug((30, 20)),
    'center_up': mx.image.CenterCropAug((100, 90), 1),
    'cast': mx.image.CastAug(),
    'cast64': mx.image.CastAug('float64'),
    'flip': mx.image.HorizontalFlipAug(1),
    'no_flip': mx.image.HorizontalFlipAug(0),
    'gray': mx.image.RandomGrayAug(1),
    'no_gray': mx.image.RandomGrayAug(0),
    'seq': mx.image.SequentialAug([mx.image.ResizeAug(30), mx.image.CenterCropAug((20, 20)),
                                   mx.image.CastAug()]),
}
for key, aug in augs.items():
    x = f.copy() if key in ('gray', 'no_gray', 'flip', 'no_flip') else src
    arrays[key] = aug(x).asnumpy()
    result[key] = aug.dumps()
augs = mx.image.CreateAugmenter((3, 20, 24), resize=30, rand_crop=True, rand_resize=True,
                                rand_mirror=True, mean=True, std=True, brightness=0.1,
                                contrast=0.2, saturation=0.3, hue=0.1, pca_noise=0.1,
                                rand_gray=0.2, inter_method=10)
result['create'] = [a.dumps() for a in augs]
augs = mx.image.CreateAugmenter((3, 20, 24), mean=np.array([1.0, 2.0, 3.0]), std=np.array([2.0]))
result['create_default'] = [a.dumps() for a in augs]
result['lighting'] = mx.image.LightingAug(0.1, np.array([1.0, 2.0, 3.0]), np.eye(3)).dumps()
""",
    "random_augmenters": """
src = img('color.jpg')
f = src.astype('float32')
def seeded(seed):
    random.seed(seed)
    np.random.seed(seed)
for seed in range(4):
    augs = {
        'brightness': mx.image.BrightnessJitterAug(0.3),
        'contrast': mx.image.ContrastJitterAug(0.3),
        'saturation': mx.image.SaturationJitterAug(0.3),
        'hue': mx.image.HueJitterAug(0.4),
        'color': mx.image.ColorJitterAug(0.2, 0.3, 0.4),
        'lighting': mx.image.LightingAug(0.5, np.array([55.46, 4.794, 1.148]),
                                         np.array([[-0.5675, 0.7192, 0.4009],
                                                   [-0.5808, -0.0045, -0.8140],
                                                   [-0.5836, -0.6948, 0.4203]])),
        'flip': mx.image.HorizontalFlipAug(0.5),
        'gray': mx.image.RandomGrayAug(0.5),
        'crop': mx.image.RandomCropAug((20, 15)),
        'crop_up': mx.image.RandomCropAug((70, 15), 1),
        'sized': mx.image.RandomSizedCropAug((24, 24), 0.3, (0.75, 1.33)),
        'sized_range': mx.image.RandomSizedCropAug((24, 20), (0.2, 0.6), (0.5, 2.0), 10),
        'order': mx.image.RandomOrderAug([mx.image.BrightnessJitterAug(0.5),
                                          mx.image.HorizontalFlipAug(0.5),
                                          mx.image.ContrastJitterAug(0.5)]),
    }
    for key, aug in augs.items():
        seeded(seed)
        x = f.copy() if key not in ('crop', 'crop_up', 'sized', 'sized_range') else src
        arrays[f'{key}_{seed}'] = aug(x).asnumpy()
    seeded(seed)
    out, rect = mx.image.random_crop(src, (21, 30))
    arrays[f'random_crop_{seed}'] = out.asnumpy()
    result[f'random_crop_{seed}'] = list(rect)
    seeded(seed)
    out, rect = mx.image.random_size_crop(src, (16, 16), 0.08, (0.75, 1.33))
    arrays[f'random_size_crop_{seed}'] = out.asnumpy()
    result[f'random_size_crop_{seed}'] = [int(v) for v in rect]
    seeded(seed)
    arrays[f'interp10_{seed}'] = mx.image.resize_short(src, 30, 10).asnumpy()
""",
    "imageiter": """
lst = os.path.join(D, 'images.lst')
for source in ('imglist', 'path_imglist', 'rec', 'rec_idx'):
    for handle in ('pad', 'discard', 'roll_over'):
        kw = {'imglist': [[float(i % 3), name] for i, name in enumerate(FILES)]} \\
            if source == 'imglist' else {'path_imglist': lst} if source == 'path_imglist' \\
            else {'path_imgrec': os.path.join(D, 'images.rec')}
        if source == 'rec_idx':
            kw['path_imgidx'] = os.path.join(D, 'images.idx')
        it = mx.image.ImageIter(4, (3, 20, 24), path_root=D, last_batch_handle=handle,
                                resize=30, **kw)
        for epoch in range(3):
            for b, batch in enumerate(it):
                arrays[f'{source}_{handle}_{epoch}_{b}_data'] = batch.data[0].asnumpy()
                arrays[f'{source}_{handle}_{epoch}_{b}_label'] = batch.label[0].asnumpy()
                result[f'{source}_{handle}_{epoch}_{b}_pad'] = batch.pad
            it.reset()
        it.hard_reset()
        arrays[f'{source}_{handle}_hard_reset'] = it.next().data[0].asnumpy()
        result[f'{source}_{handle}_provide'] = [list(it.provide_data[0][1]),
                                                list(it.provide_label[0][1])]
it = mx.image.ImageIter(2, (3, 16, 16), path_imglist=os.path.join(D, 'multi.lst'), path_root=D,
                        label_width=3, dtype='int32', data_name='img', label_name='lbl')
result['multi_provide'] = [[it.provide_data[0][0], list(it.provide_data[0][1])],
                           [it.provide_label[0][0], list(it.provide_label[0][1])]]
for b, batch in enumerate(it):
    arrays[f'multi_{b}'] = batch.label[0].asnumpy()
it = mx.image.ImageIter(2, (3, 16, 16), path_imgrec=os.path.join(D, 'multi.rec'), label_width=3)
for b, batch in enumerate(it):
    arrays[f'multi_rec_{b}'] = batch.label[0].asnumpy()
it = mx.image.ImageIter(2, (3, 16, 16), imglist=[[[1.0, 2.0], FILES[0]], [[3.0, 4.0], FILES[1]]],
                        path_root=D, label_width=2, dtype='float64')
arrays['pair_labels'] = it.next().label[0].asnumpy()
for part in range(2):
    it = mx.image.ImageIter(2, (3, 16, 16), path_imgrec=os.path.join(D, 'images.rec'),
                            path_imgidx=os.path.join(D, 'images.idx'), part_index=part,
                            num_parts=2)
    for b, batch in enumerate(it):
        arrays[f'part{part}_{b}'] = batch.label[0].asnumpy()
for source in ('lst', 'rec'):
    random.seed(3)
    kw = {'path_imglist': lst, 'path_root': D} if source == 'lst' else \\
        {'path_imgrec': os.path.join(D, 'images.rec'), 'path_imgidx': os.path.join(D, 'images.idx')}
    it = mx.image.ImageIter(3, (3, 16, 16), shuffle=True, **kw)
    for epoch in range(2):
        for b, batch in enumerate(it):
            arrays[f'shuffle_{source}_{epoch}_{b}'] = batch.label[0].asnumpy()
        it.reset()
random.seed(5)
np.random.seed(5)
it = mx.image.ImageIter(3, (3, 16, 16), path_imglist=lst, path_root=D, shuffle=True, resize=24,
                        rand_crop=True, rand_resize=True, rand_mirror=True, mean=True, std=True,
                        brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                        rand_gray=0.2, inter_method=10)
for b, batch in enumerate(it):
    arrays[f'augmented_{b}'] = batch.data[0].asnumpy()
""",
    "imrotate": """
x = np.expand_dims(np.linspace(0, 0.5, 30), 1) + np.expand_dims(np.linspace(0, 0.5, 40), 0)
chw = mx.nd.array(np.stack([x, x[::-1], x * 2]))
for deg in (0, 6, -33, 90):
    arrays[f'single_{deg}'] = mx.image.imrotate(chw, deg).asnumpy()
    arrays[f'single_in_{deg}'] = mx.image.imrotate(chw, deg, zoom_in=True).asnumpy()
    arrays[f'single_out_{deg}'] = mx.image.imrotate(chw, deg, zoom_out=True).asnumpy()
batch = mx.nd.stack(chw, chw * 0.5, chw + 1)
arrays['batch'] = mx.image.imrotate(batch, mx.nd.array([5, -17, 44])).asnumpy()
arrays['batch_scalar'] = mx.image.imrotate(batch, 12, zoom_out=True).asnumpy()
np.random.seed(1)
arrays['random_single'] = mx.image.random_rotate(chw, (-20, 20)).asnumpy()
arrays['random_batch'] = mx.image.random_rotate(batch, (-20, 20), zoom_in=True).asnumpy()
""",
}

#: Sections whose float arrays come from float arithmetic in other orders: tolerances.
TOLERANCE = {
    "normalize": (1e-5, 1e-4),
    "augmenters": (1e-5, 1e-3),
    "random_augmenters": (1e-5, 1e-3),
    "imageiter": (1e-5, 1e-3),
    "imrotate": (1e-5, 1e-5),
    "resize": (0, 1e-3),
}


def _write_images(root):
    """The test images (odd sizes, JPEG and PNG, color and gray), a list file and RecordIO
    files of them."""
    rs = np.random.RandomState(42)
    y, x = np.mgrid[0:37, 0:53]
    color = np.stack([(x * 4) % 256, (y * 6) % 256, (x + y) * 2 % 256], -1)
    color = np.clip(color + rs.randint(-25, 25, color.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(str(root / "color.jpg"), color)
    cv2.imwrite(str(root / "color.png"), color)
    cv2.imwrite(str(root / "gray.png"), color[:, :, 1])
    cv2.imwrite(str(root / "gray.jpg"), color[:29, :21, 2])
    cv2.imwrite(str(root / "noise.png"), rs.randint(0, 256, (31, 27, 3)).astype(np.uint8))
    wide = cv2.resize(color, (120, 19), interpolation=cv2.INTER_AREA)
    cv2.imwrite(str(root / "wide.jpg"), wide, [cv2.IMWRITE_JPEG_QUALITY, 60])
    files = ["color.jpg", "color.png", "gray.png", "gray.jpg", "noise.png", "wide.jpg"]
    with open(root / "images.lst", "w") as f:
        for i, name in enumerate(files):
            f.write(f"{i}\t{i % 3}\t{name}\n")
    with open(root / "multi.lst", "w") as f:
        for i, name in enumerate(files[:5]):
            f.write(f"{i}\t{i}\t{i + 1}\t{2 * i}\t{name}\n")
    rec = mx.recordio.MXIndexedRecordIO(str(root / "images.idx"), str(root / "images.rec"), "w")
    multi = mx.recordio.MXRecordIO(str(root / "multi.rec"), "w")
    for i, name in enumerate(files):
        data = (root / name).read_bytes()
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), data))
        header = mx.recordio.IRHeader(0, [i, i + 0.5, -i], i, 0)
        multi.write(mx.recordio.pack(header, data))
    rec.close()
    multi.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("images")
    _write_images(path)
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
        got, want = got_arrays[key], want_arrays[key]
        assert got.shape == want.shape, (key, got.shape, want.shape)
        assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
        tol = (rtol, atol) if got.dtype.kind == "f" else (0, 0)
        np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1], err_msg=key)
    assert got_result == want_result


def test_random_augmenters_are_reproducible_and_in_range(root):
    src = mx.image.imread(str(root / "color.jpg"))
    f = src.astype("float32")
    for seed in range(3):
        outs = []
        for _ in range(2):
            random.seed(seed)
            np.random.seed(seed)
            aug = mx.image.SequentialAug(
                [mx.image.RandomSizedCropAug((24, 20), 0.1, (0.5, 2)), mx.image.CastAug()]
                + mx.image.CreateAugmenter((3, 20, 24), rand_crop=True, rand_mirror=True)[1:]
            )
            outs.append(aug(src).asnumpy())
        assert outs[0].shape == (20, 24, 3)
        np.testing.assert_array_equal(outs[0], outs[1])
        assert 0 <= outs[0].min() and outs[0].max() <= 255
    random.seed(0)
    for aug in (mx.image.BrightnessJitterAug(0.2), mx.image.ContrastJitterAug(0.2)):
        out = aug(f.copy()).asnumpy()
        assert out.shape == f.shape and np.isfinite(out).all()


def test_interpolation_choice():
    from mxrs.image.image import _get_interp_method

    assert _get_interp_method(9, (10, 10, 20, 20)) == 2
    assert _get_interp_method(9, (10, 10, 5, 5)) == 3
    assert _get_interp_method(9, (10, 10, 20, 5)) == 1
    assert _get_interp_method(9) == 2
    random.seed(0)
    assert {_get_interp_method(10) for _ in range(100)} == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="Unknown interp method 7"):
        _get_interp_method(7)


def test_decode_errors(root):
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.image.imdecode(b"")
    with pytest.raises(MXNetError, match="invalid image"):
        mx.image.imdecode(b"\xff\xd8\xff\xe0 not really a jpeg")
    # MXNet's OpenCV 3.4.2 decodes what it can of a truncated JPEG, with the rest filled by its
    # libjpeg; mxrs's OpenCV refuses such files
    jpeg = (root / "color.jpg").read_bytes()
    with pytest.raises(MXNetError, match="invalid image"):
        mx.image.imdecode(jpeg[: len(jpeg) // 2])
    with pytest.raises(MXNetError, match="uint8 buffer"):
        mx.image.imdecode(mx.nd.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="bytes"):
        mx.image.imdecode("color.jpg")
    with pytest.raises(MXNetError, match="flag must be 0"):
        mx.image.imdecode((root / "color.jpg").read_bytes(), flag=-1)
    with pytest.raises(MXNetError, match="no_such.jpg' couldn't open file"):
        mx.image.imread(str(root / "no_such.jpg"))
    with pytest.raises(MXNetError, match=r"out has shape \(2, 2, 3\)"):
        mx.image.imdecode((root / "color.jpg").read_bytes(), out=mx.nd.zeros((2, 2, 3)))


def test_resize_and_border_errors():
    src = mx.nd.zeros((5, 6, 3), dtype="uint8")
    with pytest.raises(MXNetError, match="parameter w should be"):
        mx.image.imresize(src, 0, 4)
    with pytest.raises(MXNetError, match="unknown interpolation method 9"):
        mx.image.imresize(src, 4, 4, interp=9)
    with pytest.raises(MXNetError, match="3 dimensions"):
        mx.image.imresize(mx.nd.zeros((5, 6)), 4, 4)
    with pytest.raises(MXNetError, match="float16"):
        mx.image.imresize(mx.nd.zeros((5, 6, 3), dtype="float16"), 4, 4)
    with pytest.raises(MXNetError, match="top must be a non-negative"):
        mx.image.copyMakeBorder(src, -1, 0, 0, 0)
    with pytest.raises(MXNetError, match="border type 5"):
        mx.image.copyMakeBorder(src, 1, 1, 1, 1, type=5)


def test_crop_outside_the_image():
    src = mx.nd.zeros((5, 6, 3))
    for args in [(-1, 0, 3, 3), (6, 0, 2, 2), (0, 5, 2, 2), (0, 0, 0, 3)]:
        with pytest.raises(MXNetError, match="lies outside the 6x5"):
            mx.image.fixed_crop(src, *args)
    assert mx.image.fixed_crop(src, 2, 1, 10, 10).shape == (4, 4, 3)


def test_imrotate_errors():
    img = mx.nd.zeros((3, 8, 8))
    with pytest.raises(ValueError, match="cannot be both True"):
        mx.image.imrotate(img, 5, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(img.astype("float64"), 5)
    with pytest.raises(TypeError, match="scalar"):
        mx.image.imrotate(img, mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match="number of rotation angles"):
        mx.image.imrotate(mx.nd.zeros((2, 3, 8, 8)), mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match="3D and 4D"):
        mx.image.imrotate(mx.nd.zeros((8, 8)), 3)


def test_imageiter_errors(root):
    good = [[0.0, "color.jpg"]]
    with pytest.raises(ValueError, match="length 3"):
        mx.image.ImageIter(1, (20, 20), imglist=good, path_root=str(root))
    with pytest.raises(ValueError, match="3 channels"):
        mx.image.ImageIter(1, (1, 20, 20), imglist=good, path_root=str(root))
    with pytest.raises(AssertionError, match="path_imgrec, path_imglist or imglist"):
        mx.image.ImageIter(1, (3, 20, 20))
    with pytest.raises(AssertionError, match="float16 label not supported"):
        mx.image.ImageIter(1, (3, 20, 20), imglist=good, dtype="float16")
    with pytest.raises(AssertionError, match="rand_resize needs rand_crop"):
        mx.image.CreateAugmenter((3, 20, 20), rand_resize=True)
    (root / "broken.jpg").write_bytes(b"\xff\xd8 broken")
    it = mx.image.ImageIter(1, (3, 20, 20), imglist=[[0.0, "broken.jpg"]], path_root=str(root))
    with pytest.raises(RuntimeError, match="Broken image filename: broken.jpg"):
        it.next()


def test_namespace():
    assert mx.img is mx.image
    assert mx.image.det is mx.image.detection
    assert mx.image.ImageDetIter is mx.image.detection.ImageDetIter
    assert issubclass(mx.image.ImageIter, mx.io.DataIter)
