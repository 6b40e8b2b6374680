"""mx.optimizer.contrib.GroupAdaGrad against MXNet 1.9.1 (dense and row_sparse gradients)."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

_SCRIPT = """
import mxnet as mx
for name, kw in CASES:
    opt = mx.optimizer.contrib.GroupAdaGrad(**kw)
    w = mx.nd.array(inputs["w"])
    st = opt.create_state(0, w)
    for step in range(2):
        g = mx.nd.array(inputs["g%d" % step])
        if name.endswith("sparse"):
            g = g.tostype("row_sparse")
        opt.update(0, w, g, st)
    arrays[name] = w.asnumpy()
    arrays[name + "_state"] = st.asnumpy()
"""

_CASES = [
    ("plain", {}),
    ("clip", {"clip_gradient": 0.3, "rescale_grad": 0.8, "eps": 1e-8}),
    ("plain_sparse", {"learning_rate": 0.1}),
    ("clip_sparse", {"clip_gradient": 0.3, "rescale_grad": 0.5}),
]


def test_group_adagrad_matches_mxnet(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3)).astype("float32")
    g0 = rng.standard_normal((5, 3)).astype("float32")
    g1 = rng.standard_normal((5, 3)).astype("float32")
    g0[[1, 3]] = 0
    g1[2] = 0
    script = f"CASES = {_CASES!r}\n" + _SCRIPT
    _, want = mxnet_ref.run(tmp_path, script, w=w, g0=g0, g1=g1)
    for name, kw in _CASES:
        opt = mx.optimizer.contrib.GroupAdaGrad(**kw)
        wt = mx.nd.array(w)
        st = opt.create_state(0, wt)
        for g in (g0, g1):
            ga = mx.nd.array(g)
            opt.update(0, wt, ga.tostype("row_sparse") if name.endswith("sparse") else ga, st)
        np.testing.assert_allclose(wt.asnumpy(), want[name], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(st.asnumpy(), want[name + "_state"], rtol=1e-5, atol=1e-6)


def test_group_adagrad_rejects_wd_and_non_2d():
    opt = mx.optimizer.create("groupadagrad", wd=0.1)
    w = mx.nd.ones((2, 2))
    with pytest.raises(MXNetError):
        opt.update(0, w, mx.nd.ones((2, 2)), opt.create_state(0, w))
    with pytest.raises(MXNetError):
        opt.create_state(0, mx.nd.ones((3,)))
