"""The extra shape, index, reduction and layer operators (cumsum, diag, moveaxis, broadcast_axis,
slice_like, split_v2, depth_to_space, gather_nd, scatter_nd, ravel/unravel, batch_take, moments,
khatri_rao, BlockGrad, the Sequence* ops, L2Normalization, LRN, UpSampling, ...) against Apache
MXNet 1.9.1: values, dtypes, shapes and gradients, all cases in one MXNet process; then
second derivatives, fluent methods and bad-input errors.
"""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad
from mxrs import autograd, nd
from test_autograd_higher import check_hessian_vector
from test_ops_math_more import compare_case, mxnet_cases

_RNG = np.random.default_rng(11)


def _u(*shape):
    return _RNG.uniform(-1.0, 1.0, shape).astype(np.float32)


_NANX = _u(3, 4)
_NANX[0, 1] = _NANX[2, 3] = np.nan

INPUTS = {
    "x34": _u(3, 4),
    "x234": _u(2, 3, 4),
    "vec": _u(3),
    "one3": _u(1, 3, 1),
    "like23": np.zeros((2, 3), np.float32),
    "like12": np.zeros((1, 2), np.float32),
    "tall": _u(10, 2),
    "img": _u(2, 8, 2, 3),
    "img2": _u(2, 2, 4, 6),
    "gidx": np.array([[0, 1, 1, 1, 0], [2, 0, 2, 1, 2]], np.float32),
    "gneg": np.array([[0, 1, -1, -2], [-1, 0, 2, -3]], np.float32),
    "gidx3": np.array([[1, 0, 1], [2, 0, 1], [3, 1, 0]], np.float32),
    "svals": _u(3),
    "sidx": np.array([[0, 1, 1], [2, 0, 1]], np.float32),
    "multi": np.array([[3, 6, 6], [4, 5, 1]], np.float32),
    "flat": np.array([22, 41, 37, 50], np.float32),
    "bt_a": _u(3, 2),
    "bt_i": np.array([0, 1, 5], np.int32),
    "pick_i": np.array([0, 3, 2], np.float32),
    "oh_i": np.array([1, 0, 3], np.float32),
    "ka": _u(2, 2),
    "kb": _u(3, 2),
    "kc": _u(2, 2),
    "nanx": _NANX,
    "i32": np.array([[1, 2, 3], [4, 5, 6]], np.int32),
    "seq": _u(4, 2, 3),
    "seq_t": _u(2, 4, 3),
    "lens": np.array([2, 3], np.float32),
    "nchw": _u(2, 5, 2, 2),
    "up1": _u(1, 2, 2, 3),
    "up2": _u(1, 3, 4, 6),
    "up3": _u(1, 2, 4, 6),
    "upw": _u(2, 1, 4, 4),
}

CASES = {
    "cumsum_flat": (["x34"], "nd.cumsum(x34)", [1]),
    "cumsum_axis": (["x34"], "nd.cumsum(x34, axis=1, dtype='float64')", [1]),
    "cumsum_int": (["i32"], "nd.cumsum(i32, axis=0)", [0]),
    "diag_make": (["vec"], "nd.diag(vec, k=1)", [1]),
    "diag_take": (["x34"], "nd.diag(x34, k=-1)", [1]),
    "diag_axes": (["x234"], "nd.diag(x234, k=1, axis1=2, axis2=0)", [1]),
    "moveaxis": (["x234"], "nd.moveaxis(x234, [0, 1], [-1, -2])", [1]),
    "SwapAxis": (["x234"], "nd.SwapAxis(x234, 0, 2)", [1]),
    "broadcast_axis": (["one3"], "nd.broadcast_axis(one3, axis=(0, 2), size=(2, 4))", [1]),
    "broadcast_axes": (["one3"], "nd.broadcast_axes(one3, axis=2, size=3)", [1]),
    "sum_axis": (["x34"], "nd.sum_axis(x34, axis=1)", [1]),
    "max_axis": (["x34"], "nd.max_axis(x34, axis=0, keepdims=True)", [1]),
    "min_axis": (["x34"], "nd.min_axis(x34, axis=1, exclude=True)", [1]),
    "slice_like": (["x34", "like23"], "nd.slice_like(x34, like23)", [1, 1]),
    "slice_like_axes": (["x234", "like12"], "nd.slice_like(x234, like12, axes=(0, -2))", [1, 0]),
    "shape_size": (["x234"], "[nd.shape_array(x234), nd.size_array(x234)]", [0]),
    "split_v2_indices": (["tall"], "nd.split_v2(tall, (2, 3, 7))", [1]),
    "split_v2_sections": (["x34"], "nd.split_v2(x34, 2, axis=1)", [1]),
    "split_v2_squeeze": (["x34"], "nd.split_v2(x34, 4, axis=-1, squeeze_axis=True)", [1]),
    "split_v2_one": (["x34"], "nd.split_v2(x34, 1) * 2", [1]),
    "depth_to_space": (["img"], "nd.depth_to_space(img, 2)", [1]),
    "space_to_depth": (["img2"], "nd.space_to_depth(img2, 2)", [1]),
    "gather_nd": (["x234", "gidx"], "nd.gather_nd(x234, gidx)", [1, 0]),
    "gather_nd_full": (["x234", "gidx3"], "nd.gather_nd(x234, gidx3)", [1, 0]),
    # negative indices count from the end (MXNet's backward does not take them: no gradient)
    "gather_nd_negative": (["x234", "gneg"], "nd.gather_nd(x234, gneg)", [0, 0]),
    "scatter_nd": (["svals", "sidx"], "nd.scatter_nd(svals, sidx, shape=(2, 3))", [1, 0]),
    "ravel_multi_index": (["multi"], "nd.ravel_multi_index(multi, shape=(7, 6))", [0]),
    "unravel_index": (["flat"], "nd.unravel_index(flat, shape=(7, 6))", [0]),
    "batch_take": (["bt_a", "bt_i"], "nd.batch_take(bt_a, bt_i)", [0, 0]),
    "choose_element_0index": (["x34", "pick_i"], "nd.choose_element_0index(x34, pick_i)", [1, 0]),
    "argmax_channel": (["x234"], "nd.argmax_channel(x234)", [0]),
    "onehot_encode": (["oh_i"], "nd.onehot_encode(oh_i, nd.zeros((3, 4)))", [0]),
    "khatri_rao": (["ka", "kb"], "nd.khatri_rao(ka, kb)", [0, 0]),
    "khatri_rao3": (["ka", "kb", "kc"], "nd.khatri_rao(ka, kb, kc)", [0, 0, 0]),
    "khatri_rao1": (["kb"], "nd.khatri_rao(kb)", [0]),
    "moments": (["x234"], "nd.moments(x234, axes=(0, 2))", [1]),
    "moments_keepdims": (["x234"], "nd.moments(x234, axes=1, keepdims=True)", [1]),
    "moments_int": (["i32"], "nd.moments(i32 * 7, axes=(0, 1))", [0]),
    "identity": (["x34"], "nd.identity(x34) * x34", [1]),
    "BlockGrad": (["x34"], "nd.BlockGrad(x34) * x34", [1]),
    "stop_gradient": (["x34"], "nd.stop_gradient(x34 * 2) + x34", [1]),
    "Cast": (["x34"], "nd.Cast(x34, dtype='float64')", [1]),
    "nanprod": (["nanx"], "nd.nanprod(nanx, axis=1)", [1]),
    "nanprod_all": (["nanx"], "nd.nanprod(nanx * 2)", [1]),
    "SequenceMask": (
        ["seq", "lens"],
        "nd.SequenceMask(seq, lens, use_sequence_length=True, value=-1.0)",
        [1, 0],
    ),
    "SequenceMask_axis1": (
        ["seq_t", "lens"],
        "nd.SequenceMask(seq_t, lens, use_sequence_length=True, axis=1)",
        [1, 0],
    ),
    "SequenceMask_off": (["seq"], "nd.SequenceMask(seq, value=3.0)", [1]),
    "SequenceLast": (
        ["seq", "lens"],
        "nd.SequenceLast(seq, lens, use_sequence_length=True)",
        [1, 0],
    ),
    "SequenceLast_axis1": (
        ["seq_t", "lens"],
        "nd.SequenceLast(seq_t, lens, use_sequence_length=True, axis=1)",
        [1, 0],
    ),
    # MXNet 1.9.1's backward of SequenceLast without lengths crashes: values only
    "SequenceLast_off": (["seq"], "nd.SequenceLast(seq)", [0]),
    "SequenceReverse": (
        ["seq", "lens"],
        "nd.SequenceReverse(seq, lens, use_sequence_length=True)",
        [1, 0],
    ),
    "SequenceReverse_off": (["seq"], "nd.SequenceReverse(seq)", [1]),
    "L2Normalization": (["nchw"], "nd.L2Normalization(nchw)", [1]),
    "L2Normalization_channel": (["nchw"], "nd.L2Normalization(nchw, mode='channel')", [1]),
    "L2Normalization_spatial": (
        ["nchw"],
        "nd.L2Normalization(nchw, mode='spatial', eps=1e-3)",
        [1],
    ),
    "L2Normalization_2d": (["x34"], "nd.L2Normalization(x34)", [1]),
    "LRN": (["nchw"], "nd.LRN(nchw, nsize=3)", [1]),
    "LRN_even": (["nchw"], "nd.LRN(nchw * 3, alpha=0.5, beta=0.6, knorm=1.5, nsize=4)", [1]),
    "UpSampling": (["up1"], "nd.UpSampling(up1, scale=2, sample_type='nearest')", [1]),
    "UpSampling_concat": (
        ["up1", "up2"],
        "nd.UpSampling(up1, up2, scale=2, sample_type='nearest', num_args=2)",
        [1, 1],
    ),
    "UpSampling_sum": (
        ["up1", "up3"],
        "nd.UpSampling(up1, up3, scale=2, sample_type='nearest', num_args=2, "
        "multi_input_mode='sum')",
        [1, 1],
    ),
    "UpSampling_bilinear": (
        ["up1", "upw"],
        "nd.UpSampling(up1, upw, scale=2, sample_type='bilinear', num_filter=2, num_args=2)",
        [1, 1],
    ),
}


@pytest.fixture(scope="module")
def mxnet_more(tmp_path_factory):
    failed, arrays = mxnet_cases(tmp_path_factory.mktemp("ops_more"), CASES, INPUTS)
    assert not failed, failed
    return arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_mxnet(name, mxnet_more):
    compare_case(name, CASES[name], INPUTS, mxnet_more, rtol=1e-5, atol=1e-6)


def test_out_of_range_lengths_and_indices():
    seq = nd.array(INPUTS["seq"])
    # SequenceLast clips lengths into [1, max_len] (MXNet reads out of bounds there)
    last = nd.SequenceLast(seq, nd.array([0, 9]), use_sequence_length=True).asnumpy()
    np.testing.assert_array_equal(last, np.stack([INPUTS["seq"][0, 0], INPUTS["seq"][3, 1]]))
    # a length of 0 masks everything, lengths are truncated to integers
    masked = nd.SequenceMask(seq, nd.array([0, 2.7]), use_sequence_length=True).asnumpy()
    assert (masked[:, 0] == 0).all() and (masked[2:, 1] == 0).all()
    np.testing.assert_array_equal(masked[:2, 1], INPUTS["seq"][:2, 1])
    np.testing.assert_array_equal(
        nd.unravel_index(nd.array([-1.0]), shape=(7, 6)).asnumpy(), [[0], [-1]]
    )


# ----------------------------------------------------------------- second derivatives
ANY = np.random.default_rng(2).uniform(-1.5, 1.5, (3, 4))
POS = np.random.default_rng(1).uniform(0.5, 2.0, (3, 4))
_LENS = np.array([1, 3, 2, 3])
_IDX = np.array([[0, 2, 1, 2], [3, 1, 0, 3]])

HIGHER = {
    "cumsum": lambda x: nd.cumsum(x * x * x, axis=1) * x,
    "cumsum_flat": lambda x: nd.cumsum(nd.sin(x)).reshape((3, 4)) * x,
    "diag": lambda x: nd.diag(nd.diag(x * x, k=1)) * nd.diag(x, k=-1).sum(),
    "split_v2": lambda x: nd.split_v2(x * x, (1, 3), axis=1)[1] * nd.split_v2(x, 2, axis=1)[0],
    "gather_scatter": lambda x: (
        nd.scatter_nd(nd.gather_nd(x * x, nd.array(_IDX)) ** 2, nd.array(_IDX), shape=(3, 4)) * x
    ),
    "sequence_ops": lambda x: (
        nd.SequenceMask(x * x, nd.array(_LENS), use_sequence_length=True, value=2.0)
        * nd.SequenceReverse(x * x, nd.array(_LENS), use_sequence_length=True)
        * nd.SequenceLast(x * x * x, nd.array(_LENS), use_sequence_length=True)
    ),
    "layout": lambda x: (
        nd.depth_to_space(nd.moveaxis((x * x).reshape((1, 2, 2, 3)), 3, 1), 1).reshape((3, 4))
        * nd.slice_like(
            nd.broadcast_axis(x.reshape((3, 4, 1)), axis=2, size=2), x.reshape((3, 4, 1))
        ).reshape((3, 4))
    ),
    "moments": lambda x: nd.moments(x * x, axes=1)[1] * nd.moments(x, axes=(0, 1))[0],
    "nanprod": lambda x: nd.nanprod(x, axis=0) * nd.sum(x, axis=0),
    "khatri_rao": lambda x: nd.khatri_rao(x * x, nd.sin(x)) * 1.5,
    "l2_instance": lambda x: nd.L2Normalization(x * x + x) * x,
    "l2_channel": lambda x: nd.L2Normalization(x.reshape((1, 3, 4)), mode="channel") * x.sum(),
    "upsampling": lambda x: nd.UpSampling(
        (x * x).reshape((1, 1, 3, 4)), scale=2, sample_type="nearest"
    ),
    "identity": lambda x: nd.identity(x * x) * x,
}


@pytest.mark.parametrize("name", sorted(HIGHER))
def test_second_derivative(name):
    check_hessian_vector(HIGHER[name], [POS if name == "nanprod" else ANY])


def test_block_grad_stops_higher_order_gradients_too():
    x0 = ANY
    x = nd.array(x0, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.BlockGrad(x * x) * x * x
        (g,) = autograd.grad(y, [x], create_graph=True)  # 2 x B, with B = x^2 held constant
        total = g.sum()
    total.backward()
    np.testing.assert_allclose(g.asnumpy(), 2 * x0**3)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x0**2)


def test_lrn_and_l2_gradients_in_float64():
    nchw = np.random.default_rng(5).uniform(-1, 1, (1, 5, 2, 2))
    check_grad(lambda x: nd.LRN(x * 3, alpha=0.3, beta=0.7, knorm=1.2, nsize=3), [nchw])
    check_grad(lambda x: nd.LRN(x, alpha=0.5, nsize=6), [nchw])
    check_grad(lambda x: nd.L2Normalization(x, mode="spatial"), [nchw])
    with pytest.raises(mx.MXNetError, match="LRN cannot be differentiated again"):
        x = nd.array(nchw, dtype="float64")
        x.attach_grad()
        with autograd.record():
            autograd.grad(nd.LRN(x, nsize=3), [x], create_graph=True)


# ----------------------------------------------------------------- methods and errors
def test_fluent_methods_are_the_functions():
    x = nd.array(INPUTS["x234"])
    img = nd.array(INPUTS["img"])
    pairs = [
        (x.diag(k=1), nd.diag(x, k=1)),
        (nd.array(INPUTS["one3"]).broadcast_axes(axis=0, size=2),
         nd.broadcast_axes(nd.array(INPUTS["one3"]), axis=0, size=2)),
        (x.slice_like(nd.zeros((1, 2, 3))), nd.slice_like(x, nd.zeros((1, 2, 3)))),
        (x.shape_array(), nd.shape_array(x)),
        (x.size_array(), nd.size_array(x)),
        (x.split_v2(2)[1], nd.split_v2(x, 2)[1]),
        (img.depth_to_space(2), nd.depth_to_space(img, 2)),
        (img.space_to_depth(1), nd.space_to_depth(img, 1)),
        (img.pad(mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 2, 0)),
         nd.pad(img, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 2, 0))),
        (x.nanprod(axis=2), nd.nanprod(x, axis=2)),
        (x.argmax_channel(), nd.argmax_channel(x)),
    ]  # fmt: skip
    for got, want in pairs:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert x.shape_array().dtype == np.int64


_BAD = [
    (lambda: nd.depth_to_space(nd.zeros((1, 3, 2, 2)), 2), "multiple of block_size"),
    (lambda: nd.space_to_depth(nd.zeros((1, 1, 3, 2)), 2), "multiple of block_size"),
    (lambda: nd.depth_to_space(nd.zeros((4, 2, 2)), 2), "4-d"),
    (lambda: nd.split_v2(nd.zeros((10,)), 3), "equal sections"),
    (lambda: nd.split_v2(nd.zeros((10,)), (5, 2)), "sorted"),
    (lambda: nd.split_v2(nd.zeros((10,)), (2, 12)), "within"),
    (lambda: nd.split_v2(nd.zeros((2, 3)), (1,), axis=1, squeeze_axis=True), "length 1"),
    (lambda: nd.gather_nd(nd.zeros((2, 3)), nd.array([[1, 5]])), "out of range"),
    (lambda: nd.gather_nd(nd.zeros((2, 3)), nd.array([[0], [1], [0]])), "address 3 axes"),
    (lambda: nd.scatter_nd(nd.zeros((3,)), nd.array([[0, 1]]), shape=(2,)), "does not fit"),
    (lambda: nd.ravel_multi_index(nd.zeros((3, 2)), shape=(4, 4)), "first axis of length 2"),
    (lambda: nd.batch_take(nd.zeros((3, 2)), nd.array([0, 1])), "one index per row"),
    (lambda: nd.diag(nd.zeros((2, 3)), axis1=1, axis2=-1), "same axis"),
    (lambda: nd.diag(nd.zeros((2, 3)), k=5), "does not exist"),
    (lambda: nd.moveaxis(nd.zeros((2, 3)), [0, 0], [1, 0]), "repeated axis"),
    (lambda: nd.broadcast_axis(nd.zeros((2, 2)), axis=0, size=3), "length-1 axes"),
    (lambda: nd.slice_like(nd.zeros((2, 3)), nd.zeros((1, 5))), "exceeds the input"),
    (lambda: nd.slice_like(nd.zeros((2, 3)), nd.zeros((1,))), "same dimensions"),
    (lambda: nd.moments(nd.zeros((2, 3))), "axes must be given"),
    (lambda: nd.khatri_rao(nd.zeros((2, 2)), nd.zeros((2, 3))), "2 columns"),
    (lambda: nd.khatri_rao(nd.zeros((3,))), "must be matrices"),
    (lambda: nd.argmax_channel(nd.zeros((3,))), "at least 2 dimensions"),
    (lambda: nd.SequenceReverse(nd.zeros((3, 2)), axis=1), "axis must be 0"),
    (lambda: nd.SequenceMask(nd.zeros((3, 2)), use_sequence_length=True), "needs sequence_len"),
    (
        lambda: nd.SequenceLast(nd.zeros((3, 2)), nd.zeros((3,)), use_sequence_length=True),
        "does not match the batch",
    ),
    (lambda: nd.L2Normalization(nd.zeros((2, 3)), mode="spatial"), "at least 3 dimensions"),
    (lambda: nd.L2Normalization(nd.zeros((2, 3)), mode="pixel"), "unknown mode"),
    (lambda: nd.LRN(nd.zeros((1, 3, 2, 2))), "nsize"),
    (lambda: nd.UpSampling(nd.zeros((1, 1, 2, 2)), scale=2, sample_type="cubic"), "sample_type"),
    (
        lambda: nd.UpSampling(
            nd.zeros((1, 1, 2, 2)), nd.zeros((1, 1, 3, 3)), scale=2, sample_type="nearest"
        ),
        "does not divide",
    ),
    (
        lambda: nd.UpSampling(nd.zeros((1, 1, 2, 2)), scale=2, sample_type="nearest", num_args=2),
        "num_args=2",
    ),
]


@pytest.mark.parametrize("case", range(len(_BAD)))
def test_bad_input_errors(case):
    fn, match = _BAD[case]
    with pytest.raises(mx.MXNetError, match=match):
        fn()


def test_out_keyword_and_onehot_encode_writes_its_out():
    x = nd.array(INPUTS["x34"])
    out = nd.zeros((12,))
    assert nd.cumsum(x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), np.cumsum(INPUTS["x34"]), rtol=1e-6)
    mean, var = nd.zeros((3,)), nd.zeros((3,))
    got = nd.moments(x, axes=1, out=[mean, var])
    assert got[0] is mean and got[1] is var
    np.testing.assert_allclose(var.asnumpy(), INPUTS["x34"].var(axis=1), rtol=1e-5)
    target = nd.zeros((3, 4))
    assert nd.onehot_encode(nd.array([1, 0, 3]), target) is target
    np.testing.assert_array_equal(target.asnumpy(), np.eye(4)[[1, 0, 3]])


@pytest.mark.parametrize("op", ["SequenceMask", "SequenceLast", "SequenceReverse"])
def test_sequence_ops_take_sequence_length_as_a_symbol_input(op):
    data, lens = mx.sym.var("data"), mx.sym.var("lens")
    out = getattr(mx.sym, op)(data, sequence_length=lens, use_sequence_length=True)
    assert out.list_arguments() == ["data", "lens"]
    assert getattr(mx.sym, op)(data).list_arguments() == ["data"]
    x = mx.nd.array(np.arange(24).reshape(4, 3, 2))
    n = mx.nd.array([1, 4, 2])
    got = out.eval(data=x, lens=n)[0].asnumpy()
    want = getattr(mx.nd, op)(x, n, use_sequence_length=True).asnumpy()
    np.testing.assert_array_equal(got, want)
