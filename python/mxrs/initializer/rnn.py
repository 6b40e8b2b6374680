"""Initializers of recurrent networks: ``LSTMBias`` (the forget gate's bias) and ``FusedRNN``
(a fused RNN's flat parameter vector, initialized piece by piece as the unfused cells are)."""

from __future__ import annotations

from .._rnn_layout import fused_num_input, fused_pieces
from ..base import MXNetError
from ..ndarray import NDArray, concat, zeros
from .base import InitDesc, Initializer, create, register

__all__ = [
    "LSTMBias",
    "FusedRNN",
]


@register
class LSTMBias(Initializer):
    """Fill an LSTM cell's bias with zeros except the forget gate's quarter, set to
    ``forget_bias`` (the gates are stacked input, forget, cell, output; Jozefowicz et al. 2015
    recommend 1.0).

    Parameters
    ----------
    forget_bias : float, default 1.0

    Examples
    --------
    >>> cell = mx.gluon.rnn.LSTMCell(100, i2h_bias_initializer=mx.init.LSTMBias(2.0))
    """

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: NDArray) -> None:
        hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[hidden : 2 * hidden] = self.forget_bias


@register
class FusedRNN(Initializer):
    """Fill the flat parameter vector of a fused ``RNN`` operator (``mx.rnn.FusedRNNCell``)
    piece by piece, each per-gate weight and bias (``l0_i2h_f_weight``...) as the unfused cells
    would be: by ``init``, or the global initializer when None. An LSTM's forget-gate biases
    (i2h and h2h both) get ``forget_bias``. The other arguments must match the cell's.

    Parameters
    ----------
    init : Initializer, str or None
    num_hidden, num_layers : int
    mode : str
        'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
    bidirectional : bool, default False
    forget_bias : float, default 1.0
    """

    def __init__(
        self,
        init: Initializer | str | None,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ) -> None:
        init = create(init) if isinstance(init, str) else init
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)  # fmt: skip
        self._init = init
        self._layout = (mode, num_layers, bidirectional, num_hidden)
        self._forget_bias = forget_bias

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        mode, layers, bidirectional, hidden = self._layout
        fill = self._init or getattr(desc, "global_init", None)
        if fill is None or isinstance(fill, FusedRNN):
            raise MXNetError(
                f"FusedRNN: {desc} needs an initializer for its pieces; give FusedRNN one or "
                "initialize with a global initializer (mod.init_params(mx.init.Xavier()))"
            )
        num_input = fused_num_input(int(arr.size), mode, layers, bidirectional, hidden)
        pieces = []
        for name, _, shape in fused_pieces("", mode, layers, bidirectional, num_input, hidden):
            piece = zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                fill(InitDesc(name, global_init=getattr(desc, "global_init", None)), piece)
            pieces.append(piece.reshape((-1,)))
        arr[:] = concat(*pieces, dim=0)
