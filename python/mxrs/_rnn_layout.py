"""Where each gate's weights and biases sit in the fused ``RNN`` operator's flat parameter vector.

MXNet 1.9.1 packs the vector as every weight, then every bias; layer by layer, direction by
direction (``l`` then ``r``), ``i2h`` before ``h2h``; each matrix stacks its gates' rows (LSTM
``i, f, c, o``, GRU ``r, z, n``, one block for the Elman modes). ``mx.rnn.FusedRNNCell`` and
``mx.init.FusedRNN`` both cut the vector into per-gate pieces named as the unfused cells name
their parameters (``lstm_l0_i2h_f_weight``), so the arithmetic lives here, below both.
"""

from __future__ import annotations

from .base import MXNetError

__all__ = ["GATE_NAMES", "fused_pieces", "fused_size", "fused_num_input"]

#: the gate suffixes of each mode, in the order the gates are stacked
GATE_NAMES: dict[str, tuple[str, ...]] = {
    "rnn_relu": ("",),
    "rnn_tanh": ("",),
    "lstm": ("_i", "_f", "_c", "_o"),
    "gru": ("_r", "_z", "_o"),
}


def _gates(mode: str) -> tuple[str, ...]:
    if mode not in GATE_NAMES:
        raise MXNetError(f"unknown RNN mode {mode!r}; use one of {', '.join(sorted(GATE_NAMES))}")
    return GATE_NAMES[mode]


def fused_size(
    mode: str, num_layers: int, bidirectional: bool, num_input: int, num_hidden: int
) -> int:
    """The length of the flat parameter vector."""
    g, d, h = len(_gates(mode)), 2 if bidirectional else 1, num_hidden
    first = (num_input + h + 2) * h * g * d
    return first + (num_layers - 1) * g * h * (h + d * h + 2) * d


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
    """``(name, offset, shape)`` of every per-gate piece of the flat vector, in vector order.

    Names are ``{prefix}{l|r}{layer}_{i2h|h2h}{gate}_{weight|bias}``.
    """
    gates = _gates(mode)
    dirs = ("l", "r") if bidirectional else ("l",)
    h = num_hidden
    pieces: list[tuple[str, int, tuple[int, ...]]] = []
    offset = 0
    for kind in ("weight", "bias"):
        for layer in range(num_layers):
            width = num_input if layer == 0 else len(dirs) * h
            for direction in dirs:
                for group, cols in (("i2h", width), ("h2h", h)):
                    for gate in gates:
                        shape = (h, cols) if kind == "weight" else (h,)
                        name = f"{prefix}{direction}{layer}_{group}{gate}_{kind}"
                        pieces.append((name, offset, shape))
                        offset += h * cols if kind == "weight" else h
    return pieces
