"""``mx.nd.contrib`` against Apache MXNet 1.9.1: control flow, masks and index ops, elementwise
helpers, bilinear resizing and adaptive pooling, box IoU and non-maximum suppression.

The code that calls the operators is written once (``_SHARED``) and run word for word under both
libraries (``mx`` is either one); MXNet 1.9.1 runs every case in one process through
``mxnet_ref``. Each case returns NumPy arrays by name: outputs, and the gradients autograd gives
for the head ``cos(0.7 * arange(size))``. Finite differences check the gradients once more, and
bad inputs must raise MXNetError naming the problem.
"""

import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import autograd, nd
from mxrs.base import MXNetError

_SHARED = """
import numpy as np


def head(mx, y):
    return mx.nd.array(np.cos(0.7 * np.arange(y.size)).reshape(y.shape), dtype=y.dtype)


def grad(mx, fn, *xs):
    # fn(*xs) and the gradient of sum(head * fn(*xs)) for each x
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        y = fn(*xs)
        loss = (y * head(mx, y)).sum()
    loss.backward()
    return [y.asnumpy()] + [x.grad.asnumpy() for x in xs]


def put(res, name, values):
    for i, v in enumerate(values):
        res[f"{name}:{i}"] = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)


def flow(mx, inp):
    nd, c, res = mx.nd, mx.nd.contrib, {}
    data, s0, s1 = nd.array(inp["seq"]), nd.array(inp["s0"]), nd.array(inp["s1"])
    for v in (data, s0, s1):
        v.attach_grad()

    def body(x, states):
        a, b = states
        return [x * a + 1, [b * x.sum()]], [a + x, b * 0.5]

    with mx.autograd.record():
        outs, states = c.foreach(body, data, [s0, s1])
        flat = [outs[0], outs[1][0], states[0], states[1]]
        loss = sum((f * head(mx, f)).sum() for f in flat)
    loss.backward()
    put(res, "foreach", flat + [data.grad, s0.grad, s1.grad])

    # a list of data arrays, one output array, and 1-D data (slices of shape (1,))
    a, b = nd.array(inp["seq"]), nd.array(inp["seq2"])
    outs, st = c.foreach(lambda xs, s: (xs[0].sum() * xs[1], [s[0] + xs[1]]), [a, b], [b[0]])
    put(res, "foreach_list", [outs, st[0]])
    outs, st = c.foreach(lambda x, s: (x * 2, s + x), nd.array([1.0, 2.0, 3.0]), nd.array([0.5]))
    put(res, "foreach_1d", [outs, st])

    i0, v0 = nd.array([0.0]), nd.array(inp["s0"])
    v0.attach_grad()
    with mx.autograd.record():
        outs, (i_end, v_end) = c.while_loop(
            lambda i, v: i < 5,
            lambda i, v: ([v * i, [v.sum() + i]], [i + 1, v * 1.5 + i]),
            [i0, v0],
            max_iterations=8,
        )
        # MXNet leaves the rows after the last step undefined: compare the first five
        first, second = outs[0][:5], outs[1][0][:5]
        loss = sum((f * head(mx, f)).sum() for f in (first, second, v_end))
    loss.backward()
    put(res, "while", [first, second, i_end, v_end, v0.grad, outs[0].shape, outs[1][0].shape])

    outs, x_end = c.while_loop(
        lambda x: x.sum() < 20, lambda x: (x * 2, x + 3), nd.array([1.0, 2.0]), max_iterations=10
    )
    put(res, "while_one", [outs[:3], x_end, outs.shape])
    outs, x_end = c.while_loop(lambda x: x.sum() < 0, lambda x: (x, x), nd.array([1.0]), 3)
    put(res, "while_none", [len(outs), x_end])

    a = nd.array([1.0, 2.0])
    a.attach_grad()
    with mx.autograd.record():
        y1 = c.cond(a.sum() < 5, lambda: a * a, lambda: a + 1)
        y2 = c.cond(a.sum() > 5, lambda: a * a, lambda: a * 3)
        loss = (y1 * y2).sum()
    loss.backward()
    put(res, "cond", [y1, y2, a.grad])
    return res


def masks(mx, inp):
    nd, c, res = mx.nd, mx.nd.contrib, {}
    idx = nd.array([0, 1, 0, -2])
    put(res, "boolean_mask", grad(mx, lambda d: c.boolean_mask(d, idx), nd.array(inp["x43"])))
    put(res, "boolean_mask_int", [
        c.boolean_mask(nd.array(inp["x43"]), nd.array([1, 0, 1, 1], dtype="int32")),
        c.boolean_mask(nd.array(inp["x43"]), nd.zeros(4)).shape,
    ])
    old, new = nd.array(inp["old"]), nd.array(inp["new"])
    for name, pos in (("index_copy", [0, 4, 2]), ("index_copy_dup", [0, 4, 4])):
        i = nd.array(pos)
        put(res, name, grad(mx, lambda o, n: c.index_copy(o, i, n), old.copy(), new.copy()))
    put(res, "index_copy_1d", [
        c.index_copy(nd.array(inp["old1"]), nd.array([5, 1], dtype="int64"), nd.array([7, 8]))
    ])
    x = nd.array(inp["x34"])
    put(res, "arange_like", [
        c.arange_like(x, start=1.5, step=0.1, repeat=2),
        c.arange_like(x, axis=-1),
        c.arange_like(x, start=-2, step=0.5, repeat=3, axis=0),
        c.arange_like(x.astype("int32"), start=2, step=3),
        c.arange_like(x.astype("float64"), start=0.1, step=0.3),
    ])
    z = nd.zeros((2, 3, 4))
    put(res, "index_array", [
        c.index_array(z), c.index_array(z, axes=(-1, 0)), c.index_array(z, axes=(1,)),
    ])
    return res


def elementwise(mx, inp):
    nd, c, res = mx.nd, mx.nd.contrib, {}
    x = nd.array(inp["x35"])
    put(res, "div_sqrt_dim", grad(mx, c.div_sqrt_dim, x.copy()))
    put(res, "quadratic", grad(mx, lambda v: c.quadratic(v, a=1.5, b=-2, c=0.5), x.copy()))
    put(res, "quadratic64", [c.quadratic(x.astype("float64"), a=-0.3, b=0.7, c=2)])
    put(res, "quadratic_default", [c.quadratic(x)])
    put(res, "gradientmultiplier", grad(mx, lambda v: c.gradientmultiplier(v, scalar=-2.5), x))
    for dt in ("float32", "float64"):
        s = nd.array(inp["special"], dtype=dt)
        put(res, "classify_" + dt, [c.isfinite(s), c.isnan(s), c.isinf(s)])
    pairs = [
        ([1.0, 2.0], [1.0, 2.00001], {}),
        ([1e10, 1e-7], [1.00001e10, 1e-8], {}),
        ([1e10, 1e-8], [1.00001e10, 1e-9], {}),
        ([1.0, np.nan], [1.0, np.nan], {}),
        ([1.0, np.nan], [1.0, np.nan], {"equal_nan": False}),
        ([np.nan, 1.0], [1.0, 1.0], {}),
        ([np.inf, -np.inf], [np.inf, -np.inf], {}),
        ([np.inf, 1.0], [-np.inf, 1.0], {}),
        ([1.0, 2.0], [1.1, 2.2], {"rtol": 0.2}),
        ([1.0, 2.0], [1.1, 2.2], {"atol": 0.15}),
        ([1.0, 2.0], [1.1, 2.2], {"atol": 0.15, "rtol": 0.01}),
    ]
    res["allclose"] = np.array([
        int(c.allclose(nd.array(a), nd.array(b), **kw).asnumpy().reshape(-1)[0])
        for a, b, kw in pairs
    ])
    return res


RESIZE = [
    {"height": 4, "width": 9},
    {"height": 8, "width": 3, "align_corners": False},
    {"scale_height": 1.6, "scale_width": 0.7},
    {"scale_height": 0.5, "scale_width": 2.0, "align_corners": False},
    {"height": 1, "width": 1},
    {"height": 1, "width": 1, "align_corners": False},
    {"height": 5, "width": 7},
    {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5},
    {"mode": "to_even_up"},
    {"mode": "to_even_down", "align_corners": False},
    {"mode": "to_odd_up"},
    {"mode": "to_odd_down"},
]

POOL = [1, 3, (2, 5), (5, 7), (9, 11), (4, 3), (1, 6)]


def resize(mx, inp):
    nd, c, res = mx.nd, mx.nd.contrib, {}
    for k, kw in enumerate(RESIZE):
        img = nd.array(inp["img"])
        put(res, f"bilinear{k}", grad(mx, lambda d: c.BilinearResize2D(d, **kw), img))
    like = nd.zeros((2, 3, 4, 6))
    put(res, "bilinear_like", grad(
        mx, lambda d: c.BilinearResize2D(d, like, mode="like", align_corners=False),
        nd.array(inp["img"]),
    ))
    for k, size in enumerate(POOL):
        put(res, f"pool{k}", grad(
            mx, lambda d: c.AdaptiveAvgPooling2D(d, output_size=size), nd.array(inp["img"])
        ))
    put(res, "pool_default", [c.AdaptiveAvgPooling2D(nd.array(inp["img"]))])
    return res


NMS = [
    {},
    {"overlap_thresh": 0.3, "valid_thresh": 0.2},
    {"topk": 5},
    {"topk": 0, "out_format": "center"},
    {"id_index": 0},
    {"id_index": 0, "force_suppress": True, "overlap_thresh": 0.2},
    {"id_index": 0, "background_id": 1, "topk": 12},
    {"out_format": "center", "overlap_thresh": 0.25},
    {"in_format": "center", "out_format": "corner"},
    {"in_format": "center", "out_format": "center", "overlap_thresh": 0.1},
    {"valid_thresh": 2.0},
]


def boxes(mx, inp):
    nd, c, res = mx.nd, mx.nd.contrib, {}
    lhs, rhs = nd.array(inp["lhs"]), nd.array(inp["rhs"])
    put(res, "box_iou", [
        c.box_iou(lhs, rhs), c.box_iou(lhs, rhs, format="center"), c.box_iou(rhs, rhs[:2]),
    ])
    data = nd.array(inp["nms"])
    for k, kw in enumerate(NMS):
        put(res, f"nms{k}", [c.box_nms(data, **kw)])
    # another layout ([x1, y1, x2, y2, score, id]), more batch axes, float64
    moved = nd.array(inp["nms"][..., [2, 3, 4, 5, 1, 0]])
    put(res, "nms_layout", [
        c.box_nms(moved, coord_start=0, score_index=4, id_index=5, overlap_thresh=0.3)
    ])
    put(res, "nms_batch", [c.box_nms(data.reshape((2, 2, 20, 6)), overlap_thresh=0.4)])
    put(res, "nms64", [c.box_non_maximum_suppression(data.astype("float64"), id_index=0)])
    put(res, "nms_grad", grad(
        mx, lambda d: c.box_nms(d, overlap_thresh=0.3, id_index=0, topk=8), data.copy()
    ))
    put(res, "nms_grad_topk0", grad(mx, lambda d: c.box_nms(d, topk=0), data.copy()))
    return res


CASES = [flow, masks, elementwise, resize, boxes]
"""


def _boxes(rng, batch, n):
    """Boxes [id, score, x1, y1, x2, y2] around three centres per batch, so that they overlap;
    scores are rounded to two digits, so that some tie; some ids are -1 (background)."""
    centres = rng.uniform(0.2, 0.8, (batch, 3, 2))
    pick = rng.integers(0, 3, (batch, n))
    mid = centres[np.arange(batch)[:, None], pick] + rng.normal(0, 0.05, (batch, n, 2))
    half = rng.uniform(0.05, 0.2, (batch, n, 2))
    ids = rng.integers(-1, 3, (batch, n, 1))
    scores = rng.uniform(-0.1, 1.0, (batch, n, 1)).round(2)
    out = np.concatenate([ids, scores, mid - half, mid + half], axis=-1).astype(np.float32)
    out[:, :3, [2, 4]] -= 0.6  # boxes left of x = 0 (MXNet converts no row whose x1 is negative)
    return out


def _inputs():
    rng = np.random.default_rng(42)
    f32 = np.float32
    corners = rng.uniform(0, 0.6, (2, 3, 2))
    lhs = np.concatenate([corners, corners + rng.uniform(0, 0.5, (2, 3, 2))], axis=-1)
    rhs = np.concatenate([rng.uniform(0, 0.6, (5, 2)), rng.uniform(0.2, 1.0, (5, 2))], axis=-1)
    rhs[3] = [0.5, 0.5, 0.2, 0.2]  # a box of negative width and height (area 0)
    return {
        "seq": rng.normal(size=(4, 3)).astype(f32),
        "seq2": rng.normal(size=(4, 2)).astype(f32),
        "s0": rng.normal(size=3).astype(f32),
        "s1": rng.normal(size=2).astype(f32),
        "x43": rng.normal(size=(4, 3)).astype(f32),
        "x34": rng.normal(size=(3, 4)).astype(f32),
        "x35": rng.normal(size=(3, 5)).astype(f32),
        "old": rng.normal(size=(5, 3)).astype(f32),
        "new": rng.normal(size=(3, 3)).astype(f32),
        "old1": rng.normal(size=6).astype(f32),
        "special": np.array([1.5, np.inf, -np.inf, np.nan, 0.0, -3.0], dtype=f32),
        "img": rng.normal(size=(2, 3, 5, 7)).astype(f32),
        "lhs": lhs.astype(f32),
        "rhs": rhs.astype(f32),
        "nms": _boxes(rng, 4, 20),
    }


INPUTS = _inputs()


def _scope():
    scope = {}
    exec(_SHARED, scope)
    return scope


SHARED = _scope()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Every case of ``_SHARED`` run under MXNet 1.9.1, in one process."""
    script = _SHARED + textwrap.dedent(
        """
        import mxnet as mx
        for case in CASES:
            arrays.update({f"{case.__name__}/{k}": v for k, v in case(mx, inputs).items()})
        """
    )
    _, arrays = mxnet_ref.run(tmp_path_factory.mktemp("contrib"), script, **INPUTS)
    return arrays


def _compare(case, reference, rtol=1e-5, atol=1e-6):
    mine = SHARED[case](mx, INPUTS)
    theirs = {k.split("/", 1)[1]: v for k, v in reference.items() if k.startswith(case + "/")}
    assert sorted(mine) == sorted(theirs)
    for name, want in theirs.items():
        got = mine[name]
        assert got.shape == want.shape, name
        if want.dtype.kind in "iub":
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            assert got.dtype == want.dtype, name
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    return mine


def test_control_flow_matches_mxnet(reference):
    # foreach stacks nested outputs and threads states; while_loop pads its outputs to
    # max_iterations (zeros here) and returns the final loop variables; cond picks a branch;
    # gradients flow through all three.
    mine = _compare("flow", reference)
    np.testing.assert_array_equal(mine["while:5"], [8, 3])
    np.testing.assert_array_equal(mine["while_one:2"], [10, 2])
    np.testing.assert_array_equal(mine["while_none:0"], 0)


def test_while_loop_pads_with_zeros():
    outs, states = nd.contrib.while_loop(
        lambda i: i < 2, lambda i: (i * 10 + 1, i + 1), nd.array([0.0]), max_iterations=4
    )
    np.testing.assert_array_equal(outs.asnumpy().ravel(), [1, 11, 0, 0])
    np.testing.assert_array_equal(states.asnumpy(), [2])


def test_masks_and_index_ops_match_mxnet(reference):
    # boolean_mask (nonzero, also negative, entries select; its gradient scatters back),
    # index_copy (and both its gradients, with unique and repeated indices), arange_like,
    # index_array (int64)
    _compare("masks", reference)


def test_elementwise_ops_match_mxnet(reference):
    # div_sqrt_dim, quadratic, gradientmultiplier (with gradients), isfinite/isnan/isinf in
    # the input's dtype, and allclose's 0/1 over NaNs, infinities and tolerances
    _compare("elementwise", reference)
    res = nd.contrib.allclose(nd.array([1, 2]), nd.array([1, 2]))
    assert res.shape == () and res.dtype == np.uint8 and int(res.asnumpy()) == 1


def test_resizing_matches_mxnet(reference):
    # BilinearResize2D in every mode, both corner alignments and the scale_* form, and
    # AdaptiveAvgPooling2D down, up and to odd bins, forward and gradient
    _compare("resize", reference)


def test_boxes_match_mxnet(reference):
    # box_iou in both formats (with an empty box), box_nms with thresholds, topk, classes,
    # background, forced suppression, formats (a negative first coordinate is not converted),
    # another layout, more batch axes, float64 and its gradient
    _compare("boxes", reference)


@pytest.mark.parametrize(
    "fn, inputs",
    [
        (lambda d: nd.contrib.BilinearResize2D(d, height=4, width=9), [rand(1, 2, 3, 5)]),
        (
            lambda d: nd.contrib.BilinearResize2D(d, height=7, width=2, align_corners=False),
            [rand(2, 1, 4, 3)],
        ),
        (lambda d: nd.contrib.AdaptiveAvgPooling2D(d, output_size=(2, 3)), [rand(1, 2, 5, 7)]),
        (lambda d: nd.contrib.boolean_mask(d, nd.array([1, 0, 1])), [rand(3, 2)]),
        (lambda o, n: nd.contrib.index_copy(o, nd.array([3, 0]), n), [rand(4, 2), rand(2, 2)]),
        (lambda d: nd.contrib.quadratic(d, a=0.7, b=-1.2, c=3), [rand(2, 3)]),
        (nd.contrib.div_sqrt_dim, [rand(2, 5)]),
        (
            lambda d, s: nd.contrib.foreach(lambda x, st: (x * st, st + x), d, s)[0],
            [rand(3, 2), rand(2)],
        ),
    ],
)
def test_gradients_match_finite_differences(fn, inputs):
    check_grad(fn, inputs)


def test_gradientmultiplier_scales_only_the_gradient():
    x = nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.gradientmultiplier(x, scalar=0.25)
    y.backward(nd.array([4.0, 8.0, 1.0]))
    np.testing.assert_array_equal(y.asnumpy(), [1, -2, 3])
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, 2, 0.25])


def test_namespaces_aliases_and_out():
    assert mx.contrib.nd is nd.contrib and mx.contrib.ndarray is nd.contrib
    assert nd.contrib.box_non_maximum_suppression is nd.contrib.box_nms
    out = nd.zeros((2, 2))
    res = nd.contrib.quadratic(nd.array([[1, 2], [3, 4]]), a=1, out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), [[1, 4], [9, 16]])
    x = nd.arange(4).reshape((2, 2))
    np.testing.assert_array_equal(
        nd.contrib.boolean_mask(x, nd.array([0, 1]), axis=1).asnumpy(), [[1], [3]]
    )
    assert nd.contrib.arange_like(x, ctx="cpu(0)").context == mx.cpu(0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones(2)), "index must be 1-D"),
        (lambda: nd.contrib.boolean_mask(nd.ones((3, 2)), nd.ones((3, 1))), "got shape"),
        (
            lambda: nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 1]), nd.ones((3, 3))),
            "index_vector has 2 entries",
        ),
        (
            lambda: nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 1]), nd.ones((2, 2))),
            "does not fit",
        ),
        (
            lambda: nd.contrib.index_copy(nd.zeros((2, 3)), nd.array([0, 1, 1]), nd.ones((3, 3))),
            "does not fit",
        ),
        (
            lambda: nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([[0, 1]]), nd.ones((2, 3))),
            "must be 1-D",
        ),
        (
            lambda: nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 7]), nd.ones((2, 3))),
            "outside",
        ),
        (lambda: nd.contrib.box_iou(nd.ones((2, 5)), nd.ones((3, 4))), "lhs must have shape"),
        (lambda: nd.contrib.box_iou(nd.ones((4,)), nd.ones((3, 4))), "at least 2 dimensions"),
        (lambda: nd.contrib.box_iou(nd.ones((2, 4)), nd.ones((3, 4)), format="xywh"), "format"),
        (lambda: nd.contrib.box_nms(nd.ones((6,))), "at least 2 dimensions"),
        (lambda: nd.contrib.box_nms(nd.ones((3, 4))), "at least 5"),
        (lambda: nd.contrib.box_nms(nd.ones((3, 6)), coord_start=3), "out of range"),
        (lambda: nd.contrib.box_nms(nd.ones((3, 6)), score_index=3), "falls on the coordinates"),
        (lambda: nd.contrib.box_nms(nd.ones((3, 6)), id_index=1), "both 1"),
        (lambda: nd.contrib.box_nms(nd.ones((3, 6)), out_format="xyxy"), "out_format"),
        (lambda: nd.contrib.BilinearResize2D(nd.ones((2, 3, 4))), "4-D NCHW"),
        (lambda: nd.contrib.BilinearResize2D(nd.ones((1, 1, 2, 2)), mode="area"), "unknown mode"),
        (
            lambda: nd.contrib.BilinearResize2D(nd.ones((1, 1, 2, 2)), scale_height=2.0),
            "both scale_height and scale_width",
        ),
        (lambda: nd.contrib.BilinearResize2D(nd.ones((1, 1, 2, 2)), mode="like"), "like array"),
        (lambda: nd.contrib.AdaptiveAvgPooling2D(nd.ones((1, 4, 4))), "4-D NCHW"),
        (
            lambda: nd.contrib.AdaptiveAvgPooling2D(nd.ones((1, 1, 4, 4)), output_size=(1, 2, 3)),
            "output_size",
        ),
        (lambda: nd.contrib.allclose(nd.ones(2), nd.ones((1, 2))), "shapes differ"),
        (lambda: nd.contrib.arange_like(nd.ones(2), repeat=0), "repeat"),
        (lambda: nd.contrib.foreach(lambda x, s: (x, s), [1, 2], []), "foreach data"),
        (
            lambda: nd.contrib.foreach(lambda x, s: (x, s), [nd.ones(2), nd.ones(3)], []),
            "differ in length",
        ),
        (
            lambda: nd.contrib.while_loop(lambda x: x < 1, lambda x: (x, x), nd.zeros(1)),
            "max_iterations",
        ),
        (
            lambda: nd.contrib.while_loop(
                lambda x: x < 1, lambda x: (x, [x, x]), nd.zeros(1), max_iterations=2
            ),
            "2 loop variables, expected 1",
        ),
        (
            lambda: nd.contrib.while_loop(
                lambda x: x < 3, lambda x: (nd.ones(int(x.asscalar()) + 1), x + 1), nd.zeros(1), 5
            ),
            "changes shape",
        ),
        (lambda: nd.contrib.cond(nd.ones(2), lambda: 1, lambda: 2), "pred must be a scalar"),
    ],
)
def test_bad_inputs_raise_mxnet_error(call, message):
    with pytest.raises(MXNetError, match=message):
        call()
