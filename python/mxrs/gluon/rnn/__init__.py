"""Recurrent neural networks (``gluon.rnn``): cells that compute one time step and unroll
over sequences.

Layout
------
rnn_cell
    Every cell, under MXNet's module name: ``RecurrentCell``, ``HybridRecurrentCell``,
    ``RNNCell``, ``LSTMCell``, ``GRUCell``, ``SequentialRNNCell``,
    ``HybridSequentialRNNCell``, ``BidirectionalCell``, ``DropoutCell``, ``ModifierCell``,
    ``ZoneoutCell``, ``ResidualCell``.
cell_base
    The base cells: one step, initial states, ``unroll`` (layouts, ``valid_length``).
basic_cells
    The Elman RNN, LSTM and GRU cells.
container_cells
    Stacks of cells and the bidirectional cell.
modifier_cells
    Dropout, zoneout and residual connections around cells.
rnn_layer
    The fused layers ``RNN``, ``LSTM``, ``GRU``: a whole stack in one ``RNN`` operator.
"""

from .rnn_cell import *  # noqa: F403
from .rnn_layer import GRU, LSTM, RNN  # noqa: F401
