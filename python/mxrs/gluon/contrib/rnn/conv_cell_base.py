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

from ...._rnn_cell_tools import with_defaults
from ....base import MXNetError
from ...rnn.cell_base import _TwoMapCell

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


#: The docstring of a cell of ``dims`` dimensions, from its family's alias and summary.
_DOC = """{dims}D {summary}

    Parameters
    ----------
    input_shape : tuple of int
        One step's input without the batch axis, in ``conv_layout`` order: ({shape}) for
        '{layout}' (channels 0: taken from the first input).
    hidden_channels : int
        The channels of the output and states.
    i2h_kernel, h2h_kernel : int or tuple of int
        The kernels of the input and the recurrent convolutions (``h2h_kernel`` odd).
    i2h_pad : int or tuple of int, default {zeros}
    i2h_dilate, h2h_dilate : int or tuple of int, default {ones}
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default '{layout}'
        '{layout}' or '{last}' (channel-last convolutions run on GPUs only).
    activation : str or Block, default 'tanh'
        An activation name or a block such as ``nn.LeakyReLU``.
    prefix : str, default ``'{alias}<n>_'``
    params : ParameterDict, optional
    """


class _BaseConvRNNCell(_TwoMapCell):
    """A recurrent cell whose maps are convolutions, with ``len(_gate_names)`` gates of
    ``hidden_channels`` channels each.

    A family (RNN, LSTM, GRU) gives its gates, states, alias and ``_summary``; a cell
    of the family subclasses it with ``dims=1``, ``2`` or ``3``, which sets its constructor's
    defaults (``i2h_pad``, ``i2h_dilate``, ``h2h_dilate``, ``conv_layout``) and docstring.
    """

    _gate_names: tuple[str, ...] = ("",)
    _num_states = 1
    _alias_name = ""
    _summary = ""
    _dims = 2

    def __init_subclass__(cls, dims: int = 0, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not dims:
            return
        cls._dims = dims
        spatial = "DHW"[3 - dims :]
        zeros, ones, layout = (0,) * dims, (1,) * dims, "NC" + spatial
        init = with_defaults(
            _BaseConvRNNCell.__init__,
            f"{cls.__qualname__}.__init__",
            i2h_pad=zeros,
            i2h_dilate=ones,
            h2h_dilate=ones,
            conv_layout=layout,
        )
        cls.__init__ = init  # type: ignore[method-assign]
        cls.__doc__ = _DOC.format(
            dims=dims,
            summary=cls._summary,
            shape=", ".join("C" + spatial),
            layout=layout,
            zeros=zeros,
            ones=ones,
            last="N" + spatial + "C",
            alias=cls._alias_name,
        )

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
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        dims = self._dims
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
        weight_inits = (i2h_weight_initializer, h2h_weight_initializer)
        bias_inits = (i2h_bias_initializer, h2h_bias_initializer)
        self._add_maps((i2h_shape, h2h_shape, (total,)), weight_inits, bias_inits)

    def _alias(self) -> str:
        return self._alias_name

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

    def _i2h_h2h(
        self, F: Any, inputs: Any, state: Any, prefix: str, params: tuple[Any, ...]
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
            data=state,
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

    _alias_name = "conv_rnn"
    _summary = "convolutional Elman RNN cell: ``h' = activation(W_i * x + R_i * h + b)``."

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """One step; the output is also the new state."""
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

    _alias_name = "conv_lstm"
    _summary = (
        "convolutional LSTM cell (Shi et al., 2015): the LSTM gates ``i, f, g, o`` from\n    "
        "convolutions, ``c' = f c + i g`` and ``h' = o activation(c')``."
    )

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """One step: ``c' = f * c + i * g``, ``h' = o * activation(c')``; states ``[h', c']``."""
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

    _alias_name = "conv_gru"
    _summary = (
        "convolutional GRU cell: the GRU gates ``r, z`` and candidate ``n`` from\n    "
        "convolutions, ``h' = (1 - z) n + z h``."
    )

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """One step: ``h' = (1 - z) * n + z * h``; the output is also the new state."""
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
