"""Contributed recurrent cells (``gluon.contrib.rnn``).

Layout
------
rnn_cell
    ``VariationalDropoutCell`` (one dropout mask per sequence) and ``LSTMPCell`` (an LSTM
    with a projection layer).
conv_rnn_cell
    ``Conv1DRNNCell``, ``Conv2DLSTMCell``, ``Conv3DGRUCell``...: recurrent cells over 1-, 2-
    and 3-D feature maps.
conv_cell_base
    What the convolutional cells share: shapes, the two convolutions, the step formulas.
"""

from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import *  # noqa: F403
from .rnn_cell import *  # noqa: F403

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
