"""``mx.rnn``: recurrent networks on the symbolic API, as MXNet 1.9.1's ``mxnet.rnn``.

Layout
------
base_cell
    ``RNNParams`` (shared weight variables) and ``BaseRNNCell`` (steps, ``unroll``,
    ``begin_state``, weight (un)packing).
cells
    ``RNNCell``, ``LSTMCell``, ``GRUCell``.
containers
    ``SequentialRNNCell``, ``BidirectionalCell``, ``DropoutCell``.
fused_cell
    ``FusedRNNCell``: the fused ``RNN`` operator, and ``unfuse()``.
modifiers
    ``ModifierCell``, ``ZoneoutCell``, ``ResidualCell``.
conv_cells
    ``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``.
rnn_cell
    All the cells in one namespace (MXNet's ``mx.rnn.rnn_cell``).
io
    ``encode_sentences``, ``BucketSentenceIter``.
rnn
    ``save_rnn_checkpoint``, ``load_rnn_checkpoint``, ``do_rnn_checkpoint``.

Examples
--------
>>> stack = mx.rnn.SequentialRNNCell()
>>> stack.add(mx.rnn.LSTMCell(num_hidden=32, prefix='lstm_l0_'))
>>> outputs, states = stack.unroll(10, inputs=mx.sym.Variable('data'), merge_outputs=True)
"""

from . import io, rnn, rnn_cell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .rnn_cell import (
    BaseConvRNNCell,
    BaseRNNCell,
    BidirectionalCell,
    ConvGRUCell,
    ConvLSTMCell,
    ConvRNNCell,
    DropoutCell,
    FusedRNNCell,
    GRUCell,
    LSTMCell,
    ModifierCell,
    ResidualCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ = [
    "io", "rnn", "rnn_cell", "encode_sentences", "BucketSentenceIter", "rnn_unroll",
    "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint", "RNNParams",
    "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell", "SequentialRNNCell",
    "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell",
    "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
]  # fmt: skip
