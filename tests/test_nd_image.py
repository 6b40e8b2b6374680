"""mx.nd.image (and mx.sym.image) against Apache MXNet 1.9.1: every deterministic operator's
output (the random colour operators with a one-point factor range, which makes them
deterministic) and the gradients of normalize and crop; the random operators' shapes, ranges and
reproducibility under mx.random.seed; errors for bad input."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

I = mx.nd.image  # noqa: E741

#: Run under both libraries (``mx`` either one), filling ``arrays`` from ``inputs``.
BODY = """
I = mx.nd.image
img, img1, imgf = inputs["img"], inputs["img1"], inputs["imgf"]
even, big = inputs["even"], inputs["big"]
for dt in ["uint8", "float32", "float64", "float16", "int32"]:
    x = mx.nd.array(imgf if dt == "float32" else img, dtype=dt)
    batch = mx.nd.array(np.stack([img, img[::-1]]), dtype=dt)
    arrays["to_tensor." + dt] = I.to_tensor(x).asnumpy()
    arrays["to_tensor4." + dt] = I.to_tensor(batch).asnumpy()
    t = mx.nd.array(img.transpose(2, 0, 1), dtype=dt)
    arrays["normalize." + dt] = I.normalize(
        t, mean=(10.3, 200.7, 127.5), std=(0.7, 3.3, 50.1)).asnumpy()
    arrays["normalize1." + dt] = I.normalize(t, mean=0.1307, std=0.3081).asnumpy()
    arrays["normalize4." + dt] = I.normalize(
        mx.nd.array(np.stack([img, img]).transpose(0, 3, 1, 2), dtype=dt),
        mean=(1, 2, 3), std=2).asnumpy()
    arrays["crop." + dt] = I.crop(x, 3, 5, 20, 11).asnumpy()
    arrays["crop4." + dt] = I.crop(batch, 0, 1, 4, 30).asnumpy()
    e = mx.nd.array(even, dtype=dt)
    arrays["flip_left_right." + dt] = I.flip_left_right(e).asnumpy()
    arrays["flip_top_bottom." + dt] = I.flip_top_bottom(e).asnumpy()
    for f in [0.0, 0.3, 1.0, 1.37, 2.0]:
        arrays[f"brightness.{dt}.{f}"] = I.random_brightness(x, f, f).asnumpy()
        arrays[f"contrast.{dt}.{f}"] = I.random_contrast(x, f, f).asnumpy()
        arrays[f"saturation.{dt}.{f}"] = I.random_saturation(x, f, f).asnumpy()
        arrays[f"hue.{dt}.{f}"] = I.random_hue(x, f, f).asnumpy()
    one = mx.nd.array(img1, dtype=dt)
    arrays[f"contrast1.{dt}"] = I.random_contrast(one, 0.7, 0.7).asnumpy()
    arrays[f"brightness1.{dt}"] = I.random_brightness(one, 0.7, 0.7).asnumpy()
    for k, a in enumerate([(0.1, -0.2, 0.3), (1.0, 0.5, -2.0)]):
        arrays[f"lighting.{dt}.{k}"] = I.adjust_lighting(x, alpha=a).asnumpy()
for dt in ["uint8", "float32", "float64"]:
    x = mx.nd.array(imgf if dt == "float32" else img, dtype=dt)
    for interp in range(6):
        for size in [(20, 15), (80, 90), (53, 20)]:
            arrays[f"resize.{dt}.{interp}.{size}"] = I.resize(x, size, False, interp).asnumpy()
    arrays[f"resize_keep.{dt}"] = I.resize(x, 25, True).asnumpy()
    arrays[f"resize_keep_tall.{dt}"] = I.resize(
        mx.nd.array(img.transpose(1, 0, 2), dtype=dt), 25, keep_ratio=True).asnumpy()
    arrays[f"resize_square.{dt}"] = I.resize(x, 30).asnumpy()
    arrays[f"resize_gray.{dt}"] = I.resize(mx.nd.array(img1, dtype=dt), (7, 9)).asnumpy()
    b = mx.nd.array(np.stack([img, img[::-1]]), dtype=dt)
    arrays[f"resize4.{dt}"] = I.resize(b, (31, 22)).asnumpy()
    xb = mx.nd.array(big, dtype=dt)
    for f in [0.05, 0.9, 1.5]:
        arrays[f"contrast_big.{dt}.{f}"] = I.random_contrast(xb, f, f).asnumpy()
        arrays[f"hue_big.{dt}.{f}"] = I.random_hue(xb, f, f).asnumpy()
for shape, dt in [((2, 3, 4, 5), "float32"), ((3, 4, 5), "float64"), ((1, 4, 5), "float32")]:
    t = mx.nd.array(inputs["t%d" % len(shape)][: shape[-3]].reshape(shape), dtype=dt)
    t.attach_grad()
    with mx.autograd.record():
        y = I.normalize(t, (0.4, 0.5, 0.6)[: shape[-3]], (0.2, 0.3, 0.7)[: shape[-3]])
    y.backward(mx.nd.array(inputs["head"][: y.size].reshape(y.shape), dtype=dt))
    arrays[f"normalize_grad.{len(shape)}.{dt}"] = t.grad.asnumpy()
    arrays[f"normalize_fwd.{len(shape)}.{dt}"] = y.asnumpy()
for shape in [(5, 4, 3), (2, 5, 4, 3)]:
    c = mx.nd.array(inputs["head"][: np.prod(shape)].reshape(shape))
    c.attach_grad()
    with mx.autograd.record():
        y = I.crop(c, 1, 2, 2, 3)
    y.backward(mx.nd.array(inputs["head"][-y.size :].reshape(y.shape)))
    arrays[f"crop_grad.{len(shape)}"] = c.grad.asnumpy()
data = mx.sym.var("data")
sym = mx.sym.image.crop(data, 1, 2, 2, 3)
arrays["sym_crop_shape"] = np.array(sym.infer_shape(data=(5, 4, 3))[1][0])
exe = sym.bind(mx.cpu(), {"data": mx.nd.array(inputs["even"][:5, :4])})
arrays["sym_crop"] = exe.forward()[0].asnumpy()
result = {"crop_json": json.loads(sym.tojson())["nodes"][1],
          "tensor_name": mx.sym.image.to_tensor(data).name,
          "tensor_shape": list(mx.sym.image.to_tensor(data).infer_shape(data=(4, 6, 3))[1][0]),
          "resize_shape": list(mx.sym.image.resize(data, size=(3, 2)).infer_shape(
              data=(4, 6, 3))[1][0])}
"""


def _inputs():
    rs = np.random.RandomState(0)
    big = rs.randint(0, 256, (96, 128, 3)).astype(np.uint8)
    big[:8] = 128  # grey
    big[8:16, :, 0], big[8:16, :, 1:] = 255, 0  # pure red
    return {
        "img": rs.randint(0, 256, (37, 53, 3)).astype(np.uint8),
        "img1": rs.randint(0, 256, (17, 13, 1)).astype(np.uint8),
        "imgf": (rs.rand(37, 53, 3) * 255).astype(np.float32),
        "even": rs.randint(0, 256, (6, 8, 3)).astype(np.uint8),
        "big": big,
        "t4": rs.rand(3, 2, 4, 5),
        "t3": rs.rand(3, 4, 5),
        "head": rs.standard_normal(200),
    }


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """``(mxrs's arrays and result, MXNet 1.9.1's arrays and result)`` of :data:`BODY`."""
    inputs = _inputs()
    want_result, want = mxnet_ref.run(
        tmp_path_factory.mktemp("ref"), "import mxnet as mx\n" + BODY, **inputs
    )
    got: dict = {}
    space = {"mx": mx, "np": np, "json": json, "inputs": inputs, "arrays": got, "result": None}
    exec(BODY, space)
    assert sorted(got) == sorted(want)
    return (got, space["result"]), (want, want_result)


def _compare(both, prefix, rtol=0.0, atol=0.0):
    (got, _), (want, _) = both
    keys = [k for k in want if k.startswith(prefix)]
    assert keys, prefix
    for key in keys:
        assert got[key].dtype == want[key].dtype, key
        assert got[key].shape == want[key].shape, key
        if rtol == atol == 0.0:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        else:
            np.testing.assert_allclose(
                got[key].astype(np.float64), want[key].astype(np.float64), rtol, atol, key
            )


@pytest.mark.parametrize(
    "prefix",
    ["to_tensor.", "to_tensor4.", "normalize.", "normalize1.", "normalize4.", "crop.", "crop4."],
)
def test_layout_normalize_and_crop_match_mxnet_exactly(both, prefix):
    _compare(both, prefix)


def test_flips_match_mxnet(both):
    _compare(both, "flip_left_right.")
    _compare(both, "flip_top_bottom.")


@pytest.mark.parametrize(
    "prefix",
    ["brightness", "saturation.", "hue.", "lighting.", "contrast.uint8", "contrast.float32"],
)
def test_colour_operators_match_mxnet_exactly(both, prefix):
    """Every dtype, to the last bit (float16 rounds after each operation, as MXNet's does)."""
    _compare(both, prefix)


def test_contrast_of_other_types_and_big_images(both):
    for dt in ["float16", "int32"]:
        _compare(both, f"contrast.{dt}")
        _compare(both, f"contrast1.{dt}")
    _compare(both, "contrast_big.uint8")
    _compare(both, "contrast_big.float32")
    _compare(both, "hue_big.")
    # a float64 image's grey level is summed with double products: equal to float32 rounding
    _compare(both, "contrast.float64", rtol=1e-6)
    _compare(both, "contrast_big.float64", rtol=1e-5)


def test_resize_matches_mxnet(both):
    """Every uint8 interpolation and float bilinear/bicubic to the last bit (``mxrs._cv``
    computes what OpenCV 3.4.2, MXNet's, rounds otherwise than today's); float Lanczos within
    the two OpenCV versions' rounding."""
    for interp in (0, 1, 2, 3, 4, 5):
        _compare(both, f"resize.uint8.{interp}.")
    for dt in ("float32", "float64"):
        for interp in (0, 1, 2, 3, 5):
            _compare(both, f"resize.{dt}.{interp}.")
        _compare(both, f"resize.{dt}.4.", rtol=1e-5, atol=1e-4)
    for what in ("resize_keep.", "resize_keep_tall.", "resize_square.", "resize_gray.", "resize4."):
        _compare(both, what + "uint8")
        _compare(both, what + "float32")


def test_gradients_match_mxnet(both):
    _compare(both, "normalize_grad.")
    _compare(both, "normalize_fwd.")
    _compare(both, "crop_grad.")


def test_symbols_match_mxnet(both):
    (got, got_result), (want, want_result) = both
    _compare(both, "sym_crop")
    assert got_result == want_result
    assert got_result["crop_json"]["op"] == "_image_crop"


def test_to_tensor_gradient_is_the_transposed_output_gradient_over_255():
    x = mx.nd.array(np.arange(24).reshape(2, 4, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = I.to_tensor(x)
    head = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    y.backward(mx.nd.array(head))
    np.testing.assert_allclose(x.grad.asnumpy(), head.transpose(1, 2, 0) / 255, rtol=1e-6)


def test_flip_gradient_flips_back_and_colour_gradients_pass_through():
    x = mx.nd.array(np.arange(24).reshape(2, 4, 3))
    x.attach_grad()
    head = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    with mx.autograd.record():
        y = I.flip_left_right(x)
    y.backward(mx.nd.array(head))
    np.testing.assert_array_equal(x.grad.asnumpy(), head[:, ::-1])
    with mx.autograd.record():
        y = I.random_brightness(x, 0.5, 1.5)
    y.backward(mx.nd.array(head))
    np.testing.assert_array_equal(x.grad.asnumpy(), head)


def test_out_keyword_writes_into_the_array():
    x = mx.nd.array(np.arange(24).reshape(2, 4, 3), dtype="uint8")
    out = mx.nd.zeros((3, 2, 4))
    assert I.to_tensor(x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy().transpose(2, 0, 1) / np.float32(255))


# ------------------------------------------------------------------ random operators
def _img(shape=(12, 16, 3), seed=0):
    return mx.nd.array(np.random.RandomState(seed).randint(0, 256, shape), dtype="uint8")


@pytest.mark.parametrize(
    "call",
    [
        lambda x: I.random_flip_left_right(x),
        lambda x: I.random_flip_top_bottom(x),
        lambda x: I.random_brightness(x, 0.3, 1.7),
        lambda x: I.random_contrast(x, 0.3, 1.7),
        lambda x: I.random_saturation(x, 0.3, 1.7),
        lambda x: I.random_hue(x, 0.3, 1.7),
        lambda x: I.random_color_jitter(x, 0.4, 0.4, 0.4, 0.4),
        lambda x: I.random_lighting(x, 0.5),
        lambda x: I.random_crop(x, (0, 1), (0, 1), 7, 5),
        lambda x: I.random_resized_crop(x, 9, 4),
    ],
)
def test_random_operators_repeat_under_a_seed(call):
    x = _img()
    mx.random.seed(11)
    first = [call(x).asnumpy() for _ in range(4)]
    mx.random.seed(11)
    again = [call(x).asnumpy() for _ in range(4)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.uint8
    if call(x).shape == x.shape:
        assert any(not np.array_equal(a, first[0]) for a in first[1:] + [call(x).asnumpy()])


def test_random_flips_flip_half_the_time():
    row = mx.nd.array(np.arange(3).reshape(1, 3, 1))
    mx.random.seed(3)
    seen = [tuple(I.random_flip_left_right(row).asnumpy().ravel()) for _ in range(200)]
    assert set(seen) == {(0.0, 1.0, 2.0), (2.0, 1.0, 0.0)}
    assert 60 < seen.count((2.0, 1.0, 0.0)) < 140
    col = mx.nd.array(np.arange(3).reshape(3, 1, 1))
    flips = {tuple(I.random_flip_top_bottom(col).asnumpy().ravel()) for _ in range(50)}
    assert flips == {(0.0, 1.0, 2.0), (2.0, 1.0, 0.0)}


def test_random_brightness_factor_stays_in_its_range():
    x = mx.nd.full((4, 4, 3), 100.0)
    for _ in range(30):
        factor = I.random_brightness(x, 0.5, 0.8).asnumpy() / 100.0
        assert np.all(factor == factor.flat[0]) and 0.5 <= factor.flat[0] <= 0.8
    u8 = mx.nd.full((2, 2, 3), 200, dtype="uint8")
    assert I.random_brightness(u8, 2.0, 3.0).asnumpy().max() == 255  # saturates


def test_random_hue_of_gray_and_colour_jitter_of_nothing_are_identities():
    gray = mx.nd.full((3, 3, 3), 77, dtype="uint8")
    np.testing.assert_array_equal(I.random_hue(gray, 0.2, 0.9).asnumpy(), gray.asnumpy())
    x = _img()
    np.testing.assert_array_equal(I.random_color_jitter(x, 0, 0, 0, 0).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(I.random_lighting(x, 0.0).asnumpy(), x.asnumpy())


def test_random_crops_take_one_window_of_the_image():
    x = mx.nd.array(np.arange(12 * 16 * 3).reshape(12, 16, 3), dtype="float32")
    batch = mx.nd.stack(x, x + 1)
    for _ in range(10):
        out = I.random_crop(batch, (0, 1), (0, 1), 7, 5).asnumpy()  # fits: a plain crop
        assert out.shape == (2, 5, 7, 3)
        np.testing.assert_array_equal(out[1], out[0] + 1)  # the same window in each image
        y0, x0 = divmod(int(out[0, 0, 0, 0]) // 3, 16)
        np.testing.assert_array_equal(out[0], x.asnumpy()[y0 : y0 + 5, x0 : x0 + 7])
    fixed = I.random_crop(x, (0.5, 0.5), (1, 1), 4, 4).asnumpy()
    np.testing.assert_array_equal(fixed, x.asnumpy()[8:12, 6:10])
    big = I.random_crop(x, (0, 1), (0, 1), 32, 24)  # larger: the whole image, resized
    np.testing.assert_allclose(big.asnumpy(), I.resize(x, (32, 24)).asnumpy())
    for _ in range(10):
        out = I.random_resized_crop(x, 9, 4, area=(0.3, 0.6)).asnumpy()
        assert out.shape == (4, 9, 3) and out.min() >= 0 and out.max() <= x.asnumpy().max()
    # no trial fits: the centre window of the output's aspect ratio
    centre = I.random_resized_crop(x, 8, 12, area=(2.0, 3.0)).asnumpy()
    np.testing.assert_allclose(centre, I.resize(I.crop(x, 4, 0, 8, 12), (8, 12)).asnumpy())


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: I.to_tensor(mx.nd.zeros((4, 4))), r"to_tensor: .*got \(4, 4\)"),
        (lambda: I.normalize(mx.nd.zeros((2, 2))), r"normalize: .*got \(2, 2\)"),
        (lambda: I.normalize(mx.nd.zeros((4, 2, 2))), r"1 or 3 elements, got shape \(4, 2, 2\)"),
        (lambda: I.normalize(mx.nd.zeros((3, 2, 2)), (1, 2)), "got 2 mean values for 3 channels"),
        (lambda: I.normalize(mx.nd.zeros((1, 2, 2)), 0, (1, 2, 3)), "3 std values for 1 chan"),
        (lambda: I.resize(mx.nd.zeros((4, 4)), 2), "3-d .* or 4-d .* got 2-d"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3)), ()), "size must hold 1 or 2 values"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3)), (1, 2, 3)), "size must hold 1 or 2 values"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3)), -3, True), "greater than 0, got -3"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3)), (2, 0)), "greater than 0, got"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3)), 2, interp=7), "interp=7 is not an interp"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3), dtype="float16"), 2), "float16"),
        (lambda: I.resize(mx.nd.zeros((4, 4, 3), dtype="int64"), 2), "got int64"),
        (lambda: I.crop(mx.nd.zeros((4, 4)), 0, 0, 1, 1), "3-d .* or 4-d .* got 2-d"),
        (lambda: I.crop(mx.nd.zeros((4, 4, 2)), 0, 0, 1, 1), "1 or 3 channels"),
        (lambda: I.crop(mx.nd.zeros((4, 4, 3)), 2, 0, 3, 1), "x \\+ width .* input width 4"),
        (lambda: I.crop(mx.nd.zeros((4, 4, 3)), 0, 2, 1, 3), "y \\+ height .* input height 4"),
        (lambda: I.crop(mx.nd.zeros((4, 4, 3)), 0, 0, 0, 3), "greater than 0"),
        (lambda: I.crop(mx.nd.zeros((4, 4, 3)), -1, 0, 1, 1), "must not be negative"),
        (lambda: I.flip_left_right(mx.nd.zeros((4, 4))), "must have shape"),
        (lambda: I.random_brightness(mx.nd.zeros((2, 2, 2, 3)), 1, 1), "must have shape"),
        (lambda: I.random_hue(mx.nd.zeros((2, 2, 4)), 1, 1), "1 or 3 channels"),
        (lambda: I.random_contrast(mx.nd.zeros((2, 2, 3)), -1, 1), "at least 0"),
        (lambda: I.random_saturation(mx.nd.zeros((2, 2, 3)), 2, 1), "greater than max_factor"),
        (lambda: I.adjust_lighting(mx.nd.zeros((2, 2, 3)), (1, 2)), "alpha must hold 3"),
        (lambda: I.random_crop(mx.nd.zeros((4, 4, 3)), (0, 2), (0, 1), 2, 2), "within"),
        (lambda: I.random_crop(mx.nd.zeros((4, 4, 3))), "width and height are required"),
        (lambda: I.random_resized_crop(mx.nd.zeros((4, 4, 3)), 2, 2, ratio=(2, 1)), "ratio"),
        (lambda: I.to_tensor(mx.nd.zeros((2, 2, 3)).astype("bool")), "does not take bool"),
    ],
)
def test_bad_input_is_an_mxnet_error(call, message):
    with pytest.raises(MXNetError, match=message):
        call()


def test_resize_has_no_gradient():
    x = mx.nd.zeros((4, 4, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = I.resize(x, 2)
    with pytest.raises(MXNetError, match="resize has no gradient"):
        y.backward()


def test_symbolic_crop_backward_for_each_grad_req():
    from mxrs.test_utils import check_symbolic_backward

    a = np.arange(60).reshape(5, 4, 3).astype(np.float32)
    sym = mx.sym.image.crop(mx.sym.var("data"), 1, 2, 2, 3)
    head = a[2:5, 1:3]
    expected = np.zeros_like(a)
    expected[2:5, 1:3] = head
    for req in ("write", "add", "null"):
        check_symbolic_backward(sym, [a], [head], [expected], grad_req=req)
    outputs = {sym.list_outputs()[0]: head}
    grads = check_symbolic_backward(sym, {"data": a}, outputs, {"data": expected})
    assert grads["data"].dtype == np.float32
    u8 = a.astype(np.uint8)  # as MXNet's own test does: gradients of uint8 images
    grads = check_symbolic_backward(sym, [u8], [head.astype(np.uint8)], [expected.astype(np.uint8)],
                                    dtype="asnumpy")  # fmt: skip
    assert grads["data"].dtype == np.uint8


def test_sym_image_names_only_image_operators():
    assert mx.sym.image.random_brightness(mx.sym.var("d"), 0.5, 1.5).name.startswith("random_")
    with pytest.raises(AttributeError, match="has no attribute 'gemm'"):
        mx.sym.image.gemm  # noqa: B018
