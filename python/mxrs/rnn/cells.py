"""The step cells: ``RNNCell`` (Elman), ``LSTMCell`` and ``GRUCell``, as MXNet 1.9.1 builds them.

Each step is two ``FullyConnected`` nodes, ``{prefix}t{k}_i2h`` on the input and
``{prefix}t{k}_h2h`` on the previous output, whose sum holds the gates stacked along the
features; the weights are shared by all steps (``{prefix}i2h_weight``...).
"""

from __future__ import annotations

from typing import Any

from .. import initializer as _init
from .. import symbol
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNParams

__all__ = ["RNNCell", "LSTMCell", "GRUCell"]


class _FullyConnectedCell(BaseRNNCell):
    """A cell whose step starts from i2h and h2h fully connected layers with ``gates`` blocks."""

    _num_gates = 1

    def __init__(self, num_hidden: int, prefix: str, params: RNNParams | None,
                 i2h_bias_init: Any = None) -> None:  # fmt: skip
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        if i2h_bias_init is None:
            self._iB = self.params.get("i2h_bias")
        else:
            self._iB = self.params.get("i2h_bias", init=i2h_bias_init)
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    def _projections(self, inputs: Symbol, hidden: Symbol, name: str) -> tuple[Symbol, Symbol]:
        size = self._num_hidden * self._num_gates
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=size, name=f"{name}i2h")  # fmt: skip
        h2h = symbol.FullyConnected(data=hidden, weight=self._hW, bias=self._hB,
                                    num_hidden=size, name=f"{name}h2h")  # fmt: skip
        return i2h, h2h

    @property
    def state_info(self) -> list[Any]:
        """One ``(batch, num_hidden)`` state ('NC')."""
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]


class RNNCell(_FullyConnectedCell):
    """An Elman RNN cell: ``h' = act(W_i x + b_i + W_h h + b_h)``.

    Parameters
    ----------
    num_hidden : int
        Output (and state) size.
    activation : str or callable, default 'tanh'
        An ``Activation`` type ('tanh', 'relu'...) or a function of a symbol.
    prefix : str, default 'rnn_'
    params : RNNParams or None
    """

    def __init__(self, num_hidden: int, activation: Any = "tanh", prefix: str = "rnn_",
                 params: RNNParams | None = None) -> None:  # fmt: skip
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step; the output is also the new state."""
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(_FullyConnectedCell):
    """A long short-term memory cell (gates ``i, f, c, o`` stacked in that order).

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'lstm_'
    params : RNNParams or None
    forget_bias : float, default 1.0
        The initial bias of the forget gate: ``i2h_bias`` is made with
        ``mx.init.LSTMBias(forget_bias)``.
    """

    _num_gates = 4

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None,
                 forget_bias: float = 1.0) -> None:  # fmt: skip
        super().__init__(num_hidden, prefix, params, _init.LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self) -> list[Any]:
        """The output ``h`` and the cell ``c``, both ``(batch, num_hidden)``."""
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"} for _ in range(2)]

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step: ``c' = f * c + i * g``, ``h' = o * tanh(c')``."""
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(forget_gate * states[1], in_gate * in_transform,
                              name=f"{name}state")  # fmt: skip
        next_h = symbol._mul(out_gate, symbol.Activation(next_c, act_type="tanh"),
                             name=f"{name}out")  # fmt: skip
        return next_h, [next_h, next_c]


class GRUCell(_FullyConnectedCell):
    """A gated recurrent unit cell, cuDNN's variant (the reset gate scales ``h2h``'s output).

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'gru_'
    params : RNNParams or None
    """

    _num_gates = 3

    def __init__(self, num_hidden: int, prefix: str = "gru_",
                 params: RNNParams | None = None) -> None:  # fmt: skip
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return ("_r", "_z", "_o")

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step: ``h' = (1 - z) * tanh(i2h_n + r * h2h_n) + z * h``."""
        name = self._step_name()
        prev = states[0]
        i2h, h2h = self._projections(inputs, prev, f"{name}_")
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h_n + reset * h2h_n, act_type="tanh",
                                      name=f"{name}_h_act")  # fmt: skip
        next_h = symbol._plus((1.0 - update) * candidate, update * prev, name=f"{name}out")
        return next_h, [next_h]
