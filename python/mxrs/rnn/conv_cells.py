"""Convolutional RNN cells: ``ConvRNNCell``, ``ConvLSTMCell`` (Shi et al., NIPS 2015) and
``ConvGRUCell``, whose i2h and h2h transforms are convolutions over feature maps.

The state is a feature map of ``num_hidden`` channels, the size of the i2h convolution's output
for an input of ``input_shape``; h2h convolutions keep that size (odd kernels, "same" padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import symbol
from .._rnn_cell_tools import with_defaults
from ..base import MXNetError
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNParams

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]


def _leaky(inputs: Symbol, **kwargs: Any) -> Symbol:
    """The default activation of the convolutional cells: leaky ReLU of slope 0.2."""
    return symbol.LeakyReLU(inputs, act_type="leaky", slope=0.2, **kwargs)


def _defaults(prefix: str) -> dict[str, Any]:
    """The constructor defaults of the convolutional cells, with ``prefix``."""
    return {
        "h2h_kernel": (3, 3),
        "h2h_dilate": (1, 1),
        "i2h_kernel": (3, 3),
        "i2h_stride": (1, 1),
        "i2h_pad": (1, 1),
        "i2h_dilate": (1, 1),
        "i2h_weight_initializer": None,
        "h2h_weight_initializer": None,
        "i2h_bias_initializer": "zeros",
        "h2h_bias_initializer": "zeros",
        "activation": _leaky,
        "prefix": prefix,
    }


class BaseConvRNNCell(BaseRNNCell):
    """The base class of convolutional RNN cells.

    Parameters
    ----------
    input_shape : tuple of int
        The shape of one step's input, batch included (``(N, C, H, W)`` for 'NCHW').
    num_hidden : int
        Channels of the state.
    h2h_kernel, h2h_dilate : tuple of int
        The state-to-state convolution (odd kernel sizes only).
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int
        The input-to-state convolution.
    i2h_weight_initializer, h2h_weight_initializer : str, Initializer or None
    i2h_bias_initializer, h2h_bias_initializer : str, Initializer or None
    activation : str or callable
        An ``Activation`` type or a function of a symbol.
    prefix : str, default ''
    params : RNNParams or None
    conv_layout : str, default 'NCHW'
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        num_hidden: int,
        h2h_kernel: Sequence[int],
        h2h_dilate: Sequence[int],
        i2h_kernel: Sequence[int],
        i2h_stride: Sequence[int],
        i2h_pad: Sequence[int],
        i2h_dilate: Sequence[int],
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        activation: Any,
        prefix: str = "",
        params: RNNParams | None = None,
        conv_layout: str = "NCHW",
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise MXNetError(f"h2h_kernel must have odd sizes only, got {tuple(h2h_kernel)}")
        self._h2h_kernel = tuple(h2h_kernel)
        self._h2h_dilate = tuple(h2h_dilate)
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel,
                                                                strict=True))  # fmt: skip
        self._i2h_kernel = tuple(i2h_kernel)
        self._i2h_stride = tuple(i2h_stride)
        self._i2h_pad = tuple(i2h_pad)
        self._i2h_dilate = tuple(i2h_dilate)
        self._num_hidden = num_hidden
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=num_hidden,
                                   kernel=self._i2h_kernel, stride=self._i2h_stride,
                                   pad=self._i2h_pad, dilate=self._i2h_dilate,
                                   layout=conv_layout)  # fmt: skip
        _, out_shapes, _ = probe.infer_shape(data=self._input_shape)
        if out_shapes is None:
            raise MXNetError(f"cannot infer the state shape for input_shape {input_shape}")
        self._state_shape = (0,) + tuple(out_shapes[0][1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    @property
    def state_info(self) -> list[Any]:
        """One state map per gate pair (two for the LSTM, one otherwise)."""
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def _conv_forward(self, inputs: Symbol, states: list[Any], name: str) -> tuple[Symbol, Symbol]:
        filters = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name=f"{name}i2h", data=inputs, num_filter=filters,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)  # fmt: skip
        h2h = symbol.Convolution(name=f"{name}h2h", data=states[0], num_filter=filters,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)  # fmt: skip
        return i2h, h2h

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """Abstract: the subclasses step."""
        raise NotImplementedError("BaseConvRNNCell is abstract; use a subclass")


class ConvRNNCell(BaseConvRNNCell):
    """A convolutional Elman cell: ``h' = act(conv_i(x) + conv_h(h))``.

    Parameters
    ----------
    See :class:`BaseConvRNNCell`; defaults: 3x3 kernels, stride 1, padding 1, leaky ReLU
    (slope 0.2), zero biases, prefix ``'ConvRNN_'``.
    """

    __init__ = with_defaults(
        BaseConvRNNCell.__init__, "ConvRNNCell.__init__", **_defaults("ConvRNN_")
    )

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step; the output is also the new state."""
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """A convolutional LSTM cell (gates ``i, f, c, o`` along the channels); ``activation``
    replaces both tanh of the LSTM.

    Parameters
    ----------
    See :class:`ConvRNNCell`; prefix ``'ConvLSTM_'``.
    """

    __init__ = with_defaults(
        BaseConvRNNCell.__init__, "ConvLSTMCell.__init__", **_defaults("ConvLSTM_")
    )

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("_i", "_f", "_c", "_o")

    @property
    def state_info(self) -> list[Any]:
        """The output map ``h`` and the cell map ``c``."""
        return [{"shape": self._state_shape, "__layout__": self._conv_layout} for _ in range(2)]

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step: ``c' = f * c + i * act(g)``, ``h' = o * act(c')``."""
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(
            i2h + h2h, num_outputs=4, axis=self._conv_layout.find("C"), name=f"{name}slice"
        )
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(forget_gate * states[1], in_gate * in_transform,
                              name=f"{name}state")  # fmt: skip
        next_h = symbol._mul(out_gate, self._get_activation(next_c, self._activation),
                             name=f"{name}out")  # fmt: skip
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """A convolutional GRU cell (gates ``r, z, n`` along the channels).

    Parameters
    ----------
    See :class:`ConvRNNCell`; prefix ``'ConvGRU_'``.
    """

    __init__ = with_defaults(
        BaseConvRNNCell.__init__, "ConvGRUCell.__init__", **_defaults("ConvGRU_")
    )

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("_r", "_z", "_o")

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step: ``h' = (1 - z) * act(i2h_n + r * h2h_n) + z * h``."""
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = self._get_activation(i2h_n + reset * h2h_n, self._activation,
                                         name=f"{name}_h_act")  # fmt: skip
        next_h = symbol._plus((1.0 - update) * candidate, update * states[0], name=f"{name}out")
        return next_h, [next_h]
