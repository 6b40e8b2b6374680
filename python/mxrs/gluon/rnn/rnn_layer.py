"""The fused recurrent layers ``RNN``, ``LSTM`` and ``GRU``: a whole stack of layers run by the
``RNN`` operator over the sequence at once.

Each layer and direction keeps MXNet's four parameters, ``{l|r}{layer}_i2h_weight``,
``_h2h_weight``, ``_i2h_bias``, ``_h2h_bias`` (and ``_h2r_weight`` for an LSTM with a
projection); the forward pass packs them into the operator's flat vector. Files written by
:meth:`save_parameters` name them as MXNet 1.9.1 does, after the equivalent stack of cells
(``_unfused.0.l_cell.i2h_weight``), so either side loads the other's.
"""

from __future__ import annotations

import re
from typing import Any

from ... import ndarray, symbol
from ..._rnn_layout import GATES
from ...base import InvalidShapeError, MXNetError
from ..block import HybridBlock
from ..parameter import Parameter

__all__ = ["RNN", "LSTM", "GRU"]

_PARAM = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """What the three fused layers share; see :class:`LSTM` for the arguments."""

    def __init__(
        self,
        hidden_size: int,
        num_layers: int,
        layout: str,
        dropout: float,
        bidirectional: bool,
        input_size: int,
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        mode: str,
        projection_size: int | None,
        h2r_weight_initializer: Any,
        lstm_state_clip_min: float | None,
        lstm_state_clip_max: float | None,
        lstm_state_clip_nan: bool,
        dtype: Any,
        use_sequence_length: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise MXNetError(
                f"{type(self).__name__}: layout must be 'TNC' or 'NTC', not {layout!r}"
            )
        if num_layers < 1 or hidden_size < 1:
            raise MXNetError(
                f"{type(self).__name__}: hidden_size and num_layers must be positive, got "
                f"{hidden_size} and {num_layers}"
            )
        self._hidden_size = hidden_size
        self._projection_size = projection_size or None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = GATES[mode]
        self.skip_states: bool | None = None
        gh, ni, nh = self._gates * hidden_size, input_size, hidden_size
        rec = self._projection_size or nh
        for i in range(num_layers):
            for d in "lr"[: self._dir]:
                tag = f"{d}{i}_"
                self._register(tag + "i2h_weight", (gh, ni), i2h_weight_initializer)
                self._register(tag + "h2h_weight", (gh, rec), h2h_weight_initializer)
                self._register(tag + "i2h_bias", (gh,), i2h_bias_initializer)
                self._register(tag + "h2h_bias", (gh,), h2h_bias_initializer)
                if self._projection_size:
                    self._register(tag + "h2r_weight", (rec, nh), h2r_weight_initializer)
            ni = rec * self._dir

    def _register(self, name: str, shape: tuple[int, ...], init: Any) -> Parameter:
        p = self.params.get(
            name, shape=shape, init=init, allow_deferred_init=True, dtype=self._dtype
        )
        setattr(self, name, p)
        return p

    def __repr__(self) -> str:
        shape = self._reg_params["l0_i2h_weight"].shape or (0, 0)
        s = f"{type(self).__name__}({shape[1] or None} -> {shape[0] // self._gates}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        """Structural names as MXNet 1.9.1 writes them for a fused layer: those of the
        equivalent stack of cells (``_unfused.<layer>.<l|r>_cell.<name>``)."""
        if prefix:
            prefix += "."
        out = {}
        for key, val in self._reg_params.items():
            m = _PARAM.match(key)
            if m is None:
                out[prefix + key] = val
                continue
            d, layer, kind, what = m.groups()
            cell = f"{d}_cell." if self._dir == 2 else ""
            out[f"{prefix}_unfused.{layer}.{cell}{kind}_{what}"] = val
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def state_info(self, batch_size: int = 0) -> list[dict[str, Any]]:
        """The shape and layout of each begin state for a batch of ``batch_size``."""
        n, rec = self._num_layers * self._dir, self._projection_size or self._hidden_size
        info = [{"shape": (n, batch_size, rec), "__layout__": "LNC"}]
        if self._mode == "lstm":
            info.append({"shape": (n, batch_size, self._hidden_size), "__layout__": "LNC"})
        return info

    def _unfuse(self) -> Any:
        """The same network as a stack of recurrent cells sharing this layer's parameters.

        Raises
        ------
        MXNetError
            For a layer with a projection or state clipping, which cells do not have.
        """
        from . import rnn_cell

        if self._projection_size:
            raise MXNetError("_unfuse does not support a projection layer")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise MXNetError("_unfuse does not support state clipping")
        inits = {
            "i2h_weight_initializer": self._i2h_weight_initializer,
            "h2h_weight_initializer": self._h2h_weight_initializer,
            "i2h_bias_initializer": self._i2h_bias_initializer,
            "h2h_bias_initializer": self._h2h_bias_initializer,
        }

        def cell(prefix: str, input_size: int) -> Any:
            kw = dict(inits, prefix=prefix, input_size=input_size)
            if self._mode == "lstm":
                return rnn_cell.LSTMCell(self._hidden_size, **kw)
            if self._mode == "gru":
                return rnn_cell.GRUCell(self._hidden_size, **kw)
            act = "relu" if self._mode == "rnn_relu" else "tanh"
            return rnn_cell.RNNCell(self._hidden_size, activation=act, **kw)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(cell(f"l{i}_", ni), cell(f"r{i}_", ni)))
                else:
                    stack.add(cell(f"l{i}_", ni))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype: Any) -> None:
        """Convert the parameters (and the begin states made from now on) to ``dtype``."""
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(
        self, batch_size: int = 0, func: Any = ndarray.zeros, **kwargs: Any
    ) -> list[Any]:
        """The initial states for a batch of ``batch_size``.

        Parameters
        ----------
        batch_size : int
            The batch size (``N``); only needed for NDArrays.
        func : callable, default ``mx.nd.zeros``
            Makes each state from ``name``, ``shape`` and ``__layout__`` (and ``kwargs``):
            ``mx.nd.ones``, ``mx.sym.zeros``, ``mx.sym.var``...
        **kwargs
            More arguments for ``func`` (``ctx``, ``dtype``...).

        Returns
        -------
        list
            One state for RNN and GRU, two (hidden and cell) for LSTM.
        """
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def infer_shape(self, inputs: Any, *args: Any) -> None:
        """Set the first layer's input size from ``inputs``."""
        feats = inputs.shape[2]
        for d in "lr"[: self._dir]:
            w = getattr(self, f"{d}0_i2h_weight")
            w.shape = (w.shape[0], feats)

    def __call__(
        self, inputs: Any, states: Any = None, sequence_length: Any = None, **kwargs: Any
    ) -> Any:
        """Run the layer: the output alone without ``states``, else ``(output, states)``.

        ``states`` default to zeros (:meth:`begin_state`); with ``use_sequence_length=True``
        the layer takes each sequence's length as ``sequence_length``.
        """
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, (ndarray.NDArray, symbol.Symbol)):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(  # type: ignore[override]  # MXNet's signature: states second
        self, F: Any, inputs: Any, states: Any, sequence_length: Any = None, **kwargs: Any
    ) -> Any:
        """The sequence through the ``RNN`` operator."""
        if F is ndarray:
            batch = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch), strict=False):
                if state.shape != info["shape"]:
                    raise InvalidShapeError(
                        f"Invalid recurrent state shape. Expecting {info['shape']}, got "
                        f"{state.shape}."
                    )
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, 0, 1)
        kinds = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        names = [
            f"{d}{i}_{g}_weight"
            for i in range(self._num_layers)
            for d in "lr"[: self._dir]
            for g in kinds
        ]
        names += [
            f"{d}{i}_{g}_bias"
            for i in range(self._num_layers)
            for d in "lr"[: self._dir]
            for g in ("i2h", "h2h")
        ]
        flat = F.concat(*[kwargs[n].reshape(-1) for n in names], dim=0)
        extra = [sequence_length] if self._use_sequence_length else []
        rnn = F.RNN(
            inputs,
            flat,
            *states,
            *extra,
            use_sequence_length=self._use_sequence_length,
            state_size=self._hidden_size,
            projection_size=self._projection_size,
            num_layers=self._num_layers,
            bidirectional=self._dir == 2,
            p=self._dropout,
            state_outputs=True,
            mode=self._mode,
            lstm_state_clip_min=self._lstm_state_clip_min,
            lstm_state_clip_max=self._lstm_state_clip_max,
            lstm_state_clip_nan=self._lstm_state_clip_nan,
        )
        outputs, new_states = rnn[0], list(rnn[1:])
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs if self.skip_states else (outputs, new_states)


class RNN(_RNNLayer):
    r"""A stack of Elman RNN layers, ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` with
    ``act`` tanh or ReLU, over a whole sequence.

    Parameters
    ----------
    hidden_size : int
        Features of the hidden state.
    num_layers : int, default 1
    activation : {'relu', 'tanh'}, default 'relu'
    layout : {'TNC', 'NTC'}, default 'TNC'
        Time, batch and features: the order of the input's and output's axes.
    dropout : float, default 0
        Dropout on each layer's output but the last's, in training.
    bidirectional : bool, default False
        Run each layer in both directions; the output then has ``2 * hidden_size`` features.
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer
        The parameters' initializers (biases default to zeros).
    input_size : int, default 0
        Input features; 0 infers them from the first input.
    dtype : str, default 'float32'
    use_sequence_length : bool, default False
        Take each sequence's length as a third argument.

    Inputs are ``data`` (``layout``) and optionally ``states``, a list with one
    ``(num_layers * directions, N, hidden_size)`` array; the output is the sequence's outputs
    alone, or ``(output, new_states)`` when ``states`` were given.
    """

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        activation: str = "relu",
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        input_size: int = 0,
        dtype: Any = "float32",
        use_sequence_length: bool = False,
        **kwargs: Any,
    ) -> None:
        if activation not in ("relu", "tanh"):
            raise MXNetError(f"RNN: activation must be 'relu' or 'tanh', not {activation!r}")
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False, dtype,
            use_sequence_length=use_sequence_length, **kwargs,
        )  # fmt: skip


class LSTM(_RNNLayer):
    r"""A stack of LSTM layers over a whole sequence: gates ``i, f, o = sigmoid(...)``,
    ``g = tanh(...)``, ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``.

    Parameters
    ----------
    hidden_size, num_layers, layout, dropout, bidirectional, input_size, dtype
        As for :class:`RNN`.
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer
        The parameters' initializers (biases default to zeros).
    projection_size : int, optional
        An LSTM with a projection (LSTMP): the state passed on and output is
        ``h2r_weight @ h``, of this size.
    h2r_weight_initializer
        The projection's initializer.
    state_clip_min, state_clip_max : float, optional
        Clip the cell state into this range after every step.
    state_clip_nan : bool, default False
        Clip NaN cell states to the bound too.
    use_sequence_length : bool, default False

    ``states`` are ``[h, c]``, ``(num_layers * directions, N, hidden_size)`` each (``h`` has
    ``projection_size`` features with a projection).
    """

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        input_size: int = 0,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        projection_size: int | None = None,
        h2r_weight_initializer: Any = None,
        state_clip_min: float | None = None,
        state_clip_max: float | None = None,
        state_clip_nan: bool = False,
        dtype: Any = "float32",
        use_sequence_length: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
            state_clip_min, state_clip_max, state_clip_nan, dtype,
            use_sequence_length=use_sequence_length, **kwargs,
        )  # fmt: skip


class GRU(_RNNLayer):
    r"""A stack of GRU layers over a whole sequence: ``r, z = sigmoid(...)``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h_t = (1 - z) * n + z * h_{t-1}``.

    Parameters are as for :class:`RNN` (without ``activation``); ``states`` are one
    ``(num_layers * directions, N, hidden_size)`` array.
    """

    def __init__(
        self,
        hidden_size: int,
        num_layers: int = 1,
        layout: str = "TNC",
        dropout: float = 0,
        bidirectional: bool = False,
        input_size: int = 0,
        i2h_weight_initializer: Any = None,
        h2h_weight_initializer: Any = None,
        i2h_bias_initializer: Any = "zeros",
        h2h_bias_initializer: Any = "zeros",
        dtype: Any = "float32",
        use_sequence_length: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            hidden_size, num_layers, layout, dropout, bidirectional, input_size,
            i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer, "gru", None, None, None, None, False, dtype,
            use_sequence_length=use_sequence_length, **kwargs,
        )  # fmt: skip
