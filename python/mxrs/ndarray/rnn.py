"""The fused recurrent operator ``RNN`` as MXNet 1.9.1 defines it: a stack of Elman (``rnn_relu``,
``rnn_tanh``), LSTM or GRU layers, one or two directions each, over a whole ``(T, N, C)``
sequence in one op, with its gradient for the data, the initial states and the parameters.

The parameters are one flat vector, MXNet's packing: every weight, then every bias; within each
group layer by layer, direction by direction (left to right first), ``i2h`` before ``h2h`` (and
``h2r``, the LSTM projection's weight, after them). A layer's gates are stacked along the rows of
its matrices: LSTM ``i, f, c, o``, GRU ``r, z, n``. GRU applies the reset gate to ``h2h``'s output
(bias included), as cuDNN does. :func:`rnn_param_shapes` lists the pieces.

Each direction of a layer is one GEMM over all time steps for the input part and one small GEMM
per step for the recurrent part; the forward pass keeps each step's gate activations, which is
all the backward pass (backpropagation through time) reads again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._rnn_layout import Geometry, check_mode
from .._rnn_layout import rnn_param_shapes as rnn_param_shapes  # the documented layout
from ..autograd import _state
from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply
from .core.rng import generator

__all__ = ["RNN"]


def _sigmoid(xp: Any, x: Any) -> Any:
    # through tanh: no overflow for large negative inputs
    return 0.5 * (xp.tanh(0.5 * x) + 1.0)


def _sigmoid_into(xp: Any, x: Any, out: Any) -> None:
    """``out[...] = sigmoid(x)`` without temporaries."""
    xp.multiply(x, 0.5, out=out)
    xp.tanh(out, out=out)
    out *= 0.5
    out += 0.5


class _Direction:
    """One direction of one layer: its matrices (views into the flat vector) and, after the
    forward pass, what each step saved."""

    gates: Any  # (T, N, G*H): each step's activated gates (the output itself for rnn_*)
    h_prev: Any  # (T, N, R): the state each step started from
    c_prev: Any  # LSTM: the cell state each step started from
    tanh_c: Any  # LSTM: tanh of each step's new cell state
    clip_mask: Any  # LSTM with clipping: where the new cell state was inside the range
    h_raw: Any  # LSTMP: the hidden state before the projection
    hn: Any  # GRU: h2h's output for the candidate (the reset gate multiplies it)

    def __init__(self, params: list[Any], proj: bool) -> None:
        self.wi, self.wh = params[0], params[1]
        self.wr = params[2] if proj else None
        self.bi, self.bh = params[-2], params[-1]


class _RNN(Op):
    def forward(self, x, params, *rest, geo, clip, clip_nan, p, has_cell, has_len, outputs, rng):
        xp = self.xp
        self.geo, self.clip, self.clip_nan, self.has_cell = geo, clip, clip_nan, has_cell
        t_len, batch, _ = x.shape
        work = np.float32 if x.dtype == np.float16 else x.dtype
        self.dtype = x.dtype
        h0 = rest[0].astype(work, copy=False)
        c0 = rest[1].astype(work, copy=False) if has_cell else None
        lengths = rest[-1] if has_len else None
        self.masks = None
        if lengths is not None:
            steps = xp.arange(t_len).reshape(t_len, 1, 1)
            self.masks = (steps < lengths.astype(np.int64).reshape(1, batch, 1)).astype(work)
        self.params = params.astype(work, copy=False)
        self.dirs = self._unpack(self.params, geo)
        self.layer_inputs, self.drops = [], []
        hy, cy = [], []
        layer_in = x.astype(work, copy=False)
        for layer in range(geo.layers):
            if layer > 0 and rng:  # the generator is taken inside the dispatcher, as Dropout's
                keep = self.be.uniform(generator(self.ctx), 0.0, 1.0, layer_in.shape, work) >= p
                drop = keep.astype(work) * (1.0 / (1.0 - p))
                layer_in = layer_in * drop
                self.drops.append(drop)
            else:
                self.drops.append(None)
            self.layer_inputs.append(layer_in)
            outs = []
            for d in range(geo.dirs):
                k = layer * geo.dirs + d
                direction = self.dirs[k]
                cell0 = c0[k] if c0 is not None else None
                y, h, c = self._forward_dir(direction, layer_in, h0[k], cell0, reverse=d == 1)
                outs.append(y)
                hy.append(h)
                cy.append(c)
            layer_in = outs[0] if geo.dirs == 1 else xp.concatenate(outs, axis=2)
        out = layer_in.astype(self.dtype, copy=False)
        if not outputs:
            return out
        states: tuple[Any, ...] = (xp.stack(hy).astype(self.dtype, copy=False),)
        if has_cell:
            states += (xp.stack(cy).astype(self.dtype, copy=False),)
        return (out, *states)

    @staticmethod
    def _unpack(params: Any, geo: Geometry) -> list[_Direction]:
        pieces, at = [], 0
        for _, shape in geo.shapes():
            size = int(np.prod(shape))
            pieces.append(params[at : at + size].reshape(shape))
            at += size
        per = 3 if geo.proj else 2
        n = geo.layers * geo.dirs
        weights, biases = pieces[: n * per], pieces[n * per :]
        return [
            _Direction(weights[k * per : (k + 1) * per] + biases[2 * k : 2 * k + 2], bool(geo.proj))
            for k in range(n)
        ]

    def _forward_dir(self, dr: _Direction, x: Any, h: Any, c: Any, reverse: bool):
        xp, mode = self.xp, self.geo.mode
        t_len, batch, _ = x.shape
        gh = dr.wh.shape[0]
        # the input part of every step in one GEMM; h2h's bias joins it where nothing scales
        # it apart (GRU's reset gate multiplies the candidate's h2h output, bias included)
        bias = dr.bi if mode == "gru" else dr.bi + dr.bh
        xw = (x.reshape(t_len * batch, -1) @ dr.wi.T + bias).reshape(t_len, batch, gh)
        y = xp.empty((t_len, batch, self.geo.rec), dtype=x.dtype)
        dr.gates = xp.empty_like(xw)  # the activated gates of each step
        dr.h_prev = xp.empty((t_len, batch, h.shape[-1]), dtype=x.dtype)
        if mode == "lstm":
            dr.c_prev = xp.empty((t_len, batch, self.geo.hidden), dtype=x.dtype)
            dr.tanh_c = xp.empty_like(dr.c_prev)
            dr.clip_mask = xp.empty_like(dr.c_prev) if self.clip is not None else None
            dr.h_raw = xp.empty_like(dr.c_prev) if dr.wr is not None else None
        elif mode == "gru":
            dr.hn = xp.empty((t_len, batch, self.geo.hidden), dtype=x.dtype)
        whT = dr.wh.T
        for t in range(t_len - 1, -1, -1) if reverse else range(t_len):
            dr.h_prev[t] = h
            pre = h @ whT
            if mode == "lstm":
                dr.c_prev[t] = c
                pre += xw[t]
                h_new, c_new = self._lstm_step(dr, t, pre, c)
            elif mode == "gru":
                pre += dr.bh
                h_new, c_new = self._gru_step(dr, t, xw[t], pre, h), None
            else:
                pre += xw[t]
                h_new = xp.tanh(pre, out=pre) if mode == "rnn_tanh" else xp.maximum(pre, 0, out=pre)
                dr.gates[t] = h_new
                c_new = None
            if self.masks is not None:
                m = self.masks[t]
                y[t] = h_new * m
                h = h_new * m + h * (1 - m)
                if c_new is not None:
                    c = c_new * m + c * (1 - m)
            else:
                y[t] = h = h_new
                c = c_new
        return y, h, c

    def _lstm_step(self, dr: _Direction, t: int, g: Any, c: Any) -> tuple[Any, Any]:
        xp, hidden = self.xp, self.geo.hidden
        act = dr.gates[t]
        _sigmoid_into(xp, g[:, : 2 * hidden], act[:, : 2 * hidden])
        xp.tanh(g[:, 2 * hidden : 3 * hidden], out=act[:, 2 * hidden : 3 * hidden])
        _sigmoid_into(xp, g[:, 3 * hidden :], act[:, 3 * hidden :])
        i, f = act[:, :hidden], act[:, hidden : 2 * hidden]
        cc, o = act[:, 2 * hidden : 3 * hidden], act[:, 3 * hidden :]
        c_new = f * c
        c_new += i * cc
        if self.clip is not None:
            lo, hi = self.clip
            if self.clip_nan:  # fmax/fmin take the number over a NaN
                clipped = xp.fmin(xp.fmax(c_new, lo), hi)
            else:
                clipped = xp.minimum(xp.maximum(c_new, lo), hi)
            dr.clip_mask[t] = (c_new >= lo) & (c_new <= hi)
            c_new = clipped
        tc = dr.tanh_c[t]
        xp.tanh(c_new, out=tc)
        h_new = o * tc
        if dr.wr is not None:
            dr.h_raw[t] = h_new
            h_new = h_new @ dr.wr.T
        return h_new, c_new

    def _gru_step(self, dr: _Direction, t: int, xw: Any, hw: Any, h: Any) -> Any:
        xp, hidden = self.xp, self.geo.hidden
        act = dr.gates[t]
        act[:, : 2 * hidden] = _sigmoid(xp, xw[:, : 2 * hidden] + hw[:, : 2 * hidden])
        r, z = act[:, :hidden], act[:, hidden : 2 * hidden]
        hn = dr.hn[t] = hw[:, 2 * hidden :]
        n = act[:, 2 * hidden :] = xp.tanh(xw[:, 2 * hidden :] + r * hn)
        return (1 - z) * n + z * h

    def backward(self, gy, ghy=None, gcy=None):
        xp, geo = self.xp, self.geo
        work = self.params.dtype
        n_dir = geo.layers * geo.dirs
        t_len, batch = self.layer_inputs[0].shape[:2]
        grads: list[Any] = [None] * n_dir
        gh_top = ghy.astype(work, copy=False) if ghy is not None else None
        gc_top = gcy.astype(work, copy=False) if gcy is not None else None
        dh0 = xp.zeros((n_dir, batch, geo.rec), dtype=work)
        dc0 = xp.zeros((n_dir, batch, geo.hidden), dtype=work) if self.has_cell else None
        g_out = (
            gy.astype(work, copy=False)
            if gy is not None
            else xp.zeros((t_len, batch, geo.dirs * geo.rec), dtype=work)
        )
        for layer in range(geo.layers - 1, -1, -1):
            x = self.layer_inputs[layer]
            gx = None
            for d in range(geo.dirs):
                k = layer * geo.dirs + d
                part = g_out[:, :, d * geo.rec : (d + 1) * geo.rec]
                gh = gh_top[k] if gh_top is not None else None
                gc = gc_top[k] if gc_top is not None else None
                res = self._backward_dir(self.dirs[k], x, part, gh, gc, reverse=d == 1)
                grads[k], dxd, dh0[k], dcd = res
                if dc0 is not None:
                    dc0[k] = dcd
                gx = dxd if gx is None else gx + dxd
            if self.drops[layer] is not None:
                gx = gx * self.drops[layer]
            g_out = gx
        dparams = self._pack(grads)
        assert g_out is not None
        out = [g_out.astype(self.dtype, copy=False), dparams.astype(self.dtype, copy=False)]
        out.append(dh0.astype(self.dtype, copy=False))
        if dc0 is not None:
            out.append(dc0.astype(self.dtype, copy=False))
        if self.masks is not None:
            out.append(None)
        return tuple(out)

    def _pack(self, grads: list[tuple[Any, ...]]) -> Any:
        weights = [w.ravel() for g in grads for w in g[:-2]]
        biases = [b for g in grads for b in g[-2:]]
        return self.xp.concatenate(weights + biases)

    def _backward_dir(self, dr: _Direction, x: Any, gy: Any, gh: Any, gc: Any, reverse: bool):
        xp, geo = self.xp, self.geo
        t_len, batch, _ = x.shape
        hidden, mode = geo.hidden, geo.mode
        # each step's gradient of the input projection, and of h2h's output where it differs
        # (GRU's candidate): the weight gradients are one GEMM over all steps after the loop
        dg_x = xp.empty_like(dr.gates)
        dg_h = xp.empty_like(dr.gates) if mode == "gru" else dg_x
        dr_all = xp.empty((t_len, batch, geo.rec), dtype=x.dtype) if dr.wr is not None else None
        dh_next = gh.copy() if gh is not None else xp.zeros((batch, geo.rec), dtype=x.dtype)
        dc_next = None
        if mode == "lstm":
            dc_next = gc.copy() if gc is not None else xp.zeros((batch, hidden), dtype=x.dtype)
        for t in range(t_len) if reverse else range(t_len - 1, -1, -1):
            m = self.masks[t] if self.masks is not None else None
            if m is None:
                dh = gy[t] + dh_next
            else:  # past a sequence's end the step passes its state on and outputs zero
                dh_pass = dh_next * (1 - m)
                dh = (gy[t] + dh_next) * m
            if mode == "lstm":
                if dr_all is not None:
                    dr_all[t] = dh
                    dh = dh @ dr.wr
                dg_x[t], dc_next = self._lstm_back(dr, t, dh, dc_next, m)
            elif mode == "gru":
                dg_x[t], dg_h[t], dh_direct = self._gru_back(dr, t, dh)
            else:
                act = dr.gates[t]
                dg_x[t] = dh * (1 - act * act) if mode == "rnn_tanh" else dh * (act > 0)
            dh_next = dg_h[t] @ dr.wh
            if mode == "gru":
                dh_next += dh_direct
            if m is not None:
                dh_next += dh_pass
        rows = t_len * batch
        flat_h = dg_h.reshape(rows, -1)
        dwh = flat_h.T @ dr.h_prev.reshape(rows, -1)
        dbh = flat_h.sum(axis=0)
        flat = dg_x.reshape(rows, -1)
        dwi = flat.T @ x.reshape(rows, -1)
        dbi = flat.sum(axis=0)
        dx = (flat @ dr.wi).reshape(t_len, batch, -1)
        weights: tuple[Any, ...] = (dwi, dwh)
        if dr_all is not None:
            weights += (dr_all.reshape(rows, -1).T @ dr.h_raw.reshape(rows, -1),)
        return (*weights, dbi, dbh), dx, dh_next, dc_next

    def _lstm_back(self, dr: _Direction, t: int, dh: Any, dc_next: Any, m: Any):
        """One step back through an LSTM cell: the gates' gradient and the previous cell
        state's, from the gradient of the (unprojected) hidden state ``dh``."""
        xp, hidden = self.xp, self.geo.hidden
        act = dr.gates[t]
        i, f = act[:, :hidden], act[:, hidden : 2 * hidden]
        cc, o = act[:, 2 * hidden : 3 * hidden], act[:, 3 * hidden :]
        tc = dr.tanh_c[t]
        dc = dh * o * (1 - tc * tc)
        dc = dc + (dc_next if m is None else dc_next * m)
        if dr.clip_mask is not None:
            dc = dc * dr.clip_mask[t]
        dg = xp.empty_like(act)
        dg[:, :hidden] = dc * cc * i * (1 - i)
        dg[:, hidden : 2 * hidden] = dc * dr.c_prev[t] * f * (1 - f)
        dg[:, 2 * hidden : 3 * hidden] = dc * i * (1 - cc * cc)
        dg[:, 3 * hidden :] = dh * tc * o * (1 - o)
        dc_prev = dc * f
        if m is not None:
            dc_prev += dc_next * (1 - m)
        return dg, dc_prev

    def _gru_back(self, dr: _Direction, t: int, dh: Any) -> tuple[Any, Any, Any]:
        xp, hidden = self.xp, self.geo.hidden
        act = dr.gates[t]
        r, z, n = act[:, :hidden], act[:, hidden : 2 * hidden], act[:, 2 * hidden :]
        h_prev = dr.h_prev[t]
        dn = dh * (1 - z) * (1 - n * n)
        dz = dh * (h_prev - n) * z * (1 - z)
        dr_ = dn * dr.hn[t] * r * (1 - r)
        dgx = xp.concatenate([dr_, dz, dn], axis=1)
        dgh = xp.concatenate([dr_, dz, dn * r], axis=1)
        return dgx, dgh, dh * z


def _positive(name: str, value: Any) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise MXNetError(f"RNN: {name} must be a positive integer, not {value!r}") from None
    if v <= 0 or v != value:
        raise MXNetError(f"RNN: {name} must be a positive integer, not {value!r}")
    return v


def RNN(
    data: ArrayT,
    parameters: ArrayT,
    state: ArrayT,
    state_cell: ArrayT | None = None,
    sequence_length: ArrayT | None = None,
    state_size: int = 0,
    num_layers: int = 0,
    bidirectional: bool = False,
    mode: str = "",
    p: float = 0.0,
    state_outputs: bool = False,
    projection_size: int | None = None,
    lstm_state_clip_min: float | None = None,
    lstm_state_clip_max: float | None = None,
    lstm_state_clip_nan: bool = False,
    use_sequence_length: bool = False,
    cudnn_off: bool = False,
) -> Any:
    """A stack of recurrent layers applied to a whole sequence (MXNet's fused ``RNN``).

    Parameters
    ----------
    data : NDArray
        ``(T, N, C)``: sequence length, batch, features.
    parameters : NDArray
        The flat vector of every weight and bias (see the module docstring and
        :func:`rnn_param_shapes` for its layout).
    state : NDArray
        The initial hidden states, ``(num_layers * directions, N, state_size)`` (the projection's
        size for an LSTM with ``projection_size``).
    state_cell : NDArray, optional
        The LSTM's initial cell states, ``(num_layers * directions, N, state_size)``; only for
        ``mode='lstm'``.
    sequence_length : NDArray, optional
        ``(N,)``: each sequence's length, with ``use_sequence_length=True``; steps past it give
        zero outputs and leave the states as they were (so the states returned are those at each
        sequence's end, and the reverse direction starts there). Without the cell state, this
        may be given in ``state_cell``'s place, as MXNet's positional inputs allow.
    state_size, num_layers : int
        Hidden units per layer and direction; stacked layers.
    bidirectional : bool
        Run every layer in both directions and concatenate the two outputs.
    mode : {'rnn_relu', 'rnn_tanh', 'lstm', 'gru'}
    p : float
        Dropout on each layer's input but the first's, in training only.
    state_outputs : bool
        Return ``[output, hy]`` (``[output, hy, cy]`` for LSTM) instead of the output alone.
    projection_size : int, optional
        LSTM with a projection (LSTMP): the hidden state passed on is ``h2r_weight @ h``.
    lstm_state_clip_min, lstm_state_clip_max : float, optional
        Clip LSTM cell states into this range after every step (the gradient is zero where a
        value was clipped); ``lstm_state_clip_nan=True`` turns NaN into the bound too.

    Returns
    -------
    NDArray or list of NDArray
        ``output`` ``(T, N, directions * state_size)``, then the final states when
        ``state_outputs``.

    Raises
    ------
    MXNetError
        For an unknown mode, non-positive sizes, or arrays whose shapes do not fit these
        attributes (the message names the array and the shape expected).
    """
    check_mode(mode, projection_size)
    hidden = _positive("state_size", state_size)
    layers = _positive("num_layers", num_layers)
    proj = _positive("projection_size", projection_size) if projection_size else 0
    if mode != "lstm" and state_cell is not None:
        if sequence_length is not None:
            raise MXNetError(f"RNN: mode {mode!r} takes no state_cell")
        state_cell, sequence_length = None, state_cell
    if mode == "lstm" and state_cell is None:
        raise MXNetError("RNN: mode 'lstm' needs state_cell, the initial cell states")
    if use_sequence_length and sequence_length is None:
        raise MXNetError("RNN: use_sequence_length=True needs sequence_length")
    if data.ndim != 3:
        raise MXNetError(f"RNN: data must be (T, N, C), got shape {data.shape}")
    t_len, batch, feats = data.shape
    dirs = 2 if bidirectional else 1
    geo = Geometry(mode, hidden, layers, dirs, feats, proj)
    total = sum(int(np.prod(s)) for _, s in geo.shapes())
    expect: dict[str, tuple[Any, tuple[int, ...]]] = {
        "parameters": (parameters, (total,)),
        "state": (state, (layers * dirs, batch, geo.rec)),
    }
    if state_cell is not None:
        expect["state_cell"] = (state_cell, (layers * dirs, batch, hidden))
    if use_sequence_length:
        expect["sequence_length"] = (sequence_length, (batch,))
    for name, (arr, shape) in expect.items():
        if tuple(arr.shape) != shape:
            raise MXNetError(
                f"RNN: {name} must have shape {shape} for data {data.shape}, mode {mode!r}, "
                f"state_size {hidden}, num_layers {layers}"
                f"{', bidirectional' if bidirectional else ''}; got {tuple(arr.shape)}"
            )
    clip = None
    if lstm_state_clip_min is not None or lstm_state_clip_max is not None:
        if mode != "lstm":
            raise MXNetError("RNN: lstm_state_clip_min/max are only for mode 'lstm'")
        lo = -np.inf if lstm_state_clip_min is None else float(lstm_state_clip_min)
        hi = np.inf if lstm_state_clip_max is None else float(lstm_state_clip_max)
        if lo > hi:
            raise MXNetError(f"RNN: lstm_state_clip_min {lo} is above lstm_state_clip_max {hi}")
        clip = (lo, hi)
    arrays: list[Any] = [data, parameters, state]
    if state_cell is not None:
        arrays.append(state_cell)
    if use_sequence_length:
        arrays.append(sequence_length)
    op_attrs = dict(
        geo=geo,
        clip=clip,
        clip_nan=bool(lstm_state_clip_nan),
        p=float(p),
        has_cell=state_cell is not None,
        has_len=bool(use_sequence_length),
        outputs=bool(state_outputs),
        rng=p > 0 and _state.training,
    )
    return apply(_RNN, arrays, **op_attrs)
