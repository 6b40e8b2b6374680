"""mx.rnn's symbolic cells against Apache MXNet 1.9.1.

Every cell kind is built by the same code under both libraries, unrolled, bound with the same
weights and run forward and backward with the same output gradients: the outputs, the final
states and every argument's gradient must agree. So must weight (un)packing and the
``FusedRNN``/``LSTMBias`` initializers. The rest checks names, shapes and errors.
"""

import json
import warnings

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

T, N, C = 3, 2, 4

#: name -> (the code that makes ``cell``, the layout of the input, merge_outputs)
CASES = {
    "rnn_tanh": ("cell = mx.rnn.RNNCell(5, prefix='rnn_')", "NTC", True),
    "rnn_relu": ("cell = mx.rnn.RNNCell(5, activation='relu', prefix='rnn_')", "NTC", False),
    "lstm": ("cell = mx.rnn.LSTMCell(5, prefix='lstm_', forget_bias=0.5)", "NTC", True),
    "gru": ("cell = mx.rnn.GRUCell(5, prefix='gru_')", "TNC", True),
    "stack": (
        "cell = mx.rnn.SequentialRNNCell()\n"
        "cell.add(mx.rnn.LSTMCell(4, prefix='l0_'))\n"
        "cell.add(mx.rnn.DropoutCell(0.0))\n"
        "cell.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix='l1_')))",
        "NTC",
        False,
    ),
    "bidirectional": (
        "cell = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(3, prefix='l_'),"
        " mx.rnn.GRUCell(3, prefix='r_'), output_prefix='bi_')",
        "NTC",
        True,
    ),
    "bidirectional_steps": (
        "cell = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(3, prefix='l_'),"
        " mx.rnn.RNNCell(3, prefix='r_'))",
        "TNC",
        None,
    ),
    "fused_lstm": (
        "cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode='lstm', bidirectional=True,"
        " get_next_state=True, prefix='f_')",
        "TNC",
        True,
    ),
    "fused_gru": (
        "cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode='gru', get_next_state=True, prefix='g_')",
        "TNC",
        True,
    ),
    "fused_relu_ntc": (
        "cell = mx.rnn.FusedRNNCell(3, mode='rnn_relu', bidirectional=True, prefix='r_')",
        "NTC",
        False,
    ),
    "unfused": (
        "cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode='lstm', bidirectional=True,"
        " prefix='f_').unfuse()",
        "TNC",
        True,
    ),
    "conv_rnn": ("cell = mx.rnn.ConvRNNCell((N, 2, 5, 4), 3, prefix='c_')", "TNC", None),
    "conv_lstm": ("cell = mx.rnn.ConvLSTMCell((N, 2, 5, 4), 3, prefix='c_')", "TNC", None),
    "conv_gru": (
        "cell = mx.rnn.ConvGRUCell((N, 2, 5, 4), 3, activation='tanh', i2h_pad=(1, 1),"
        " h2h_kernel=(3, 1), prefix='c_')",
        "TNC",
        None,
    ),
}

#: run under both libraries: builds each case, binds it on the given arrays, runs it
RUN = """
import json
import warnings
cases = json.loads(bytes(inputs["cases"]).decode())
T, N, C = (int(v) for v in inputs["dims"])

def flat(states):
    out = []
    for s in states:
        out.extend(flat(s) if isinstance(s, list) else [s])
    return out

def unroll(key, code, layout, merge):
    scope = {"mx": mx, "N": N}
    exec(code, scope)
    with warnings.catch_warnings(), mx.name.NameManager():
        warnings.simplefilter("ignore")  # FusedRNNCell's advice on the NTC layout
        outputs, states = scope["cell"].unroll(T, mx.sym.Variable("data"), layout=layout,
                                               merge_outputs=merge)
    return scope["cell"], outputs, states

result = {}
for key, (code, layout, merge) in sorted(cases.items()):
    cell, outputs, states = unroll(key, code, layout, merge)
    outputs = list(outputs) if isinstance(outputs, list) else [outputs]
    seen = [o.list_outputs()[0] for o in outputs]  # an output listed twice: MXNet keeps
    extra = [s for s in flat(states) if s.list_outputs()[0] not in seen]  # one head gradient
    sym = mx.sym.Group(outputs + extra)
    names = sym.list_arguments()
    result[key] = [names, sym.list_outputs()]
    args = {n: mx.nd.array(inputs[key + "__" + n]) for n in names}
    grads = {n: mx.nd.zeros(a.shape) for n, a in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    heads = [mx.nd.array(inputs[key + "__head%d" % i]) for i in range(len(outs))]
    exe.backward(heads)
    for i, o in enumerate(outs):
        arrays[key + "__out%d" % i] = o.asnumpy()
    for n in names:
        arrays[key + "__grad_" + n] = grads[n].asnumpy()
    params = {n: args[n] for n in names if n != "data"}
    for n, a in cell.unpack_weights(params).items():
        arrays[key + "__unpacked_" + n] = a.asnumpy()
    repacked = cell.pack_weights(cell.unpack_weights(params))
    for n, a in repacked.items():
        arrays[key + "__repacked_" + n] = a.asnumpy()
"""


def _data_shape(code, layout):
    step = (N, 2, 5, 4) if "Conv" in code else (N, C)
    return (step[0], T) + step[1:] if layout == "NTC" else (T,) + step


def _inputs():
    """Random weights and output gradients for every case (shapes from mxrs's inference)."""
    rng = np.random.default_rng(11)
    inputs = {
        "cases": np.frombuffer(json.dumps(CASES).encode(), dtype=np.uint8),
        "dims": np.array([T, N, C]),
    }
    scope = {"mx": mx, "np": np, "inputs": inputs, "result": {}, "arrays": {}}
    for key, (code, layout, merge) in CASES.items():
        cell_scope = {"mx": mx, "N": N}
        exec(code, cell_scope)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FusedRNNCell's advice on the NTC layout
            outputs, states = cell_scope["cell"].unroll(
                T, mx.sym.Variable("data"), layout=layout, merge_outputs=merge
            )
        outputs = list(outputs) if isinstance(outputs, list) else [outputs]
        seen = [o.list_outputs()[0] for o in outputs]
        flat = [s for st in states for s in (st if isinstance(st, list) else [st])]
        sym = mx.sym.Group(outputs + [s for s in flat if s.list_outputs()[0] not in seen])
        arg_shapes, out_shapes, _ = sym.infer_shape(data=_data_shape(code, layout))
        assert arg_shapes is not None, key
        for name, shape in zip(sym.list_arguments(), arg_shapes, strict=True):
            inputs[f"{key}__{name}"] = rng.uniform(-0.6, 0.6, shape).astype(np.float32)
        for i, shape in enumerate(out_shapes):
            inputs[f"{key}__head{i}"] = rng.standard_normal(shape).astype(np.float32)
    return inputs, scope


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(mxrs's results, MXNet 1.9.1's results) of RUN: ``(result, arrays)`` each."""
    inputs, scope = _inputs()
    want = mxnet_ref.run(tmp_path_factory.mktemp("rnn"), "import mxnet as mx\n" + RUN, **inputs)
    exec(RUN, scope)
    return (scope["result"], scope["arrays"]), want


@pytest.mark.parametrize("key", sorted(CASES))
def test_unrolled_cells_match_mxnet(both, key):
    (got_names, got), (want_names, want) = both
    assert got_names[key] == want_names[key]  # arguments and outputs, in order
    keys = sorted(k for k in want if k.startswith(key + "__"))
    assert keys == sorted(k for k in got if k.startswith(key + "__"))
    assert any("__grad_" in k for k in keys) and any("__out" in k for k in keys)
    for k in keys:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=2e-5, err_msg=k)


def test_fused_cell_unpacks_to_the_unfused_cells_weights(both):
    """Unpacked fused weights run through the unfused stack give the fused outputs."""
    (_, got), _ = both
    unpacked = {k.split("__unpacked_")[1]: v for k, v in got.items()
                if k.startswith("fused_lstm__unpacked_")}  # fmt: skip
    unfused = {k.split("__unpacked_")[1] for k in got if k.startswith("unfused__unpacked_")}
    assert set(unpacked) == unfused
    stack = mx.rnn.FusedRNNCell(3, num_layers=2, mode="lstm", bidirectional=True,
                                prefix="f_").unfuse()  # fmt: skip
    out, _ = stack.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    args = {k: mx.nd.array(v) for k, v in unpacked.items()}
    data = np.random.default_rng(0).standard_normal((T, N, C)).astype(np.float32)
    args["data"] = mx.nd.array(data)
    unfused_out = out.bind(mx.cpu(), stack.pack_weights(args)).forward()[0].asnumpy()
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode="lstm", bidirectional=True, prefix="f_")
    fout, _ = fused.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    packed = fused.pack_weights(args)
    assert sorted(packed) == ["data", "f_parameters"]
    fused_out = fout.bind(mx.cpu(), packed).forward()[0].asnumpy()
    np.testing.assert_allclose(fused_out, unfused_out, rtol=1e-5, atol=1e-6)


INIT = """
fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode="lstm", bidirectional=True, prefix="f_",
                            forget_bias=1.5)
out, _ = fused.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
mod = mx.mod.Module(out, label_names=None)
mod.bind([("data", (2, 2, 4))])
mod.init_params(mx.init.One())
arrays["fused_default"] = mod.get_params()[0]["f_parameters"].asnumpy()
init = mx.init.FusedRNN(None, 2, 1, "gru", True)
arr = mx.nd.zeros((2 * 3 * 2 * (3 + 2 + 2),))
mx.init.Constant(0.25)(mx.init.InitDesc("parameters", attrs={"__init__": init.dumps()}), arr)
arrays["fused_gru"] = arr.asnumpy()
stack = mx.rnn.SequentialRNNCell()
stack.add(mx.rnn.LSTMCell(4, prefix="a_", forget_bias=3.0))
stack.add(mx.rnn.GRUCell(4, prefix="b_"))
out, _ = stack.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
mod = mx.mod.Module(out, label_names=None)
mod.bind([("data", (2, 2, 4))])
mod.init_params(mx.init.Constant(0.5))
for name, value in sorted(mod.get_params()[0].items()):
    arrays["cells_" + name] = value.asnumpy()
"""


def test_initializers_of_cells_match_mxnet(tmp_path):
    _, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + INIT)
    scope = {"mx": mx, "np": np, "arrays": {}}
    exec(INIT, scope)
    got = scope["arrays"]
    assert sorted(got) == sorted(want)
    for k in sorted(got):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    # LSTMBias: the forget gate's block of i2h_bias, zero elsewhere; h2h_bias zero
    np.testing.assert_array_equal(got["cells_a_i2h_bias"], [0] * 4 + [3.0] * 4 + [0] * 8)
    assert not got["cells_a_h2h_bias"].any()


# ----------------------------------------------------------------- names and shapes
def test_names_follow_mxnet():
    cell = mx.rnn.LSTMCell(8, prefix="lstm_")
    outs, states = cell.unroll(2, [mx.sym.Variable(f"t{i}") for i in range(2)])
    assert mx.sym.Group(outs).list_outputs() == ["lstm_t0_out_output", "lstm_t1_out_output"]
    assert [s.name for s in states] == ["lstm_t1_out", "lstm_t1_state"]
    assert sorted(cell.params._params) == [
        "lstm_h2h_bias", "lstm_h2h_weight", "lstm_i2h_bias", "lstm_i2h_weight",
    ]  # fmt: skip
    begin = cell.begin_state()
    assert [b.name for b in begin] == ["lstm_begin_state_2", "lstm_begin_state_3"]
    assert begin[0].list_attr() == {"shape": "(0, 8)", "__layout__": "NC"}
    bi = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(2, prefix="l_"), mx.rnn.GRUCell(2, prefix="r_"))
    merged, _ = bi.unroll(3, mx.sym.Variable("x"), merge_outputs=True)
    assert merged.list_outputs() == ["bi_out_output"]
    fused = mx.rnn.FusedRNNCell(4, mode="gru", get_next_state=True)
    out, st = fused.unroll(3, mx.sym.Variable("x"), layout="TNC", merge_outputs=True)
    assert out.list_outputs() == ["gru_rnn_output"] and len(st) == 1
    assert st[0].list_attr()["__layout__"] == "LNC"
    assert fused.state_info == [{"shape": (1, 0, 4), "__layout__": "LNC"}]


def test_begin_states_take_the_batch_size_at_bind_time():
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.LSTMCell(6, prefix="a_"))
    cell.add(mx.rnn.ZoneoutCell(mx.rnn.GRUCell(6, prefix="b_"), 0.3, 0.3))
    out, states = cell.unroll(4, mx.sym.Variable("data"), merge_outputs=True)
    _, shapes, _ = mx.sym.Group([out, *states]).infer_shape(data=(7, 4, 3))
    assert shapes == [(7, 4, 6), (7, 6), (7, 6), (7, 6)]
    exe = out.simple_bind(mx.cpu(), data=(5, 4, 3))
    assert exe.forward()[0].shape == (5, 4, 6)
    # begin states fed as variables instead
    cell.reset()  # as in MXNet, a modifier's base cell keeps counting
    begin = cell.begin_state(func=mx.sym.Variable)
    assert [b.name for b in begin] == ["a_begin_state_0", "a_begin_state_1", "b_begin_state_1"]
    out, _ = cell.unroll(2, mx.sym.Variable("data"), begin_state=begin, merge_outputs=True)
    assert "b_begin_state_1" in out.list_arguments()


def test_zoneout_in_inference_is_the_base_cell():
    x = np.random.default_rng(1).standard_normal((3, 2, 4)).astype(np.float32)
    outs = []
    for zone in (False, True):
        base = mx.rnn.RNNCell(5, prefix="z_")
        cell = mx.rnn.ZoneoutCell(base, 0.5, 0.5) if zone else base
        out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
        args = {"data": mx.nd.array(x), "z_i2h_weight": mx.nd.ones((5, 4)) * 0.1,
                "z_i2h_bias": mx.nd.zeros(5), "z_h2h_weight": mx.nd.ones((5, 5)) * 0.2,
                "z_h2h_bias": mx.nd.ones(5)}  # fmt: skip
        outs.append(out.bind(mx.cpu(), args).forward()[0].asnumpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)


def test_unpack_and_pack_weights_of_a_gated_cell():
    cell = mx.rnn.GRUCell(2, prefix="g_")
    w = mx.nd.array(np.arange(24, dtype=np.float32).reshape(6, 4))
    args = {"g_i2h_weight": w, "g_i2h_bias": mx.nd.arange(6), "g_h2h_weight": mx.nd.ones((6, 2)),
            "g_h2h_bias": mx.nd.zeros(6), "other": mx.nd.ones(1)}  # fmt: skip
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked) == sorted(
        ["other"]
        + [
            f"g_{g}{s}_{k}"
            for g in ("i2h", "h2h")
            for s in ("_r", "_z", "_o")
            for k in ("weight", "bias")
        ]  # fmt: skip
    )
    np.testing.assert_array_equal(unpacked["g_i2h_z_weight"].asnumpy(), w.asnumpy()[2:4])
    np.testing.assert_array_equal(unpacked["g_i2h_o_bias"].asnumpy(), [4, 5])
    assert "g_i2h_weight" in args  # the input is left alone
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(args)
    for k in args:
        np.testing.assert_array_equal(packed[k].asnumpy(), args[k].asnumpy())
    assert mx.rnn.DropoutCell(0.5).unpack_weights(args) == args  # no gates, nothing to unpack


# ----------------------------------------------------------------- errors
def test_errors_name_what_is_wrong():
    x = mx.sym.Variable("x")
    with pytest.raises(MXNetError, match="cannot be stepped"):
        mx.rnn.FusedRNNCell(3)(x, [])
    bi = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(2, prefix="l_"), mx.rnn.RNNCell(2, prefix="r_"))
    with pytest.raises(MXNetError, match="cannot be stepped"):
        bi(x, [])
    base = mx.rnn.LSTMCell(2)
    mx.rnn.ResidualCell(base)
    with pytest.raises(MXNetError, match="modifier cell"):
        base.begin_state()
    with pytest.raises(MXNetError, match="unroll of 3 steps got 2 inputs"):
        mx.rnn.RNNCell(2).unroll(3, [x, x])
    with pytest.raises(MXNetError, match="needs inputs"):
        mx.rnn.RNNCell(2).unroll(3, None)
    with pytest.raises(MXNetError, match="grouped symbol"):
        mx.rnn.RNNCell(2).unroll(2, mx.sym.Group([x, x]))
    with pytest.raises(MXNetError, match="unknown mode 'lstmx'"):
        mx.rnn.FusedRNNCell(3, mode="lstmx")
    with pytest.raises(MXNetError, match="odd"):
        mx.rnn.ConvRNNCell((1, 2, 4, 4), 2, h2h_kernel=(2, 3))
    with pytest.raises(MXNetError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3))
    with pytest.raises(MXNetError, match="'rnn_i2h_weight'"):
        mx.rnn.RNNCell(2).unpack_weights({"rnn_h2h_weight": mx.nd.ones((2, 2))})
    with pytest.raises(MXNetError, match="does not fit"):
        mx.rnn.FusedRNNCell(3).unpack_weights({"lstm_parameters": mx.nd.ones(7)})
    with pytest.raises(MXNetError, match="give params to the container cell or"):
        seq = mx.rnn.SequentialRNNCell(params=mx.rnn.RNNParams("s_"))
        cell = mx.rnn.RNNCell(2)
        _ = cell.params
        seq.add(cell)
    with pytest.raises(MXNetError, match="must be a number"):
        mx.rnn.DropoutCell("0.5")


def test_an_open_shape_that_cannot_be_inferred_fails_at_bind():
    z = mx.sym.zeros(shape=(0, 3), name="lonely")
    y = z + 1
    with pytest.raises(MXNetError, match="'lonely'"):
        y.bind(mx.cpu(), {})
