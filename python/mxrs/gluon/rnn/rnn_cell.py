"""The recurrent cells of ``gluon.rnn``, gathered under MXNet 1.9.1's module name
(``mx.gluon.rnn.rnn_cell.LSTMCell``); each concept lives in its own module:

cell_base
    ``RecurrentCell``, ``HybridRecurrentCell``: stepping, initial states, ``unroll``.
basic_cells
    ``RNNCell``, ``LSTMCell``, ``GRUCell``.
container_cells
    ``SequentialRNNCell``, ``HybridSequentialRNNCell``, ``BidirectionalCell``.
modifier_cells
    ``DropoutCell``, ``ModifierCell``, ``ZoneoutCell``, ``ResidualCell``.
_sequence
    The sequence handling behind ``unroll`` (layouts, masking, reversing).
"""

from . import _sequence, cell_base
from .basic_cells import GRUCell, LSTMCell, RNNCell
from .cell_base import HybridRecurrentCell, RecurrentCell
from .container_cells import BidirectionalCell, HybridSequentialRNNCell, SequentialRNNCell
from .modifier_cells import DropoutCell, ModifierCell, ResidualCell, ZoneoutCell

__all__ = [
    "RecurrentCell",
    "HybridRecurrentCell",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "SequentialRNNCell",
    "HybridSequentialRNNCell",
    "DropoutCell",
    "ModifierCell",
    "ZoneoutCell",
    "ResidualCell",
    "BidirectionalCell",
]

# MXNet's private helpers under their names there, for code written against them (MXNet's own
# contributed cells import them from this module)
_format_sequence = _sequence.format_sequence
_get_begin_state = _sequence.get_begin_state
_mask_sequence_variable_length = _sequence.mask_sequence_variable_length
_reverse_sequences = _sequence.reverse_sequences
_cells_state_info = cell_base.cells_state_info
_cells_begin_state = cell_base.cells_begin_state
