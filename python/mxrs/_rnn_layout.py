"""Where each gate's weights and biases sit in the fused ``RNN`` operator's flat parameter vector.

MXNet 1.9.1 packs the vector as every weight, then every bias; layer by layer, direction by
direction (``l`` then ``r``), ``i2h`` before ``h2h``; each matrix stacks its gates' rows (LSTM
``i, f, c, o``, GRU ``r, z, n``, one block for the Elman modes). ``mx.rnn.FusedRNNCell`` and
``mx.init.FusedRNN`` both cut the vector into per-gate pieces named as the unfused cells name
their parameters (``lstm_l0_i2h_f_weight``), so the arithmetic lives here, below both.
"""

from __future__ import annotations

from typing import NamedTuple

from .base import MXNetError

__all__ = [
    "GATES",
    "GATE_NAMES",
    "Geometry",
    "check_mode",
    "fused_num_input",
    "fused_pieces",
    "fused_size",
    "rnn_param_shapes",
]

#: the gate suffixes of each mode, in the order the gates are stacked
GATE_NAMES: dict[str, tuple[str, ...]] = {
    "rnn_relu": ("",),
    "rnn_tanh": ("",),
    "lstm": ("_i", "_f", "_c", "_o"),
    "gru": ("_r", "_z", "_o"),
}


#: gates per mode: how many blocks of ``state_size`` rows each layer matrix stacks
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class Geometry(NamedTuple):
    """A fused RNN's sizes, from which its flat parameter vector follows."""

    mode: str
    hidden: int
    layers: int
    dirs: int
    inputs: int  # the first layer's input features
    proj: int  # the LSTM projection's size, 0 for none

    @property
    def rec(self) -> int:
        """The size of the recurrent state each step passes on (the projection's, if any)."""
        return self.proj or self.hidden

    def layer_input(self, layer: int) -> int:
        """Input features of layer ``layer``."""
        return self.inputs if layer == 0 else self.dirs * self.rec

    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of every matrix and bias in vector order."""
        gh = GATES[self.mode] * self.hidden
        weights: list[tuple[str, tuple[int, ...]]] = []
        biases: list[tuple[str, tuple[int, ...]]] = []
        for layer in range(self.layers):
            for d in "lr"[: self.dirs]:
                tag = f"{d}{layer}_"
                weights.append((tag + "i2h_weight", (gh, self.layer_input(layer))))
                weights.append((tag + "h2h_weight", (gh, self.rec)))
                if self.proj:
                    weights.append((tag + "h2r_weight", (self.proj, self.hidden)))
                biases.append((tag + "i2h_bias", (gh,)))
                biases.append((tag + "h2h_bias", (gh,)))
        return weights + biases


def rnn_param_shapes(
    mode: str,
    state_size: int,
    num_layers: int,
    input_size: int,
    bidirectional: bool = False,
    projection_size: int | None = None,
) -> list[tuple[str, tuple[int, ...]]]:
    """The pieces of the ``RNN`` operator's flat parameter vector, in order: ``(name, shape)``
    with names as the Gluon layers give their parameters (``l0_i2h_weight``, ``r1_h2h_bias``).

    Raises
    ------
    MXNetError
        For an unknown ``mode`` or a projection on a mode other than ``lstm``.
    """
    check_mode(mode, projection_size)
    dirs = 2 if bidirectional else 1
    geo = Geometry(mode, state_size, num_layers, dirs, input_size, projection_size or 0)
    return geo.shapes()


def check_mode(mode: str, proj: int | None) -> None:
    """Refuse an unknown mode, or a projection on a mode other than ``lstm``."""
    if mode not in GATES:
        raise MXNetError(f"RNN: mode must be one of {sorted(GATES)}, not {mode!r}")
    if proj and mode != "lstm":
        raise MXNetError(f"RNN: projection_size is only for mode 'lstm', not {mode!r}")


def _gates(mode: str) -> tuple[str, ...]:
    if mode not in GATE_NAMES:
        raise MXNetError(f"unknown RNN mode {mode!r}; use one of {', '.join(sorted(GATE_NAMES))}")
    return GATE_NAMES[mode]


def fused_size(
    mode: str, num_layers: int, bidirectional: bool, num_input: int, num_hidden: int
) -> int:
    """The length of the flat parameter vector."""
    _gates(mode)
    shapes = rnn_param_shapes(mode, num_hidden, num_layers, num_input, bidirectional)
    total = 0
    for _, shape in shapes:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def fused_num_input(
    size: int, mode: str, num_layers: int, bidirectional: bool, num_hidden: int
) -> int:
    """The first layer's input size of a flat parameter vector of length ``size``.

    Raises
    ------
    MXNetError
        When no input size gives a vector of that length.
    """
    g, d, h = len(_gates(mode)), 2 if bidirectional else 1, num_hidden
    num_input = size // d // h // g - (num_layers - 1) * (h + d * h + 2) - h - 2
    if num_input <= 0 or fused_size(mode, num_layers, bidirectional, num_input, h) != size:
        raise MXNetError(
            f"a fused {mode} parameter vector of {size} elements does not fit {num_layers} "
            f"layer(s) of {num_hidden} hidden units (bidirectional={bidirectional})"
        )
    return num_input


def fused_pieces(
    prefix: str, mode: str, num_layers: int, bidirectional: bool, num_input: int, num_hidden: int
) -> list[tuple[str, int, tuple[int, ...]]]:
    """``(name, offset, shape)`` of every per-gate piece of the flat vector, in vector order:
    each matrix and bias of :func:`rnn_param_shapes` cut into its gates' rows.

    Names are ``{prefix}{l|r}{layer}_{i2h|h2h}{gate}_{weight|bias}``.
    """
    gates = _gates(mode)
    h = num_hidden
    pieces: list[tuple[str, int, tuple[int, ...]]] = []
    offset = 0
    for name, shape in rnn_param_shapes(mode, h, num_layers, num_input, bidirectional):
        tag, group, kind = name.split("_")  # l0, i2h, weight
        piece = (h, *shape[1:])
        size = h * (shape[1] if len(shape) > 1 else 1)
        for gate in gates:
            pieces.append((f"{prefix}{tag}_{group}{gate}_{kind}", offset, piece))
            offset += size
    return pieces
