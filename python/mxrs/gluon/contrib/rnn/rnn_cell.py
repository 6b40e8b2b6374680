"""Contributed recurrent cells: variational dropout around a cell
(:class:`VariationalDropoutCell`), the LSTM with a projection layer (:class:`LSTMPCell`), and
:func:`dynamic_unroll`, which runs a cell over a sequence with ``contrib.foreach``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....base import MXNetError
from ...rnn import _sequence
from ...rnn.basic_cells import _FullyConnectedCell, _positive_int
from ...rnn.cell_base import RecurrentCell
from ...rnn.modifier_cells import ModifierCell, has_bidirectional

if TYPE_CHECKING:
    from ...parameter import InitLike
    from ...parameter_dict import ParameterDict

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout on a base cell (Gal and Ghahramani, 2016): one dropout mask for
    the whole sequence, on the inputs, on the first state (``h``) and on the outputs, each
    with its own mask.

    The masks are drawn at the first step and kept until :meth:`reset` (which ``unroll``
    calls); stepping the cell by hand, call ``reset()`` between sequences.

    Parameters
    ----------
    base_cell : RecurrentCell
    drop_inputs : float, default 0.
        The dropout rate of the inputs (0: none).
    drop_states : float, default 0.
        The dropout rate of the first state (0: none); not for bidirectional cells.
    drop_outputs : float, default 0.
        The dropout rate of the outputs (0: none).

    Raises
    ------
    MXNetError
        When ``drop_states`` is asked of a bidirectional cell.
    """

    def __init__(
        self,
        base_cell: RecurrentCell,
        drop_inputs: float = 0.0,
        drop_states: float = 0.0,
        drop_outputs: float = 0.0,
    ) -> None:
        if drop_states and has_bidirectional(base_cell):
            raise MXNetError(
                "BidirectionalCell doesn't support variational state dropout. "
                "Please add VariationalDropoutCell to the cells underneath instead."
            )
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask: Any = None
        self.drop_states_mask: Any = None
        self.drop_outputs_mask: Any = None

    def _alias(self) -> str:
        return "vardrop"

    def reset(self) -> None:
        """Start again: the next step draws new masks."""
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _initialize_input_masks(self, F: Any, inputs: Any, states: Any) -> None:
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)

    def _initialize_output_mask(self, F: Any, output: Any) -> None:
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        """One step of the base cell with the masks applied to the first state, the inputs
        and the output."""
        self._initialize_input_masks(F, inputs, states)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        self._initialize_output_mask(F, next_output)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """Without state dropout, the input and output dropouts run once on the whole
        sequence, with a mask shared along the time axis."""
        if self.drop_states:
            return super()._unroll(length, inputs, begin_state, layout, merge, valid)
        inputs, axis, F, batch_size = _sequence.format_sequence(length, inputs, layout, True)
        states = _sequence.get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(
            length, inputs, states, layout, merge_outputs=True, valid_length=valid
        )
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge = _sequence.is_tensor(outputs) if merge is None else merge
        outputs, _, _, _ = _sequence.format_sequence(length, outputs, layout, merge)
        if valid is not None:
            outputs = _sequence.mask_sequence_variable_length(
                F, outputs, length, valid, axis, merge
            )
        return outputs, states


class LSTMPCell(_FullyConnectedCell):
    r"""LSTM cell with a projection layer (Sak et al., 2014): the recurrent state is
    ``r = W_hr h``, of ``projection_size`` units, instead of ``h``.

    The gates are those of :class:`~mxrs.gluon.rnn.LSTMCell` with ``r`` in place of ``h``::

        i, f, g, o = σ(.), σ(.), tanh(.), σ(.)   of  W_i* x + b_i* + W_r* r + b_r*
        c' = f * c + i * g
        h' = o * tanh(c')
        r' = W_hr h'

    Parameters
    ----------
    hidden_size : int
        The number of units of the cell state ``c``.
    projection_size : int
        The number of units of the output ``r``.
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer : optional
        Of the input ``(4 hidden, input)``, recurrent ``(4 hidden, projection)`` and
        projection ``(projection, hidden)`` weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        The input width; 0 takes it from the first input.
    prefix : str, default ``'lstmp<n>_'``
    params : ParameterDict, optional

    Notes
    -----
    Inputs: ``data`` ``(batch, input_size)`` and the states ``[r (batch, projection_size),
    c (batch, hidden_size)]``. Outputs: ``r'`` and ``[r', c']``.
    """

    _gates = 4

    def __init__(
        self,
        hidden_size: int,
        projection_size: int,
        i2h_weight_initializer: InitLike | None = None,
        h2h_weight_initializer: InitLike | None = None,
        h2r_weight_initializer: InitLike | None = None,
        i2h_bias_initializer: InitLike | None = "zeros",
        h2h_bias_initializer: InitLike | None = "zeros",
        input_size: int = 0,
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        _positive_int(hidden_size, "LSTMPCell: hidden_size")
        # read by _recurrent_size and _add_extra_params, which the base constructor calls
        self._projection_size = _positive_int(projection_size, "LSTMPCell: projection_size")
        self._h2r_weight_initializer = h2r_weight_initializer
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

    def _recurrent_size(self) -> int:
        return self._projection_size

    def _add_extra_params(self) -> None:
        shape = (self._projection_size, self._hidden_size)
        self.h2r_weight = self._deferred("h2r_weight", shape, self._h2r_weight_initializer)

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The states ``r`` ``(batch_size, projection_size)`` and ``c``
        ``(batch_size, hidden_size)``, layout 'NC'."""
        return [
            {"shape": (batch_size, self._projection_size), "__layout__": "NC"},
            {"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
        ]

    def _alias(self) -> str:
        return "lstmp"

    def __repr__(self) -> str:
        proj = self.h2r_weight.shape
        assert proj is not None  # given at construction
        return f"{type(self).__name__}({self._mapping()} -> {proj[0]})"

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """The LSTM gates on ``x`` and ``r``, the new ``c`` and ``h``, then the projection
        ``r' = W_hr h'`` (named ``t<step>_out``); ``extra`` holds ``h2r_weight``."""
        gates = i2h + h2h
        parts = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(parts[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(parts[1], act_type="sigmoid", name=prefix + "f")
        candidate = F.Activation(parts[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(parts[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=prefix + "state")
        hidden = F.elemwise_mul(
            out_gate, F.Activation(next_c, act_type="tanh"), name=prefix + "hidden"
        )
        next_r = F.FullyConnected(
            data=hidden,
            num_hidden=self._projection_size,
            weight=extra["h2r_weight"],
            no_bias=True,
            name=prefix + "out",
        )
        return next_r, [next_r, next_c]


def dynamic_unroll(
    cell: RecurrentCell,
    inputs: Any,
    begin_state: list[Any],
    drop_inputs: float = 0.0,
    drop_outputs: float = 0.0,
    layout: str = "TNC",
    valid_length: Any = None,
) -> tuple[Any, list[Any]]:
    """Run ``cell`` over a sequence with ``F.contrib.foreach`` (one loop instead of one
    unrolled step per time step).

    Parameters
    ----------
    cell : RecurrentCell
        The cell to run (not bidirectional: it needs single steps).
    inputs : NDArray or Symbol
        ``(length, batch, ...)`` for 'TNC' (the faster layout) or ``(batch, length, ...)`` for
        'NTC'.
    begin_state : list of NDArray or Symbol
        The initial states.
    drop_inputs, drop_outputs : float, default 0.
        Dropout rates of the inputs and outputs, one mask shared along the time axis.
    layout : str, default 'TNC'
    valid_length : NDArray or Symbol, optional
        The length of each sequence, ``(batch,)``: the states stop changing past it (the
        states returned are those of each sequence's last valid step) and the outputs past it
        are zero.

    Returns
    -------
    outputs : NDArray or Symbol
        In ``layout``.
    states : list of NDArray or Symbol

    Raises
    ------
    MXNetError
        On a bad layout (and for Symbols, whose ``contrib.foreach`` mxrs does not have).
    """
    inputs, axis, F, _ = _sequence.format_sequence(0, inputs, layout, True)
    axes = list(range(len(layout)))
    if axis != 0:
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states: Any = begin_state
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))

    if valid_length is None:

        def loop_body(step: Any, loop_states: Any) -> Any:
            return cell(step, loop_states)

    else:
        states = [*_sequence.as_list(states), F.zeros((1,))]

        def loop_body(step: Any, loop_states: Any) -> Any:
            cell_states, iter_no = loop_states[:-1], loop_states[-1]
            out, new_states = cell(step, cell_states)
            valid = F.broadcast_greater(valid_length, iter_no)
            new_states = [
                F.where(valid, new, old) for new, old in zip(new_states, cell_states, strict=True)
            ]
            return out, [*new_states, iter_no + 1]

    outputs, states = F.contrib.foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if axis != 0:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(
        outputs, sequence_length=valid_length, use_sequence_length=True, axis=axis
    )
    return outputs, states[:-1]
