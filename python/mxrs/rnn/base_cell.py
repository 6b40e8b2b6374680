"""``RNNParams`` and ``BaseRNNCell``: what every symbolic RNN cell shares.

A cell makes the graph of one time step (``cell(inputs, states)``) over weight variables it
keeps in an :class:`RNNParams`; :meth:`BaseRNNCell.unroll` chains the steps over a sequence,
from :meth:`BaseRNNCell.begin_state` (zeros whose batch size is left open, 0, and inferred at
bind time). Node names follow MXNet 1.9.1: step ``t`` of a cell with prefix ``lstm_`` is named
``lstm_t{t}_...``, its begin states ``lstm_begin_state_{k}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError
from ..symbol import Symbol

__all__ = ["RNNParams", "BaseRNNCell"]


class RNNParams:
    """The weight variables of cells, by name, so that cells can share them.

    Parameters
    ----------
    prefix : str, default ''
        Prepended to the name of every variable made here.
    """

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._params: dict[str, Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable ``prefix + name``, made on first use.

        Parameters
        ----------
        name : str
        **kwargs
            Passed to :func:`mxrs.symbol.Variable` when the variable is made (``init=``...).
        """
        full = self._prefix + name
        if full not in self._params:
            self._params[full] = symbol.Variable(full, **kwargs)
        return self._params[full]


class BaseRNNCell:
    """The base class of symbolic RNN cells.

    Parameters
    ----------
    prefix : str, default ''
        Prefix of the cell's node names (and of its weights' names when it makes them).
    params : RNNParams or None
        Weights to share with another cell; a new container (with ``prefix``) when None.
    """

    _num_hidden: int  # the gated cells' state size (what :meth:`unpack_weights` cuts by)

    def __init__(self, prefix: str = "", params: RNNParams | None = None) -> None:
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step and begin-state counters, before making another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs: Symbol, states: list[Any]) -> tuple[Symbol, list[Any]]:
        """One time step.

        Parameters
        ----------
        inputs : Symbol
            The step's input, ``(batch, features)``.
        states : list of Symbol
            The states after the previous step, or :meth:`begin_state`'s.

        Returns
        -------
        output : Symbol
        states : list of Symbol
            The states after this step, laid out as :meth:`begin_state`'s.
        """
        raise NotImplementedError()

    @property
    def params(self) -> RNNParams:
        """The container of this cell's weights (handing it out makes it shared)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list[Any]:
        """Shape (0 for the batch size) and ``__layout__`` of each state."""
        raise NotImplementedError()

    @property
    def state_shape(self) -> list[Any]:
        """The shape of each state."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        """Suffixes of the gates stacked in the i2h/h2h matrices (none: nothing to unpack)."""
        return ()

    def begin_state(self, func: Callable[..., Symbol] = symbol.zeros, **kwargs: Any) -> list[Any]:
        """The states before the first step, one per :attr:`state_info` entry.

        Parameters
        ----------
        func : callable, default mx.sym.zeros
            Makes each state from ``name=`` plus the state's ``shape`` and ``__layout__`` (use
            ``mx.sym.Variable`` to feed the states as inputs).
        **kwargs
            More arguments for ``func``.

        Raises
        ------
        MXNetError
            When a modifier cell wraps this one (call the modifier instead).
        """
        self._check_unmodified()
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **kwargs))
        return states

    def _check_unmodified(self) -> None:
        if self._modified:
            raise MXNetError(
                f"cell {self._prefix!r} is wrapped by a modifier cell (DropoutCell, ZoneoutCell, "
                "ResidualCell...); call the modifier cell instead"
            )

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with this cell's stacked i2h/h2h weights and biases cut into one array per
        gate (``lstm_i2h_weight`` -> ``lstm_i2h_i_weight``...), as copies.

        Parameters
        ----------
        args : dict of str to NDArray
            Typically ``Module.get_params()[0]``.

        Returns
        -------
        dict of str to NDArray
            A new dict; ``args`` is left as it was.
        """
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = _pop(args, f"{self._prefix}{group}_weight")
            bias = _pop(args, f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h : (j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h : (j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The reverse of :meth:`unpack_weights`: the per-gate arrays of ``args`` stacked back
        into this cell's i2h/h2h weights and biases.

        Returns
        -------
        dict of str to NDArray
            A new dict; ``args`` is left as it was.
        """
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [_pop(args, f"{self._prefix}{group}{gate}_{kind}")
                         for gate in self._gate_names]  # fmt: skip
                args[f"{self._prefix}{group}_{kind}"] = nd.concat(*parts, dim=0)
        return args

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: list[Any] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Any, list[Any]]:
        """The graph of ``length`` steps.

        Parameters
        ----------
        length : int
        inputs : Symbol or list of Symbol
            One symbol laid out as ``layout`` (``(batch, length, ...)`` for 'NTC',
            ``(length, batch, ...)`` for 'TNC'), or one ``(batch, ...)`` symbol per step.
        begin_state : list of Symbol or None
            :meth:`begin_state` when None.
        layout : str, default 'NTC'
        merge_outputs : bool or None
            True: one symbol laid out as ``layout``; False: a list with one symbol per step;
            None: whichever is natural for the cell.

        Returns
        -------
        outputs : Symbol or list of Symbol
        states : list of Symbol
            The states after the last step.
        """
        self.reset()
        return self._unroll(length, inputs, begin_state, layout, merge_outputs)

    def _unroll(
        self, length: int, inputs: Any, begin_state: Any, layout: str, merge: bool | None
    ) -> tuple[Any, list[Any]]:
        """:meth:`unroll` after :meth:`reset` (``merge``: ``merge_outputs``): the cell stepped
        over the sequence."""
        steps, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            output, states = self(steps[t], states)
            outputs.append(output)
        merged, _ = normalize_sequence(length, outputs, layout, merge)
        return merged, states

    def _step_name(self) -> str:
        """Count one more step; the prefix of its nodes' names (``{prefix}t{step}_``)."""
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def _get_activation(self, inputs: Symbol, activation: Any, **kwargs: Any) -> Symbol:
        """``activation`` applied to ``inputs``: an ``Activation`` node when it is a name
        ('tanh', 'relu'...), else ``activation(inputs, **kwargs)``."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


def _pop(args: dict[str, Any], name: str) -> Any:
    if name not in args:
        raise MXNetError(f"the parameters have no {name!r} (they have {sorted(args)})")
    return args.pop(name)


def normalize_sequence(
    length: int | None, inputs: Any, layout: str, merge: bool | None
) -> tuple[Any, int]:
    """``inputs`` as one symbol along the time axis of ``layout`` (``merge`` True) or as a list
    of per-step symbols (``merge`` False); None leaves them as they are.

    Returns
    -------
    inputs : Symbol or list of Symbol
    axis : int
        The time axis of ``layout``.

    Raises
    ------
    MXNetError
        For no inputs, a grouped symbol, or a list whose length is not ``length``.
    """
    if inputs is None:
        raise MXNetError("unroll needs inputs: make the input variables before unrolling")
    axis = layout.find("T")
    if axis < 0:
        raise MXNetError(f"layout {layout!r} has no time axis 'T'")
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError(
                    "unroll takes one symbol or a list of symbols, not a grouped symbol; "
                    "pass list(inputs) to give one symbol per step"
                )
            inputs = list(symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll of {length} steps got {len(inputs)} inputs")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs], dim=axis)
    return inputs, axis


def cells_state_info(cells: Sequence[BaseRNNCell]) -> list[Any]:
    """The states of ``cells``, one after another."""
    return [info for c in cells for info in c.state_info]


def cells_begin_state(cells: Sequence[BaseRNNCell], **kwargs: Any) -> list[Any]:
    """The begin states of ``cells``, one after another."""
    return [s for c in cells for s in c.begin_state(**kwargs)]


def cells_unpack_weights(cells: Sequence[BaseRNNCell], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` unpacked by each cell in turn."""
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def cells_pack_weights(cells: Sequence[BaseRNNCell], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` packed by each cell in turn."""
    for cell in cells:
        args = cell.pack_weights(args)
    return args
