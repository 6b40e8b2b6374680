"""Random sampling into NDArrays, with one generator per context (see :mod:`.core.rng`).

Each context draws from its own generator, created on first use. :func:`seed` resets the
generators of every context (or of one), so a seeded program draws the same numbers on each run;
contexts seeded with the same value still get distinct streams.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..context import Context, current_context
from .core.rng import generator, seed
from .ndarray import NDArray, _wrap

if TYPE_CHECKING:
    from .._typing import CtxLike, DTypeLike, ShapeLike

__all__ = [
    "seed",
    "uniform",
    "normal",
    "randn",
    "randint",
    "shuffle",
    "poisson",
    "exponential",
    "gamma",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
]


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


def _sample(
    name: str,
    draw: Any,
    params: dict[str, Any],
    shape: ShapeLike | None,
    dtype: DTypeLike | None,
    ctx: CtxLike | None,
    out: NDArray | None,
) -> NDArray:
    """Samples ``draw(rng, *params, size)`` of ``shape``; a parameter given as an NDArray
    draws one set of ``shape`` samples per element (the result is its shape + ``shape``)."""
    arrays = [v for v in params.values() if isinstance(v, NDArray)]
    if arrays and len(arrays) != len(params):
        raise ValueError(f"{name}: give every parameter as an NDArray, or none")
    if arrays:
        first = arrays[0]
        for v in arrays[1:]:
            if v.shape != first.shape:
                raise ValueError(f"{name}: parameter shapes differ: {first.shape} and {v.shape}")
        extra = () if shape is None or shape == () else _shape(shape)
        size = out.shape if out is not None else first.shape + extra
        ctx = _target(ctx, out) if out is not None else first._ctx
        values = [v._data.reshape(v.shape + (1,) * len(extra)) for v in arrays]
        dt = np.dtype(dtype or (out.dtype if out is not None else first.dtype))
    else:
        ctx = _target(ctx, out)
        size = out.shape if out is not None else _shape(shape)
        values = [float(v) for v in params.values()]
        dt = np.dtype(dtype or (out.dtype if out is not None else np.float32))
    with ctx.backend.guard(ctx.device_id):
        data = draw(generator(ctx), *values, size).astype(dt)
    return _result(data, ctx, out)


def _positive(name: str, **values: Any) -> None:
    for key, v in values.items():
        if not isinstance(v, NDArray) and not float(v) > 0:
            raise ValueError(f"{name}: {key} must be positive, got {v}")


def poisson(
    lam: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the Poisson distribution of rate ``lam`` (counts, as floats by default).

    ``lam`` may be an NDArray: each element gets ``shape`` samples of its own rate.
    """
    if not isinstance(lam, NDArray) and float(lam) < 0:
        raise ValueError(f"poisson: lam must be 0 or more, got {lam}")
    return _sample(
        "poisson", lambda g, lam, n: g.poisson(lam, n), {"lam": lam}, shape, dtype, ctx, out
    )


def exponential(
    scale: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the exponential distribution of mean ``scale`` (rate ``1 / scale``)."""
    _positive("exponential", scale=scale)
    return _sample(
        "exponential",
        lambda g, scale, n: g.exponential(scale, n),
        {"scale": scale},
        shape,
        dtype,
        ctx,
        out,
    )


def gamma(
    alpha: float | NDArray = 1.0,
    beta: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the gamma distribution of shape ``alpha`` and scale ``beta``."""
    _positive("gamma", alpha=alpha, beta=beta)
    return _sample(
        "gamma",
        lambda g, a, b, n: g.gamma(a, b, n),
        {"alpha": alpha, "beta": beta},
        shape,
        dtype,
        ctx,
        out,
    )


def negative_binomial(
    k: float | NDArray = 1,
    p: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw the number of failures before the ``k``-th success in trials of success
    probability ``p``."""
    _positive("negative_binomial", k=k)
    if not isinstance(p, NDArray) and not 0 < float(p) <= 1:
        raise ValueError(f"negative_binomial: p must be in (0, 1], got {p}")
    return _sample(
        "negative_binomial",
        lambda g, k, p, n: g.negative_binomial(k, p, n),
        {"k": k, "p": p},
        shape,
        dtype,
        ctx,
        out,
    )


def generalized_negative_binomial(
    mu: float | NDArray = 1.0,
    alpha: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the negative binomial of mean ``mu`` and dispersion ``alpha`` (variance
    ``mu + alpha * mu**2``): Poisson counts whose rate is gamma-distributed; ``alpha`` 0 is
    Poisson of rate ``mu``."""

    def draw(g: Any, mu: Any, alpha: Any, n: Any) -> Any:
        xp = np if isinstance(g, np.random.Generator) else __import__("cupy")
        mu, alpha = xp.asarray(mu, dtype=np.float64), xp.asarray(alpha, dtype=np.float64)
        shape_ = xp.where(alpha > 0, 1.0 / xp.maximum(alpha, 1e-300), 1.0)
        rate = xp.where(alpha > 0, g.gamma(shape_, alpha * mu, n), mu * xp.ones(n))
        return g.poisson(rate, n)

    _positive("generalized_negative_binomial", mu=mu)
    if not isinstance(alpha, NDArray) and float(alpha) < 0:
        raise ValueError(f"generalized_negative_binomial: alpha must be 0 or more, got {alpha}")
    return _sample(
        "generalized_negative_binomial",
        draw,
        {"mu": mu, "alpha": alpha},
        shape,
        dtype,
        ctx,
        out,
    )


def multinomial(
    data: NDArray,
    shape: ShapeLike | None = None,
    get_prob: bool = False,
    out: NDArray | None = None,
    dtype: DTypeLike = "int32",
    **kwargs: Any,
) -> NDArray | tuple[NDArray, NDArray]:
    """Draw category indices from the distributions in ``data``'s last axis (probabilities
    that sum to 1): ``shape`` samples per distribution (one without it), so the result has
    ``data.shape[:-1] + shape``. With ``get_prob``, also the log-probability of each draw."""
    if not isinstance(data, NDArray):
        raise TypeError("multinomial expects an NDArray of probabilities")
    ctx = data._ctx
    extra = () if shape is None or shape == () else _shape(shape)
    probs = np.asarray(data.asnumpy(), dtype=np.float64)
    if probs.ndim == 0 or (probs < 0).any():
        raise ValueError("multinomial: data must hold non-negative probabilities in its last axis")
    flat = probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(flat, axis=1)
    cdf /= cdf[:, -1:]
    count = int(np.prod(extra)) if extra else 1
    with ctx.backend.guard(ctx.device_id):
        draws = ctx.backend.uniform(
            generator(ctx), 0.0, 1.0, (flat.shape[0], count), np.dtype(np.float64)
        )
    u = np.asarray(draws.get() if hasattr(draws, "get") else draws)
    picks = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u, strict=True)])
    picks = np.minimum(picks, flat.shape[1] - 1).reshape(probs.shape[:-1] + extra)
    result = _result(picks.astype(np.dtype(dtype)), ctx, out)
    if not get_prob:
        return result
    rows = np.arange(flat.shape[0])[:, None]
    logp = np.log(flat[rows, picks.reshape(flat.shape[0], count)]).reshape(picks.shape)
    return result, _wrap(logp.astype(data.dtype), ctx)
