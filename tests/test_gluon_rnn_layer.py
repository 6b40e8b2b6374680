"""gluon.rnn's fused layers RNN, LSTM and GRU against Apache MXNet 1.9.1: the same parameters give
the same outputs, states and gradients; parameter files load on either side; plus hybridized
and symbolic use, deferred input size, begin states, sequence lengths and bad input."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import gluon
from mxrs.base import MXNetError

RNG = np.random.default_rng(5)

#: name: (class, constructor arguments, input shape, with begin states)
LAYERS = {
    "lstm_ntc_bi": (
        "LSTM", dict(hidden_size=5, num_layers=2, bidirectional=True, layout="NTC"), (3, 4, 6), True
    ),
    "lstm_tnc": ("LSTM", dict(hidden_size=4, num_layers=1), (4, 3, 6), False),
    "gru_bi": ("GRU", dict(hidden_size=5, num_layers=2, bidirectional=True), (4, 3, 6), True),
    "rnn_relu": ("RNN", dict(hidden_size=5, num_layers=3, activation="relu"), (4, 3, 6), False),
    "rnn_tanh_ntc": ("RNN", dict(hidden_size=3, activation="tanh", layout="NTC"), (2, 5, 6), True),
}  # fmt: skip


def _make(name, lib):
    cls, kwargs, _, _ = LAYERS[name]
    return getattr(lib.gluon.rnn, cls)(prefix=name + "_", **kwargs)


def _inputs(name):
    _, kwargs, shape, states = LAYERS[name]
    layer = _make(name, mx)
    layer.initialize()
    x = mx.nd.array(RNG.standard_normal(shape))
    batch = shape[kwargs.get("layout", "TNC").find("N")]
    layer.infer_shape(x, layer.begin_state(batch))
    arrays = {"x": x.asnumpy()}
    for k, p in layer.collect_params().items():
        arrays["p." + k] = RNG.standard_normal(p.shape) * 0.5
    if states:
        for i, s in enumerate(layer.begin_state(batch)):
            arrays[f"s{i}"] = RNG.standard_normal(s.shape)
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _run(lib, name, inputs, hybridize=False):
    """Output, states and gradients of layer ``name`` under library ``lib`` (mxrs or mxnet)."""
    layer = _make(name, lib)
    layer.initialize()
    x = lib.nd.array(inputs["x"])
    batch = x.shape[LAYERS[name][1].get("layout", "TNC").find("N")]
    layer.infer_shape(x, layer.begin_state(batch))
    for k, p in layer.collect_params().items():
        p.set_data(lib.nd.array(inputs["p." + k]))
    if hybridize:
        layer.hybridize()
    states = [lib.nd.array(inputs[k]) for k in sorted(inputs) if k.startswith("s")]
    x.attach_grad()
    for s in states:
        s.attach_grad()
    with lib.autograd.record():
        res = layer(x, states) if states else layer(x)
        out, new = (res[0], res[1]) if states else (res, [])
        loss = (out * out).sum() + sum((s * s * s).sum() for s in new)
    loss.backward()
    got = {"out": out.asnumpy(), "dx": x.grad.asnumpy()}
    for i, s in enumerate(new):
        got[f"state{i}"] = s.asnumpy()
    for i, s in enumerate(states):
        got[f"dstate{i}"] = s.grad.asnumpy()
    for k, p in layer.collect_params().items():
        got["d." + k] = p.grad().asnumpy()
    return got


REFERENCE = """
import mxnet as mx
import numpy as np
for name, (cls, kwargs, shape, with_states) in result.items():
    mine = {k[len(name) + 1:]: v for k, v in inputs.items() if k.startswith(name + ":")}
    got = _run(mx, name, mine)
    for k, v in got.items():
        arrays[name + ":" + k] = v
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    import inspect

    inputs = {name: _inputs(name) for name in LAYERS}
    flat = {f"{n}:{k}": v for n, arrs in inputs.items() for k, v in arrs.items()}
    source = "".join(inspect.getsource(f) for f in (_make, _run))
    script = f"LAYERS = {LAYERS!r}\nresult = LAYERS\n{source}\n{REFERENCE}"
    _, out = mxnet_ref.run(tmp_path_factory.mktemp("rnnlayer"), script, **flat)
    return inputs, out


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_mxnet(reference, name, hybridize):
    inputs, out = reference
    ours = _run(mx, name, inputs[name], hybridize)
    theirs = {k.split(":", 1)[1]: v for k, v in out.items() if k.startswith(name + ":")}
    assert sorted(ours) == sorted(theirs)
    for key, value in ours.items():
        np.testing.assert_allclose(value, theirs[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_parameter_files_load_on_either_side(tmp_path):
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    layer.initialize(mx.init.Uniform())
    ours = tmp_path / "ours.params"
    layer.save_parameters(str(ours))
    assert "_unfused.1.r_cell.h2h_weight" in mx.nd.load(str(ours))
    x = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    want = layer(mx.nd.array(x)).asnumpy()
    script = """
    import mxnet as mx
    layer = mx.gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    layer.load_parameters("ours.params")
    arrays["out"] = layer(mx.nd.array(inputs["x"])).asnumpy()
    layer.save_parameters("theirs.params")
    """
    _, out = mxnet_ref.run(tmp_path, script, x=x)
    np.testing.assert_allclose(out["out"], want, rtol=1e-5, atol=1e-6)
    again = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    again.load_parameters(str(tmp_path / "theirs.params"))
    np.testing.assert_allclose(again(mx.nd.array(x)).asnumpy(), want, rtol=1e-6)


def test_input_size_is_inferred_and_repr_shows_the_layer():
    layer = gluon.rnn.GRU(6, num_layers=2, bidirectional=True, dropout=0.2)
    assert layer.l0_i2h_weight.shape == (18, 0)
    layer.initialize()
    out = layer(mx.nd.ones((3, 2, 7)))
    assert out.shape == (3, 2, 12)
    assert layer.l0_i2h_weight.shape == (18, 7) and layer.r1_i2h_weight.shape == (18, 12)
    assert repr(layer) == "GRU(7 -> 6, TNC, num_layers=2, dropout=0.2, bidirectional)"


def test_states_in_and_out_and_their_errors():
    layer = gluon.rnn.LSTM(4, num_layers=3, layout="NTC")
    layer.initialize()
    x = mx.nd.ones((2, 5, 3))
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(3, 2, 4), (3, 2, 4)]
    out, new = layer(x, states)
    assert out.shape == (2, 5, 4) and [s.shape for s in new] == [(3, 2, 4), (3, 2, 4)]
    np.testing.assert_allclose(out[:, -1].asnumpy(), new[0][-1].asnumpy(), rtol=1e-6)
    with pytest.raises(MXNetError, match=r"Invalid recurrent state shape. Expecting \(3, 2, 4\)"):
        layer(x, [mx.nd.zeros((3, 5, 4)), mx.nd.zeros((3, 5, 4))])
    with pytest.raises(MXNetError, match="layout must be 'TNC' or 'NTC'"):
        gluon.rnn.GRU(3, layout="CTN")
    with pytest.raises(MXNetError, match="activation must be 'relu' or 'tanh'"):
        gluon.rnn.RNN(3, activation="sigmoid")


def test_projection_and_state_clipping_reach_the_operator():
    layer = gluon.rnn.LSTM(6, projection_size=2, state_clip_min=-0.1, state_clip_max=0.1)
    layer.initialize(mx.init.Uniform(2.0))
    out, (h, c) = layer(mx.nd.ones((4, 3, 5)), layer.begin_state(3))
    assert out.shape == (4, 3, 2) and h.shape == (1, 3, 2) and c.shape == (1, 3, 6)
    assert layer.l0_h2r_weight.shape == (2, 6)
    assert np.abs(c.asnumpy()).max() <= 0.1 + 1e-7


def test_sequence_length_stops_each_sequence_at_its_end():
    layer = gluon.rnn.GRU(4, bidirectional=True, use_sequence_length=True)
    layer.initialize()
    x = mx.nd.array(RNG.standard_normal((6, 2, 3)))
    out, (h,) = layer(x, layer.begin_state(2), mx.nd.array([3, 6]))
    alone, (h_alone,) = layer(x[:3, :1], layer.begin_state(1), mx.nd.array([3]))
    np.testing.assert_allclose(out[:3, :1].asnumpy(), alone.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(h[:, :1].asnumpy(), h_alone.asnumpy(), rtol=1e-5)
    assert np.all(out[3:, 0].asnumpy() == 0)


def test_symbolic_layer_binds_and_matches_the_imperative_one():
    layer = gluon.rnn.LSTM(5, num_layers=2, layout="NTC", prefix="s_")
    layer.initialize()
    x = mx.nd.array(RNG.standard_normal((3, 4, 2)))
    want = layer(x).asnumpy()
    out = layer(mx.sym.var("data"))
    _, shapes, _ = out.infer_shape(data=(3, 4, 2))
    assert shapes == [(3, 4, 5)]
    ex = out.simple_bind(mx.cpu(), data=(3, 4, 2))
    for k, p in layer.collect_params().items():
        ex.arg_dict[k][:] = p.data()
    ex.arg_dict["data"][:] = x
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-6)
