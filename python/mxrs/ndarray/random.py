"""Random sampling into NDArrays, with one generator per context (see :mod:`._rng`).

Each context draws from its own generator, created on first use. :func:`seed` resets the
generators of every context (or of one), so a seeded program draws the same numbers on each run;
contexts seeded with the same value still get distinct streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..context import Context, current_context
from ._rng import generator, seed
from .ndarray import NDArray, _wrap

if TYPE_CHECKING:
    from .._typing import CtxLike, DTypeLike, ShapeLike

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle"]


def _shape(shape: ShapeLike | None) -> tuple[int, ...]:
    if shape is None or shape == ():
        return (1,)
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def _result(data: Any, ctx: Context, out: NDArray | None) -> NDArray:
    if out is None:
        return _wrap(data, ctx)
    out[:] = _wrap(data, ctx)
    return out


def _target(ctx: CtxLike | None, out: NDArray | None) -> Context:
    if out is not None:
        return out._ctx
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def uniform(
    low: float = 0.0,
    high: float = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the uniform distribution on ``[low, high)``.

    Parameters
    ----------
    low, high : float
    shape : int or tuple of int, optional
        Defaults to ``(1,)``.
    dtype : str or numpy.dtype, default float32
    ctx : Context, optional
        Defaults to the current context.
    out : NDArray, optional
        Array to fill (its shape and context win).

    Examples
    --------
    >>> mx.random.seed(42)
    >>> mx.random.uniform(-1, 1, shape=(2, 3)).shape
    (2, 3)
    """
    ctx = _target(ctx, out)
    shape = out.shape if out is not None else _shape(shape)
    dt = np.dtype(dtype or (out.dtype if out is not None else np.float32))
    with ctx.backend.guard(ctx.device_id):
        data = ctx.backend.uniform(generator(ctx), float(low), float(high), shape, dt)
    return _result(data, ctx, out)


def normal(
    loc: float = 0.0,
    scale: float = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the normal distribution with mean ``loc`` and deviation ``scale``.

    Parameters as :func:`uniform`.
    """
    ctx = _target(ctx, out)
    shape = out.shape if out is not None else _shape(shape)
    dt = np.dtype(dtype or (out.dtype if out is not None else np.float32))
    with ctx.backend.guard(ctx.device_id):
        data = ctx.backend.normal(generator(ctx), float(loc), float(scale), shape, dt)
    return _result(data, ctx, out)


def randn(
    *shape: int,
    loc: float = 0.0,
    scale: float = 1.0,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw normal samples of shape ``shape`` (given as separate ints)."""
    return normal(loc, scale, shape or None, dtype=dtype, ctx=ctx)


def randint(
    low: int,
    high: int,
    shape: ShapeLike | None = None,
    dtype: DTypeLike = "int32",
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw integers uniformly from ``[low, high)``; parameters as :func:`uniform`."""
    ctx = _target(ctx, out)
    shape = out.shape if out is not None else _shape(shape)
    with ctx.backend.guard(ctx.device_id):
        data = ctx.backend.randint(generator(ctx), int(low), int(high), shape, np.dtype(dtype))
    return _result(data, ctx, out)


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """Return a copy of ``data`` with its first axis randomly permuted."""
    if not isinstance(data, NDArray):
        raise TypeError("shuffle expects an NDArray")
    ctx = data._ctx
    with ctx.backend.guard(ctx.device_id):
        perm = ctx.backend.permutation(generator(ctx), data.shape[0])
        return _wrap(data._data[perm], ctx)
