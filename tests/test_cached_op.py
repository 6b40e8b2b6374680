"""mx.nd.CachedOp against Apache MXNet 1.9.1: a graph called like a function, its inputs in
``list_inputs()`` order (auxiliary states included), outputs and recorded gradients."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest

BUILD = """
d, w = mx.sym.var("data"), mx.sym.var("w")
fc = mx.sym.FullyConnected(d, w, num_hidden=3, no_bias=True, name="fc")
bn = mx.sym.BatchNorm(fc, fix_gamma=False, use_global_stats=True, name="bn")
graph = mx.sym.Group([mx.sym.relu(bn), mx.sym.sum(fc * fc)])
"""

RUN = (
    BUILD
    + """
order = graph.list_inputs()
vals = {k: mx.nd.array(inputs[k]) for k in order}
for k in ("data", "w"):
    vals[k].attach_grad()
op = mx.nd.CachedOp(graph)
with mx.autograd.record():
    y, s = op(*[vals[k] for k in order])
mx.autograd.backward([y, s], [mx.nd.array(inputs["head"]), mx.nd.ones((1,))])
arrays["order"] = np.array([",".join(order)])
arrays["y"], arrays["s"] = y.asnumpy(), s.asnumpy()
arrays["gd"], arrays["gw"] = vals["data"].grad.asnumpy(), vals["w"].grad.asnumpy()
"""
)


def test_cached_op_matches_mxnet(tmp_path):
    rng = np.random.default_rng(6)
    inputs = {
        "data": rng.standard_normal((4, 5)).astype(np.float32),
        "w": rng.standard_normal((3, 5)).astype(np.float32),
        "bn_gamma": np.array([1.5, 0.5, 2.0], np.float32),
        "bn_beta": np.array([0.1, -0.2, 0.3], np.float32),
        "bn_moving_mean": np.array([0.2, -0.1, 0.0], np.float32),
        "bn_moving_var": np.array([1.0, 2.0, 0.5], np.float32),
        "head": rng.standard_normal((4, 3)).astype(np.float32),
    }
    _, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + RUN, **inputs)
    scope = {"mx": mx, "np": np, "inputs": inputs, "arrays": {}}
    exec(RUN, scope)
    got = scope["arrays"]
    assert list(got["order"]) == list(want["order"])
    for key in ("y", "s", "gd", "gw"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_cached_op_checks_its_inputs_and_writes_out():
    scope = {"mx": mx}
    exec(BUILD, scope)
    op = mx.nd.CachedOp(scope["graph"], flags=[("static_alloc", "true")])
    with pytest.raises(mx.MXNetError, match="takes 6 inputs"):
        op(mx.nd.ones((2, 5)))
    single = mx.nd.CachedOp(mx.sym.var("x") * 2)
    out = mx.nd.zeros((2,))
    assert single(mx.nd.array([1.0, 2.0]), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [2.0, 4.0])
