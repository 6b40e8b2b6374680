"""Array operators of ``mx.nd.contrib``: masks and index copies, ``arange_like``,
``index_array``, small elementwise ops (``div_sqrt_dim``, ``quadratic``, ``gradientmultiplier``,
``isfinite``/``isnan``/``isinf``) and ``allclose``. Each is a primitive op; those that MXNet
differentiates (``boolean_mask``, ``index_copy``, ``div_sqrt_dim``, ``quadratic``,
``gradientmultiplier``) have their gradient, the others give none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...base import InvalidShapeError, MXNetError
from ...context import Context
from ..core.array import ArrayT
from ..core.op import Op, apply, axis_index

__all__ = [
    "rand_zipfian",
    "boolean_mask",
    "arange_like",
    "index_copy",
    "index_array",
    "div_sqrt_dim",
    "quadratic",
    "gradientmultiplier",
    "isfinite",
    "isnan",
    "isinf",
    "allclose",
]


class _BooleanMask(Op):
    def forward(self, x, index, axis):
        self.pos = self.xp.nonzero(index)[0]
        self.axis, self.shape, self.dtype = axis, x.shape, x.dtype
        return self.xp.take(x, self.pos, axis=axis)

    def backward(self, g):
        if not self.needs[0]:
            return None, None
        dx = self.xp.zeros(self.shape, self.dtype)
        key = [slice(None)] * len(self.shape)
        key[self.axis] = self.pos
        dx[tuple(key)] = g
        return dx, None


def boolean_mask(data: ArrayT, index: ArrayT, axis: int = 0) -> ArrayT:
    """The slices of ``data`` along ``axis`` where the 1-D ``index`` is nonzero.

    Differentiable with respect to ``data`` (the dropped slices get zero gradient). MXNet
    supports only ``axis=0``; any axis works here.

    Examples
    --------
    >>> data = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    >>> mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 0])).asnumpy()
    array([[4., 5., 6.]], dtype=float32)
    """
    ax = axis_index(axis, data.ndim)
    if index.ndim != 1 or index.shape[0] != data.shape[ax]:
        raise InvalidShapeError(
            f"boolean_mask: index must be 1-D with one entry per slice of axis {ax} "
            f"({data.shape[ax]}), got shape {index.shape}"
        )
    return apply(_BooleanMask, (data, index), axis=ax)


def _context(ctx: Any) -> Context:
    if isinstance(ctx, Context):
        return ctx
    m = re.fullmatch(r"\s*(\w+)\((\d+)\)\s*", str(ctx))
    return Context(m.group(1), int(m.group(2))) if m else Context(str(ctx))


class _ArangeLike(Op):
    def forward(self, x, n, shape, start, step, repeat):
        dt = x.dtype.type
        idx = (self.xp.arange(n, dtype=np.int64) // repeat).astype(x.dtype)
        return (dt(start) + idx * dt(step)).reshape(shape)

    def backward(self, g):
        return None


def arange_like(
    data: ArrayT,
    start: float = 0.0,
    step: float = 1.0,
    repeat: int = 1,
    ctx: Any = None,
    axis: int | None = None,
) -> ArrayT:
    """Evenly spaced values in ``data``'s shape (or along one of its axes), of its dtype.

    Value ``i`` (in row-major order) is ``start + (i // repeat) * step``.

    Parameters
    ----------
    data : NDArray
        Gives the shape and dtype; its values are not used.
    start, step : float
    repeat : int, default 1
        How many times each value repeats.
    ctx : Context or str, optional
        Where the result goes (``'gpu(0)'`` strings work too); default: ``data``'s context.
    axis : int, optional
        If given, the result is 1-D with ``data.shape[axis]`` values.

    Examples
    --------
    >>> mx.nd.contrib.arange_like(mx.nd.zeros((2, 3)), start=1, repeat=2).asnumpy()
    array([[1., 1., 2.],
           [2., 3., 3.]], dtype=float32)
    """
    if int(repeat) < 1:
        raise MXNetError(f"arange_like: repeat must be at least 1, got {repeat}")
    if axis is None:
        shape, n = data.shape, data.size
    else:
        n = data.shape[axis_index(axis, data.ndim)]
        shape = (n,)
    out = apply(_ArangeLike, (data,), n=n, shape=shape, start=start, step=step, repeat=int(repeat))
    return out if ctx is None else out.as_in_context(_context(ctx))


class _IndexCopy(Op):
    def forward(self, old, index, new):
        idx = index.astype(np.int64)
        n = old.shape[0]
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise MXNetError(
                f"index_copy: index_vector holds {int(idx.min())}..{int(idx.max())}, outside "
                f"[0, {n}) (the length of old_tensor)"
            )
        self.idx = idx
        out = old.copy()
        out[idx] = new
        return out

    def backward(self, g):
        gold = gnew = None
        if self.needs[0]:
            gold = g.copy()
            gold[self.idx] = 0
        if self.needs[2]:
            gnew = g[self.idx]
        return gold, None, gnew


def index_copy(old_tensor: ArrayT, index_vector: ArrayT, new_tensor: ArrayT) -> ArrayT:
    """A copy of ``old_tensor`` whose rows ``index_vector[i]`` are ``new_tensor[i]``.

    Differentiable: the old tensor's gradient is zero in the replaced rows, and row ``i`` of
    the new tensor gets the gradient of row ``index_vector[i]`` (with repeated indices, the last
    write wins in the forward pass but every copy gets that row's gradient, as in MXNet).

    Raises
    ------
    InvalidShapeError
        Unless ``index_vector`` is 1-D with ``len(new_tensor)`` entries and ``new_tensor``
        has ``old_tensor``'s shape apart from a length of axis 0 at most ``len(old_tensor)``.
    MXNetError
        When an index is outside ``[0, len(old_tensor))``.

    Examples
    --------
    >>> t = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    >>> mx.nd.contrib.index_copy(mx.nd.zeros((5, 3)), mx.nd.array([0, 4, 2]), t).asnumpy()
    array([[1., 2., 3.],
           [0., 0., 0.],
           [7., 8., 9.],
           [0., 0., 0.],
           [4., 5., 6.]], dtype=float32)
    """
    old, idx, new = old_tensor.shape, index_vector.shape, new_tensor.shape
    if len(idx) != 1:
        raise InvalidShapeError(f"index_copy: index_vector must be 1-D, got shape {idx}")
    if not new or idx[0] != new[0]:
        raise InvalidShapeError(
            f"index_copy: index_vector has {idx[0]} entries but new_tensor has shape {new}"
        )
    if len(old) != len(new) or old[1:] != new[1:] or old[0] < new[0]:
        raise InvalidShapeError(
            f"index_copy: new_tensor of shape {new} does not fit old_tensor of shape {old} (same "
            "shape apart from axis 0, which may not be longer)"
        )
    return apply(_IndexCopy, (old_tensor, index_vector, new_tensor))


class _IndexArray(Op):
    def forward(self, x, axes):
        if not axes:
            return self.xp.zeros(x.shape + (0,), np.int64)
        grids = self.xp.indices(x.shape, dtype=np.int64)
        return self.xp.stack([grids[a] for a in axes], axis=-1)

    def backward(self, g):
        return None


def index_array(data: ArrayT, axes: Sequence[int] | None = None) -> ArrayT:
    """The index of every element of ``data``: int64, of shape ``data.shape + (len(axes),)``.

    ``out[i_1, ..., i_n, j] == i_{axes[j]}``; ``axes`` defaults to all axes (negative values
    count from the end).

    Examples
    --------
    >>> mx.nd.contrib.index_array(mx.nd.ones((2, 2))).asnumpy()[1]
    array([[1, 0],
           [1, 1]])
    """
    if axes is None:
        ax = tuple(range(data.ndim))
    else:
        ax = tuple(axis_index(a, data.ndim) for a in ((axes,) if isinstance(axes, int) else axes))
    return apply(_IndexArray, (data,), axes=ax)


class _Scale(Op):
    """``x / s`` (``div_sqrt_dim``) or ``x * s`` (``gradientmultiplier``'s backward only)."""

    def forward(self, x, s, grad_only):
        self.s, self.grad_only = s, grad_only
        if grad_only:
            return x.copy()
        return (x / x.dtype.type(s)).astype(x.dtype, copy=False)

    def backward(self, g):
        if self.grad_only:
            return g * g.dtype.type(self.s)
        return (g / g.dtype.type(self.s)).astype(g.dtype, copy=False)


def div_sqrt_dim(data: ArrayT) -> ArrayT:
    """``data / sqrt(data.shape[-1])``, the scaling of attention scores. Differentiable.

    Examples
    --------
    >>> mx.nd.contrib.div_sqrt_dim(mx.nd.ones((1, 4))).asnumpy()
    array([[0.5, 0.5, 0.5, 0.5]], dtype=float32)
    """
    if data.ndim == 0:
        raise InvalidShapeError("div_sqrt_dim needs at least one dimension")
    return apply(_Scale, (data,), s=math.sqrt(data.shape[-1]), grad_only=False)


def gradientmultiplier(data: ArrayT, scalar: float = 1.0, is_int: bool = True) -> ArrayT:
    """Identity in the forward pass; the backward pass multiplies the gradient by ``scalar``.

    ``is_int`` is accepted for MXNet compatibility and has no effect.

    Examples
    --------
    >>> x = mx.nd.array([1, 2]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.contrib.gradientmultiplier(x, scalar=-0.5)
    >>> y.backward(); x.grad.asnumpy()
    array([-0.5, -0.5], dtype=float32)
    """
    return apply(_Scale, (data,), s=float(scalar), grad_only=True)


class _Quadratic(Op):
    def forward(self, x, a, b, c):
        dt = x.dtype.type
        self.x, self.a, self.b = x, dt(a), dt(b)
        return self.a * x * x + self.b * x + dt(c)

    def backward(self, g):
        return g * (2 * self.a * self.x + self.b)


def quadratic(data: ArrayT, a: float = 0, b: float = 0, c: float = 0) -> ArrayT:
    """``a * data**2 + b * data + c`` elementwise. Differentiable.

    Examples
    --------
    >>> mx.nd.contrib.quadratic(mx.nd.array([1, 2]), a=1, b=2, c=3).asnumpy()
    array([ 6., 11.], dtype=float32)
    """
    return apply(_Quadratic, (data,), a=float(a), b=float(b), c=float(c))


class _Classify(Op):
    def forward(self, x, kind):
        xp = self.xp
        if kind == "isnan":
            out = xp.isnan(x)
        elif kind == "isinf":
            out = xp.isinf(x)
        else:
            out = xp.isfinite(x)
        return out.astype(x.dtype)

    def backward(self, g):
        return None


def isfinite(data: ArrayT) -> ArrayT:
    """1 where ``data`` is finite (neither infinite nor NaN), else 0; of ``data``'s dtype.

    Examples
    --------
    >>> mx.nd.contrib.isfinite(mx.nd.array([np.inf, -np.inf, np.nan, -1])).asnumpy()
    array([0., 0., 0., 1.], dtype=float32)
    """
    return apply(_Classify, (data,), kind="isfinite")


def isnan(data: ArrayT) -> ArrayT:
    """1 where ``data`` is NaN, else 0; of ``data``'s dtype.

    Examples
    --------
    >>> mx.nd.contrib.isnan(mx.nd.array([np.nan, -1])).asnumpy()
    array([1., 0.], dtype=float32)
    """
    return apply(_Classify, (data,), kind="isnan")


def isinf(data: ArrayT) -> ArrayT:
    """1 where ``data`` is positive or negative infinity, else 0; of ``data``'s dtype.

    Examples
    --------
    >>> mx.nd.contrib.isinf(mx.nd.array([np.inf, -np.inf, np.nan, -1])).asnumpy()
    array([1., 1., 0., 0.], dtype=float32)
    """
    return apply(_Classify, (data,), kind="isinf")


class _AllClose(Op):
    def forward(self, a, b, rtol, atol, equal_nan):
        xp = self.xp
        nan_a, nan_b = xp.isnan(a), xp.isnan(b)
        either = nan_a | nan_b
        same = (a == b) | either  # equal values (infinities too) need no subtraction
        a0, b0 = xp.where(same, 0, a), xp.where(same, 0, b)
        ok = xp.abs(a0 - b0) <= np.float32(atol) + np.float32(rtol) * xp.abs(b0)
        ok |= a == b
        nan_ok = (nan_a & nan_b) if equal_nan else xp.zeros_like(either)
        ok = xp.where(either, nan_ok, ok)
        return xp.asarray(ok.all(), dtype=np.uint8).reshape(())

    def backward(self, g):
        return None, None


def allclose(
    a: ArrayT, b: ArrayT, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = True
) -> ArrayT:
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere, as a 0-d uint8 NDArray (1 or 0).

    Equal values (infinities included) are close; with ``equal_nan``, NaNs in the same places
    of both arrays are too. The arrays must have one shape.

    Examples
    --------
    >>> mx.nd.contrib.allclose(mx.nd.array([1, 2]), mx.nd.array([1, 2.00001])).asnumpy()
    array(1, dtype=uint8)
    >>> mx.nd.contrib.allclose(mx.nd.array([1, 2]), mx.nd.array([1, 2.001])).asnumpy()
    array(0, dtype=uint8)
    """
    if a.shape != b.shape:
        raise InvalidShapeError(f"allclose: the shapes differ, {a.shape} and {b.shape}")
    return apply(_AllClose, (a, b), rtol=float(rtol), atol=float(atol), equal_nan=bool(equal_nan))


class _RandZipfian(Op):
    """Log-uniform (Zipfian) candidate sampling; outputs only, no gradient."""

    def forward(self, true_classes, num_sampled, range_max, rng):
        xp, be = self.xp, self.be
        log_range = math.log(range_max + 1)
        draw = be.uniform(rng, 0.0, log_range, (num_sampled,), np.float64)
        sampled = (xp.exp(draw) - 1).astype(np.int64) % range_max
        true = true_classes.astype(np.float64)
        count_true = xp.log((true + 2.0) / (true + 1.0)) / log_range * num_sampled
        s64 = sampled.astype(np.float64)
        count_sampled = xp.log((s64 + 2.0) / (s64 + 1.0)) / log_range * num_sampled
        return sampled, count_true, count_sampled

    def backward(self, *grads):
        return None


def check_zipfian(num_sampled: int, range_max: int) -> None:
    """Refuse ``rand_zipfian`` arguments below 1 (for the NDArray and Symbol forms alike).

    Raises
    ------
    MXNetError
        For ``num_sampled`` or ``range_max`` below 1.
    """
    if num_sampled < 1 or range_max < 1:
        raise MXNetError(
            f"rand_zipfian: num_sampled and range_max must be at least 1, got {num_sampled} "
            f"and {range_max}"
        )


def rand_zipfian(
    true_classes: ArrayT, num_sampled: int, range_max: int, ctx: Context | None = None
) -> list[ArrayT]:
    """``[sampled_classes, expected_count_true, expected_count_sampled]``: ``num_sampled``
    classes drawn from ``[0, range_max)`` by the log-uniform (Zipfian) law, class ``c`` with
    probability ``log((c + 2) / (c + 1)) / log(range_max + 1)``, and the expected counts of
    ``true_classes`` and of the sampled ones among ``num_sampled`` draws (float64), as MXNet's
    sampled-softmax helper gives them.

    Raises
    ------
    MXNetError
        For ``num_sampled`` or ``range_max`` below 1.
    """
    from ..core.rng import generator
    from ..core.transfer import to_context

    check_zipfian(num_sampled, range_max)
    if ctx is not None and ctx != true_classes._ctx:
        true_classes = to_context(true_classes, ctx)
    rng = generator(true_classes._ctx)
    return apply(
        _RandZipfian,
        (true_classes,),
        num_sampled=int(num_sampled),
        range_max=int(range_max),
        rng=rng,
    )
