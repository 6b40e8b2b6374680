"""``CTCLoss`` (``ctc_loss``): Connectionist Temporal Classification, MXNet's operator.

The loss is one primitive op, :class:`_CTC`: its forward runs the CTC forward-backward
recursions in log space, vectorised over the batch (a Python loop over time only), and keeps the
gradient with respect to the activations, ``softmax(x) - occupancy``, for its backward. The op
works with the blank as the last class; ``blank_label='first'`` (MXNet's default: blank 0,
labels ``1 .. C-1`` padded with 0) is mapped onto it by rolling the classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["CTCLoss", "ctc_loss"]

# Stands for log(0): finite, so that sums and differences of "impossible" log-probabilities never
# make NaNs; any log-probability below _IMPOSSIBLE is treated as zero probability.
_NEG = -1e30
_IMPOSSIBLE = -1e29


def _logsumexp3(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """Elementwise ``log(exp(a) + exp(b) + exp(c))``, stable."""
    m = xp.maximum(xp.maximum(a, b), c)
    return m + xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m))


class _CTC(Op):
    """CTC negative log-likelihood per sample of activations ``(T, N, C)`` and labels ``(N, L)``.

    Optional inputs after the labels: the per-sample sequence lengths (``use_pred``) and the
    per-sample label lengths (``use_label``), in that order.
    """

    def forward(self, data: Any, label: Any, *lengths: Any, use_pred: bool, use_label: bool) -> Any:
        xp = self.xp
        steps, batch, ncls = data.shape
        blank = ncls - 1
        x = data.astype(np.float64)
        lp = x - x.max(axis=-1, keepdims=True)
        lp = lp - xp.log(xp.exp(lp).sum(axis=-1, keepdims=True))  # log_softmax, (T, N, C)
        rest = list(lengths)
        if use_pred:
            t_len = xp.rint(rest.pop(0).reshape(-1).astype(np.float64)).astype(np.int64)
            if t_len.shape[0] != batch:
                raise MXNetError(
                    f"CTCLoss: pred_lengths has {t_len.shape[0]} values, batch {batch}"
                )
            if int(t_len.min()) < 1 or int(t_len.max()) > steps:
                raise MXNetError(f"CTCLoss: pred_lengths must lie in [1, {steps}]")
        else:
            t_len = xp.full((batch,), steps, dtype=np.int64)
        lab_f = label.astype(np.float64)
        width = lab_f.shape[1]
        if use_label:
            l_len = xp.rint(rest.pop(0).reshape(-1).astype(np.float64)).astype(np.int64)
            if l_len.shape[0] != batch:
                raise MXNetError(
                    f"CTCLoss: label_lengths has {l_len.shape[0]} values, batch {batch}"
                )
            if width and (int(l_len.min()) < 0 or int(l_len.max()) > width):
                raise MXNetError(f"CTCLoss: label_lengths must lie in [0, {width}]")
            if not width and int(xp.abs(l_len).max()) != 0:
                raise MXNetError("CTCLoss: label_lengths must be 0 for empty labels")
        else:
            pad = lab_f == -1
            l_len = xp.where(pad.any(axis=1), pad.argmax(axis=1), width).astype(np.int64)
        lab = xp.rint(lab_f).astype(np.int64)
        used = xp.arange(width)[None, :] < l_len[:, None]
        if bool(((lab < 0) | (lab >= ncls))[used].any()):
            raise MXNetError(f"CTCLoss: labels must be class indices in [0, {ncls - 2}]")

        # Extended labels: blank, l1, blank, l2, ..., blank; positions past 2*len+1 are unused.
        slen = 2 * width + 1
        ext = xp.full((batch, slen), blank, dtype=np.int64)
        ext[:, 1::2] = xp.where(used, lab, blank)
        s_len = 2 * l_len + 1
        s_idx = xp.arange(slen)[None, :]
        rows = xp.arange(batch)[:, None]
        emit = lp[:, rows, ext]  # (T, N, S): log-probability of each extended label at each step
        emit = xp.where((s_idx < s_len[:, None])[None], emit, _NEG)
        # A label may be reached from two positions back when it differs from the label there.
        skip = xp.zeros((batch, slen), dtype=bool)
        if slen > 2:
            skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
        neg1 = xp.full((batch, 1), _NEG)
        neg2 = xp.full((batch, 2), _NEG)

        alpha = xp.full((steps, batch, slen), _NEG)
        alpha[0, :, :2] = emit[0, :, :2]
        for t in range(1, steps):
            prev = alpha[t - 1]
            a1 = xp.concatenate([neg1, prev], axis=1)[:, :slen]
            a2 = xp.where(skip, xp.concatenate([neg2, prev], axis=1)[:, :slen], _NEG)
            new = xp.maximum(_logsumexp3(xp, prev, a1, a2) + emit[t], _NEG)
            alpha[t] = xp.where((t < t_len)[:, None], new, prev)  # frozen past the sequence end
        last = alpha[steps - 1]
        end1 = xp.take_along_axis(last, (s_len - 1)[:, None], axis=1)[:, 0]
        end2 = xp.take_along_axis(last, xp.maximum(s_len - 2, 0)[:, None], axis=1)[:, 0]
        end2 = xp.where(s_len >= 2, end2, _NEG)
        log_p = xp.logaddexp(end1, end2)
        feasible = log_p > _IMPOSSIBLE

        beta = xp.full((steps, batch, slen), _NEG)
        ends = (s_idx == (s_len - 1)[:, None]) | (s_idx == (s_len - 2)[:, None])
        skip_next = xp.concatenate([skip, xp.zeros((batch, 2), dtype=bool)], axis=1)[:, 2:]
        for t in range(steps - 1, -1, -1):
            init = xp.where(ends, emit[t], _NEG)
            if t == steps - 1:
                beta[t] = xp.where((t_len == t + 1)[:, None], init, _NEG)
                continue
            nxt = beta[t + 1]
            b1 = xp.concatenate([nxt, neg1], axis=1)[:, 1:]
            b2 = xp.where(skip_next, xp.concatenate([nxt, neg2], axis=1)[:, 2:], _NEG)
            rec = xp.maximum(_logsumexp3(xp, nxt, b1, b2) + emit[t], _NEG)
            at_end = (t_len == t + 1)[:, None]
            inside = (t_len > t + 1)[:, None]
            beta[t] = xp.where(at_end, init, xp.where(inside, rec, _NEG))

        # Occupancy of each extended position: alpha * beta / emission / P, zero past the end.
        live = (xp.arange(steps)[:, None] < t_len[None, :]) & feasible[None, :]
        expo = xp.minimum(alpha + beta - emit - log_p[None, :, None], 0.0)
        occ_s = xp.where(live[:, :, None], xp.exp(expo), 0.0)
        occ = xp.zeros((steps, batch, ncls))
        flat_rows = xp.arange(batch)
        for s in range(slen):  # each (sample, class) pair appears once per s: += is exact
            occ[:, flat_rows, ext[:, s]] += occ_s[:, :, s]
        prob = xp.exp(lp)
        self.grad = prob * occ.sum(axis=-1, keepdims=True) - occ
        self.dtype = data.dtype
        self.n_in = 2 + len(lengths)
        loss = xp.where(feasible, -log_p, xp.inf)
        return loss.astype(data.dtype)

    def backward(self, g: Any) -> Any:
        gx = (self.grad * g.astype(np.float64)[None, :, None]).astype(self.dtype)
        return (gx,) + (None,) * (self.n_in - 1)


def CTCLoss(
    data: ArrayT,
    label: ArrayT,
    data_lengths: ArrayT | None = None,
    label_lengths: ArrayT | None = None,
    use_data_lengths: bool = False,
    use_label_lengths: bool = False,
    blank_label: str = "first",
) -> ArrayT:
    """CTC loss per sample of activations ``data`` ``(T, N, C)`` and labels ``(N, L)``.

    Parameters
    ----------
    data : NDArray
        Unnormalised activations, time-major.
    label : NDArray
        Class indices per sample. With ``blank_label='first'`` the blank is class 0, labels are
        ``1 .. C-1`` and 0 pads; with ``'last'`` the blank is ``C-1``, labels ``0 .. C-2``, -1 pads.
    data_lengths, label_lengths : NDArray, optional
        ``(N,)``: steps and label entries used per sample, read when ``use_data_lengths`` /
        ``use_label_lengths`` is set.
    blank_label : {'first', 'last'}

    Returns
    -------
    NDArray
        ``(N,)``, the negative log-likelihood of each label sequence.
    """
    if blank_label not in ("first", "last"):
        raise MXNetError(f"CTCLoss: blank_label must be 'first' or 'last', not {blank_label!r}")
    if use_data_lengths and data_lengths is None:
        raise MXNetError("CTCLoss: use_data_lengths is set but no data_lengths are given")
    if use_label_lengths and label_lengths is None:
        raise MXNetError("CTCLoss: use_label_lengths is set but no label_lengths are given")
    if data.ndim != 3 or label.ndim != 2:
        raise MXNetError(
            f"CTCLoss: data must be (T, N, C) and label (N, L), got {data.shape} and {label.shape}"
        )
    if blank_label == "first":
        from .shape import concat, slice_axis

        classes = data.shape[2]
        data = concat(slice_axis(data, axis=2, begin=1, end=classes),
                      slice_axis(data, axis=2, begin=0, end=1), dim=2)  # fmt: skip
        label = label - 1
    arrays = [data, label]
    if use_data_lengths:
        arrays.append(data_lengths)  # type: ignore[arg-type]
    if use_label_lengths:
        arrays.append(label_lengths)  # type: ignore[arg-type]
    return apply(_CTC, arrays, use_pred=use_data_lengths, use_label=use_label_lengths)


ctc_loss = CTCLoss
