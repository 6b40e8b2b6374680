"""The convolutional recurrent cells of ``gluon.contrib.rnn``: RNN, LSTM and GRU cells over
1-, 2- and 3-D feature maps, with MXNet 1.9.1's parameters and defaults.

A step takes ``data`` ``(batch, *input_shape)`` and the states (``[h]``, or ``[h, c]`` for the
LSTM cells), each ``(batch, hidden_channels, *spatial)`` with the spatial size of the input
convolution's output (stride 1); it returns ``h'`` and the new states. See
:mod:`.conv_cell_base` for the shared machinery.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .conv_cell_base import ConvGRUFamily, ConvLSTMFamily, ConvRNNFamily, Spec

if TYPE_CHECKING:
    from ...parameter import InitLike
    from ...parameter_dict import ParameterDict

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


class Conv1DRNNCell(ConvRNNFamily):
    """1D convolutional Elman RNN cell: ``h' = activation(W_i * x + R_i * h + b)``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, W) for
        'NCW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0,)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1,)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCW'
        'NCW' or 'NWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_rnn<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0,),
        i2h_dilate: Spec = (1,),
        h2h_dilate: Spec = (1,),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 1, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv2DRNNCell(ConvRNNFamily):
    """2D convolutional Elman RNN cell: ``h' = activation(W_i * x + R_i * h + b)``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, H, W) for
        'NCHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCHW'
        'NCHW' or 'NHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_rnn<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0),
        i2h_dilate: Spec = (1, 1),
        h2h_dilate: Spec = (1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 2, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv3DRNNCell(ConvRNNFamily):
    """3D convolutional Elman RNN cell: ``h' = activation(W_i * x + R_i * h + b)``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, D, H, W) for
        'NCDHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCDHW'
        'NCDHW' or 'NDHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_rnn<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0, 0),
        i2h_dilate: Spec = (1, 1, 1),
        h2h_dilate: Spec = (1, 1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCDHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 3, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv1DLSTMCell(ConvLSTMFamily):
    """1D convolutional LSTM cell (Shi et al., 2015): the LSTM gates ``i, f, g, o`` from
    convolutions, ``c' = f c + i g`` and ``h' = o activation(c')``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, W) for
        'NCW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0,)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1,)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCW'
        'NCW' or 'NWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_lstm<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0,),
        i2h_dilate: Spec = (1,),
        h2h_dilate: Spec = (1,),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 1, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv2DLSTMCell(ConvLSTMFamily):
    """2D convolutional LSTM cell (Shi et al., 2015): the LSTM gates ``i, f, g, o`` from
    convolutions, ``c' = f c + i g`` and ``h' = o activation(c')``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, H, W) for
        'NCHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCHW'
        'NCHW' or 'NHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_lstm<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0),
        i2h_dilate: Spec = (1, 1),
        h2h_dilate: Spec = (1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 2, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv3DLSTMCell(ConvLSTMFamily):
    """3D convolutional LSTM cell (Shi et al., 2015): the LSTM gates ``i, f, g, o`` from
    convolutions, ``c' = f c + i g`` and ``h' = o activation(c')``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, D, H, W) for
        'NCDHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCDHW'
        'NCDHW' or 'NDHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_lstm<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0, 0),
        i2h_dilate: Spec = (1, 1, 1),
        h2h_dilate: Spec = (1, 1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCDHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 3, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv1DGRUCell(ConvGRUFamily):
    """1D convolutional GRU cell: the GRU gates ``r, z`` and candidate ``n`` from
    convolutions, ``h' = (1 - z) n + z h``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, W) for
        'NCW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0,)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1,)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCW'
        'NCW' or 'NWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_gru<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0,),
        i2h_dilate: Spec = (1,),
        h2h_dilate: Spec = (1,),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 1, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv2DGRUCell(ConvGRUFamily):
    """2D convolutional GRU cell: the GRU gates ``r, z`` and candidate ``n`` from
    convolutions, ``h' = (1 - z) n + z h``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, H, W) for
        'NCHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCHW'
        'NCHW' or 'NHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_gru<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0),
        i2h_dilate: Spec = (1, 1),
        h2h_dilate: Spec = (1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 2, conv_layout, activation, prefix, params,
        )  # fmt: skip


class Conv3DGRUCell(ConvGRUFamily):
    """3D convolutional GRU cell: the GRU gates ``r, z`` and candidate ``n`` from
    convolutions, ``h' = (1 - z) n + z h``.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: (C, D, H, W) for
        'NCDHW' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default (0, 0, 0)
    i2h_dilate, h2h_dilate : int or tuple of int, default (1, 1, 1)
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default 'NCDHW'
        'NCDHW' or 'NDHWC' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'conv_gru<n>_'``
    params : ParameterDict, optional
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec = (0, 0, 0),
        i2h_dilate: Spec = (1, 1, 1),
        h2h_dilate: Spec = (1, 1, 1),
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        conv_layout: str = "NCDHW",
        activation: Any = "tanh",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
            h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, 3, conv_layout, activation, prefix, params,
        )  # fmt: skip
