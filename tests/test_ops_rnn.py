"""The fused ``RNN`` operator (mx.nd.RNN, mx.sym.RNN) against Apache MXNet 1.9.1: outputs, final
states and the gradient of data, parameters and initial states, for every mode, one and two
directions, stacked layers, sequence lengths and LSTM projection; plus numerical gradients,
state clipping, dropout and the errors for bad input.

MXNet 1.9.1's CPU operator ignores ``sequence_length`` and the LSTM state clip (only its cuDNN
path has them) and cannot train an LSTM with projection: sequence lengths are checked against
MXNet run on each sequence cut to its length, clipping against a step-by-step NumPy LSTM, and
the projection's gradient numerically."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.ndarray.rnn import rnn_param_shapes

RNG = np.random.default_rng(11)
T, N, C, H = 5, 3, 4, 6

#: name: (mode, num_layers, bidirectional, extra attributes, sequence lengths or None)
CASES = {
    "lstm": ("lstm", 1, False, {}, None),
    "lstm_bi2": ("lstm", 2, True, {}, None),
    "lstm_len": ("lstm", 2, True, {}, [5, 2, 3]),
    "lstmp": ("lstm", 2, False, {"projection_size": 3}, None),
    "gru": ("gru", 2, False, {}, None),
    "gru_bi_len": ("gru", 1, True, {}, [1, 5, 4]),
    "tanh_bi": ("rnn_tanh", 2, True, {}, None),
    "relu": ("rnn_relu", 3, False, {}, [2, 2, 5]),
}


def _case_inputs(name):
    mode, layers, bi, extra, lens = CASES[name]
    proj = extra.get("projection_size")
    dirs = 2 if bi else 1
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes(mode, H, layers, C, bi, proj))
    arrays = {
        "data": RNG.standard_normal((T, N, C)),
        "params": RNG.standard_normal(total) * 0.4,
        "state": RNG.standard_normal((layers * dirs, N, proj or H)),
    }
    if mode == "lstm":
        arrays["cell"] = RNG.standard_normal((layers * dirs, N, H))
    if lens is not None:
        arrays["lens"] = np.array(lens, dtype=np.float64)
    outs = [(T, N, dirs * (proj or H)), (layers * dirs, N, proj or H)]
    if mode == "lstm":
        outs.append((layers * dirs, N, H))
    for i, shape in enumerate(outs):
        arrays[f"head{i}"] = RNG.standard_normal(shape)
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _attrs(name):
    mode, layers, bi, extra, lens = CASES[name]
    return dict(
        state_size=H,
        num_layers=layers,
        bidirectional=bi,
        mode=mode,
        state_outputs=True,
        use_sequence_length=lens is not None,
        **extra,
    )


def _mxrs(name, inputs):
    names = [k for k in ("data", "params", "state", "cell", "lens") if k in inputs]
    arrays = [mx.nd.array(inputs[k]) for k in names]
    for a in arrays[:4]:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.RNN(*arrays, **_attrs(name))
    heads = [mx.nd.array(inputs[f"head{i}"]) for i in range(len(outs))]
    mx.autograd.backward(outs, heads)
    res = {f"out{i}": o.asnumpy() for i, o in enumerate(outs)}
    for k, a in zip(names, arrays, strict=False):
        if k != "lens":
            res[f"grad_{k}"] = a.grad.asnumpy()
    return res


#: runs under MXNet 1.9.1 with ``result`` preset to {case: attributes}; inputs are "case.key"
REFERENCE = """
import mxnet as mx


def by_sequence(name, attrs, got):
    # each sequence alone, cut to its length: what sequence_length means
    attrs = {k: v for k, v in attrs.items() if k != "use_sequence_length"}
    lens = got.pop("lens").asnumpy().astype(int)
    outs = {}
    grads = {k: np.zeros(v.shape, np.float32) for k, v in got.items()}
    for b, n in enumerate(lens):
        part = {k: v[:n, b : b + 1] if k == "data" else v if k == "params" else v[:, b : b + 1]
                for k, v in got.items()}
        part = {k: mx.nd.array(v.asnumpy()) for k, v in part.items()}
        for a in part.values():
            a.attach_grad()
        with mx.autograd.record():
            res = mx.nd.RNN(*part.values(), **attrs)
        heads = [inputs[name + ".head0"][:n, b : b + 1]]
        heads += [inputs[name + ".head%d" % i][:, b : b + 1] for i in range(1, len(res))]
        mx.autograd.backward(res, [mx.nd.array(h) for h in heads])
        for i, r in enumerate(res):
            full = outs.setdefault(i, np.zeros(
                inputs[name + ".head%d" % i].shape, np.float32))
            if i == 0:
                full[:n, b : b + 1] = r.asnumpy()
            else:
                full[:, b : b + 1] = r.asnumpy()
        for k, a in part.items():
            g = a.grad.asnumpy()
            if k == "data":
                grads[k][:n, b : b + 1] += g
            elif k == "params":
                grads[k] += g
            else:
                grads[k][:, b : b + 1] += g
    for i, o in outs.items():
        arrays[name + ".out%d" % i] = o
    for k, g in grads.items():
        arrays[name + ".grad_" + k] = g

for name, attrs in result.items():
    keys = [k for k in ("data", "params", "state", "cell", "lens") if name + "." + k in inputs]
    nds = [mx.nd.array(inputs[name + "." + k]) for k in keys]
    if "lens" in keys:
        by_sequence(name, attrs, dict(zip(keys, nds)))
        continue
    if "projection_size" in attrs:  # MXNet 1.9.1 has no LSTMP training on the CPU
        for i, o in enumerate(mx.nd.RNN(*nds, **attrs)):
            arrays[name + ".out%d" % i] = o.asnumpy()
        continue
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.RNN(*nds, **attrs)
    heads = [mx.nd.array(inputs[name + ".head%d" % i]) for i in range(len(outs))]
    mx.autograd.backward(outs, heads)
    for i, o in enumerate(outs):
        arrays[name + ".out%d" % i] = o.asnumpy()
    for k, a in zip(keys, nds):
        if k != "lens":
            arrays[name + ".grad_" + k] = a.grad.asnumpy()
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    inputs = {name: _case_inputs(name) for name in CASES}
    flat = {f"{n}.{k}": v for n, arrs in inputs.items() for k, v in arrs.items()}
    script = "result = " + repr({n: _attrs(n) for n in CASES}) + "\n" + REFERENCE
    _, out = mxnet_ref.run(tmp_path_factory.mktemp("rnn"), script, **flat)
    return inputs, out


@pytest.mark.parametrize("name", list(CASES))
def test_rnn_matches_mxnet(reference, name):
    inputs, out = reference
    ours = _mxrs(name, inputs[name])
    compared = [k for k in ours if f"{name}.{k}" in out]
    assert len(compared) >= 3
    for key in compared:
        value, ref = ours[key], out[f"{name}.{key}"]
        assert value.shape == ref.shape, key
        np.testing.assert_allclose(value, ref, rtol=2e-4, atol=2e-5, err_msg=key)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_rnn_numerical_gradient(mode):
    """float64 central differences for every input, through two bidirectional layers."""
    layers, proj = 2, (2 if mode == "lstm" else None)
    rec = proj or H
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes(mode, H, layers, C, True, proj))
    vals = [
        RNG.standard_normal((3, 2, C)),
        RNG.standard_normal(total) * 0.4,
        RNG.standard_normal((2 * layers, 2, rec)),
    ]
    if mode == "lstm":
        vals.append(RNG.standard_normal((2 * layers, 2, H)))
    attrs = dict(state_size=H, num_layers=layers, bidirectional=True, mode=mode)
    attrs.update(state_outputs=True, projection_size=proj)
    if mode == "lstm":  # a wide range: values near a bound would make the difference jump
        attrs.update(lstm_state_clip_min=-2.5, lstm_state_clip_max=2.5)

    def loss(arrays):
        outs = mx.nd.RNN(*arrays, **attrs)
        return sum((o**3).sum() for o in outs)

    arrays = [mx.nd.array(v, dtype="float64") for v in vals]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        total_loss = loss(arrays)
    total_loss.backward()
    eps = 1e-6
    for a, v in zip(arrays, vals, strict=True):
        flat = v.ravel()
        for idx in RNG.choice(flat.size, 6, replace=False):
            hi, lo = flat.copy(), flat.copy()
            hi[idx] += eps
            lo[idx] -= eps
            rest = [mx.nd.array(x.reshape(a.shape), dtype="float64") for x in (hi, lo)]
            f = [loss([r if b is a else b for b in arrays]).asscalar() for r in rest]
            num = (f[0] - f[1]) / (2 * eps)
            assert abs(a.grad.asnumpy().ravel()[idx] - num) < 1e-6 * max(1.0, abs(num))


def _numpy_lstm(x, w_i, w_h, b_i, b_h, h, c, lo, hi):
    """A one-layer LSTM, step by step, clipping the cell state into [lo, hi]."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    out = []
    for xt in x:
        i, f, g, o = np.split(xt @ w_i.T + b_i + h @ w_h.T + b_h, 4, axis=1)
        c = np.clip(sig(f) * c + sig(i) * np.tanh(g), lo, hi)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out), h, c


def test_lstm_state_clip_matches_a_step_by_step_lstm():
    shapes = rnn_param_shapes("lstm", H, 1, C)
    pieces = [RNG.standard_normal(s) for _, s in shapes]
    flat = np.concatenate([p.ravel() for p in pieces])
    x, h, c = (
        RNG.standard_normal((T, N, C)),
        RNG.standard_normal((N, H)),
        3 * RNG.standard_normal((N, H)),
    )
    want = _numpy_lstm(x, *pieces, h, c, -0.3, 0.4)
    got = mx.nd.RNN(
        *[mx.nd.array(a, dtype="float64") for a in (x, flat, h[None], c[None])],
        state_size=H, num_layers=1, mode="lstm", state_outputs=True,
        lstm_state_clip_min=-0.3, lstm_state_clip_max=0.4,
    )  # fmt: skip
    np.testing.assert_allclose(got[0].asnumpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1].asnumpy()[0], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[2].asnumpy()[0], want[2], rtol=1e-12)
    assert got[2].asnumpy().max() <= 0.4 and got[2].asnumpy().min() >= -0.3
    nan_cell = mx.nd.array(np.full((1, N, H), np.nan))
    attrs = dict(state_size=H, num_layers=1, mode="lstm", state_outputs=True)
    attrs.update(lstm_state_clip_min=-0.3, lstm_state_clip_max=0.4)
    args = (mx.nd.array(x), mx.nd.array(flat), mx.nd.array(h[None]), nan_cell)
    assert np.isnan(mx.nd.RNN(*args, **attrs)[2].asnumpy()).all()
    kept = mx.nd.RNN(*args, lstm_state_clip_nan=True, **attrs)[2].asnumpy()
    assert not np.isnan(kept).any() and kept.max() <= 0.4


def test_rnn_sequence_length_as_fourth_positional_input():
    """Without a cell state, MXNet's positional inputs put sequence_length fourth."""
    x = mx.nd.array(RNG.standard_normal((T, N, C)))
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes("gru", H, 1, C))
    p = mx.nd.array(RNG.standard_normal(total))
    h = mx.nd.zeros((1, N, H))
    lens = mx.nd.array([2, 5, 1])
    attrs = dict(state_size=H, num_layers=1, mode="gru", use_sequence_length=True)
    a = mx.nd.RNN(x, p, h, lens, **attrs).asnumpy()
    b = mx.nd.RNN(x, p, h, sequence_length=lens, **attrs).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert np.all(a[2:, 0] == 0) and np.all(a[1:, 2] == 0) and np.any(a[4, 1] != 0)


def test_rnn_dropout_only_between_layers_and_in_training():
    x = mx.nd.ones((4, 2, 3))
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes("rnn_tanh", 5, 2, 3))
    p = mx.nd.array(RNG.standard_normal(total))
    h = mx.nd.zeros((2, 2, 5))
    attrs = dict(state_size=5, num_layers=2, mode="rnn_tanh", p=0.5)
    plain = mx.nd.RNN(x, p, h, **{**attrs, "p": 0.0}).asnumpy()
    np.testing.assert_array_equal(mx.nd.RNN(x, p, h, **attrs).asnumpy(), plain)
    with mx.autograd.train_mode():
        dropped = mx.nd.RNN(x, p, h, **attrs).asnumpy()
    assert not np.allclose(dropped, plain)
    one = dict(attrs, num_layers=1)
    p1 = mx.nd.array(
        RNG.standard_normal(sum(int(np.prod(s)) for _, s in rnn_param_shapes("rnn_tanh", 5, 1, 3)))
    )
    with mx.autograd.train_mode():  # one layer: no dropout anywhere
        np.testing.assert_array_equal(
            mx.nd.RNN(x, p1, h[:1], **one).asnumpy(),
            mx.nd.RNN(x, p1, h[:1], **dict(one, p=0.0)).asnumpy(),
        )


def test_rnn_bad_input_names_what_was_wrong():
    x = mx.nd.ones((T, N, C))
    p = mx.nd.ones((10,))
    h = mx.nd.zeros((1, N, H))
    with pytest.raises(MXNetError, match=r"parameters must have shape \(288,\)"):
        mx.nd.RNN(x, p, h, mx.nd.zeros((1, N, H)), state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="mode must be one of"):
        mx.nd.RNN(x, p, h, state_size=H, num_layers=1, mode="lstmx")
    with pytest.raises(MXNetError, match="needs state_cell"):
        mx.nd.RNN(x, p, h, state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="num_layers must be a positive integer"):
        mx.nd.RNN(x, p, h, state_size=H, num_layers=0, mode="gru")
    with pytest.raises(MXNetError, match="data must be"):
        mx.nd.RNN(mx.nd.ones((T, C)), p, h, state_size=H, num_layers=1, mode="gru")
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes("gru", H, 1, C))
    with pytest.raises(MXNetError, match=r"state must have shape \(1, 3, 6\)"):
        mx.nd.RNN(
            x, mx.nd.ones((total,)), mx.nd.zeros((2, N, H)), state_size=H, num_layers=1, mode="gru"
        )
    with pytest.raises(MXNetError, match="projection_size is only for mode 'lstm'"):
        mx.nd.RNN(x, p, h, state_size=H, num_layers=1, mode="gru", projection_size=2)


def test_sym_rnn_infers_parameter_and_state_shapes_and_runs():
    data = mx.sym.Variable("data")
    out = mx.sym.RNN(data, state_size=H, num_layers=2, bidirectional=True, mode="lstm", name="rnn")
    assert out.list_arguments() == ["data", "rnn_parameters", "rnn_state", "rnn_state_cell"]
    args, outs, _ = out.infer_shape(data=(T, N, C))
    total = sum(int(np.prod(s)) for _, s in rnn_param_shapes("lstm", H, 2, C, True))
    assert args == [(T, N, C), (total,), (4, N, H), (4, N, H)]
    assert outs == [(T, N, 2 * H)]
    with_states = mx.sym.RNN(
        data, state_size=H, num_layers=1, mode="gru", state_outputs=True, name="g"
    )
    assert with_states.list_outputs() == ["g_output", "g_state_output"]  # MXNet's names
    _, outs, _ = with_states.infer_shape(data=(T, N, C))
    assert outs == [(T, N, H), (1, N, H)]
    ex = out.simple_bind(mx.cpu(), data=(T, N, C))
    vals = {k: RNG.standard_normal(v.shape).astype(np.float32) for k, v in ex.arg_dict.items()}
    for k, v in vals.items():
        ex.arg_dict[k][:] = v
    got = ex.forward(is_train=True)[0].asnumpy()
    want = mx.nd.RNN(
        *[mx.nd.array(vals[k]) for k in ("data", "rnn_parameters", "rnn_state", "rnn_state_cell")],
        state_size=H, num_layers=2, bidirectional=True, mode="lstm",
    ).asnumpy()  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-6)
    ex.backward(mx.nd.ones(got.shape))
    assert ex.grad_dict["rnn_parameters"].shape == (total,)
    assert float(mx.nd.abs(ex.grad_dict["rnn_parameters"]).sum().asscalar()) > 0
