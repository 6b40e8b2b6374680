"""gluon.rnn's cells against Apache MXNet 1.9.1: the same script, run under mxrs and under
MXNet, unrolls each cell with the same weights and inputs and records the outputs, the final
states and the gradients of the inputs, the initial states and every parameter; both layouts,
every ``merge_outputs``, ``valid_length``, hybridized or not, and symbolic unrolling (output
names, shapes and values). Then what MXNet cannot be compared with: dropout and zoneout in
training, export and import, and the errors."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

#: Helpers of the scripts run under both libraries (``mx`` is mxrs or MXNet): deterministic
#: weights and data, and one unroll whose numbers go to ``arrays`` under ``key/...``.
HARNESS = """
def det(shape, seed, scale=0.5):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + seed * 1.3) * scale).reshape(shape).astype("float32")


def fill(block):
    for i, (name, p) in enumerate(sorted(block.collect_params().items())):
        p.set_data(mx.nd.array(det(p.shape, i + 1, 0.4)))


def steps(x, axis, n):
    parts = mx.nd.split(x, axis=axis, num_outputs=n, squeeze_axis=True)
    return parts if isinstance(parts, list) else [parts]


def run_cell(key, cell, shape, layout="NTC", merge=True, valid=None, as_list=False,
             begin=False, hybridize=False):
    cell.initialize()
    fill(cell)
    if hybridize:
        cell.hybridize()
    t_axis, n_axis = layout.find("T"), layout.find("N")
    length, batch = shape[t_axis], shape[n_axis]
    x = mx.nd.array(det(shape, 11, 1.0))
    x.attach_grad()
    vl = mx.nd.array(valid) if valid is not None else None
    states0 = None
    if begin:
        infos = cell.state_info(batch)
        states0 = [mx.nd.array(det(s["shape"], 20 + k, 0.3)) for k, s in enumerate(infos)]
        for s in states0:
            s.attach_grad()
    with mx.autograd.record(train_mode=False):
        inp = steps(x, t_axis, length) if as_list else x
        outs, states = cell.unroll(length, inp, begin_state=states0, layout=layout,
                                   merge_outputs=merge, valid_length=vl)
        out = mx.nd.stack(*outs, axis=t_axis) if isinstance(outs, list) else outs
        loss = (out * mx.nd.array(det(out.shape, 31, 1.0))).sum()
        for k, s in enumerate(states):
            loss = loss + (s * mx.nd.array(det(s.shape, 40 + k, 1.0))).sum()
    loss.backward()
    arrays[key + "/out"] = out.asnumpy()
    arrays[key + "/listed"] = np.array(isinstance(outs, list))
    for k, s in enumerate(states):
        arrays[key + "/state%d" % k] = s.asnumpy()
    arrays[key + "/dx"] = x.grad.asnumpy()
    for k, s in enumerate(states0 or []):
        arrays[key + "/dstate%d" % k] = s.grad.asnumpy()
    for name, p in cell.collect_params().items():
        arrays[key + "/d:" + name] = p.grad().asnumpy()
"""

R = "mx.gluon.rnn."
#: key: (the cell, as source), input shape, unroll options
# fmt: off
CASES = {
    "rnn_tanh": (R + "RNNCell(5, input_size=4, prefix='rnn_')", (2, 3, 4), {}),
    "rnn_relu_tnc_list": (R + "RNNCell(5, activation='relu', input_size=4, prefix='rnn_')",
                          (3, 2, 4), dict(layout="TNC", merge=False, as_list=True)),
    "rnn_softrelu_none": (R + "RNNCell(5, activation='softrelu', input_size=4, prefix='rnn_')",
                          (2, 3, 4), dict(merge=None, begin=True)),
    "lstm_begin": (R + "LSTMCell(5, input_size=4, prefix='lstm_')", (2, 3, 4), dict(begin=True)),
    "lstm_tnc_none": (R + "LSTMCell(5, input_size=4, prefix='lstm_')", (3, 2, 4),
                      dict(layout="TNC", merge=None)),
    "lstm_activations": (R + "LSTMCell(5, input_size=4, prefix='lstm_', activation='softsign', "
                         "recurrent_activation='tanh')", (2, 3, 4), {}),
    "lstm_hybridized": (R + "LSTMCell(5, input_size=4, prefix='lstm_')", (2, 3, 4),
                        dict(hybridize=True, merge=False)),
    "gru": (R + "GRUCell(5, input_size=4, prefix='gru_')", (2, 3, 4), dict(begin=True)),
    "gru_tnc_list": (R + "GRUCell(5, input_size=4, prefix='gru_')", (3, 2, 4),
                     dict(layout="TNC", as_list=True, merge=True)),
    "rnn_valid": (R + "RNNCell(5, input_size=4, prefix='rnn_')", (3, 4, 4),
                  dict(valid=[1, 4, 2], begin=True)),
    "lstm_valid_tnc": (R + "LSTMCell(5, input_size=4, prefix='lstm_')", (4, 3, 4),
                       dict(layout="TNC", valid=[2, 4, 1], merge=False, begin=True)),
    "gru_valid_none": (R + "GRUCell(5, input_size=4, prefix='gru_')", (3, 4, 4),
                       dict(valid=[3, 1, 4], merge=None, hybridize=True)),
    "stack": ("stack([LSTM(5, input_size=4, prefix='l0_'), GRU(3, input_size=5, prefix='l1_')])",
              (2, 3, 4), dict(begin=True)),
    "stack_valid_tnc": ("stack([RNN(5, input_size=4, prefix='l0_'), "
                        "LSTM(3, input_size=5, prefix='l1_')])", (4, 3, 4),
                        dict(layout="TNC", valid=[4, 2, 3], merge=False)),
    "hybrid_stack": ("stack([RNN(4, input_size=4, prefix='l0_'), "
                     "Res(LSTM(4, input_size=4, prefix='l1_'))], hybrid=True)", (3, 2, 4),
                     dict(layout="TNC", merge=False, begin=True, hybridize=True)),
    "bidirectional": (R + "BidirectionalCell(LSTM(5, input_size=4, prefix='l_'), "
                      "GRU(3, input_size=4, prefix='r_'), output_prefix='bi_')", (2, 3, 4),
                      dict(begin=True)),
    "bidirectional_valid_tnc": (R + "BidirectionalCell(LSTM(5, input_size=4, prefix='l_'), "
                                "GRU(3, input_size=4, prefix='r_'))", (4, 3, 4),
                                dict(layout="TNC", valid=[2, 4, 3], merge=False)),
    "bidirectional_valid_none": (R + "BidirectionalCell(RNN(5, input_size=4, prefix='l_'), "
                                 "RNN(5, input_size=4, prefix='r_'))", (4, 3, 4),
                                 dict(layout="TNC", valid=[1, 4, 3], merge=None)),
    "residual_valid": ("Res(GRU(4, input_size=4, prefix='res_'))", (3, 4, 4),
                       dict(valid=[4, 2, 3], merge=False)),
    "zoneout_predict": (R + "ZoneoutCell(LSTM(5, input_size=4, prefix='z_'), 0.5, 0.3)",
                        (2, 3, 4), dict(begin=True)),
    "dropout_predict": ("stack([" + R + "DropoutCell(0.4), GRU(5, input_size=4, prefix='g_')], "
                        "hybrid=True)", (2, 3, 4), {}),
}
# fmt: on

CELLS_SCRIPT = (
    HARNESS
    + """
RNN, LSTM, GRU = mx.gluon.rnn.RNNCell, mx.gluon.rnn.LSTMCell, mx.gluon.rnn.GRUCell
Res = mx.gluon.rnn.ResidualCell


def stack(cells, hybrid=False):
    s = (mx.gluon.rnn.HybridSequentialRNNCell if hybrid else mx.gluon.rnn.SequentialRNNCell)()
    for c in cells:
        s.add(c)
    return s

"""
    + "".join(
        f"run_cell({key!r}, {src}, {shape!r}, **{opts!r})\n"
        for key, (src, shape, opts) in CASES.items()
    )
)


def run_here(script):
    """``script`` run under mxrs: the ``arrays`` and ``result`` it leaves."""
    scope = {"mx": mx, "np": np, "inputs": {}, "arrays": {}, "result": None}
    exec(script, scope)
    return scope["result"], scope["arrays"]


def compare(got, want, key, rtol=1e-4, atol=1e-5):
    """Every array MXNet left under ``key/`` equals mxrs's."""
    names = sorted(k for k in want if k.startswith(key + "/"))
    assert names, f"MXNet left nothing for {key}"
    assert sorted(k for k in got if k.startswith(key + "/")) == names
    for name in names:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


@pytest.fixture(scope="module")
def cell_results(tmp_path_factory):
    """The arrays of every case in :data:`CASES`, under mxrs and under MXNet 1.9.1."""
    tmp = tmp_path_factory.mktemp("rnn_cells")
    _, want = mxnet_ref.run(tmp, "import mxnet as mx\n" + CELLS_SCRIPT)
    return run_here(CELLS_SCRIPT)[1], want


@pytest.mark.parametrize("key", list(CASES))
def test_cell_unroll_matches_mxnet(cell_results, key):
    got, want = cell_results
    compare(got, want, key)


#: Symbolic unrolls: output names, parameter names, inferred shapes and the values of the
#: bound graph.
SYMBOL_SCRIPT = (
    HARNESS
    + """
RNN, LSTM, GRU = mx.gluon.rnn.RNNCell, mx.gluon.rnn.LSTMCell, mx.gluon.rnn.GRUCell
result = {}


def sym_case(key, cell, length, step_shape, merged=False, layout="NTC", merge=None,
             valid=None):
    if merged:
        shape = list(step_shape)
        shape.insert(layout.find("T"), length)
        data = {"data": tuple(shape)}
        inputs = mx.sym.var("data")
    else:
        data = {"rnn_t%d_data" % i: tuple(step_shape) for i in range(length)}
        inputs = [mx.sym.var(n) for n in data]
    vl = None
    if valid is not None:
        vl = mx.sym.var("valid")
        data["valid"] = (len(valid),)
    outs, states = cell.unroll(length, inputs, layout=layout, merge_outputs=merge,
                               valid_length=vl)
    group = mx.sym.Group((outs if isinstance(outs, list) else [outs]) + list(states))
    arg_shapes, out_shapes, _ = group.infer_shape(**data)
    result[key] = {
        "outputs": group.list_outputs(),
        "params": sorted(cell.collect_params().keys()),
        "shapes": [list(s) for s in out_shapes],
        "arguments": sorted(group.list_arguments()),
    }
    shapes = dict(zip(group.list_arguments(), arg_shapes))
    values = {k: mx.nd.array(det(shapes[k], 3 + i, 0.5)) for i, k in enumerate(sorted(shapes))}
    if valid is not None:
        values["valid"] = mx.nd.array(valid)
    for i, o in enumerate(group.eval(ctx=mx.cpu(), **values)):
        arrays["%s/%d" % (key, i)] = o.asnumpy()


sym_case("rnn", RNN(6, prefix="rnn_"), 3, (2, 4))
sym_case("lstm", LSTM(6, prefix="rnn_"), 3, (2, 4), merge=True)
sym_case("gru_merged_tnc", GRU(6, prefix="rnn_"), 3, (2, 4), merged=True, layout="TNC")
sym_case("lstm_valid", LSTM(6, prefix="rnn_"), 4, (3, 4), merged=True, merge=True,
         valid=[2, 4, 1])
sym_case("bidirectional", mx.gluon.rnn.BidirectionalCell(
    LSTM(5, prefix="rnn_l0_"), GRU(4, prefix="rnn_r0_"), output_prefix="rnn_bi_"), 3, (2, 4))
sym_case("bidirectional_merged", mx.gluon.rnn.BidirectionalCell(
    RNN(5, prefix="rnn_l0_"), RNN(4, prefix="rnn_r0_")), 3, (2, 4), merged=True,
    merge=True, valid=[3, 1])
stack = mx.gluon.rnn.SequentialRNNCell()
stack.add(LSTM(5, prefix="rnn_stack0_"))
stack.add(mx.gluon.rnn.ResidualCell(LSTM(5, prefix="rnn_stack1_")))
stack.add(GRU(3, prefix="rnn_stack2_"))
sym_case("stack", stack, 3, (2, 4))
sym_case("residual", mx.gluon.rnn.ResidualCell(GRU(4, prefix="rnn_")), 2, (2, 4))
sym_case("zoneout", mx.gluon.rnn.ZoneoutCell(RNN(4, prefix="rnn_"), 0.5, 0.5), 3, (2, 4))
"""
)


@pytest.fixture(scope="module")
def symbol_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rnn_symbols")
    want = mxnet_ref.run(tmp, "import mxnet as mx\n" + SYMBOL_SCRIPT)
    return run_here(SYMBOL_SCRIPT), want


SYMBOL_CASES = ["rnn", "lstm", "gru_merged_tnc", "lstm_valid", "bidirectional",
                "bidirectional_merged", "stack", "residual", "zoneout"]  # fmt: skip


@pytest.mark.parametrize("key", SYMBOL_CASES)
def test_symbolic_unroll_matches_mxnet(symbol_results, key):
    (got_result, got), (want_result, want) = symbol_results
    assert got_result[key] == want_result[key]
    compare(got, want, key)


def test_symbolic_unroll_names_outputs_as_mxnet():
    cell = mx.gluon.rnn.LSTMCell(100, prefix="rnn_")
    inputs = [mx.sym.var(f"rnn_t{i}_data") for i in range(3)]
    outputs, states = cell.unroll(3, inputs)
    group = mx.sym.Group(outputs)
    assert group.list_outputs() == [f"rnn_t{i}_out_output" for i in range(3)]
    assert [s.list_outputs() for s in states] == [["rnn_t2_out_output"], ["rnn_t2_state_output"]]
    _, outs, _ = group.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50), rnn_t2_data=(10, 50))
    assert outs == [(10, 100)] * 3
    assert cell.i2h_weight.shape == (400, 0)  # symbolic use leaves the parameter deferred


# ----------------------------------------------------------------- single steps and states
def test_cell_steps_and_counts_like_unroll():
    cell = mx.gluon.rnn.GRUCell(3, input_size=2, prefix="gru_")
    cell.initialize(mx.init.Xavier())
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 10)
    states = cell.begin_state(batch_size=2)
    assert [s.shape for s in states] == [(2, 3)]
    outs = []
    for t in range(3):
        out, states = cell(x[:, t, :], states)
        outs.append(out)
    assert cell._counter == 2
    unrolled, last = cell.unroll(3, x, merge_outputs=True)
    assert cell._counter == 2  # unroll resets the count first
    np.testing.assert_allclose(unrolled.asnumpy(), np.stack([o.asnumpy() for o in outs], 1))
    np.testing.assert_allclose(last[0].asnumpy(), outs[-1].asnumpy())


def test_begin_state_names_shapes_and_funcs():
    cell = mx.gluon.rnn.LSTMCell(4, prefix="lstm_")
    assert cell.state_info(3) == [{"shape": (3, 4), "__layout__": "NC"}] * 2
    syms = cell.begin_state(func=mx.sym.zeros)
    assert [s.list_outputs() for s in syms] == [
        ["lstm_begin_state_0_output"],
        ["lstm_begin_state_1_output"],
    ]
    ones = cell.begin_state(batch_size=2, func=mx.nd.ones)
    assert [s.shape for s in ones] == [(2, 4), (2, 4)] and ones[1].asnumpy().min() == 1
    cell.reset()
    var = cell.begin_state(func=mx.sym.var)
    assert var[0].name == "lstm_begin_state_0"
    zoneout = mx.gluon.rnn.ZoneoutCell(cell, 0.1)
    assert zoneout.params is cell.params
    assert isinstance(zoneout.begin_state()[0], mx.sym.Symbol)  # MXNet's default there
    assert zoneout.begin_state(func=mx.nd.zeros, batch_size=5)[0].shape == (5, 4)
    with pytest.raises(MXNetError, match="modifier cell"):
        cell.begin_state(batch_size=2)


def test_deferred_input_size_comes_from_the_first_input():
    for cls, gates in ((mx.gluon.rnn.RNNCell, 1), (mx.gluon.rnn.LSTMCell, 4),
                       (mx.gluon.rnn.GRUCell, 3)):  # fmt: skip
        cell = cls(6)
        cell.hybridize()
        cell.initialize()
        out, _ = cell.unroll(2, mx.nd.ones((3, 2, 7)), merge_outputs=True)
        assert out.shape == (3, 2, 6)
        assert cell.i2h_weight.shape == (6 * gates, 7)
        assert repr(cell).startswith(f"{cls.__name__}(7 -> {6 * gates}")


def test_valid_length_masks_outputs_and_keeps_the_last_valid_states():
    cell = mx.gluon.rnn.LSTMCell(3, input_size=2)
    cell.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(0).standard_normal((3, 5, 2)).astype(np.float32))
    outs, states = cell.unroll(5, x, valid_length=mx.nd.array([2, 5, 4]), merge_outputs=True)
    for i, n in enumerate([2, 5, 4]):
        alone, alone_states = cell.unroll(n, x[i : i + 1, :n], merge_outputs=True)
        np.testing.assert_allclose(outs[i : i + 1, :n].asnumpy(), alone.asnumpy(), rtol=1e-5)
        assert not outs[i, n:].asnumpy().any()
        for s, a in zip(states, alone_states, strict=True):
            np.testing.assert_allclose(s[i : i + 1].asnumpy(), a.asnumpy(), rtol=1e-5)


def test_activation_block_and_names():
    x = mx.nd.array(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    leaky = mx.gluon.rnn.RNNCell(3, activation=mx.gluon.nn.LeakyReLU(0.1), input_size=4)
    tanh = mx.gluon.rnn.RNNCell(3, input_size=4, params=leaky.params)
    leaky.initialize(mx.init.Xavier())
    states = leaky.begin_state(batch_size=2)
    out, _ = leaky(x, states)
    pre = np.arctanh(tanh(x, states)[0].asnumpy())
    np.testing.assert_allclose(out.asnumpy(), np.where(pre > 0, pre, 0.1 * pre), rtol=1e-4)
    assert repr(leaky).endswith("LeakyReLU(0.1))") and repr(tanh).endswith(", tanh)")


# ----------------------------------------------------------------- dropout and zoneout
def test_dropout_cell_drops_in_training_only():
    cell = mx.gluon.rnn.DropoutCell(0.5)
    x = mx.nd.ones((4, 6, 50))
    out, states = cell.unroll(6, x, merge_outputs=True)
    assert states == [] and np.array_equal(out.asnumpy(), x.asnumpy())
    with mx.autograd.record():
        out, _ = cell.unroll(6, x, merge_outputs=True)
    values = set(np.unique(out.asnumpy()).tolist())
    assert values == {0.0, 2.0}
    with mx.autograd.record():  # a list of steps: one dropout per step
        outs, _ = cell.unroll(6, x, merge_outputs=False)
    assert len(outs) == 6 and set(np.unique(outs[0].asnumpy()).tolist()) == {0.0, 2.0}
    shared = mx.gluon.rnn.DropoutCell(0.5, axes=(1,))
    with mx.autograd.record():
        out, _ = shared.unroll(6, x, merge_outputs=True)
    assert np.array_equal(out[:, 0].asnumpy(), out[:, 5].asnumpy())
    assert repr(cell) == "DropoutCell(rate=0.5, axes=())"


def test_zoneout_keeps_previous_values_in_training():
    base = mx.gluon.rnn.RNNCell(30, input_size=5, prefix="rnn_")
    cell = mx.gluon.rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    cell.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(1).standard_normal((8, 4, 5)).astype(np.float32))
    with mx.autograd.record():
        outs, states = cell.unroll(4, x, merge_outputs=False)
    base._modified = False
    plain, _ = base.unroll(4, x, merge_outputs=False)
    first = outs[0].asnumpy()
    # zoned-out elements of the first step keep the initial (zero) output
    assert set(np.flatnonzero(first != plain[0].asnumpy())) == set(np.flatnonzero(first == 0))
    assert 0.2 < (first == 0).mean() < 0.8
    prev = first
    for t in range(1, 4):
        cur = outs[t].asnumpy()
        kept = cur == prev
        assert 0.2 < kept.mean() < 0.8  # about half keep the previous output
        prev = cur
    predict, _ = cell.unroll(4, x, merge_outputs=False)
    np.testing.assert_allclose(predict[3].asnumpy(), plain[3].asnumpy(), rtol=1e-6)


# ----------------------------------------------------------------- hybrid blocks, export
class _Seq2Seq(mx.gluon.HybridBlock):
    """A hybrid block unrolling a bidirectional stack inside its ``hybrid_forward``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            stack = mx.gluon.rnn.HybridSequentialRNNCell()
            stack.add(mx.gluon.rnn.LSTMCell(4, input_size=3))
            stack.add(mx.gluon.rnn.GRUCell(4, input_size=4))
            self.cell = mx.gluon.rnn.BidirectionalCell(stack, mx.gluon.rnn.RNNCell(2))

    def hybrid_forward(self, F, x):
        outputs, _ = self.cell.unroll(3, x, layout="NTC", merge_outputs=True)
        return outputs


def test_export_and_import_a_block_with_cells(tmp_path):
    net = _Seq2Seq(prefix="net_")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.default_rng(2).standard_normal((5, 3, 3)).astype(np.float32))
    out = net(x)
    assert out.shape == (5, 3, 6)
    path = str(tmp_path / "seq")
    net.export(path, epoch=1)
    loaded = mx.gluon.SymbolBlock.imports(f"{path}-symbol.json", ["data"], f"{path}-0001.params")
    np.testing.assert_allclose(loaded(x).asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    # the other batch sizes work too: nothing in the graph fixes the batch
    np.testing.assert_allclose(loaded(x[:2]).asnumpy(), net(x[:2]).asnumpy(), rtol=1e-5)
    # and MXNet 1.9.1 loads the files and computes the same
    script = """
import mxnet as mx
net = mx.gluon.SymbolBlock.imports(str(inputs["path"]) + "-symbol.json", ["data"],
                                   str(inputs["path"]) + "-0001.params")
arrays["out"] = net(mx.nd.array(inputs["x"])).asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, path=np.array(path), x=x.asnumpy())
    np.testing.assert_allclose(want["out"], out.asnumpy(), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- errors
def test_bad_inputs_raise_clear_errors():
    cell = mx.gluon.rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    x = mx.nd.ones((2, 4, 2))
    with pytest.raises(MXNetError, match="layout.*'XYZ'"):
        cell.unroll(4, x, layout="XYZ")
    with pytest.raises(MXNetError, match="length is 3 but 2 inputs"):
        cell.unroll(3, [mx.nd.ones((2, 2))] * 2)
    with pytest.raises(MXNetError, match="length is 5 but .* 4 time steps"):
        cell.unroll(5, x)
    with pytest.raises(MXNetError, match="inputs=None"):
        cell.unroll(3, None)
    with pytest.raises(MXNetError, match="list of inputs is empty"):
        cell.unroll(0, [])
    with pytest.raises(MXNetError, match="grouped symbol"):
        cell.unroll(2, mx.sym.Group([mx.sym.var("a"), mx.sym.var("b")]), merge_outputs=False)
    with pytest.raises(MXNetError, match="hidden_size must be a positive int"):
        mx.gluon.rnn.GRUCell(0)
    with pytest.raises(MXNetError, match="rate must be a number"):
        mx.gluon.rnn.DropoutCell("0.5")
    bi = mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.RNNCell(2), mx.gluon.rnn.RNNCell(2))
    with pytest.raises(NotImplementedError, match="unroll"):
        bi(mx.nd.ones((1, 2)), bi.begin_state(batch_size=1))
    with pytest.raises(MXNetError, match="doesn't support zoneout"):
        mx.gluon.rnn.ZoneoutCell(bi)
    base = mx.gluon.rnn.RNNCell(2)
    mx.gluon.rnn.ResidualCell(base)
    with pytest.raises(MXNetError, match="already modified"):
        mx.gluon.rnn.ZoneoutCell(base)
    stack = mx.gluon.rnn.HybridSequentialRNNCell()
    stack.add(bi)
    with pytest.raises(MXNetError, match="cannot run one step"):
        stack(mx.nd.ones((1, 2)), [])


def test_containers_index_and_print():
    stack = mx.gluon.rnn.SequentialRNNCell(prefix="s_")
    with stack.name_scope():
        stack.add(mx.gluon.rnn.LSTMCell(3, input_size=2))
        stack.add(mx.gluon.rnn.ZoneoutCell(mx.gluon.rnn.GRUCell(3, input_size=3), 0.2, 0.1))
    assert len(stack) == 2 and stack[0].prefix == "s_lstm0_"
    assert stack[1].prefix == "s_s_gru0_zoneout"  # the base cell's prefix, as in MXNet
    assert repr(stack).splitlines()[1] == "(0): LSTMCell(2 -> 12)"
    assert "ZoneoutCell(p_out=0.2, p_state=0.1, GRUCell(3 -> 9))" in repr(stack)
    assert sorted(stack.collect_params()) == [
        "s_gru0_h2h_bias", "s_gru0_h2h_weight", "s_gru0_i2h_bias", "s_gru0_i2h_weight",
        "s_lstm0_h2h_bias", "s_lstm0_h2h_weight", "s_lstm0_i2h_bias", "s_lstm0_i2h_weight",
    ]  # fmt: skip
    assert [s["shape"] for s in stack.state_info(7)] == [(7, 3)] * 3


def test_lstm_bias_initializer():
    cell = mx.gluon.rnn.LSTMCell(3, input_size=2, i2h_bias_initializer=mx.init.LSTMBias(2.5))
    cell.initialize()
    np.testing.assert_array_equal(cell.i2h_bias.data().asnumpy(), [0] * 3 + [2.5] * 3 + [0] * 6)
    assert mx.init.create(mx.init.LSTMBias(0.5).dumps()).forget_bias == 0.5
