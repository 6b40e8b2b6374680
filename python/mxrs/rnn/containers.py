"""Cells made of cells: ``SequentialRNNCell`` (a stack), ``BidirectionalCell`` (one cell forward,
one backward over the sequence) and ``DropoutCell`` (dropout between stacked cells)."""

from __future__ import annotations

from typing import Any

from .. import symbol
from ..base import MXNetError
from ..symbol import Symbol
from .base_cell import (
    BaseRNNCell,
    RNNParams,
    cells_begin_state,
    cells_pack_weights,
    cells_state_info,
    cells_unpack_weights,
    normalize_sequence,
)

__all__ = ["SequentialRNNCell", "BidirectionalCell", "DropoutCell"]


def _adopt(parent: BaseRNNCell, cells: list[BaseRNNCell], override: bool) -> None:
    """Merge the children's weights into ``parent``'s container, or, when the parent was given
    one (``override``), the parent's into the children's."""
    for cell in cells:
        if override:
            if not cell._own_params:
                raise MXNetError(
                    f"{type(parent).__name__}: give params to the container cell or to the "
                    "cells in it, not both"
                )
            cell.params._params.update(parent.params._params)
        parent.params._params.update(cell.params._params)


class _CellsOf(BaseRNNCell):
    """A cell made of the cells ``_cells``: their states and weights, one cell after another."""

    _cells: list[BaseRNNCell]

    @property
    def state_info(self) -> list[Any]:
        """The states of every cell, first cell first."""
        return cells_state_info(self._cells)

    def begin_state(self, **kwargs: Any) -> list[Any]:  # type: ignore[override]
        """Every cell's begin states, first cell first (``kwargs`` go to each)."""
        self._check_unmodified()
        return cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Every cell's weights unpacked (see :meth:`BaseRNNCell.unpack_weights`)."""
        return cells_unpack_weights(self._cells, args)

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Every cell's weights packed (see :meth:`BaseRNNCell.pack_weights`)."""
        return cells_pack_weights(self._cells, args)


class SequentialRNNCell(_CellsOf):
    """Cells stacked: each one's output is the next one's input.

    Parameters
    ----------
    params : RNNParams or None
        Weights for every cell added (then the cells must not have their own).
    """

    def __init__(self, params: RNNParams | None = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Put ``cell`` on top of the stack."""
        self._cells.append(cell)
        _adopt(self, [cell], self._override_cell_params)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One step through every cell (a BidirectionalCell cannot step)."""
        self._counter += 1
        next_states: list[Any] = []
        p = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise MXNetError("a BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info)
            inputs, new = cell(inputs, states[p : p + n])
            p += n
            next_states.extend(new)
        return inputs, next_states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """Unroll each cell over the whole sequence in turn; only the top cell's outputs
        follow ``merge_outputs``."""
        states = self.begin_state() if begin_state is None else begin_state
        p = 0
        next_states: list[Any] = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, new = cell.unroll(
                length,
                inputs=inputs,
                begin_state=states[p : p + n],
                layout=layout,
                merge_outputs=merge if i == last else None,
            )
            p += n
            next_states.extend(new)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the input (between two stacked cells); no state, no weights.

    Parameters
    ----------
    dropout : float
        The fraction of elements zeroed while training.
    prefix : str, default 'dropout_'
    params : RNNParams or None
    """

    def __init__(self, dropout: float, prefix: str = "dropout_",
                 params: RNNParams | None = None) -> None:  # fmt: skip
        super().__init__(prefix, params)
        if isinstance(dropout, bool) or not isinstance(dropout, int | float):
            raise MXNetError(f"DropoutCell: dropout must be a number, not {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self) -> list[Any]:
        """No state."""
        return []

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """``inputs`` with dropout (unchanged for a rate of 0)."""
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """Dropout on the whole sequence at once when it is one symbol, else step by step."""
        inputs, _ = normalize_sequence(length, inputs, layout, merge)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super()._unroll(length, inputs, begin_state, layout, merge)


class BidirectionalCell(_CellsOf):
    """Two cells over one sequence, ``l_cell`` forward and ``r_cell`` backward; each step's
    output is the two outputs concatenated along the features.

    Parameters
    ----------
    l_cell, r_cell : BaseRNNCell
    params : RNNParams or None
        Weights for both cells (then they must not have their own).
    output_prefix : str, default 'bi_'
        Prefix of the concatenation nodes (``bi_t0``..., or ``bi_out`` merged).
    """

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell, params: RNNParams | None = None,
                 output_prefix: str = "bi_") -> None:  # fmt: skip
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        self._cells = [l_cell, r_cell]
        _adopt(self, self._cells, self._override_cell_params)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """Not possible: the backward cell needs the whole sequence."""
        raise MXNetError("a BidirectionalCell cannot be stepped; use unroll")

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """Unroll ``l_cell`` over the sequence and ``r_cell`` over it reversed, then join their
        outputs step by step. The states returned are ``[l_states, r_states]``, as in MXNet."""
        steps, axis = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=steps, begin_state=states[:n_l],
                                        layout=layout, merge_outputs=merge)  # fmt: skip
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(steps)),
                                        begin_state=states[n_l:], layout=layout,
                                        merge_outputs=merge)  # fmt: skip
        if merge is None:
            merge = isinstance(l_out, Symbol) and isinstance(r_out, Symbol)
            if not merge:
                l_out, r_out = (_per_step(o, axis, length) for o in (l_out, r_out))
        if merge:
            reversed_r = symbol.reverse(r_out, axis=axis)
            out = symbol.Concat(l_out, reversed_r, dim=2, name=f"{self._output_prefix}out")
            return out, [l_states, r_states]
        outputs = [
            symbol.Concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
            for i, (l_o, r_o) in enumerate(zip(l_out, reversed(r_out), strict=True))
        ]
        return outputs, [l_states, r_states]


def _per_step(outputs: Any, axis: int, length: int) -> list[Symbol]:
    if isinstance(outputs, Symbol):
        return list(symbol.SliceChannel(outputs, axis=axis, num_outputs=length, squeeze_axis=1))
    return list(outputs)
