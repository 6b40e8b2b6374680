"""Every symbolic RNN cell in one namespace, as MXNet 1.9.1's ``mx.rnn.rnn_cell`` offers them."""

from .base_cell import BaseRNNCell, RNNParams
from .cells import GRUCell, LSTMCell, RNNCell
from .containers import BidirectionalCell, DropoutCell, SequentialRNNCell
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused_cell import FusedRNNCell
from .modifiers import ModifierCell, ResidualCell, ZoneoutCell

__all__ = [
    "RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
    "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
    "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
]  # fmt: skip
