"""Cells that change another cell's steps: dropout on the inputs (:class:`DropoutCell`), and
the modifier cells wrapping a base cell (:class:`ZoneoutCell`, :class:`ResidualCell`).

Once wrapped, a base cell is *modified*: its ``begin_state`` refuses to run and the modifier
cell is the one to call. A modifier cell's prefix is its base cell's followed by its alias
(``rnn_zoneout``) and its ``params`` are the base cell's.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ... import symbol
from ..._rnn_cell_tools import unmodified
from ...base import MXNetError
from . import _sequence
from .cell_base import HybridRecurrentCell, RecurrentCell
from .container_cells import BidirectionalCell, HybridSequentialRNNCell, SequentialRNNCell

if TYPE_CHECKING:
    from ..parameter_dict import ParameterDict

__all__ = ["DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell"]


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs; the states pass through unchanged (the cell has none).

    Parameters
    ----------
    rate : float
        The fraction of elements dropped (in training only).
    axes : tuple of int, default ()
        Axes along which one mask is shared; () draws every element on its own.
    prefix : str, optional
    params : ParameterDict, optional

    Notes
    -----
    Inputs: ``data`` ``(batch, size)`` and the list of states. Outputs: the data after dropout
    and the states as given.
    """

    def __init__(
        self,
        rate: float,
        axes: Sequence[int] = (),
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(prefix, params)
        if not isinstance(rate, numbers.Real) or isinstance(rate, bool):
            raise MXNetError(f"DropoutCell: rate must be a number, got {rate!r}")
        self._rate: float = rate
        self._axes: Sequence[int] = axes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """No states."""
        return []

    def _alias(self) -> str:
        return "dropout"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """Dropout on ``inputs`` (named ``t<step>_fwd``); ``states`` unchanged."""
        if self._rate > 0:
            inputs = F.Dropout(
                data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd"
            )
        return inputs, states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """Dropout over the whole sequence at once when it is (or is to be) one tensor, else
        step by step (``valid_length`` plays no part: padding stays as it is)."""
        inputs, _, F, _ = _sequence.format_sequence(length, inputs, layout, merge)
        if _sequence.is_tensor(inputs):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super()._unroll(length, inputs, begin_state, layout, merge, None)


class ModifierCell(HybridRecurrentCell):
    """Base class of the cells that wrap a base cell and change its steps.

    Parameters
    ----------
    base_cell : RecurrentCell
        The wrapped cell; call the modifier cell instead of it from now on.

    Raises
    ------
    MXNetError
        When ``base_cell`` is already wrapped by a modifier cell.
    """

    def __init__(self, base_cell: RecurrentCell) -> None:
        if base_cell._modified:
            raise MXNetError(
                f"Cell {base_cell.name} is already modified. One cell cannot be modified twice"
            )
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self) -> ParameterDict:
        """ParameterDict: the base cell's parameters."""
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The base cell's states."""
        return self.base_cell.state_info(batch_size)

    def begin_state(  # type: ignore[override]
        self, func: Callable[..., Any] = symbol.zeros, **kwargs: Any
    ) -> list[Any]:
        """The base cell's initial states. As in MXNet 1.9.1, ``func`` defaults to
        ``mx.sym.zeros`` here: pass ``func=mx.nd.zeros`` (and ``batch_size``) for NDArrays."""
        self._check_unmodified()
        with unmodified(self.base_cell):
            return self.base_cell.begin_state(func=func, **kwargs)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of the modified cell (subclasses implement this)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_cell})"


def has_bidirectional(cell: RecurrentCell) -> bool:
    """Whether ``cell`` is, or stacks, a BidirectionalCell (which cannot be stepped)."""
    if isinstance(cell, BidirectionalCell):
        return True
    if isinstance(cell, (SequentialRNNCell, HybridSequentialRNNCell)):
        return any(isinstance(c, BidirectionalCell) for c in cell._children.values())
    return False


class ZoneoutCell(ModifierCell):
    """Zoneout on a base cell: in training, each element of the output and of the states
    keeps its previous step's value with probability ``zoneout_outputs`` (resp.
    ``zoneout_states``) instead of taking the new one (Krueger et al., 2016).

    Parameters
    ----------
    base_cell : RecurrentCell
        Not a BidirectionalCell (nor a stack holding one): zoneout needs single steps.
    zoneout_outputs : float, default 0.
    zoneout_states : float, default 0.

    Raises
    ------
    MXNetError
        When ``base_cell`` cannot be stepped (bidirectional).
    """

    def __init__(
        self, base_cell: RecurrentCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0
    ) -> None:
        if has_bidirectional(base_cell):
            raise MXNetError(
                "BidirectionalCell doesn't support zoneout since it doesn't support step. "
                "Please add ZoneoutCell to the cells underneath instead."
            )
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output: Any = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(p_out={self.zoneout_outputs}, "
            f"p_state={self.zoneout_states}, {self.base_cell})"
        )

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        """Start again, forgetting the previous step's output."""
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of the base cell, each element then kept from the previous step where a
        dropout mask of ones is zero (no change outside training)."""
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: Any) -> Any:
            ones = F.ones_like(like)
            return F.Dropout(ones, p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        p_out, p_states = self.zoneout_outputs, self.zoneout_states
        output = (
            F.where(keep_new(p_out, next_output), next_output, prev_output)
            if p_out != 0.0
            else next_output
        )
        if p_states != 0.0:
            new_states = [
                F.where(keep_new(p_states, new), new, old)
                for new, old in zip(next_states, states, strict=True)
            ]
        else:
            new_states = next_states
        self._prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """A residual connection around a base cell: its output plus its input (Wu et al., 2016).

    Parameters
    ----------
    base_cell : RecurrentCell
        Its output must have the input's shape.
    """

    def __init__(self, base_cell: RecurrentCell) -> None:
        super().__init__(base_cell)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of the base cell, plus ``inputs`` (named ``t<step>_fwd``)."""
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd")
        return output, states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """Unroll the base cell, then add the inputs (zero past ``valid_length``) to its
        outputs."""
        with unmodified(self.base_cell):
            outputs, states = self.base_cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state,
                layout=layout,
                merge_outputs=merge,
                valid_length=valid,
            )
        merge = _sequence.is_tensor(outputs) if merge is None else merge
        inputs, axis, F, _ = _sequence.format_sequence(length, inputs, layout, merge)
        if valid is not None:
            inputs = _sequence.mask_sequence_variable_length(F, inputs, length, valid, axis, merge)
        if merge:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs, strict=True)], states
