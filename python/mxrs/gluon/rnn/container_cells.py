"""Cells made of cells: stacks (:class:`SequentialRNNCell`, :class:`HybridSequentialRNNCell`)
and the bidirectional pair (:class:`BidirectionalCell`).

A stack's states are its cells' states one after the other; unrolling a stack unrolls each cell
over the whole sequence in turn. A bidirectional cell runs one cell forwards and the other over
the reversed sequence (each sequence's valid part reversed, with ``valid_length``) and joins
their outputs on the feature axis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...base import MXNetError
from ..utils import _indent
from . import _sequence
from .cell_base import HybridRecurrentCell, RecurrentCell, cells_begin_state, cells_state_info

if TYPE_CHECKING:
    from ..block import Block

__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "BidirectionalCell"]


def _cells(cell: RecurrentCell) -> list[RecurrentCell]:
    """The child cells of ``cell``, in order."""
    cells = [c for c in cell._children.values() if isinstance(c, RecurrentCell)]
    if len(cells) != len(cell._children):
        others = [c.name for c in cell._children.values() if c not in cells]
        raise MXNetError(f"{cell.name}: {others} are not recurrent cells")
    return cells


class _CellsOf(RecurrentCell):
    """A cell made of its child cells, whose states are theirs one after the other."""

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The child cells' states, one after the other."""
        return cells_state_info(_cells(self), batch_size)

    def begin_state(self, **kwargs: Any) -> list[Any]:  # type: ignore[override]
        """The child cells' initial states, one after the other (``kwargs`` as for
        :meth:`RecurrentCell.begin_state`)."""
        self._check_unmodified()
        return cells_begin_state(_cells(self), **kwargs)


class _Stack(_CellsOf):
    """A stack of cells: what :class:`SequentialRNNCell` and :class:`HybridSequentialRNNCell`
    share."""

    def __repr__(self) -> str:
        body = "\n".join(f"({i}): {_indent(repr(c), 2)}" for i, c in self._children.items())
        return f"{type(self).__name__}(\n{body}\n)"

    def add(self, cell: RecurrentCell) -> None:
        """Append ``cell`` to the stack."""
        self.register_child(cell)

    def __call__(self, inputs: Any, states: Any) -> Any:
        """One step of each cell in turn."""
        return self._step(inputs, states)

    def _step(self, inputs: Any, states: Any) -> tuple[Any, list[Any]]:
        """One step of each cell of the stack, each taking its share of ``states``."""
        self._counter += 1
        children = _cells(self)
        if any(isinstance(c, BidirectionalCell) for c in children):
            raise MXNetError(
                f"{self.name}: a BidirectionalCell cannot run one step at a time; use unroll"
            )
        next_states: list[Any] = []
        pos = 0
        for child in children:
            n = len(child.state_info())
            inputs, state = child(inputs, states[pos : pos + n])
            pos += n
            next_states.extend(state)
        return inputs, next_states

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """Unroll each cell over the whole sequence in turn (only the last one's outputs
        follow ``merge_outputs``)."""
        inputs, _, F, batch_size = _sequence.format_sequence(length, inputs, layout, None)
        states = _sequence.get_begin_state(self, F, begin_state, inputs, batch_size)
        children = _cells(self)
        next_states: list[Any] = []
        pos = 0
        for i, child in enumerate(children):
            n = len(child.state_info())
            inputs, child_states = child.unroll(
                length,
                inputs=inputs,
                begin_state=states[pos : pos + n],
                layout=layout,
                merge_outputs=merge if i == len(children) - 1 else None,
                valid_length=valid,
            )
            pos += n
            next_states.extend(child_states)
        return inputs, next_states

    def __getitem__(self, i: int) -> Block:
        return self._children[str(i)]

    def __len__(self) -> int:
        return len(self._children)


class SequentialRNNCell(_Stack):
    """A stack of recurrent cells: each cell's output is the next one's input.

    Parameters
    ----------
    prefix : str, optional
    params : ParameterDict, optional

    Examples
    --------
    >>> stack = mx.gluon.rnn.SequentialRNNCell()
    >>> stack.add(mx.gluon.rnn.LSTMCell(8))
    >>> stack.add(mx.gluon.rnn.GRUCell(4))
    >>> len(stack.state_info())
    3
    """


class HybridSequentialRNNCell(_Stack, HybridRecurrentCell):
    """A stack of hybrid recurrent cells (it can be a child of a HybridBlock).

    Parameters
    ----------
    prefix : str, optional
    params : ParameterDict, optional
    """

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of each cell in turn."""
        return self._step(inputs, states)


class BidirectionalCell(_CellsOf, HybridRecurrentCell):
    """Run ``l_cell`` forwards and ``r_cell`` backwards over a sequence and join their outputs
    on the feature axis (``unroll`` only: it cannot step).

    Parameters
    ----------
    l_cell : RecurrentCell
        The forward cell.
    r_cell : RecurrentCell
        The backward cell.
    output_prefix : str, default 'bi_'
        The prefix of the joined outputs' names (``bi_t0``... or ``bi_out`` merged).
    """

    def __init__(
        self, l_cell: RecurrentCell, r_cell: RecurrentCell, output_prefix: str = "bi_"
    ) -> None:
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs: Any, states: Any) -> Any:
        """Not supported: a bidirectional cell needs the whole sequence.

        Raises
        ------
        NotImplementedError
        """
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(forward={self._children['l_cell']}, "
            f"backward={self._children['r_cell']})"
        )

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """Unroll both cells and join their outputs (see :meth:`RecurrentCell.unroll`);
        the states are the forward cell's then the backward cell's."""
        inputs, axis, F, batch_size = _sequence.format_sequence(length, inputs, layout, False)
        reversed_inputs = _sequence.reverse_sequences(inputs, length, valid)
        states = _sequence.get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = _cells(self)
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(
            length,
            inputs=inputs,
            begin_state=states[:n_left],
            layout=layout,
            merge_outputs=merge,
            valid_length=valid,
        )
        r_outputs, r_states = r_cell.unroll(
            length,
            inputs=reversed_inputs,
            begin_state=states[n_left:],
            layout=layout,
            merge_outputs=False,
            valid_length=valid,
        )
        r_outputs = _sequence.reverse_sequences(r_outputs, length, valid)
        if merge is None:
            merge = _sequence.is_tensor(l_outputs)
            l_outputs, _, _, _ = _sequence.format_sequence(None, l_outputs, layout, merge)
            r_outputs, _, _, _ = _sequence.format_sequence(None, r_outputs, layout, merge)
        outputs: Any
        if merge:
            if not _sequence.is_tensor(r_outputs):
                r_outputs = F.stack(*r_outputs, axis=axis)
            outputs = F.concat(l_outputs, r_outputs, dim=2, name=f"{self._output_prefix}out")
        else:
            outputs = [
                F.concat(left, right, dim=1, name=f"{self._output_prefix}t{i}")
                for i, (left, right) in enumerate(zip(l_outputs, r_outputs, strict=True))
            ]
        if valid is not None:
            outputs = _sequence.mask_sequence_variable_length(
                F, outputs, length, valid, axis, merge
            )
        return outputs, l_states + r_states
