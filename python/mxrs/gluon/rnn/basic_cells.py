"""The fully connected recurrent cells: Elman RNN, LSTM and GRU, with MXNet 1.9.1's
parameters (``i2h_weight``, ``h2h_weight``, ``i2h_bias``, ``h2h_bias``), gate order and formulas.

Each step computes ``i2h = FullyConnected(x, i2h_weight, i2h_bias)`` and
``h2h = FullyConnected(h, h2h_weight, h2h_bias)`` with one block of ``hidden_size`` rows per
gate, then combines the gates. ``input_size`` 0 leaves the input width to the first input.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

from ... import symbol
from ...base import MXNetError
from .cell_base import _TwoMapCell

if TYPE_CHECKING:
    from ..parameter import InitLike
    from ..parameter_dict import ParameterDict

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]


def _ones_like(F: Any, x: Any, name: str) -> Any:
    """``ones_like(x)``, named ``name`` in a graph."""
    return F.ones_like(x, name=name) if F is symbol else F.ones_like(x)


def _positive_int(value: Any, what: str) -> int:
    """``value`` as an int.

    Raises
    ------
    MXNetError
        When ``value`` is not a positive integer.
    """
    try:
        number = 0 if isinstance(value, bool) else operator.index(value)
    except TypeError:
        number = 0
    if number <= 0:
        raise MXNetError(f"{what} must be a positive int, got {value!r}")
    return number


class _FullyConnectedCell(_TwoMapCell):
    """A cell whose step starts with the two fully connected maps ``i2h`` and ``h2h``, with
    ``gates`` blocks of ``hidden_size`` rows each; the constructor is :class:`GRUCell`'s."""

    _gates = 1

    def __init__(
        self,
        hidden_size: int,
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        hidden_size = _positive_int(hidden_size, f"{type(self).__name__}: hidden_size")
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        shapes = ((rows, input_size), (rows, self._recurrent_size()), (rows,))
        weight_inits = (i2h_weight_initializer, h2h_weight_initializer)
        self._add_maps(shapes, weight_inits, (i2h_bias_initializer, h2h_bias_initializer))

    def _recurrent_size(self) -> int:
        """The width of the state that ``h2h`` maps."""
        return self._hidden_size

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """One ``(batch_size, hidden_size)`` state, layout 'NC'."""
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def infer_shape(self, inputs: Any, *args: Any) -> None:
        """Set the input width of ``i2h_weight`` from the first input (all axes but the
        batch axis, flattened)."""
        width = math.prod(inputs.shape[1:])
        self.i2h_weight.shape = (self._gates * self._hidden_size, width)

    def _mapping(self) -> str:
        shape = self.i2h_weight.shape
        assert shape is not None  # given at construction
        return f"{shape[1] if shape[1] else None} -> {shape[0]}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._mapping()})"

    def _i2h_h2h(
        self, F: Any, inputs: Any, state: Any, prefix: str, params: tuple[Any, ...]
    ) -> tuple[Any, Any]:
        i2h_weight, h2h_weight, i2h_bias, h2h_bias = params
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(
            data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows, name=prefix + "i2h"
        )
        h2h = F.FullyConnected(
            data=state, weight=h2h_weight, bias=h2h_bias, num_hidden=rows, name=prefix + "h2h"
        )
        return i2h, h2h


class RNNCell(_FullyConnectedCell):
    r"""Elman RNN cell: ``h_t = activation(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``.

    Parameters
    ----------
    hidden_size : int
        The number of units of the output (and state).
    activation : str or callable, default 'tanh'
        An activation name ('tanh', 'relu', 'sigmoid', 'softsign', or any ``Activation``
        type), an ``nn.LeakyReLU`` block or a callable.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
        Of the input and recurrent weights (default: the ``initialize`` one).
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        The input width; 0 takes it from the first input.
    prefix : str, default ``'rnn<n>_'``
    params : ParameterDict, optional
        Share these parameters.

    Notes
    -----
    Inputs: ``data`` ``(batch, input_size)`` and a list of one state ``(batch, hidden_size)``.
    Outputs: ``out`` ``(batch, hidden_size)`` and ``[out]`` as the new state.

    Examples
    --------
    >>> cell = mx.gluon.rnn.RNNCell(4, input_size=3)
    >>> cell.initialize()
    >>> out, states = cell(mx.nd.ones((2, 3)), cell.begin_state(batch_size=2))
    >>> out.shape
    (2, 4)
    """

    def __init__(
        self,
        hidden_size: int,
        activation: Any = "tanh",
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(
            hidden_size,
            i2h_weight_initializer,
            h2h_weight_initializer,
            i2h_bias_initializer,
            h2h_bias_initializer,
            input_size,
            prefix,
            params,
        )
        self._activation = activation

    def _alias(self) -> str:
        return "rnn"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._mapping()}, {self._activation})"

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """``output = activation(i2h + h2h)``, also the new state."""
        total = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        output = self._get_activation(F, total, self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_FullyConnectedCell):
    r"""Long short-term memory cell.

    With ``σ`` the recurrent activation (sigmoid) and ``act`` the activation (tanh), the four
    gates (rows of ``i2h`` and ``h2h`` in this order) are::

        i = σ(W_ii x + b_ii + W_hi h + b_hi)      # input gate
        f = σ(W_if x + b_if + W_hf h + b_hf)      # forget gate
        g = act(W_ig x + b_ig + W_hg h + b_hg)    # cell candidate
        o = σ(W_io x + b_io + W_ho h + b_ho)      # output gate
        c' = f * c + i * g
        h' = o * act(c')

    Parameters
    ----------
    hidden_size : int
        The number of units of the output and of each state.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        (``mx.init.LSTMBias(forget_bias)`` sets the forget gate's bias.)
    input_size : int, default 0
        The input width; 0 takes it from the first input.
    prefix : str, default ``'lstm<n>_'``
    params : ParameterDict, optional
    activation : str or callable, default 'tanh'
    recurrent_activation : str or callable, default 'sigmoid'

    Notes
    -----
    Inputs: ``data`` ``(batch, input_size)`` and the states ``[h, c]``, each
    ``(batch, hidden_size)``. Outputs: ``h'`` and the new states ``[h', c']``.
    """

    _gates = 4

    def __init__(
        self,
        hidden_size: int,
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: ParameterDict | None = None,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
    ) -> None:
        super().__init__(
            hidden_size,
            i2h_weight_initializer,
            h2h_weight_initializer,
            i2h_bias_initializer,
            h2h_bias_initializer,
            input_size,
            prefix,
            params,
        )
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self) -> str:
        return "lstm"

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The states ``h`` and ``c``, each ``(batch_size, hidden_size)``, layout 'NC'."""
        info = {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
        return [dict(info), dict(info)]

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """The gates, then ``c' = f * c + i * g`` and ``h' = o * act(c')``."""
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        parts = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        rec, act = self._recurrent_activation, self._activation
        in_gate = self._get_activation(F, parts[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, parts[1], rec, name=prefix + "f")
        candidate = self._get_activation(F, parts[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, parts[3], rec, name=prefix + "o")
        next_c = F.elemwise_add(
            F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
            F.elemwise_mul(in_gate, candidate, name=prefix + "mul1"),
            name=prefix + "state",
        )
        squashed = F.Activation(next_c, act_type=act, name=prefix + "activation0")
        next_h = F.elemwise_mul(out_gate, squashed, name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_FullyConnectedCell):
    r"""Gated recurrent unit cell, in cuDNN's form (the reset gate applies after the
    recurrent product).

    The three gates (rows of ``i2h`` and ``h2h`` in this order) are::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)          # reset gate
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)          # update gate
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))       # candidate
        h' = (1 - z) * n + z * h

    Parameters
    ----------
    hidden_size : int
        The number of units of the output and state.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        The input width; 0 takes it from the first input.
    prefix : str, default ``'gru<n>_'``
    params : ParameterDict, optional

    Notes
    -----
    Inputs: ``data`` ``(batch, input_size)`` and a list of one state ``(batch, hidden_size)``.
    Outputs: ``h'`` and ``[h']``.
    """

    _gates = 3

    def _alias(self) -> str:
        return "gru"

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """The reset and update gates, the candidate, then their mix with ``h``."""
        prev_h = states[0]
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(
            F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
            act_type="sigmoid",
            name=prefix + "r_act",
        )
        update_gate = F.Activation(
            F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
            act_type="sigmoid",
            name=prefix + "z_act",
        )
        candidate = F.Activation(
            F.elemwise_add(
                i2h_n,
                F.elemwise_mul(reset_gate, h2h_n, name=prefix + "mul0"),
                name=prefix + "plus2",
            ),
            act_type="tanh",
            name=prefix + "h_act",
        )
        ones = _ones_like(F, update_gate, prefix + "ones_like0")
        keep = F.elemwise_sub(ones, update_gate, name=prefix + "minus0")
        next_h = F.elemwise_add(
            F.elemwise_mul(keep, candidate, name=prefix + "mul1"),
            F.elemwise_mul(update_gate, prev_h, name=prefix + "mul20"),
            name=prefix + "out",
        )
        return next_h, [next_h]
