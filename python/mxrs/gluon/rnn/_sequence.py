"""The unroll machinery shared by the recurrent cells: sequences as one tensor or a list of
steps, initial states, masking past each sequence's valid length and reversing sequences.

A sequence is either one NDArray/Symbol laid out as ``layout`` says (``'NTC'``: batch, time,
features; ``'TNC'``: time first; any further letters are the features' axes) or a list of its
time steps, each ``(batch, ...)``. :func:`format_sequence` converts between the two forms, as
MXNet 1.9.1's cells do before and after stepping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ... import ndarray, symbol
from ...base import MXNetError
from ...ndarray import NDArray
from ...symbol import Symbol

__all__ = [
    "is_tensor",
    "as_list",
    "format_sequence",
    "get_begin_state",
    "mask_sequence_variable_length",
    "reverse_sequences",
    "StateMaker",
]


class StateMaker(Protocol):
    """What :func:`get_begin_state` needs of a cell (a
    :class:`~mxrs.gluon.rnn.RecurrentCell` is one): its initial states."""

    def begin_state(self, **kwargs: Any) -> list[Any]: ...


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a whole sequence (one NDArray or Symbol), not a list of steps."""
    return isinstance(x, (NDArray, Symbol))


def as_list(x: Any) -> list[Any]:
    """The parts of ``x`` as a list: a list's items, a Symbol's outputs (what ``split`` makes),
    an NDArray alone."""
    return list(x) if isinstance(x, (list, tuple, Symbol)) else [x]


def _axes(layout: str) -> tuple[int, int]:
    """The time and batch axes of ``layout``.

    Raises
    ------
    MXNetError
        When ``layout`` is not a string holding both 'T' and 'N'.
    """
    if not isinstance(layout, str) or "T" not in layout or "N" not in layout:
        raise MXNetError(
            f"unroll: layout must be a string naming the time axis 'T' and the batch axis 'N', "
            f"such as 'NTC' or 'TNC'; got {layout!r}"
        )
    return layout.find("T"), layout.find("N")


def format_sequence(
    length: int | None,
    inputs: Any,
    layout: str,
    merge: bool | None,
    in_layout: str | None = None,
) -> tuple[Any, int, Any, int]:
    """Bring the sequence ``inputs`` to the form ``merge`` asks for.

    Parameters
    ----------
    length : int or None
        The number of time steps (None: not checked).
    inputs : NDArray, Symbol or list of them
        One tensor in ``in_layout`` (default ``layout``), or a list of ``(batch, ...)`` steps.
    layout : str
        The layout of a merged result.
    merge : bool or None
        True: one tensor in ``layout``; False: a list of steps; None: leave the form as is.
    in_layout : str, optional

    Returns
    -------
    inputs
        The sequence in the form asked for.
    axis : int
        The time axis of ``layout``.
    F : module
        ``mx.nd`` or ``mx.sym``, by the kind of ``inputs``.
    batch_size : int
        The batch size of NDArray inputs (0 for Symbols, whose batch is not known yet).

    Raises
    ------
    MXNetError
        On a bad layout, no inputs, or a number of steps other than ``length``.
    """
    axis, batch_axis = _axes(layout)
    in_axis = _axes(in_layout)[0] if in_layout is not None else axis
    if inputs is None:
        raise MXNetError(
            "unroll(inputs=None) is not supported: create the input variables (mx.sym.var) "
            "outside unroll and pass them"
        )
    batch_size = 0
    F: Any
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError(
                    "unroll takes no grouped symbol as inputs: pass list(inputs), or one "
                    f"symbol for unroll to split; got {len(inputs.list_outputs())} outputs"
                )
            if length is None:
                raise MXNetError("unroll: give the length to split a Symbol sequence into")
            inputs = as_list(
                symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=True)
            )
    elif isinstance(inputs, NDArray):
        F = ndarray
        if inputs.ndim < 2:
            raise MXNetError(
                f"unroll: a sequence has at least 2 axes (layout {layout!r}); got shape "
                f"{inputs.shape}"
            )
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            steps = inputs.shape[in_axis]
            if length is not None and length != steps:
                raise MXNetError(
                    f"unroll: length is {length} but the inputs of shape {inputs.shape} have "
                    f"{steps} time steps on axis {in_axis} (layout {in_layout or layout!r})"
                )
            inputs = as_list(
                ndarray.split(inputs, axis=in_axis, num_outputs=steps, squeeze_axis=True)
            )
    elif isinstance(inputs, (list, tuple)):
        if not inputs:
            raise MXNetError("unroll: the list of inputs is empty")
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll: length is {length} but {len(inputs)} inputs were given")
        if isinstance(inputs[0], Symbol):
            F = symbol
        elif isinstance(inputs[0], NDArray):
            F = ndarray
            batch_size = inputs[0].shape[0]
        else:
            raise MXNetError(
                "unroll: inputs must be an NDArray, a Symbol or a list of them; got a list of "
                f"{type(inputs[0]).__name__}"
            )
        inputs = list(inputs)
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    else:
        raise MXNetError(
            "unroll: inputs must be an NDArray, a Symbol or a list of them; got "
            f"{type(inputs).__name__}"
        )
    if is_tensor(inputs) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def get_begin_state(
    cell: StateMaker,
    F: Any,
    begin_state: list[Any] | None,
    inputs: Any,
    batch_size: int,
) -> list[Any]:
    """``begin_state`` if given, else ``cell``'s zero states for ``inputs``: NDArrays on the
    inputs' context, or, as MXNet builds them, ``mx.sym.zeros`` with the batch left open (0),
    which shape inference fills in from the inputs where the graph is bound or run."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        first = inputs if isinstance(inputs, NDArray) else inputs[0]
        with first.context:
            return cell.begin_state(func=ndarray.zeros, batch_size=batch_size)
    return cell.begin_state(func=symbol.zeros, batch_size=0)


def mask_sequence_variable_length(
    F: Any, data: Any, length: int, valid_length: Any, time_axis: int, merge: bool
) -> Any:
    """Zero the steps of ``data`` at or past each sequence's ``valid_length``; one tensor
    (``merge``) or a list of ``length`` steps."""
    if not is_tensor(data):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(
        data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis
    )
    if not merge:
        outputs = as_list(F.split(outputs, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return outputs


def reverse_sequences(
    sequences: Sequence[Any], unroll_step: int, valid_length: Any = None
) -> list[Any]:
    """The list of steps ``sequences`` in reverse time order; with ``valid_length``, each
    sequence's valid steps are reversed in place and its padding stays at the end."""
    if valid_length is None:
        return list(reversed(sequences))
    F: Any = symbol if isinstance(sequences[0], Symbol) else ndarray
    stacked = F.stack(*sequences, axis=0)
    reversed_ = F.SequenceReverse(stacked, sequence_length=valid_length, use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        return as_list(F.split(reversed_, axis=0, num_outputs=unroll_step, squeeze_axis=True))
    return [reversed_[0]]
