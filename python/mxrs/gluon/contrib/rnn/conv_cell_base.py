"""The convolutional recurrent cells' common part: the parameters' and states' shapes, the two
convolutions of a step, and the step formulas of the three families (RNN, LSTM, GRU).

A convolutional cell replaces the fully connected maps of :mod:`mxrs.gluon.rnn.basic_cells`
by convolutions: ``i2h`` convolves the input (kernel ``i2h_kernel``, padding ``i2h_pad``,
dilation ``i2h_dilate``) and ``h2h`` the first state (kernel ``h2h_kernel``, odd, padded to keep
the state's size). Both have stride 1; the state's spatial size is the ``i2h`` output's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....base import MXNetError
from ...rnn.cell_base import HybridRecurrentCell

if TYPE_CHECKING:
    from ...parameter import InitLike
    from ...parameter_dict import ParameterDict

__all__ = ["ConvRNNFamily", "ConvLSTMFamily", "ConvGRUFamily"]

Spec = int | Sequence[int]


def _conv_out_size(
    dims: Sequence[int], kernels: Sequence[int], pads: Sequence[int], dilates: Sequence[int]
) -> tuple[int, ...]:
    """The spatial size of a stride-1 convolution's output (0 stays unknown)."""
    return tuple(
        x + 2 * p - d * (k - 1) if x else 0
        for x, k, p, d in zip(dims, kernels, pads, dilates, strict=True)
    )


class _BaseConvRNNCell(HybridRecurrentCell):
    """A recurrent cell whose maps are convolutions, with ``len(_gate_names)`` gates of
    ``hidden_channels`` channels each."""

    _gate_names: tuple[str, ...] = ("",)
    _num_states = 1

    def __init__(
        self,
        input_shape: Sequence[int],
        hidden_channels: int,
        i2h_kernel: Spec,
        h2h_kernel: Spec,
        i2h_pad: Spec,
        i2h_dilate: Spec,
        h2h_dilate: Spec,
        i2h_weight_initializer: InitLike | None,
        h2h_weight_initializer: InitLike | None,
        i2h_bias_initializer: InitLike | None,
        h2h_bias_initializer: InitLike | None,
        dims: int,
        conv_layout: str,
        activation: Any,
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._stride = (1,) * dims
        name = type(self).__name__
        specs = {
            "i2h_kernel": i2h_kernel,
            "i2h_pad": i2h_pad,
            "i2h_dilate": i2h_dilate,
            "h2h_kernel": h2h_kernel,
            "h2h_dilate": h2h_dilate,
        }
        spread = {}
        for key, spec in specs.items():
            value = (spec,) * dims if isinstance(spec, int) else tuple(spec)
            if len(value) != dims:
                raise MXNetError(
                    f"{name}: for {dims}D convolution, the convolution settings can only be "
                    f"either int or list/tuple of length {dims}; {key} is {spec!r}"
                )
            spread[key] = value
        self._i2h_kernel = spread["i2h_kernel"]
        self._i2h_pad = spread["i2h_pad"]
        self._i2h_dilate = spread["i2h_dilate"]
        self._h2h_kernel = spread["h2h_kernel"]
        self._h2h_dilate = spread["h2h_dilate"]
        if any(k % 2 != 1 for k in self._h2h_kernel):
            raise MXNetError(f"{name}: Only support odd number, get h2h_kernel= {h2h_kernel}")
        if (
            not isinstance(conv_layout, str)
            or len(conv_layout) != dims + 2
            or conv_layout[0] != "N"
            or conv_layout.find("C") not in (1, dims + 1)
        ):
            raise MXNetError(
                f"{name}: conv_layout must be a {dims}D layout such as "
                f"'{'NC' + 'DHW'[3 - dims :]}', got {conv_layout!r}"
            )
        if len(self._input_shape) != dims + 1:
            raise MXNetError(
                f"{name}: input_shape must have {dims + 1} dimensions (channels and {dims} "
                f"spatial, in {conv_layout!r} order without the batch), got {input_shape}"
            )
        self._channel_axis = conv_layout.find("C")
        self._in_channels = self._input_shape[self._channel_axis - 1]
        i2h_shape, h2h_shape = self._weight_shapes(self._in_channels)
        self._h2h_pad = tuple(
            d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel, strict=True)
        )
        spatial = self._input_shape[1:] if self._channel_axis == 1 else self._input_shape[:-1]
        out = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        self._state_shape = (
            (hidden_channels, *out) if self._channel_axis == 1 else (*out, hidden_channels)
        )
        total = hidden_channels * len(self._gate_names)
        self.i2h_weight = self.params.get(
            "i2h_weight", shape=i2h_shape, init=i2h_weight_initializer, allow_deferred_init=True
        )
        self.h2h_weight = self.params.get(
            "h2h_weight", shape=h2h_shape, init=h2h_weight_initializer, allow_deferred_init=True
        )
        self.i2h_bias = self.params.get(
            "i2h_bias", shape=(total,), init=i2h_bias_initializer, allow_deferred_init=True
        )
        self.h2h_bias = self.params.get(
            "h2h_bias", shape=(total,), init=h2h_bias_initializer, allow_deferred_init=True
        )

    def _weight_shapes(self, in_channels: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shapes of ``i2h_weight`` and ``h2h_weight`` for ``in_channels`` inputs."""
        total = self._hidden_channels * len(self._gate_names)
        if self._channel_axis == 1:
            return (
                (total, in_channels, *self._i2h_kernel),
                (total, self._hidden_channels, *self._h2h_kernel),
            )
        return (
            (total, *self._i2h_kernel, in_channels),
            (total, *self._h2h_kernel, self._hidden_channels),
        )

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The states (``_num_states`` of them), each ``(batch_size, *state_shape)`` in the
        convolution layout."""
        info = {"shape": (batch_size, *self._state_shape), "__layout__": self._conv_layout}
        return [dict(info) for _ in range(self._num_states)]

    def infer_shape(self, inputs: Any, *args: Any) -> None:
        """Set the input channels of ``i2h_weight`` from the first input."""
        self.i2h_weight.shape = self._weight_shapes(inputs.shape[self._channel_axis])[0]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        assert shape is not None  # given at construction
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return (
            f"{type(self).__name__}({in_channels if in_channels else None} -> {shape[0]}, "
            f"{self._activation}, {self._conv_layout})"
        )

    def _conv_forward(
        self, F: Any, inputs: Any, states: Any, params: tuple[Any, ...], prefix: str
    ) -> tuple[Any, Any]:
        """The input and recurrent convolutions of one step."""
        i2h_weight, h2h_weight, i2h_bias, h2h_bias = params
        total = self._hidden_channels * len(self._gate_names)
        i2h = F.Convolution(
            data=inputs,
            num_filter=total,
            kernel=self._i2h_kernel,
            stride=self._stride,
            pad=self._i2h_pad,
            dilate=self._i2h_dilate,
            weight=i2h_weight,
            bias=i2h_bias,
            layout=self._conv_layout,
            name=prefix + "i2h",
        )
        h2h = F.Convolution(
            data=states[0],
            num_filter=total,
            kernel=self._h2h_kernel,
            dilate=self._h2h_dilate,
            pad=self._h2h_pad,
            stride=self._stride,
            weight=h2h_weight,
            bias=h2h_bias,
            layout=self._conv_layout,
            name=prefix + "h2h",
        )
        return i2h, h2h


class ConvRNNFamily(_BaseConvRNNCell):
    """The convolutional Elman cell: ``h' = activation(i2h + h2h)``.

    Parameters
    ----------
    See :class:`~mxrs.gluon.contrib.rnn.Conv2DRNNCell` (and its 1D and 3D siblings, which also
    give ``dims``).
    """

    def _alias(self) -> str:
        return "conv_rnn"

    def hybrid_forward(
        self,
        F: Any,
        inputs: Any,
        states: Any,
        i2h_weight: Any,
        h2h_weight: Any,
        i2h_bias: Any,
        h2h_bias: Any,
    ) -> tuple[Any, list[Any]]:
        """One step; the output is also the new state."""
        prefix = f"t{self._counter}_"
        params = (i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h, h2h = self._conv_forward(F, inputs, states, params, prefix)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return output, [output]


class ConvLSTMFamily(_BaseConvRNNCell):
    """The convolutional LSTM cell: gates ``i, f, g, o`` on the channel axis, as
    :class:`~mxrs.gluon.rnn.LSTMCell` (``activation`` for ``g`` and ``c'``).

    Parameters
    ----------
    See :class:`~mxrs.gluon.contrib.rnn.Conv2DLSTMCell` (and its 1D and 3D siblings, which also
    give ``dims``).
    """

    _gate_names = ("_i", "_f", "_c", "_o")
    _num_states = 2

    def _alias(self) -> str:
        return "conv_lstm"

    def hybrid_forward(
        self,
        F: Any,
        inputs: Any,
        states: Any,
        i2h_weight: Any,
        h2h_weight: Any,
        i2h_bias: Any,
        h2h_bias: Any,
    ) -> tuple[Any, list[Any]]:
        """One step: ``c' = f * c + i * g``, ``h' = o * activation(c')``; states ``[h', c']``."""
        prefix = f"t{self._counter}_"
        params = (i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h, h2h = self._conv_forward(F, inputs, states, params, prefix)
        gates = i2h + h2h
        parts = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice", axis=self._channel_axis)
        in_gate = F.Activation(parts[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(parts[1], act_type="sigmoid", name=prefix + "f")
        candidate = self._get_activation(F, parts[2], self._activation, name=prefix + "c")
        out_gate = F.Activation(parts[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=prefix + "state")
        next_h = F.elemwise_mul(
            out_gate, self._get_activation(F, next_c, self._activation), name=prefix + "out"
        )
        return next_h, [next_h, next_c]


class ConvGRUFamily(_BaseConvRNNCell):
    """The convolutional GRU cell: gates ``r, z`` and the candidate on the channel axis, as
    :class:`~mxrs.gluon.rnn.GRUCell` (``activation`` for the candidate).

    Parameters
    ----------
    See :class:`~mxrs.gluon.contrib.rnn.Conv2DGRUCell` (and its 1D and 3D siblings, which also
    give ``dims``).
    """

    _gate_names = ("_r", "_z", "_o")

    def _alias(self) -> str:
        return "conv_gru"

    def hybrid_forward(
        self,
        F: Any,
        inputs: Any,
        states: Any,
        i2h_weight: Any,
        h2h_weight: Any,
        i2h_bias: Any,
        h2h_bias: Any,
    ) -> tuple[Any, list[Any]]:
        """One step: ``h' = (1 - z) * n + z * h``; the output is also the new state."""
        prefix = f"t{self._counter}_"
        params = (i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h, h2h = self._conv_forward(F, inputs, states, params, prefix)
        axis = self._channel_axis
        i2h_r, i2h_z, i2h_n = F.SliceChannel(
            i2h, num_outputs=3, name=prefix + "i2h_slice", axis=axis
        )
        h2h_r, h2h_z, h2h_n = F.SliceChannel(
            h2h, num_outputs=3, name=prefix + "h2h_slice", axis=axis
        )
        reset_gate = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=prefix + "z_act")
        candidate = self._get_activation(
            F, i2h_n + reset_gate * h2h_n, self._activation, name=prefix + "h_act"
        )
        next_h = F.elemwise_add(
            (1.0 - update_gate) * candidate, update_gate * states[0], name=prefix + "out"
        )
        return next_h, [next_h]
