"""The base classes of the recurrent cells: one step (``cell(inputs, states)``), the initial
states (:meth:`RecurrentCell.begin_state`) and the unrolling over a sequence.

A cell's ``forward`` counts its steps in ``_counter``: the operators of step ``t`` are named
``t<t>_...`` inside the cell's prefix (``rnn_t0_out``), as in MXNet 1.9.1, and :meth:`reset`
(which :meth:`RecurrentCell.unroll` calls first) starts the count again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ... import ndarray
from ...base import MXNetError
from ..block import Block, HybridBlock
from ..nn import LeakyReLU
from . import _sequence

if TYPE_CHECKING:
    from ..parameter import Parameter
    from ..parameter_dict import ParameterDict

__all__ = ["RecurrentCell", "HybridRecurrentCell"]

#: The activations named by a string that have their own operator (the others go through
#: ``Activation(act_type=...)``).
_ACTIVATION_OPS = ("tanh", "relu", "sigmoid", "softsign")


def cells_state_info(cells: Iterable[RecurrentCell], batch_size: int) -> list[Any]:
    """The state descriptions of ``cells``, one after the other."""
    return [info for c in cells for info in c.state_info(batch_size)]


def cells_begin_state(cells: Iterable[RecurrentCell], **kwargs: Any) -> list[Any]:
    """The initial states of ``cells``, one after the other."""
    return [s for c in cells for s in c.begin_state(**kwargs)]


class RecurrentCell(Block):
    """Base class of recurrent cells: a block computing one time step,
    ``output, new_states = cell(inputs, states)``.

    Parameters
    ----------
    prefix : str, optional
        Prefix of the cell's name and (when ``params`` is None) of its parameters' names.
    params : ParameterDict, optional
        Share these parameters (e.g. another cell's ``params``).
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self._init_counter = -1
        self._counter = -1
        self.reset()

    def reset(self) -> None:
        """Start the step and initial-state counters again (before unrolling another
        sequence), here and in the child cells."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size: int = 0) -> list[Any]:
        """The shape and layout of each state: a list of dicts such as
        ``{'shape': (batch_size, 100), '__layout__': 'NC'}``."""
        raise NotImplementedError

    def _check_unmodified(self) -> None:
        if self._modified:
            raise MXNetError(
                f"{self.name}: a modifier cell (ZoneoutCell, ResidualCell...) wraps this cell; "
                "call the modifier cell instead of this one"
            )

    def begin_state(
        self, batch_size: int = 0, func: Callable[..., Any] = ndarray.zeros, **kwargs: Any
    ) -> list[Any]:
        """The initial states of the cell.

        Parameters
        ----------
        batch_size : int, default 0
            The batch size ('N' of the layout); needed for NDArrays, 0 (unknown) for Symbols.
        func : callable, default mx.nd.zeros
            Makes each state from ``name``, ``shape`` and ``__layout__`` keywords (and
            ``kwargs``): ``mx.nd.zeros``, ``mx.nd.ones``, ``mx.sym.zeros``, ``mx.sym.var``...
        **kwargs
            Passed on to ``func`` (``dtype``, ``ctx``...).

        Returns
        -------
        list of NDArray or Symbol
            One per state, named ``<prefix>begin_state_<n>``.

        Raises
        ------
        MXNetError
            When a modifier cell wraps this cell (ask the modifier cell instead).
        """
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            args = dict(info) if info is not None else {}
            args.update(kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **args))
        return states

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Any] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
        valid_length: Any = None,
    ) -> tuple[Any, list[Any]]:
        """Run the cell over ``length`` time steps.

        Parameters
        ----------
        length : int
            The number of steps.
        inputs : NDArray, Symbol or list of them
            One tensor of shape ``(batch, length, ...)`` ('NTC') or ``(length, batch, ...)``
            ('TNC'), or a list of ``length`` steps of shape ``(batch, ...)``.
        begin_state : list of NDArray or Symbol, optional
            The initial states (default: zeros from :meth:`begin_state`).
        layout : str, default 'NTC'
            The layout of ``inputs`` as one tensor, and of merged outputs.
        merge_outputs : bool, optional
            True: the outputs as one tensor in ``layout``; False: a list of steps; None:
            whichever form the computation gives.
        valid_length : NDArray or Symbol, optional
            The length of each sequence of the batch, shape ``(batch,)``: outputs past it are
            zero and the states returned are those of each sequence's last valid step.

        Returns
        -------
        outputs : NDArray, Symbol or list of them
        states : list of NDArray or Symbol
            The states after the last (valid) step.

        Raises
        ------
        MXNetError
            On a bad layout or inputs that do not have ``length`` steps.
        """
        self.reset()
        return self._unroll(length, inputs, begin_state, layout, merge_outputs, valid_length)

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: Any, valid: Any
    ) -> tuple[Any, list[Any]]:
        """:meth:`unroll` after :meth:`reset` (``merge``: ``merge_outputs``, ``valid``:
        ``valid_length``): the cell stepped over the sequence."""
        inputs, axis, F, batch_size = _sequence.format_sequence(length, inputs, layout, False)
        states = _sequence.get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs = []
        all_states = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid is not None:
                all_states.append(states)
        if valid is not None:
            states = [
                F.SequenceLast(
                    F.stack(*step_states, axis=0),
                    sequence_length=valid,
                    use_sequence_length=True,
                    axis=0,
                )
                for step_states in zip(*all_states, strict=True)
            ]
            outputs = _sequence.mask_sequence_variable_length(F, outputs, length, valid, axis, True)
        outputs, _, _, _ = _sequence.format_sequence(length, outputs, layout, merge)
        return outputs, states

    def _get_activation(self, F: Any, inputs: Any, activation: Any, **kwargs: Any) -> Any:
        """Apply ``activation`` to ``inputs``: a name ('tanh', 'relu', 'sigmoid', 'softsign'
        have their own operator, other names go to ``Activation``), a ``nn.LeakyReLU`` block
        (the ``LeakyReLU`` operator with its slope), or a callable (a block is called on the
        inputs alone). ``kwargs`` (the operator's ``name``) go to the operator."""
        if isinstance(activation, str):
            if activation in _ACTIVATION_OPS:
                return getattr(F, activation)(inputs, **kwargs)
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        if isinstance(activation, Block):
            return activation(inputs)
        return activation(inputs, **kwargs)

    def forward(self, inputs: Any, states: Any) -> Any:
        """One time step: ``output, new_states`` from ``inputs`` of shape ``(batch, ...)`` and
        the list ``states`` (from :meth:`begin_state` or the previous step)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell written as ``hybrid_forward(F, inputs, states, **params)``: it runs on
    NDArrays and on Symbols.

    Parameters
    ----------
    prefix : str, optional
    params : ParameterDict, optional
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        """One step with operator namespace ``F`` (subclasses implement this)."""
        raise NotImplementedError


class _TwoMapCell(HybridRecurrentCell):
    """A cell whose step maps the input (``i2h``) and the first state (``h2h``), each with a
    weight and a bias (``i2h_weight``, ``h2h_weight``, ``i2h_bias``, ``h2h_bias``), then
    combines the two maps; subclasses give the maps (:meth:`_i2h_h2h`) and the combination
    (:meth:`_combine`)."""

    def _add_maps(
        self,
        shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
        weight_inits: tuple[Any, Any],
        bias_inits: tuple[Any, Any],
    ) -> None:
        """Register the weights (shapes ``i2h``, ``h2h``), :meth:`_add_extra_params`'s and the
        biases (one shape), in that order, with the initializers of ``i2h_weight`` and
        ``h2h_weight``, then of ``i2h_bias`` and ``h2h_bias``."""
        i2h_shape, h2h_shape, bias_shape = shapes
        i2h_weight_init, h2h_weight_init = weight_inits
        i2h_bias_init, h2h_bias_init = bias_inits
        self.i2h_weight = self._deferred("i2h_weight", i2h_shape, i2h_weight_init)
        self.h2h_weight = self._deferred("h2h_weight", h2h_shape, h2h_weight_init)
        self._add_extra_params()
        self.i2h_bias = self._deferred("i2h_bias", bias_shape, i2h_bias_init)
        self.h2h_bias = self._deferred("h2h_bias", bias_shape, h2h_bias_init)

    def _add_extra_params(self) -> None:
        """Register parameters between the weights and the biases (their order is that of
        the parameter dict)."""

    def _deferred(self, name: str, shape: tuple[int, ...], init: Any) -> Parameter:
        """The parameter ``name`` (0 in ``shape``: inferred from the first input)."""
        return self.params.get(name, shape=shape, init=init, allow_deferred_init=True)

    def _i2h_h2h(
        self, F: Any, inputs: Any, state: Any, prefix: str, params: tuple[Any, ...]
    ) -> tuple[Any, Any]:
        """The maps of ``inputs`` and ``state`` with ``params`` (the four weights and biases),
        their operators named ``<prefix>i2h`` and ``<prefix>h2h``."""
        raise NotImplementedError

    def _combine(
        self, F: Any, i2h: Any, h2h: Any, states: Any, prefix: str, **extra: Any
    ) -> tuple[Any, list[Any]]:
        """The output and new states from the two maps (``extra``: further parameters)."""
        raise NotImplementedError

    def hybrid_forward(  # type: ignore[override]  # **extra: more parameters (LSTMPCell's)
        self,
        F: Any,
        inputs: Any,
        states: Any,
        i2h_weight: Any,
        h2h_weight: Any,
        i2h_bias: Any,
        h2h_bias: Any,
        **extra: Any,
    ) -> tuple[Any, list[Any]]:
        """One step: the two maps, then their combination (operators named ``t<step>_...``)."""
        prefix = f"t{self._counter}_"
        params = (i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h, h2h = self._i2h_h2h(F, inputs, states[0], prefix, params)
        return self._combine(F, i2h, h2h, states, prefix, **extra)
