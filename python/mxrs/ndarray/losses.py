"""Losses and gradient control: ``smooth_l1``, ``CTCLoss``, the symbolic API's output layers
(``LinearRegressionOutput``, ``MakeLoss``...), ``identity`` and ``BlockGrad``/``stop_gradient``.

``identity`` copies and passes the gradient unchanged; ``BlockGrad`` copies and passes none.
``smooth_l1`` is quadratic near zero and linear beyond ``1 / sigma^2``.

The output layers' forward is a prediction, their backward the loss's gradient, whatever
gradient reaches them (as MXNet's output operators). ``LinearRegressionOutput`` (squared loss),
``LogisticRegressionOutput`` (sigmoid + log loss), ``MAERegressionOutput`` (absolute loss) give
``grad_scale / m * d(out, label)`` with ``m`` the number of outputs per example; ``SVMOutput``
gives the one-vs-rest hinge loss's gradient (squared, or linear with ``use_linear``); ``MakeLoss``
turns any array into a loss whose gradient is ``grad_scale`` (normalised by the batch or by the
valid entries).

``CTCLoss`` (``ctc_loss``), Connectionist Temporal Classification, is one primitive op,
:class:`_CTC`: its forward runs the CTC forward-backward recursions in log space, vectorised over
the batch (a Python loop over time only), and keeps the gradient with respect to the
activations, ``softmax(x) - occupancy``, for its backward. The op works with the blank as the
last class; ``blank_label='first'`` (MXNet's default: blank 0, labels ``1 .. C-1`` padded with
0) is mapped onto it by rolling the classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply
from .unary import _Identity

__all__ = [
    "identity",
    "BlockGrad",
    "stop_gradient",
    "smooth_l1",
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
    "SVMOutput",
    "MakeLoss",
    "make_loss",
    "CTCLoss",
    "ctc_loss",
]

#: The symbolic API's output layers, which take no ``out=`` or ``name=`` keyword in ``mx.nd``.
OUTPUT_LAYERS = [
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
    "SVMOutput",
    "MakeLoss",
    "make_loss",
]


def identity(data: ArrayT) -> ArrayT:
    """Return a copy of ``data`` (the gradient passes unchanged)."""
    return apply(_Identity, (data,))


class _BlockGrad(Op):
    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return None


def BlockGrad(data: ArrayT) -> ArrayT:
    """Return a copy of ``data`` that passes no gradient back (also ``stop_gradient``).

    Examples
    --------
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (mx.nd.BlockGrad(x) * x).sum()
    >>> y.backward(); x.grad.asnumpy()
    array([1., 2.], dtype=float32)
    """
    return apply(_BlockGrad, (data,))


stop_gradient = BlockGrad


class _SmoothL1(Op):
    def forward(self, x, scalar):
        xp = self.xp
        s2 = scalar * scalar
        ax = xp.abs(x)
        self.inner = ax < 1.0 / s2
        self.x, self.s2 = x, s2
        return xp.where(self.inner, (0.5 * s2) * x * x, ax - 0.5 / s2).astype(x.dtype, copy=False)

    def backward(self, g):
        d = self.xp.where(self.inner, self.s2 * self.x, self.xp.sign(self.x))
        return g * d.astype(g.dtype, copy=False)


def smooth_l1(data: ArrayT, scalar: float) -> ArrayT:
    """The smooth L1 function with ``sigma = scalar``, elementwise.

    ``0.5 * (sigma * x)^2`` where ``|x| < 1 / sigma^2``, else ``|x| - 0.5 / sigma^2``.

    Examples
    --------
    >>> mx.nd.smooth_l1(mx.nd.array([-2, 0.1]), scalar=1.0).asnumpy()
    array([1.5  , 0.005], dtype=float32)
    """
    if scalar == 0:
        raise MXNetError("smooth_l1: scalar (sigma) must be non-zero")
    return apply(_SmoothL1, (data,), scalar=float(scalar))


class _Regression(Op):
    def forward(self, x, label, kind, grad_scale):
        if label.size != x.size:
            raise MXNetError(
                f"{kind}RegressionOutput: label shape {label.shape} does not match the data's "
                f"{x.shape}"
            )
        xp = self.xp
        y = 0.5 * (1 + xp.tanh(x * 0.5)) if kind == "Logistic" else x.copy()
        self.y, self.label, self.kind = y, label.reshape(x.shape), kind
        per_example = x.size // x.shape[0] if x.ndim and x.shape[0] else 1
        self.scale = grad_scale / per_example
        return y

    def backward(self, g):
        d = self.y - self.label
        if self.kind == "MAE":
            d = self.xp.sign(d)
        gx = (d * self.scale).astype(self.y.dtype, copy=False)
        return gx, (self.xp.zeros_like(self.label) if self.needs[1] else None)


def _regression(kind: str, data: ArrayT, label: ArrayT, grad_scale: float) -> ArrayT:
    return apply(_Regression, (data, label), kind=kind, grad_scale=float(grad_scale))


def LinearRegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """Identity forward; backward ``grad_scale / m * (data - label)`` (squared loss), with
    ``m`` the outputs per example; the incoming gradient is ignored."""
    return _regression("Linear", data, label, grad_scale)


def LogisticRegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """``sigmoid(data)`` forward; backward ``grad_scale / m * (sigmoid(data) - label)``."""
    return _regression("Logistic", data, label, grad_scale)


def MAERegressionOutput(
    data: ArrayT, label: ArrayT, grad_scale: float = 1.0, **kwargs: Any
) -> ArrayT:
    """Identity forward; backward ``grad_scale / m * sign(data - label)`` (absolute loss)."""
    return _regression("MAE", data, label, grad_scale)


class _SVM(Op):
    """Identity forward; backward the gradient of the one-vs-rest hinge loss of each row of
    scores against its label, as MXNet's SVMOutput computes it (whatever reaches it)."""

    def forward(self, x, label, margin, coef, linear):
        if x.ndim < 2 or label.size != x.shape[0]:
            raise MXNetError(
                f"SVMOutput: data of shape {tuple(x.shape)} needs one label per row, got "
                f"{tuple(label.shape)}"
            )
        self.x, self.label = x.reshape(x.shape[0], -1), label
        self.margin, self.coef, self.linear = margin, coef, linear
        return x.copy()

    def backward(self, g):
        xp, x, m = self.xp, self.x, self.margin
        k = self.label.astype(np.int64).reshape(-1)
        own = xp.zeros(x.shape, dtype=bool)
        own[xp.arange(x.shape[0]), k] = True
        if self.linear:
            grad = xp.where(own, -(m > x).astype(x.dtype), (m > -x).astype(x.dtype))
        else:
            grad = xp.where(own, -2 * xp.maximum(m - x, 0), 2 * xp.maximum(x + m, 0)).astype(
                x.dtype
            )
        return (grad * self.coef).reshape(g.shape), None


def SVMOutput(
    data: ArrayT,
    label: ArrayT,
    margin: float = 1.0,
    regularization_coefficient: float = 1.0,
    use_linear: bool = False,
    **kwargs: Any,
) -> ArrayT:
    """Identity forward; backward the gradient of the one-vs-rest hinge loss of each row of
    ``data`` (scores) against ``label`` (one class index per row): with ``use_linear`` the L1
    hinge (``-c`` on the labelled score below ``margin``, ``c`` on the others above
    ``-margin``), else the squared hinge (``-2c (margin - x)`` and ``2c (x + margin)`` there),
    ``c`` the ``regularization_coefficient``.

    Raises
    ------
    MXNetError
        When ``label`` does not hold one entry per row of ``data``.
    """
    return apply(
        _SVM,
        (data, label),
        margin=float(margin),
        coef=float(regularization_coefficient),
        linear=bool(use_linear),
    )


class _MakeLoss(Op):
    def forward(self, x, grad_scale, valid_thresh, normalization):
        xp = self.xp
        if normalization == "batch":
            # MXNet divides by the size without the last axis (the batch for 2-D data)
            scale = grad_scale / max(x.size // x.shape[-1], 1) if x.ndim else grad_scale
        elif normalization == "valid":
            scale = grad_scale / max(int((x > valid_thresh).sum()), 1)
        elif normalization == "null":
            scale = grad_scale
        else:
            raise MXNetError(
                f"MakeLoss: normalization must be 'null', 'batch' or 'valid', not {normalization!r}"
            )
        self.grad = xp.full(x.shape, scale, x.dtype)
        return x.copy()

    def backward(self, g):
        return self.grad


def MakeLoss(
    data: ArrayT,
    grad_scale: float = 1.0,
    valid_thresh: float = 0.0,
    normalization: str = "null",
    **kwargs: Any,
) -> ArrayT:
    """Mark ``data`` as a loss: identity forward, backward ``grad_scale`` everywhere; with
    ``normalization='batch'`` divided by the number of rows (the size without the last axis),
    with ``'valid'`` by the number of entries above ``valid_thresh``. The incoming gradient is
    ignored."""
    return apply(
        _MakeLoss,
        (data,),
        grad_scale=float(grad_scale),
        valid_thresh=float(valid_thresh),
        normalization=normalization,
    )


make_loss = MakeLoss


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
