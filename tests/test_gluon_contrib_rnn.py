"""gluon.contrib.rnn against Apache MXNet 1.9.1: the LSTM with projection, variational dropout
and the convolutional cells, unrolled by the same script under both libraries with the same
weights (outputs, states and every gradient), their symbolic unrolling, ``dynamic_unroll``,
then dropout in training, deferred shapes and the errors."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from test_gluon_rnn_cell import HARNESS, compare, run_here

C = "mx.gluon.contrib.rnn."
#: key: (the cell, as source), input shape, unroll options (see ``run_cell``)
CASES = {
    "lstmp": (C + "LSTMPCell(6, 3, input_size=4, prefix='p_')", (2, 3, 4), dict(begin=True)),
    "lstmp_valid_tnc": (
        C + "LSTMPCell(5, 2, input_size=4, prefix='p_')",
        (4, 3, 4),
        dict(layout="TNC", valid=[2, 4, 1], merge=False),
    ),
    "vardrop_predict": (
        C + "VariationalDropoutCell(GRU(5, input_size=4, prefix='g_'), 0.3, 0.0, 0.4)",
        (2, 3, 4),
        dict(begin=True, valid=[3, 2]),
    ),
    "vardrop_states_predict": (
        C + "VariationalDropoutCell(LSTM(5, input_size=4, prefix='l_'), 0.3, 0.2, 0.4)",
        (3, 2, 4),
        dict(layout="TNC", merge=False),
    ),
    "conv1d_rnn": (
        C + "Conv1DRNNCell((2, 7), 3, 3, 3, prefix='c_')",
        (2, 3, 2, 7),
        dict(begin=True),
    ),
    "conv1d_lstm_pad": (
        C + "Conv1DLSTMCell((2, 7), 3, 3, 5, i2h_pad=1, prefix='c_')",
        (2, 3, 2, 7),
        dict(begin=True, merge=False),
    ),
    "conv1d_gru_relu": (
        C + "Conv1DGRUCell((2, 6), 2, (3,), (3,), activation='relu', prefix='c_')",
        (3, 2, 2, 6),
        dict(layout="TNC", valid=[1, 2]),
    ),
    "conv2d_rnn_dilate": (
        C + "Conv2DRNNCell((2, 6, 5), 2, (3, 3), (3, 3), i2h_dilate=(2, 1), "
        "h2h_dilate=(1, 2), prefix='c_')",
        (2, 3, 2, 6, 5),
        {},
    ),
    "conv2d_lstm": (
        C + "Conv2DLSTMCell((2, 5, 5), 2, (3, 3), (3, 3), i2h_pad=(1, 1), prefix='c_')",
        (2, 2, 2, 5, 5),
        dict(begin=True),
    ),
    "conv2d_gru": (
        C + "Conv2DGRUCell((1, 5, 4), 2, (2, 3), (1, 3), i2h_pad=(1, 0), prefix='c_')",
        (2, 3, 1, 5, 4),
        dict(hybridize=True),
    ),
    "conv3d_rnn": (
        C + "Conv3DRNNCell((1, 3, 4, 4), 2, 3, 3, i2h_pad=1, prefix='c_')",
        (2, 2, 1, 3, 4, 4),
        {},
    ),
    "conv3d_lstm": (
        C + "Conv3DLSTMCell((2, 3, 3, 3), 2, (1, 3, 3), 3, i2h_pad=(0, 1, 1), prefix='c_')",
        (2, 2, 2, 3, 3, 3),
        dict(begin=True),
    ),
    "conv3d_gru": (
        C + "Conv3DGRUCell((1, 4, 4, 3), 2, 2, 1, prefix='c_')",
        (2, 2, 1, 4, 4, 3),
        dict(merge=None),
    ),
}

SCRIPT = (
    HARNESS
    + """
RNN, LSTM, GRU = mx.gluon.rnn.RNNCell, mx.gluon.rnn.LSTMCell, mx.gluon.rnn.GRUCell
"""
    + "".join(
        f"run_cell({key!r}, {src}, {shape!r}, **{opts!r})\n"
        for key, (src, shape, opts) in CASES.items()
    )
    + """
result = {}


def sym_case(key, cell, length, step_shape):
    names = ["rnn_t%d_data" % i for i in range(length)]
    outs, states = cell.unroll(length, [mx.sym.var(n) for n in names])
    group = mx.sym.Group(outs + list(states))
    arg_shapes, out_shapes, _ = group.infer_shape(**{n: step_shape for n in names})
    result[key] = {
        "outputs": group.list_outputs(),
        "params": sorted(cell.collect_params().keys()),
        "shapes": [list(s) for s in out_shapes],
    }
    shapes = dict(zip(group.list_arguments(), arg_shapes))
    values = {k: mx.nd.array(det(shapes[k], 3 + i, 0.5)) for i, k in enumerate(sorted(shapes))}
    for i, o in enumerate(group.eval(ctx=mx.cpu(), **values)):
        arrays["%s/%d" % (key, i)] = o.asnumpy()


sym_case("sym_lstmp", mx.gluon.contrib.rnn.LSTMPCell(6, 3, prefix="rnn_"), 3, (2, 4))
sym_case("sym_conv1d_rnn", mx.gluon.contrib.rnn.Conv1DRNNCell((3, 8), 4, 3, 3, prefix="rnn_"),
         2, (2, 3, 8))
sym_case("sym_conv2d_lstm", mx.gluon.contrib.rnn.Conv2DLSTMCell(
    (3, 6, 5), 4, 3, 3, prefix="rnn_"), 2, (1, 3, 6, 5))
sym_case("sym_conv3d_gru", mx.gluon.contrib.rnn.Conv3DGRUCell(
    (1, 4, 5, 4), 2, 3, 3, prefix="rnn_"), 2, (1, 1, 4, 5, 4))
sym_case("sym_vardrop", mx.gluon.contrib.rnn.VariationalDropoutCell(
    RNN(4, prefix="rnn_"), 0.5, 0.5, 0.5), 3, (2, 3))

cell = LSTM(4, input_size=3, prefix="rnn_")
cell.initialize()
fill(cell)
x = mx.nd.array(det((5, 2, 3), 7, 1.0))
vl = mx.nd.array([3, 5])
begin = [mx.nd.array(det((2, 4), 8 + k, 0.5)) for k in range(2)]
out, states = mx.gluon.contrib.rnn.rnn_cell.dynamic_unroll(cell, x, begin, valid_length=vl)
arrays["dynamic_unroll/out"] = out.asnumpy()
for k, s in enumerate(states):
    arrays["dynamic_unroll/state%d" % k] = s.asnumpy()
out, states = mx.gluon.contrib.rnn.rnn_cell.dynamic_unroll(
    cell, mx.nd.swapaxes(x, 0, 1), begin, layout="NTC")
arrays["dynamic_unroll_ntc/out"] = out.asnumpy()
arrays["dynamic_unroll_ntc/state0"] = states[0].asnumpy()
"""
)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Everything :data:`SCRIPT` leaves, under mxrs and under MXNet 1.9.1."""
    tmp = tmp_path_factory.mktemp("contrib_rnn")
    want = mxnet_ref.run(tmp, "import mxnet as mx\n" + SCRIPT)
    return run_here(SCRIPT), want


@pytest.mark.parametrize("key", list(CASES) + ["dynamic_unroll", "dynamic_unroll_ntc"])
def test_contrib_cell_matches_mxnet(results, key):
    (_, got), (_, want) = results
    compare(got, want, key)


SYMBOL_CASES = ["sym_lstmp", "sym_conv1d_rnn", "sym_conv2d_lstm", "sym_conv3d_gru", "sym_vardrop"]


@pytest.mark.parametrize("key", SYMBOL_CASES)
def test_contrib_symbolic_unroll_matches_mxnet(results, key):
    (got_result, got), (want_result, want) = results
    assert got_result[key] == want_result[key]
    compare(got, want, key)


def test_conv_cells_shapes():
    contrib = mx.gluon.contrib.rnn
    for dims in (1, 2, 3):
        spatial = (9, 8, 7)[:dims]
        for kind, n_states, gates in (("RNN", 1, 1), ("LSTM", 2, 4), ("GRU", 1, 3)):
            cell = getattr(contrib, f"Conv{dims}D{kind}Cell")((3, *spatial), 4, 3, 5)
            assert cell.i2h_weight.shape == (4 * gates, 3) + (3,) * dims
            assert cell.h2h_weight.shape == (4 * gates, 4) + (5,) * dims
            out_spatial = tuple(s - 2 for s in spatial)
            assert [s["shape"] for s in cell.state_info(2)] == [(2, 4, *out_spatial)] * n_states
            assert cell.state_info()[0]["__layout__"] == "NC" + "DHW"[3 - dims :]
            cell.initialize()
            out, states = cell.unroll(2, mx.nd.ones((2, 2, 3, *spatial)), merge_outputs=True)
            assert out.shape == (2, 2, 4, *out_spatial)
            assert [s.shape for s in states] == [(2, 4, *out_spatial)] * n_states
    assert repr(contrib.Conv2DGRUCell((0, 4, 4), 3, 3, 3)) == (
        "Conv2DGRUCell(None -> 9, tanh, NCHW)"
    )


def test_conv_cell_infers_input_channels():
    cell = mx.gluon.contrib.rnn.Conv1DLSTMCell((0, 7), 10, (3,), (3,))
    cell.initialize()
    out, _ = cell.unroll(3, mx.nd.ones((8, 3, 5, 7)), merge_outputs=True)
    assert out.shape == (8, 3, 10, 5)
    assert cell.i2h_weight.shape == (40, 5, 3)


def test_lstmp_shapes_and_deferred_input():
    cell = mx.gluon.contrib.rnn.LSTMPCell(7, 3, prefix="p_")
    assert sorted(cell.collect_params()) == [
        "p_h2h_bias", "p_h2h_weight", "p_h2r_weight", "p_i2h_bias", "p_i2h_weight",
    ]  # fmt: skip
    assert cell.h2h_weight.shape == (28, 3) and cell.h2r_weight.shape == (3, 7)
    assert [s["shape"] for s in cell.state_info(2)] == [(2, 3), (2, 7)]
    cell.initialize()
    out, (r, c) = cell.unroll(4, mx.nd.ones((2, 4, 5)), merge_outputs=True)
    assert out.shape == (2, 4, 3) and r.shape == (2, 3) and c.shape == (2, 7)
    assert cell.i2h_weight.shape == (28, 5)
    assert repr(cell) == "LSTMPCell(5 -> 28 -> 3)"


def test_variational_dropout_shares_masks_over_time():
    base = mx.gluon.rnn.DropoutCell(0.0)
    cell = mx.gluon.contrib.rnn.VariationalDropoutCell(base, drop_inputs=0.5)
    x = mx.nd.ones((6, 5, 40))
    with mx.autograd.record():
        out, _ = cell.unroll(5, x, merge_outputs=True)
    first = out[:, 0].asnumpy()
    assert set(np.unique(first).tolist()) == {0.0, 2.0}
    for t in range(1, 5):  # the same mask at every step
        np.testing.assert_array_equal(out[:, t].asnumpy(), first)
    predict, _ = cell.unroll(5, x, merge_outputs=True)
    np.testing.assert_array_equal(predict.asnumpy(), x.asnumpy())
    # stepping by hand: one mask until reset()
    with mx.autograd.record():
        a, _ = cell(x[:, 0], [])
        b, _ = cell(x[:, 1], [])
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert cell.drop_inputs_mask is not None
    cell.reset()
    assert cell.drop_inputs_mask is None
    assert repr(cell) == "VariationalDropoutCell(p_out = 0.0, p_state = 0.0)"


def test_variational_state_dropout_masks_the_first_state():
    base = mx.gluon.rnn.RNNCell(20, input_size=3, prefix="r_")
    cell = mx.gluon.contrib.rnn.VariationalDropoutCell(base, drop_states=0.5)
    cell.initialize(mx.init.One())
    states = [mx.nd.ones((4, 20))]
    with mx.autograd.record():
        cell(mx.nd.zeros((4, 3)), states)
    mask = cell.drop_states_mask.asnumpy()
    assert set(np.unique(mask).tolist()) == {0.0, 2.0}


def test_contrib_errors():
    contrib = mx.gluon.contrib.rnn
    with pytest.raises(MXNetError, match="Only support odd number"):
        contrib.Conv2DRNNCell((1, 5, 5), 2, 3, (2, 3))
    with pytest.raises(MXNetError, match="list/tuple of length 2; i2h_pad"):
        contrib.Conv2DLSTMCell((1, 5, 5), 2, 3, 3, i2h_pad=(1, 1, 1))
    with pytest.raises(MXNetError, match="input_shape must have 3 dimensions"):
        contrib.Conv2DGRUCell((5, 5), 2, 3, 3)
    with pytest.raises(MXNetError, match="conv_layout"):
        contrib.Conv1DRNNCell((2, 5), 2, 3, 3, conv_layout="NCHW")
    with pytest.raises(MXNetError, match="projection_size must be a positive int"):
        contrib.LSTMPCell(4, 0)
    bi = mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.RNNCell(2), mx.gluon.rnn.RNNCell(2))
    with pytest.raises(MXNetError, match="variational state dropout"):
        contrib.VariationalDropoutCell(bi, drop_states=0.5)
    with pytest.raises(MXNetError, match="symbolic control flow"):
        cell = mx.gluon.rnn.RNNCell(2)
        contrib.rnn_cell.dynamic_unroll(cell, mx.sym.var("x"), cell.begin_state(func=mx.sym.zeros))
