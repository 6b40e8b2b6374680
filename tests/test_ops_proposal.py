"""``contrib.Proposal`` and ``contrib.MultiProposal`` (mx.nd and mx.sym) against Apache MXNet
1.9.1: the proposals and their scores over anchor sets, strides, NMS thresholds, top-k limits,
minimum sizes, images smaller than the feature map covers (cells beyond it score -1), IoU-loss
deltas, padding by repetition when suppression keeps too few, and batches; the zero gradient;
the symbols' outputs and shapes; the errors for bad input."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

RNG = np.random.default_rng(3)

_SMALL = dict(scales=(2, 4), ratios=(0.5, 1, 2), feature_stride=16)
#: (operator, attributes, batch, feature map (H, W), im_info row)
CASES = [
    ("Proposal", dict(_SMALL, rpn_pre_nms_top_n=60, rpn_post_nms_top_n=20, rpn_min_size=4),
     1, (5, 6), (80, 96, 1)),
    ("Proposal", dict(scales=(8,), ratios=(1,), feature_stride=8, rpn_pre_nms_top_n=1000,
                      rpn_post_nms_top_n=50, threshold=0.5), 1, (6, 7), (40, 56, 1.5)),
    ("Proposal", dict(scales=(2, 4), ratios=(0.5, 2), rpn_pre_nms_top_n=30,
                      rpn_post_nms_top_n=40, threshold=0.3, rpn_min_size=2, iou_loss=True),
     1, (4, 5), (64, 80, 1)),
    ("Proposal", {}, 1, (5, 6), (70, 90, 1)),
    ("Proposal", dict(_SMALL, rpn_pre_nms_top_n=5, rpn_post_nms_top_n=12, threshold=0.9),
     1, (3, 3), (48, 48, 2)),
    ("MultiProposal", dict(_SMALL, rpn_pre_nms_top_n=60, rpn_post_nms_top_n=20, rpn_min_size=4),
     3, (5, 6), (80, 96, 1)),
    ("MultiProposal", dict(scales=(3, 6), ratios=(1,), feature_stride=4, rpn_pre_nms_top_n=200,
                           rpn_post_nms_top_n=30, threshold=0.6, rpn_min_size=8),
     2, (8, 6), (30, 24, 1)),
]  # fmt: skip

_BODY = """
cases = json.loads(bytes(inputs["cases"]).decode())
for i, (fn, attrs) in enumerate(cases):
    cls, bbox, info = (mx.nd.array(inputs[f"{k}{i}"]) for k in ("cls", "bbox", "info"))
    rois, score = getattr(mx.nd.contrib, fn)(cls, bbox, info, output_score=True, **attrs)
    alone = getattr(mx.nd.contrib, fn)(cls, bbox, info, **attrs)
    arrays[f"{i}.rois"] = rois.asnumpy()
    arrays[f"{i}.score"] = score.asnumpy()
    arrays[f"{i}.alone"] = alone.asnumpy()
"""


def _anchors(attrs):
    return len(attrs.get("scales", (4, 8, 16, 32))) * len(attrs.get("ratios", (0.5, 1, 2)))


def _inputs(i):
    _, attrs, n, (h, w), info = CASES[i]
    a = _anchors(attrs)
    spread = 3.0 if attrs.get("iou_loss") else 0.3
    return {
        f"cls{i}": RNG.uniform(0, 1, (n, 2 * a, h, w)).astype(np.float32),
        f"bbox{i}": (RNG.standard_normal((n, 4 * a, h, w)) * spread).astype(np.float32),
        f"info{i}": np.array([info] * n, dtype=np.float32),
    }


def test_proposal_matches_mxnet(tmp_path):
    inputs = {k: v for i in range(len(CASES)) for k, v in _inputs(i).items()}
    cases = [(c[0], c[1]) for c in CASES]
    inputs["cases"] = np.frombuffer(json.dumps(cases).encode(), dtype=np.uint8)
    want = mxnet_ref.check_body(tmp_path, _BODY, inputs, rtol=1e-5, atol=1e-4)
    # the cases reach what they are meant to: filtered boxes, padding by repetition
    assert (want["1.score"] == -1).any() and (want["3.score"] == -1).any()
    rows = want["4.rois"]
    assert len(np.unique(rows, axis=0)) < len(rows)


def test_proposal_gradient_is_zero():
    arrays = [mx.nd.array(v) for v in _inputs(0).values()]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        rois, score = mx.nd.contrib.Proposal(*arrays, output_score=True, **CASES[0][1])
        loss = (rois * 2).sum() + score.sum()
    loss.backward()
    for a in arrays:
        assert a.grad.shape == a.shape
        assert (a.grad.asnumpy() == 0).all()
    arrays = [mx.nd.array(v) for v in _inputs(5).values()]
    arrays[0].attach_grad()
    with mx.autograd.record():
        rois = mx.nd.contrib.MultiProposal(*arrays, **CASES[5][1])
    rois.backward(mx.nd.ones_like(rois))
    assert (arrays[0].grad.asnumpy() == 0).all()


@pytest.mark.parametrize("i", [0, 5])
def test_proposal_symbol(i):
    fn, attrs, n, (h, w), _ = CASES[i]
    vals = list(_inputs(i).values())
    names = ["cls_prob", "bbox_pred", "im_info"]
    sym_fn = getattr(mx.sym.contrib, fn)
    args = [mx.sym.var(k) for k in names]
    post = attrs["rpn_post_nms_top_n"]
    shapes = dict(zip(names, (v.shape for v in vals), strict=True))
    plain = sym_fn(*args, name="rpn", **attrs)
    assert plain.list_arguments() == names
    assert plain.list_outputs() == ["rpn_output"]
    assert plain.infer_shape(**shapes)[1] == [(n * post, 5)]
    s = sym_fn(*args, name="rpn", output_score=True, **attrs)
    assert s.list_outputs() == ["rpn_output", "rpn_score"]
    assert s.infer_shape(**shapes)[1] == [(n * post, 5), (n * post, 1)]
    nd_args = {k: mx.nd.array(v) for k, v in zip(names, vals, strict=True)}
    grads = {k: mx.nd.ones(v.shape) for k, v in zip(names, vals, strict=True)}
    ex = s.bind(mx.cpu(), nd_args, args_grad=grads)
    outs = ex.forward(is_train=True)
    want = getattr(mx.nd.contrib, fn)(*nd_args.values(), output_score=True, **attrs)
    for o, x in zip(outs, want, strict=True):
        np.testing.assert_array_equal(o.asnumpy(), x.asnumpy())
    ex.backward([mx.nd.ones_like(o) for o in outs])
    for g in grads.values():
        assert (g.asnumpy() == 0).all()


def test_proposal_takes_out():
    vals = [mx.nd.array(v) for v in _inputs(0).values()]
    out = mx.nd.zeros((20, 5))
    res = mx.nd.contrib.Proposal(*vals, out=out, **CASES[0][1])
    assert res is out
    np.testing.assert_array_equal(
        out.asnumpy(), mx.nd.contrib.Proposal(*vals, **CASES[0][1]).asnumpy()
    )


def _arrays(n=1, a=6, h=5, w=6, info=(80, 96, 1)):
    return (
        mx.nd.zeros((n, 2 * a, h, w)),
        mx.nd.zeros((n, 4 * a, h, w)),
        mx.nd.array([info] * n),
    )


@pytest.mark.parametrize(
    "fn, arrays, attrs, match",
    [
        ("Proposal", _arrays(n=2), _SMALL, "one image"),
        ("Proposal", _arrays(a=5), _SMALL, "6 anchors"),
        ("MultiProposal", _arrays(n=2, info=(300, 96, 1)), _SMALL, "feature map"),
        ("Proposal", _arrays()[:2] + (mx.nd.zeros((1, 2)),), _SMALL, "im_info"),
        ("Proposal", (mx.nd.zeros((12, 5, 6)),) + _arrays()[1:], _SMALL, "cls_prob"),
        ("Proposal", _arrays(), dict(_SMALL, rpn_post_nms_top_n=0), "rpn_post_nms_top_n"),
        ("Proposal", _arrays(), dict(_SMALL, scales=()), "scales"),
        ("Proposal", _arrays(), dict(_SMALL, feature_stride=0), "feature_stride"),
    ],
)
def test_proposal_errors(fn, arrays, attrs, match):
    with pytest.raises(MXNetError, match=match):
        getattr(mx.nd.contrib, fn)(*arrays, **attrs)
