"""The optimizer update operators (``mx.nd.sgd_update`` ... ``mx.nd.contrib.adamw_update``)
against Apache MXNet 1.9.1: every operator for several steps (so the states it updates in place
carry over), with rescaling, clipping and weight decay; float16 weights with float32 master
copies for the ``mp_*`` ones; lazy updates from ``row_sparse`` gradients. Each differential test
runs one MXNet process for a batch of operators. Then the errors for bad input, the symbolic
forms, and Group AdaGrad's op against its optimizer."""

import json

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

STEPS = 3


def _inputs():
    rng, f32 = np.random.default_rng(11), np.float32
    return {
        "w": rng.uniform(-1, 1, (4, 5)).astype(f32),
        "g": rng.uniform(-1.5, 1.5, (STEPS, 4, 5)).astype(f32),
        "w2": rng.uniform(-1, 1, (3,)).astype(f32),
        "g2": rng.uniform(-1.5, 1.5, (STEPS, 3)).astype(f32),
        "m0": rng.uniform(-0.1, 0.1, (4, 5)).astype(f32),
        "sums": np.array([4.0, 0.0, 2.5, 9.0], f32),
        "gsums": np.array([1.0, 3.0, 0.0, 0.25], f32),
    }


# The body runs under MXNet 1.9.1 and under mxrs alike (``mx`` is either library).
PRELUDE = """
def nd(key):
    return mx.nd.array(inputs[key])

def zeros(shape=(4, 5), stype="default"):
    return mx.nd.zeros(shape, stype=stype)

def steps(key, op, n_states, kwargs, init=None, in_place=True):
    w, states = nd("w"), [init() if init else zeros() for _ in range(n_states)]
    for i in range(STEPS):
        g = mx.nd.array(inputs["g"][i])
        kw = kwargs(i) if callable(kwargs) else kwargs
        if in_place:
            op(w, g, *states, out=w, **kw)
        else:
            w = op(w, g, *states, **kw)
    arrays[key] = w.asnumpy()
    for j, s in enumerate(states):
        arrays[key + "_state%d" % j] = s.asnumpy()
"""

DENSE = """
n = mx.nd
steps("sgd", n.sgd_update, 0, dict(lr=0.1, wd=0.05))
steps("sgd_clip", n.sgd_update, 0, dict(lr=0.1, wd=0.05, rescale_grad=0.5, clip_gradient=0.2))
steps("sgd_clip0", n.sgd_update, 0, dict(lr=0.1, wd=0.05, clip_gradient=0.0))
steps("sgd_mom", n.sgd_mom_update, 1,
      dict(lr=0.1, momentum=0.9, wd=0.01, rescale_grad=2.0, clip_gradient=0.5),
      init=lambda: nd("m0"))
steps("nag", n.nag_mom_update, 1,
      dict(lr=0.1, momentum=0.9, wd=0.1, rescale_grad=0.5, clip_gradient=0.6),
      init=lambda: nd("m0"))
steps("nag_new", n.nag_mom_update, 1, dict(lr=0.1, momentum=0.9, wd=0.1),
      init=lambda: nd("m0"), in_place=False)
steps("adam", n.adam_update, 2,
      dict(lr=0.01, beta1=0.8, beta2=0.95, epsilon=1e-6, wd=0.01, rescale_grad=0.5,
           clip_gradient=0.3))
steps("rmsprop", n.rmsprop_update, 1,
      dict(lr=0.01, gamma1=0.9, epsilon=1e-6, wd=0.01, rescale_grad=0.5, clip_gradient=0.4,
           clip_weights=0.9))
steps("rmsprop_plain", n.rmsprop_update, 1, dict(lr=0.02))
steps("rmspropalex", n.rmspropalex_update, 3,
      dict(lr=0.01, gamma1=0.9, gamma2=0.8, wd=0.01, rescale_grad=2.0, clip_gradient=1.0,
           clip_weights=0.95))
steps("ftrl", n.ftrl_update, 2,
      dict(lr=0.1, lamda1=0.05, beta=1.5, wd=0.01, rescale_grad=0.5, clip_gradient=0.5))
steps("ftml", n.ftml_update, 3,
      lambda i: dict(lr=0.05, beta1=0.6, beta2=0.99, t=i + 1, wd=0.01, rescale_grad=0.5,
                     clip_grad=0.4))
steps("signsgd", n.signsgd_update, 0, dict(lr=0.1, wd=0.05))
steps("signum", n.signum_update, 1,
      dict(lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.3, wd_lh=0.05))

for key, bc, bounds in (("lamb", True, dict(lower_bound=0.1, upper_bound=2.0)),
                        ("lamb_nobc", False, {})):
    w, mean, var = nd("w"), zeros(), zeros()
    for i in range(STEPS):
        g = n.lamb_update_phase1(w, mx.nd.array(inputs["g"][i]), mean, var, t=i + 1,
                                 bias_correction=bc, wd=0.01, rescale_grad=0.5,
                                 clip_gradient=0.8)
        r1, r2 = w.norm().reshape((1,)), g.norm().reshape((1,))
        n.lamb_update_phase2(w, g, r1, r2, lr=0.05, out=w, **bounds)
    arrays[key] = w.asnumpy()
    arrays[key + "_mean"], arrays[key + "_var"] = mean.asnumpy(), var.asnumpy()
    arrays[key + "_g"] = g.asnumpy()

arrays["lars"] = n.multi_lars(nd("sums") * 0 + 0.1, nd("sums"), nd("gsums"),
                              nd("sums") * 0 + 0.01, eta=0.5, eps=1e-3,
                              rescale_grad=0.5).asnumpy()
arrays["sum_sq"] = n.multi_sum_sq(nd("w"), nd("w2"), nd("sums"), num_arrays=3).asnumpy()

# AdamW: rescale_grad as an array; NaN, 0 and inf skip the step
w, mean, var = nd("w"), zeros(), zeros()
for i, scale in enumerate([2.0, float("nan"), 0.0, float("inf"), 0.5]):
    g = mx.nd.array(inputs["g"][i % STEPS])
    mx.nd.contrib.adamw_update(w, g, mean, var, mx.nd.array([scale]), lr=0.05, eta=0.8,
                               beta1=0.85, beta2=0.95, epsilon=1e-6, wd=0.1,
                               clip_gradient=0.7, out=w)
arrays["adamw"], arrays["adamw_mean"] = w.asnumpy(), mean.asnumpy()
arrays["adamw_var"] = var.asnumpy()

# many weights at once
def many(key, op, n_states, kw, preloaded=False):
    ws = [nd("w"), nd("w2")]
    states = [[zeros(w.shape) for _ in range(n_states)] for w in ws]
    for i in range(STEPS):
        gs = [mx.nd.array(inputs["g"][i]), mx.nd.array(inputs["g2"][i])]
        data = [a for w, g, st in zip(ws, gs, states) for a in [w, g] + st]
        if preloaded:
            data += [mx.nd.array([0.1, 0.05]), mx.nd.array([0.01, 0.0])]
        op(*data, out=ws, num_weights=2, **kw)
    for j, w in enumerate(ws):
        arrays["%s_w%d" % (key, j)] = w.asnumpy()
        for k, s in enumerate(states[j]):
            arrays["%s_w%d_state%d" % (key, j, k)] = s.asnumpy()

lw = dict(lrs=(0.1, 0.05), wds=(0.01, 0.0))
many("multi_sgd", n.multi_sgd_update, 0, dict(rescale_grad=0.5, clip_gradient=0.3, **lw))
many("multi_sgd_mom", n.multi_sgd_mom_update, 1, dict(momentum=0.9, rescale_grad=2.0, **lw))
many("pre_sgd", n.preloaded_multi_sgd_update, 0, dict(clip_gradient=0.3), preloaded=True)
many("pre_sgd_mom", n.preloaded_multi_sgd_mom_update, 1,
     dict(momentum=0.8, rescale_grad=0.5, clip_gradient=0.6), preloaded=True)

ws, ms, vs = [nd("w"), nd("w2")], [zeros(), zeros((3,))], [zeros(), zeros((3,))]
for i in range(STEPS):
    gs = [mx.nd.array(inputs["g"][i]), mx.nd.array(inputs["g2"][i])]
    mx.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 1.5, lrs=[0.05, 0.02], wds=[0.1, 0.0],
                                     etas=[1.0, 0.7], beta1=0.85, clip_gradient=0.9, out=ws)
for j in range(2):
    arrays["multi_adamw_w%d" % j] = ws[j].asnumpy()
    arrays["multi_adamw_m%d" % j], arrays["multi_adamw_v%d" % j] = ms[j].asnumpy(), vs[j].asnumpy()
"""


def _body(text):
    return f"STEPS = {STEPS}\n" + PRELUDE + text


def test_dense_updates_match_mxnet(tmp_path):
    mxnet_ref.check_body(tmp_path, _body(DENSE), _inputs(), rtol=1e-5, atol=1e-6)


MIXED = """
n = mx.nd
def half(key):
    return mx.nd.array(inputs[key]).astype("float16")

def mixed(key, op, n_states, kwargs):
    w, w32 = half("w"), nd("w")
    states = [zeros() for _ in range(n_states)]
    for i in range(STEPS):
        g = mx.nd.array(inputs["g"][i]).astype("float16")
        op(w, g, *(states + [w32]), out=w, **kwargs)
    arrays[key], arrays[key + "_w32"] = w.asnumpy().astype("float32"), w32.asnumpy()
    for j, s in enumerate(states):
        arrays[key + "_state%d" % j] = s.asnumpy()

mixed("mp_sgd", n.mp_sgd_update, 0, dict(lr=0.1, wd=0.05, rescale_grad=0.5, clip_gradient=0.2))
mixed("mp_sgd_mom", n.mp_sgd_mom_update, 1, dict(lr=0.1, momentum=0.9, wd=0.01))
mixed("mp_nag", n.mp_nag_mom_update, 1,
      dict(lr=0.1, momentum=0.9, wd=0.1, rescale_grad=0.5, clip_gradient=0.6))

w, w32, mean, var = half("w"), nd("w"), zeros(), zeros()
for i in range(STEPS):
    g16 = mx.nd.array(inputs["g"][i]).astype("float16")
    d = n.mp_lamb_update_phase1(w, g16, mean, var, w32, t=i + 1, wd=0.01, rescale_grad=0.5)
    r1, r2 = w32.norm().reshape((1,)), d.norm().reshape((1,))
    n.mp_lamb_update_phase2(w, d, r1, r2, w32, lr=0.05, lower_bound=0.1, out=w)
arrays["mp_lamb"], arrays["mp_lamb_w32"] = w.asnumpy().astype("float32"), w32.asnumpy()
arrays["mp_lamb_d"], arrays["mp_lamb_mean"] = d.asnumpy(), mean.asnumpy()

w, w32, mean, var = half("w"), nd("w"), zeros(), zeros()
for i, scale in enumerate([2.0, float("nan"), 0.5]):
    g16 = mx.nd.array(inputs["g"][i]).astype("float16")
    mx.nd.contrib.mp_adamw_update(w, g16, mean, var, w32, mx.nd.array([scale]), lr=0.05,
                                  eta=0.8, wd=0.1, clip_gradient=0.7, out=w)
arrays["mp_adamw"], arrays["mp_adamw_w32"] = w.asnumpy().astype("float32"), w32.asnumpy()
arrays["mp_adamw_var"] = var.asnumpy()

def many_mixed(key, op, n_states, kw, preloaded=False):
    ws, w32s = [half("w"), half("w2")], [nd("w"), nd("w2")]
    states = [[zeros(w.shape) for _ in range(n_states)] for w in ws]
    for i in range(STEPS):
        gs = [mx.nd.array(inputs["g"][i]).astype("float16"),
              mx.nd.array(inputs["g2"][i]).astype("float16")]
        data = [a for w, g, st, w32 in zip(ws, gs, states, w32s) for a in [w, g] + st + [w32]]
        if preloaded:
            data += [mx.nd.array([0.1, 0.05]), mx.nd.array([0.01, 0.0])]
        op(*data, out=ws, num_weights=2, **kw)
    for j, w in enumerate(ws):
        arrays["%s_w%d" % (key, j)] = w.asnumpy().astype("float32")
        arrays["%s_w32_%d" % (key, j)] = w32s[j].asnumpy()
        for k, s in enumerate(states[j]):
            arrays["%s_w%d_state%d" % (key, j, k)] = s.asnumpy()

lw = dict(lrs=(0.1, 0.05), wds=(0.01, 0.0))
many_mixed("multi_mp_sgd", n.multi_mp_sgd_update, 0, dict(rescale_grad=0.5, **lw))
many_mixed("multi_mp_sgd_mom", n.multi_mp_sgd_mom_update, 1,
           dict(momentum=0.9, clip_gradient=0.5, **lw))
many_mixed("pre_mp_sgd", n.preloaded_multi_mp_sgd_update, 0, dict(clip_gradient=0.3),
           preloaded=True)
many_mixed("pre_mp_sgd_mom", n.preloaded_multi_mp_sgd_mom_update, 1, dict(momentum=0.8),
           preloaded=True)

ws, w32s = [half("w"), half("w2")], [nd("w"), nd("w2")]
ms, vs = [zeros(), zeros((3,))], [zeros(), zeros((3,))]
for i in range(STEPS):
    gs = [mx.nd.array(inputs["g"][i]).astype("float16"),
          mx.nd.array(inputs["g2"][i]).astype("float16")]
    mx.nd.contrib.multi_mp_adamw_update(ws, gs, ms, vs, w32s, mx.nd.array([1.5]),
                                        lrs=[0.05, 0.02], wds=[0.1, 0.0], etas=[1.0, 0.7],
                                        out=ws)
for j in range(2):
    arrays["multi_mp_adamw_w%d" % j] = ws[j].asnumpy().astype("float32")
    arrays["multi_mp_adamw_w32_%d" % j], arrays["multi_mp_adamw_m%d" % j] = (
        w32s[j].asnumpy(), ms[j].asnumpy())
"""


def test_mixed_precision_updates_match_mxnet(tmp_path):
    """float16 weights through float32 master copies: the float16 results agree to float16
    rounding, the float32 masters and states closely."""
    inputs = _inputs()
    _, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + _body(MIXED), **inputs)
    got: dict = {}
    exec(_body(MIXED), {"mx": mx, "np": np, "inputs": inputs, "arrays": got})
    assert sorted(got) == sorted(want)
    for key in got:
        tight = "w32" in key or "state" in key or "mean" in key or "var" in key
        rtol, atol = (2e-5, 2e-6) if tight else (2e-3, 2e-3)
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)


SPARSE = """
n = mx.nd
ROWS = [[0, 2], [1, 2, 3], [3]]

def rsp_grad(i):
    rows = ROWS[i]
    return mx.nd.sparse.row_sparse_array(
        (inputs["g"][i][rows], np.array(rows, dtype="int64")), shape=(4, 5))

def sparse(key, op, n_states, kwargs, w_stype="default", s_stype="default", dense_grad=False):
    w = nd("w").tostype(w_stype)
    states = [zeros(stype=s_stype) for _ in range(n_states)]
    for i in range(STEPS):
        g = rsp_grad(i)
        if dense_grad:
            g = g.tostype("default")
        op(w, g, *states, out=w, **kwargs)
    arrays[key] = w.asnumpy()
    for j, s in enumerate(states):
        arrays[key + "_state%d" % j] = s.asnumpy()

sgd = dict(lr=0.1, wd=0.1, rescale_grad=0.5, clip_gradient=0.3)
sparse("sgd_lazy", n.sgd_update, 0, sgd)
sparse("sgd_std", n.sgd_update, 0, dict(lazy_update=False, **sgd))
sparse("sgd_rsp_weight", n.sgd_update, 0, sgd, w_stype="row_sparse")
mom = dict(lr=0.1, momentum=0.9, wd=0.1, rescale_grad=0.5)
sparse("mom_lazy", n.sgd_mom_update, 1, mom)
sparse("mom_std", n.sgd_mom_update, 1, dict(lazy_update=False, **mom))
sparse("mom_rsp", n.sgd_mom_update, 1, mom, w_stype="row_sparse", s_stype="row_sparse")
sparse("mom_rsp_dense_state", n.sgd_mom_update, 1, mom, w_stype="row_sparse")
adam = dict(lr=0.05, wd=0.1, rescale_grad=0.5, clip_gradient=0.4)
sparse("adam_lazy", n.adam_update, 2, adam)
sparse("adam_std", n.adam_update, 2, dict(lazy_update=False, **adam))
sparse("adam_rsp", n.adam_update, 2, adam, w_stype="row_sparse", s_stype="row_sparse")
ftrl = dict(lr=0.1, lamda1=0.05, wd=0.01, clip_gradient=0.5)
sparse("ftrl_rsp", n.ftrl_update, 2, ftrl, w_stype="row_sparse", s_stype="row_sparse")
sparse("ftrl_dense", n.ftrl_update, 2, ftrl)
sparse("mp_sgd_dense", lambda w, g, w32, **kw: n.mp_sgd_update(w, g, w32, **kw), 1,
       dict(lr=0.1, wd=0.1))

for key, stype in (("gag_dense", "default"), ("gag_rsp", "row_sparse")):
    w = nd("w").tostype(stype)
    h = zeros((4, 1), stype=stype)
    for i in range(STEPS):
        mx.nd.contrib.group_adagrad_update(w, rsp_grad(i), h, lr=0.1, rescale_grad=2.0,
                                           clip_gradient=0.6, epsilon=1e-4, out=w)
    arrays[key], arrays[key + "_history"] = w.asnumpy(), h.asnumpy()
"""


def test_row_sparse_updates_match_mxnet(tmp_path):
    """Lazy updates change only the rows each gradient stores (weight decay included);
    ``lazy_update=False`` and the operators without a sparse kernel update every row."""
    want = mxnet_ref.check_body(tmp_path, _body(SPARSE), _inputs(), rtol=1e-5, atol=1e-6)
    w0 = _inputs()["w"]
    # row 0 has a gradient only at the first step: the lazy update leaves it alone after
    assert not np.allclose(want["sgd_lazy"][0], w0[0])
    assert not np.allclose(want["sgd_lazy"], want["sgd_std"])


# ----------------------------------------------------------------- errors
def _w(shape=(2, 3), dtype="float32"):
    return mx.nd.ones(shape, dtype=dtype)


def test_multi_updates_check_the_number_of_inputs_and_hyper_parameters():
    w, g = _w(), _w()
    with pytest.raises(MXNetError, match=r"expects 4 inputs \(2 per weight for num_weights=2\)"):
        mx.nd.multi_sgd_update(w, g, w, lrs=(0.1, 0.1), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="expects 6 inputs"):
        mx.nd.multi_sgd_mom_update(w, g, w, g, lrs=(0.1, 0.1), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="learning rates is inconsistent.*expected 2, got 1"):
        mx.nd.multi_sgd_update(w, g, w, g, lrs=(0.1,), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="out= holds 1 arrays but the op updates 2 weights"):
        mx.nd.multi_sgd_update(w, g, w, g, lrs=(0.1, 0.1), wds=(0, 0), num_weights=2, out=w)
    lrs = mx.nd.array([0.1, 0.1, 0.1])
    with pytest.raises(MXNetError, match=r"learning rates \(lrs\).*expected 2, got 3"):
        mx.nd.preloaded_multi_sgd_update(w, g, w, g, lrs, mx.nd.zeros((2,)), num_weights=2)
    with pytest.raises(MXNetError, match=r"plus 2 trailing arrays"):
        mx.nd.preloaded_multi_sgd_update(w, g, w, g, lrs, num_weights=2)
    with pytest.raises(MXNetError, match="expects 2 arrays in each list, got weights 2, grads 1"):
        mx.nd.contrib.multi_adamw_update([w, w], [g], [w, w], [w, w], 1.0, lrs=[0.1] * 2,
                                         wds=[0.0] * 2, etas=[1.0] * 2)  # fmt: skip
    with pytest.raises(MXNetError, match="num_arrays=3 but 2 arrays were given"):
        mx.nd.multi_sum_sq(w, g, num_arrays=3)
    with pytest.raises(MXNetError, match="num_arrays .* is required"):
        mx.nd.multi_sum_sq(w, g)


def test_updates_check_shapes_dtypes_and_required_parameters():
    with pytest.raises(MXNetError, match=r"grad has shape \(3,\) but weight has shape \(2,\)"):
        mx.nd.sgd_update(_w((2,)), _w((3,)), lr=0.1)
    with pytest.raises(MXNetError, match=r"mom has shape \(3, 2\) but weight has shape"):
        mx.nd.sgd_mom_update(_w(), _w(), _w((3, 2)), lr=0.1)
    with pytest.raises(MXNetError, match=r"grad_1 has shape \(4,\) but weight_1 has shape"):
        mx.nd.multi_sgd_update(_w(), _w(), _w((3,)), _w((4,)), lrs=(1, 1), wds=(0, 0),
                               num_weights=2)  # fmt: skip
    with pytest.raises(MXNetError, match="grad is float32 but weight is float16"):
        mx.nd.sgd_update(_w(dtype="float16"), _w(), lr=0.1)
    with pytest.raises(MXNetError, match="weight32 must be float32 .*got float16"):
        mx.nd.mp_sgd_update(_w(dtype="float16"), _w(dtype="float16"), _w(dtype="float16"), lr=1)
    with pytest.raises(MXNetError, match="mom_0 must be float32"):
        mx.nd.multi_mp_sgd_mom_update(_w(dtype="float16"), _w(dtype="float16"),
                                      _w(dtype="float16"), _w(), lrs=(1,), wds=(0,))  # fmt: skip
    with pytest.raises(MXNetError, match="only floating point arrays .* int32"):
        mx.nd.sgd_update(_w(dtype="int32"), _w(dtype="int32"), lr=0.1)
    with pytest.raises(MXNetError, match="grad must be an NDArray, got ndarray"):
        mx.nd.sgd_update(_w(), np.ones((2, 3)), lr=0.1)
    with pytest.raises(MXNetError, match=r"the parameter t \(int\) is required"):
        mx.nd.ftml_update(_w(), _w(), _w(), _w(), _w(), lr=0.1)
    with pytest.raises(MXNetError, match=r"the parameter wd \(float\) is required"):
        mx.nd.lamb_update_phase1(_w(), _w(), _w(), _w(), t=1)
    with pytest.raises(MXNetError, match=r"r2 must have shape \(1,\)"):
        mx.nd.lamb_update_phase2(_w(), _w(), _w((1,)), _w((2,)), lr=0.1)
    with pytest.raises(MXNetError, match=r"history must have shape \(2, 1\)"):
        mx.nd.contrib.group_adagrad_update(_w(), _w(), _w((2, 3)), lr=0.1)
    with pytest.raises(MXNetError, match="inconsistent storage types of the states"):
        mx.nd.adam_update(_w(), _w(), _w(), _w().tostype("row_sparse"), lr=0.1)
    with pytest.raises(MXNetError, match="only float32 arrays are supported"):
        mx.nd.multi_lars(*[_w((3,), "float16")] * 4, eta=1.0, eps=0.0)


# ----------------------------------------------------------------- semantics beyond MXNet's
def test_the_states_update_in_place_and_out_is_returned():
    w, g, mom = mx.nd.ones((3,)), mx.nd.array([1.0, -2.0, 3.0]), mx.nd.zeros((3,))
    new = mx.nd.sgd_mom_update(w, g, mom, lr=0.5, momentum=0.9)
    np.testing.assert_allclose(new.asnumpy(), [0.5, 2.0, -0.5])
    np.testing.assert_allclose(mom.asnumpy(), [-0.5, 1.0, -1.5])
    np.testing.assert_allclose(w.asnumpy(), [1.0, 1.0, 1.0])  # no out: the weight is kept
    assert mx.nd.sgd_update(w, g, lr=1.0, out=w) is w
    np.testing.assert_allclose(w.asnumpy(), [0.0, 3.0, -2.0])
    ws = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    gs = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    news = mx.nd.multi_sgd_update(ws[0], gs[0], ws[1], gs[1], lrs=(0.1, 0.2), wds=(0.0, 0.0),
                                  num_weights=2)  # fmt: skip
    assert isinstance(news, list) and len(news) == 2
    np.testing.assert_allclose(news[1].asnumpy(), [0.8] * 3, rtol=1e-6)
    assert mx.nd.multi_sgd_update(ws[0], gs[0], lrs=[0.5], wds=[0.0], out=ws[:1])[0] is ws[0]


def test_a_skipped_adamw_step_leaves_everything_unchanged():
    w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([0.5, -0.5])
    mean, var = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    for scale in (0.0, float("nan"), float("inf"), mx.nd.array([float("nan")])):
        out = mx.nd.contrib.adamw_update(w, g, mean, var, scale, lr=0.1, eta=1.0, wd=0.1)
        np.testing.assert_array_equal(out.asnumpy(), [1.0, 2.0])
        assert out is not w
    np.testing.assert_array_equal(mean.asnumpy(), [0.0, 0.0])
    assert mx.nd.contrib.adamw_update(w, g, mean, var, 0.0, lr=0.1, eta=1.0, out=w) is w


def test_group_adagrad_op_and_optimizer_share_one_rule():
    """The dense op (which MXNet's CPU build lacks) computes what GroupAdaGrad does."""
    w0 = np.random.default_rng(3).uniform(-1, 1, (4, 3)).astype(np.float32)
    grads = np.random.default_rng(4).uniform(-1, 1, (STEPS, 4, 3)).astype(np.float32)
    opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.1, rescale_grad=2.0,
                                            clip_gradient=0.5, eps=1e-4)  # fmt: skip
    w_opt, w_op = mx.nd.array(w0), mx.nd.array(w0)
    state, history = opt.create_state(0, w_opt), mx.nd.zeros((4, 1))
    for g in grads:
        opt.update(0, w_opt, mx.nd.array(g), state)
        mx.nd.contrib.group_adagrad_update(w_op, mx.nd.array(g), history, lr=0.1,
                                           rescale_grad=2.0, clip_gradient=0.5, epsilon=1e-4,
                                           out=w_op)  # fmt: skip
    np.testing.assert_allclose(w_op.asnumpy(), w_opt.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(history.asnumpy(), state.asnumpy(), rtol=1e-6)


# ----------------------------------------------------------------- symbols
def test_symbolic_updates_run_and_update_the_bound_states():
    w, g, m = mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("m")
    up = mx.sym.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, wd=0.01, name="up")
    assert up.list_arguments() == ["w", "g", "m"] and up.list_outputs() == ["up_output"]
    args = {"w": mx.nd.ones((2, 3)), "g": mx.nd.ones((2, 3)), "m": mx.nd.zeros((2, 3))}
    ex = up.bind(mx.cpu(), args)
    out = ex.forward()[0]
    mom = mx.nd.zeros((2, 3))
    want = mx.nd.sgd_mom_update(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)), mom, lr=0.1,
                                momentum=0.9, wd=0.01)  # fmt: skip
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy())
    np.testing.assert_allclose(ex.arg_dict["m"].asnumpy(), mom.asnumpy())

    w1, g1 = mx.sym.var("w1"), mx.sym.var("g1")
    multi = mx.sym.multi_sgd_update(w, g, w1, g1, lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=2)
    assert multi.list_outputs() == ["multi_sgd_update0_output0", "multi_sgd_update0_output1"]
    node = multi.tojson()
    assert '"num_weights": "2"' in node and "num_args" not in node
    shapes = {"w": (2,), "g": (2,), "w1": (3,), "g1": (3,)}
    ex = mx.sym.load_json(node).bind(mx.cpu(), {k: mx.nd.ones(s) for k, s in shapes.items()})
    outs = ex.forward()
    np.testing.assert_allclose(outs[1].asnumpy(), [0.8] * 3, rtol=1e-6)
    ss = mx.sym.multi_sum_sq(w, g)
    assert '"num_arrays": "2"' in ss.tojson()


def test_symbolic_adamw_makes_mxnets_nodes():
    w, g, m, v = (mx.sym.var(k) for k in "wgmv")
    up = mx.sym.contrib.adamw_update(w, g, m, v, 2.0, lr=0.1, eta=1.0, wd=0.1)
    ops = [n["op"] for n in json.loads(up.tojson())["nodes"]]
    assert ops == ["null"] * 4 + ["full", "_adamw_update"]
    arrays = {k: mx.nd.array(np.full((3,), 0.5, np.float32)) for k in "wgmv"}
    got = mx.sym.load_json(up.tojson()).bind(mx.cpu(), arrays).forward()[0]
    mean, var = mx.nd.array(np.full((3,), 0.5)), mx.nd.array(np.full((3,), 0.5))
    want = mx.nd.contrib.adamw_update(arrays["w"], arrays["g"], mean, var, 2.0, lr=0.1,
                                      eta=1.0, wd=0.1)  # fmt: skip
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)
    multi = mx.sym.contrib.multi_adamw_update([w], [g], [m], [v], mx.sym.var("r"), lrs=[0.1],
                                              wds=[0.0], etas=[1.0])  # fmt: skip
    assert multi.list_arguments() == ["w", "g", "m", "v", "r"]
    assert '"op": "_multi_adamw_update"' in multi.tojson()
