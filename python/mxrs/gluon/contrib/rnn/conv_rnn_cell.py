"""The convolutional recurrent cells of ``gluon.contrib.rnn``: RNN, LSTM and GRU cells over
1-, 2- and 3-D feature maps, with MXNet 1.9.1's parameters and defaults.

A step takes ``data`` ``(batch, *input_shape)`` and the states (``[h]``, or ``[h, c]`` for the
LSTM cells), each ``(batch, hidden_channels, *spatial)`` with the spatial size of the input
convolution's output (stride 1); it returns ``h'`` and the new states. See
:mod:`.conv_cell_base` for the shared machinery: a cell is its family (RNN, LSTM, GRU) at
``dims`` 1, 2 or 3, which give its constructor's defaults and its docstring.
"""

from __future__ import annotations

from .conv_cell_base import ConvGRUFamily, ConvLSTMFamily, ConvRNNFamily

__all__ = [
    "Conv1DRNNCell",
    "Conv2DRNNCell",
    "Conv3DRNNCell",
    "Conv1DLSTMCell",
    "Conv2DLSTMCell",
    "Conv3DLSTMCell",
    "Conv1DGRUCell",
    "Conv2DGRUCell",
    "Conv3DGRUCell",
]


class Conv1DRNNCell(ConvRNNFamily, dims=1):
    pass


class Conv2DRNNCell(ConvRNNFamily, dims=2):
    pass


class Conv3DRNNCell(ConvRNNFamily, dims=3):
    pass


class Conv1DLSTMCell(ConvLSTMFamily, dims=1):
    pass


class Conv2DLSTMCell(ConvLSTMFamily, dims=2):
    pass


class Conv3DLSTMCell(ConvLSTMFamily, dims=3):
    pass


class Conv1DGRUCell(ConvGRUFamily, dims=1):
    pass


class Conv2DGRUCell(ConvGRUFamily, dims=2):
    pass


class Conv3DGRUCell(ConvGRUFamily, dims=3):
    pass
