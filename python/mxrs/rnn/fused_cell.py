"""``FusedRNNCell``: a whole multi-layer (bidirectional) RNN as one fused ``RNN`` node.

Its weights are one flat vector, ``{prefix}parameters``, in MXNet 1.9.1's packing
(:mod:`mxrs._rnn_layout`); :meth:`FusedRNNCell.unpack_weights` cuts it into the per-gate arrays
the unfused cells of :meth:`FusedRNNCell.unfuse` use, and :meth:`FusedRNNCell.pack_weights`
joins them back.
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import initializer as _init
from .. import ndarray as nd
from .. import symbol
from .._rnn_layout import GATE_NAMES, fused_num_input, fused_pieces, fused_size
from ..base import MXNetError
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNParams, normalize_sequence
from .cells import GRUCell, LSTMCell, RNNCell
from .containers import BidirectionalCell, DropoutCell, SequentialRNNCell

__all__ = ["FusedRNNCell"]


class FusedRNNCell(BaseRNNCell):
    """Layers of one RNN kind run as a single fused ``RNN`` operator over the sequence.

    Parameters
    ----------
    num_hidden : int
    num_layers : int, default 1
    mode : str, default 'lstm'
        'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
    bidirectional : bool, default False
        Both directions in every layer (the output has ``2 * num_hidden`` features).
    dropout : float, default 0
        Dropout between layers while training.
    get_next_state : bool, default False
        Whether :meth:`unroll` returns the final states.
    forget_bias : float, default 1.0
        Initial LSTM forget-gate bias (``mx.init.FusedRNN`` puts it in both biases).
    prefix : str or None
        ``'{mode}_'`` when None.
    params : RNNParams or None
    """

    def __init__(
        self,
        num_hidden: int,
        num_layers: int = 1,
        mode: str = "lstm",
        bidirectional: bool = False,
        dropout: float = 0.0,
        get_next_state: bool = False,
        forget_bias: float = 1.0,
        prefix: str | None = None,
        params: RNNParams | None = None,
    ) -> None:
        if mode not in GATE_NAMES:
            raise MXNetError(
                f"FusedRNNCell: unknown mode {mode!r}; use 'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'"
            )
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = _init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional,
                                     forget_bias)  # fmt: skip
        self._parameter = self.params.get("parameters", init=initializer)
        self._parameter_name = str(self._parameter.name)

    @property
    def state_info(self) -> list[Any]:
        """``h`` (and ``c`` for an LSTM), each ``(layers * directions, batch, num_hidden)``."""
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == "lstm" else 1
        return [{"shape": shape, "__layout__": "LNC"} for _ in range(count)]

    @property
    def _gate_names(self) -> tuple[str, ...]:
        return GATE_NAMES[self._mode]

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    def _pieces(self, num_input: int) -> list[tuple[str, int, tuple[int, ...]]]:
        return fused_pieces(self._prefix, self._mode, self._num_layers, self._bidirectional,
                            num_input, self._num_hidden)  # fmt: skip

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with ``{prefix}parameters`` cut into per-gate copies named as the unfused
        cells name them (``{prefix}l0_i2h_f_weight``...)."""
        args = dict(args)
        name = self._parameter_name
        if name not in args:
            raise MXNetError(f"unpack_weights: the parameters have no {name!r}")
        arr = args.pop(name)
        size = int(arr.size)
        num_input = fused_num_input(size, self._mode, self._num_layers, self._bidirectional,
                                    self._num_hidden)  # fmt: skip
        for piece, offset, shape in self._pieces(num_input):
            n = shape[0] * (shape[1] if len(shape) > 1 else 1)
            args[piece] = arr[offset : offset + n].reshape(shape).copy()
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The reverse of :meth:`unpack_weights`: the per-gate arrays joined into
        ``{prefix}parameters``."""
        args = dict(args)
        first = f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"
        if first not in args:
            raise MXNetError(f"pack_weights: the parameters have no {first!r}")
        w0 = args[first]
        num_input = int(w0.shape[1])
        total = fused_size(self._mode, self._num_layers, self._bidirectional, num_input,
                           self._num_hidden)  # fmt: skip
        arr = nd.zeros((total,), ctx=w0.context, dtype=w0.dtype)
        for piece, offset, shape in self._pieces(num_input):
            if piece not in args:
                raise MXNetError(f"pack_weights: the parameters have no {piece!r}")
            value = args.pop(piece)
            if tuple(value.shape) != shape:
                raise MXNetError(
                    f"pack_weights: {piece!r} has shape {tuple(value.shape)}, expected {shape}"
                )
            n = shape[0] * (shape[1] if len(shape) > 1 else 1)
            arr[offset : offset + n] = value.reshape((n,))
        args[self._parameter_name] = arr
        return args

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """Not possible: the fused cell runs whole sequences only."""
        raise MXNetError("a FusedRNNCell cannot be stepped; use unroll")

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """One ``RNN`` node over the sequence; an 'NTC' input is swapped to 'TNC' for it and
        back. The states returned are the final ones with ``get_next_state``, else none."""
        data, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn(
                "NTC layout detected. Consider using TNC for FusedRNNCell for faster speed",
                stacklevel=3,  # the caller of BaseRNNCell.unroll
            )
            data = symbol.swapaxes(data, dim1=0, dim2=1)
        elif axis != 0:
            raise MXNetError(f"FusedRNNCell: unsupported layout {layout!r} (use 'TNC' or 'NTC')")
        states = self.begin_state() if begin_state is None else begin_state
        given = {"state": states[0]}
        if self._mode == "lstm":
            given["state_cell"] = states[1]
        rnn = symbol.RNN(data=data, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=f"{self._prefix}rnn", **given)  # fmt: skip
        next_states: list[Any] = []
        outputs = rnn
        if self._get_next_state:
            outputs = rnn[0]
            next_states = [rnn[k] for k in range(1, len(rnn))]
            for s in next_states:
                s._set_attr(__layout__="LNC")
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge)
        return outputs, next_states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as unfused cells that can step: a SequentialRNNCell of one cell
        (or BidirectionalCell) per layer, named ``{prefix}l{k}_`` / ``{prefix}r{k}_``, with
        DropoutCells between layers when ``dropout`` > 0. Its weights are
        :meth:`unpack_weights`'s."""
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(self._unfused_cell(f"{self._prefix}l{i}_"),
                                            self._unfused_cell(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))  # fmt: skip
            else:
                stack.add(self._unfused_cell(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack

    def _unfused_cell(self, prefix: str) -> BaseRNNCell:
        if self._mode == "lstm":
            return LSTMCell(self._num_hidden, prefix=prefix)
        if self._mode == "gru":
            return GRUCell(self._num_hidden, prefix=prefix)
        return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=prefix)
