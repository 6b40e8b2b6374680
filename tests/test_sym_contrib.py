"""mx.sym.contrib: graphs of MXNet's ``_contrib_`` operators made by mxrs load in Apache MXNet
1.9.1, and both libraries compute the same outputs from them."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest


def _graph():
    a, b, img = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("img")
    old, idx, new = mx.sym.var("old"), mx.sym.var("idx"), mx.sym.var("new")
    c = mx.sym.contrib
    outs = [
        c.box_iou(a, b, format="corner"),
        c.isnan(a) + c.isinf(a) * 2 + c.isfinite(a) * 4,
        c.div_sqrt_dim(img),
        c.quadratic(a, a=1.5, b=-2.0, c=0.5),
        c.BilinearResize2D(img, height=5, width=7),
        c.AdaptiveAvgPooling2D(img, output_size=(2, 3)),
        c.arange_like(a),
        c.index_copy(old, idx, new),
        c.gradientmultiplier(a, scalar=3.0),
        c.BatchNormWithReLU(img, fix_gamma=False, name="bnr"),
    ]
    return mx.sym.Group(outs)


def test_contrib_graphs_run_the_same_in_mxnet(tmp_path):
    rng = np.random.default_rng(4)
    inputs = {
        "a": np.array([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 4.0]], dtype=np.float32),
        "b": np.array([[1.0, 0.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0], [5, 5, 6, 6]], np.float32),
        "img": rng.standard_normal((2, 3, 4, 6)).astype(np.float32),
        "old": rng.standard_normal((5, 3)).astype(np.float32),
        "idx": np.array([4, 0], dtype=np.int64),
        "new": rng.standard_normal((2, 3)).astype(np.float32),
    }
    json_text = _graph().tojson()
    assert '"op": "_contrib_box_iou"' in json_text
    script = """
import mxnet as mx
sym = mx.sym.load_json(open("graph.json").read())
args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()}
args["bnr_gamma"] = mx.nd.array([1.5, 0.5, 2.0])
args["bnr_beta"] = mx.nd.array([0.1, -0.2, 0.3])
aux = {"bnr_moving_mean": mx.nd.array([0.2, -0.1, 0.0]),
       "bnr_moving_var": mx.nd.array([1.0, 2.0, 0.5])}
ex = sym.bind(mx.cpu(), args, aux_states=aux)
for i, o in enumerate(ex.forward(is_train=False)):
    arrays[f"out{i}"] = o.asnumpy()
"""
    (tmp_path / "graph.json").write_text(json_text)
    _, want = mxnet_ref.run(tmp_path, script, **inputs)
    args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()}
    args["bnr_gamma"] = mx.nd.array([1.5, 0.5, 2.0])
    args["bnr_beta"] = mx.nd.array([0.1, -0.2, 0.3])
    aux = {
        "bnr_moving_mean": mx.nd.array([0.2, -0.1, 0.0]),
        "bnr_moving_var": mx.nd.array([1.0, 2.0, 0.5]),
    }
    ex = mx.sym.load_json(json_text).bind(mx.cpu(), args, aux_states=aux)
    outs = ex.forward(is_train=False)
    assert len(outs) == len(want)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(
            o.asnumpy(), want[f"out{i}"], rtol=1e-5, atol=1e-6, err_msg=str(i)
        )


def test_symbolic_control_flow_is_refused_with_the_way_out():
    with pytest.raises(mx.MXNetError, match="use mx.nd.contrib.foreach imperatively"):
        mx.sym.contrib.foreach  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mx.sym.contrib.nope  # noqa: B018


def test_rand_zipfian_is_composed_as_mxnet_composes_it():
    mx.random.seed(3)
    outs = mx.sym.contrib.rand_zipfian(mx.sym.var("true"), 4000, 20)
    assert isinstance(outs, tuple) and len(outs) == 3
    ex = mx.sym.Group(list(outs)).bind(mx.cpu(), {"true": mx.nd.array([0, 5, 19], dtype="int32")})
    sampled, count_true, count_sampled = ex.forward()
    s = sampled.asnumpy()
    assert sampled.dtype == np.int64 and s.shape == (4000,) and 0 <= s.min() and s.max() < 20
    law = np.log((np.arange(20) + 2.0) / (np.arange(20) + 1.0)) / np.log(21.0)
    np.testing.assert_allclose(count_true.asnumpy(), law[[0, 5, 19]] * 4000, rtol=1e-12)
    np.testing.assert_allclose(count_sampled.asnumpy(), law[s] * 4000, rtol=1e-12)
    freq = np.bincount(s, minlength=20) / 4000.0
    assert np.abs(freq - law).max() < 0.03  # the log-uniform law, within sampling noise
    with pytest.raises(mx.MXNetError, match="must be at least 1"):
        mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 0, 20)
