"""Modifier cells: ``ModifierCell`` wraps a cell and changes what its steps do —
``ZoneoutCell`` (zoneout on outputs and states) and ``ResidualCell`` (output plus input).

Once wrapped, the base cell is used through the modifier only.
"""

from __future__ import annotations

from typing import Any

from .. import symbol
from .._rnn_cell_tools import unmodified
from ..base import MXNetError
from ..symbol import Symbol
from .base_cell import BaseRNNCell, RNNParams, normalize_sequence
from .containers import BidirectionalCell, SequentialRNNCell
from .fused_cell import FusedRNNCell

__all__ = ["ModifierCell", "ZoneoutCell", "ResidualCell"]


class ModifierCell(BaseRNNCell):
    """The base class of cells that modify another cell's steps.

    Parameters
    ----------
    base_cell : BaseRNNCell
        The wrapped cell; its weights and states are the modifier's.
    """

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        """The base cell's weights."""
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[Any]:
        """The base cell's states."""
        return self.base_cell.state_info

    def begin_state(self, init_sym: Any = symbol.zeros, **kwargs: Any) -> list[Any]:  # type: ignore[override]
        """The base cell's begin states, made with ``init_sym`` (or ``func=``, the name the
        other cells take it by)."""
        self._check_unmodified()
        func = kwargs.pop("func", init_sym)
        with unmodified(self.base_cell):
            return self.base_cell.begin_state(func, **kwargs)

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The base cell's weights unpacked."""
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The base cell's weights packed."""
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One modified step (the subclasses say how)."""
        raise NotImplementedError()


class ZoneoutCell(ModifierCell):
    """Zoneout: while training, each output and state element keeps its previous value with
    probability ``zoneout_outputs`` / ``zoneout_states`` instead of taking the new one.

    Parameters
    ----------
    base_cell : BaseRNNCell
        A cell that can step (not fused, not bidirectional).
    zoneout_outputs : float, default 0
    zoneout_states : float, default 0
    """

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0,
                 zoneout_states: float = 0.0) -> None:  # fmt: skip
        if isinstance(base_cell, FusedRNNCell):
            raise MXNetError("ZoneoutCell cannot wrap a FusedRNNCell; unfuse() it first")
        if isinstance(base_cell, BidirectionalCell) or (
            isinstance(base_cell, SequentialRNNCell)
            and any(isinstance(c, BidirectionalCell) for c in base_cell._cells)
        ):
            raise MXNetError(
                "ZoneoutCell cannot wrap a bidirectional cell, which cannot step; wrap the "
                "cells inside it instead"
            )
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        """Restart the counters and forget the previous output."""
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """The base cell's step, each element kept from before with the zoneout rates."""
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p: float, like: Symbol) -> Symbol:
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = next_output
        if self.zoneout_outputs != 0.0:
            output = symbol.where(mask(self.zoneout_outputs, next_output), next_output, prev)
        if self.zoneout_states != 0.0:
            next_states = [symbol.where(mask(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states, strict=True)]  # fmt: skip
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """A residual connection (Wu et al., 2016): the base cell's output plus its input.

    Parameters
    ----------
    base_cell : BaseRNNCell
    """

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__(base_cell)

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """The base cell's step with the input added to the output."""
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """The base cell unrolled (fused or bidirectional alike), its outputs plus the inputs."""
        with unmodified(self.base_cell):
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge)  # fmt: skip
        if merge is None:
            merge = isinstance(outputs, Symbol)
        inputs, _ = normalize_sequence(length, inputs, layout, merge)
        if merge:
            return symbol.elemwise_add(outputs, inputs,
                                       name=f"{outputs.name}_plus_residual"), states  # fmt: skip
        added = [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                 for o, i in zip(outputs, inputs, strict=True)]  # fmt: skip
        return added, states
