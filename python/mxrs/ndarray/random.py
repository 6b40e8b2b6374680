"""Random sampling into NDArrays, with one generator per context (see :mod:`.core.rng`).

Each context draws from its own generator, created on first use. :func:`seed` resets the
generators of every context (or of one), so a seeded program draws the same numbers on each run;
contexts seeded with the same value still get distinct streams.

A distribution's parameters are numbers (``shape`` draws from that one distribution) or
NDArrays of one shape (``shape`` draws per element, through the ``sample_*`` operators of
:mod:`.random_sample`). The ``*_like`` functions draw an array of another's shape and dtype;
``pdf_*`` are the densities of :mod:`.random_pdf`.

A parameter out of its distribution's range (a negative scale, ``low`` above ``high``) is an
error of the computation, as MXNet 1.9.1 checks it where it draws: the call returns a failed
array of the right shape and dtype, which raises :class:`DistributionError` at the next wait on
it (``wait_to_read``, ``asnumpy``, ``nd.waitall()``; see :mod:`mxrs._failure`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._failure import ComputeError
from ..context import Context, current_context
from . import random_pdf as _pdf
from . import random_sample as _sample
from ._failed import failed_array
from .core.rng import generator, seed
from .ndarray import NDArray, _wrap
from .random_sample import DistributionError, failed_draws

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
    "uniform_like",
    "normal_like",
    "gamma_like",
    "exponential_like",
    "poisson_like",
    "negative_binomial_like",
    "generalized_negative_binomial_like",
    "pdf_uniform",
    "pdf_normal",
    "pdf_gamma",
    "pdf_exponential",
    "pdf_poisson",
    "pdf_negative_binomial",
    "pdf_generalized_negative_binomial",
    "pdf_dirichlet",
]


pdf_uniform = _pdf.random_pdf_uniform
pdf_normal = _pdf.random_pdf_normal
pdf_gamma = _pdf.random_pdf_gamma
pdf_exponential = _pdf.random_pdf_exponential
pdf_poisson = _pdf.random_pdf_poisson
pdf_negative_binomial = _pdf.random_pdf_negative_binomial
pdf_generalized_negative_binomial = _pdf.random_pdf_generalized_negative_binomial
pdf_dirichlet = _pdf.random_pdf_dirichlet


def _shape(shape: ShapeLike | None) -> tuple[int, ...]:
    if shape is None or shape == ():
        return (1,)
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def _target(ctx: CtxLike | None, out: NDArray | None) -> Context:
    if out is not None:
        return out._ctx
    if ctx is None:
        return current_context()
    if isinstance(ctx, str) and ctx.endswith(")") and "(" in ctx:  # a symbol's "cpu(0)"
        kind, _, rest = ctx.partition("(")
        return Context(kind, int(rest[:-1]))
    return ctx if isinstance(ctx, Context) else Context(ctx)


def _arrays(name: str, *params: Any) -> bool:
    """Whether the parameters are NDArrays (all of them) rather than numbers (all of them)."""
    first = isinstance(params[0], NDArray)
    for v in params[1:]:
        if isinstance(v, NDArray) is not first:
            raise DistributionError(f"{name}: give every parameter as an NDArray, or none")
    return first


def uniform(
    low: float | NDArray = 0.0,
    high: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the uniform distribution on ``[low, high)``.

    Parameters
    ----------
    low, high : float or NDArray
        NDArrays of one shape ``S`` give ``shape`` draws per element (the result has
        ``S + shape``, on their context), as :func:`~.random_sample.sample_uniform`.
    shape : int or tuple of int, optional
        Defaults to ``(1,)`` for numbers, to no extra axes for NDArrays.
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
    if _arrays("uniform", low, high):
        return _sample.sample_uniform(low, high, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_uniform, (float(low), float(high)), shape, dtype, ctx, out, quiet=False)


def _uniform(ctx: Context, size: tuple[int, ...], dt: np.dtype, low: float, high: float) -> Any:
    g = generator(ctx)
    if not low <= high:
        raise DistributionError(f"uniform: low must not exceed high, got {low} and {high}")
    return ctx.backend.uniform(g, low, high, size, dt)


def normal(
    loc: float | NDArray = 0.0,
    scale: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the normal distribution with mean ``loc`` and deviation ``scale``.

    Parameters as :func:`uniform`.
    """
    if _arrays("normal", loc, scale):
        return _sample.sample_normal(loc, scale, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_normal, (float(loc), float(scale)), shape, dtype, ctx, out, quiet=False)


def _normal(ctx: Context, size: tuple[int, ...], dt: np.dtype, loc: float, scale: float) -> Any:
    g = generator(ctx)
    if not scale > 0:
        raise DistributionError(f"normal: scale must be positive, got {scale}")
    return ctx.backend.normal(g, loc, scale, size, dt)


def randn(
    *shape: int,
    loc: float | NDArray = 0.0,
    scale: float | NDArray = 1.0,
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
    return _draws(_randint, (int(low), int(high)), shape, dtype or "int32", ctx, out, quiet=False)


def _randint(ctx: Context, size: tuple[int, ...], dt: np.dtype, low: int, high: int) -> Any:
    g = generator(ctx)
    if not low < high:
        raise DistributionError(f"randint: low must be less than high, got {low} and {high}")
    return ctx.backend.randint(g, low, high, size, dt)


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """Return a copy of ``data`` with its first axis randomly permuted."""
    if not isinstance(data, NDArray):
        raise TypeError("shuffle expects an NDArray")
    ctx = data._ctx
    try:  # free while nothing fails
        with ctx.backend.guard(ctx.device_id):
            perm = ctx.backend.permutation(generator(ctx, shared=False), data.shape[0])
            return _wrap(data._data[perm], ctx)
    except ComputeError as err:  # a failed array: its shuffle fails with it
        return failed_array(err, ctx, data.shape, data._dtype_raw())


def _draws(
    draw: Callable[..., Any],
    params: tuple[Any, ...],
    shape: ShapeLike | None,
    dtype: DTypeLike | None,
    ctx: CtxLike | None,
    out: NDArray | None,
    quiet: bool = True,
) -> NDArray:
    """Draws ``draw(ctx, size, dtype, *params)`` from one distribution on ``ctx`` (the current
    context by default), of ``shape`` (or ``out``'s, written into it), with NumPy's
    floating-point warnings off unless not ``quiet``. ``draw`` takes the context's generator,
    then checks the parameters: a :class:`DistributionError` it raises makes the result a failed
    array raising it at the next wait."""
    where = _target(ctx, out)
    size = out.shape if out is not None else _shape(shape)
    dt = np.dtype(dtype or (out.dtype if out is not None else np.float32))
    try:  # free while nothing fails
        with where.backend.guard(where.device_id):
            if quiet:
                with np.errstate(all="ignore"):
                    res = _wrap(draw(where, size, dt, *params), where)
            else:
                res = _wrap(draw(where, size, dt, *params), where)
    except ComputeError as err:
        res = failed_draws(err, where, size, dt)
    if out is None:
        return res
    out[:] = res
    return out


def _positive(name: str, **values: float) -> None:
    for key, v in values.items():
        if not v > 0:
            raise DistributionError(f"{name}: {key} must be positive, got {v}")


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
    if _arrays("poisson", lam):
        return _sample.sample_poisson(lam, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_poisson, (float(lam),), shape, dtype, ctx, out)


def _poisson(ctx: Context, size: tuple[int, ...], dt: np.dtype, lam: float) -> Any:
    g = generator(ctx)
    if not lam >= 0:
        raise DistributionError(f"poisson: lam must be 0 or more, got {lam}")
    return g.poisson(lam, size).astype(dt)


def exponential(
    scale: float | NDArray = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Draw from the exponential distribution of mean ``scale`` (rate ``1 / scale``).

    NDArray scales draw per element, through ``sample_exponential(1 / scale)``. A scale of 0 is
    refused at the call (its rate would be infinite; MXNet fails dividing by it), a negative
    one where it draws.
    """
    if _arrays("exponential", scale):
        return _sample.sample_exponential(1.0 / scale, shape, dtype, out)  # type: ignore[arg-type]
    if float(scale) == 0:
        raise DistributionError(f"exponential: scale must be positive, got {scale}")
    return _draws(_exponential, ("exponential", 1.0 / float(scale)), shape, dtype, ctx, out)


def _exponential(ctx: Context, size: tuple[int, ...], dt: np.dtype, name: str, lam: float) -> Any:
    g = generator(ctx)
    if not lam > 0:
        what = f"scale must be positive, got {1.0 / lam}" if name == "exponential" else (
            f"lam must be positive, got {lam}"
        )  # fmt: skip
        raise DistributionError(f"{name}: {what}")
    return g.exponential(1.0 / lam, size).astype(dt)


def random_exponential(
    lam: float = 1.0,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    ctx: CtxLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """MXNet's operator ``random_exponential``: the exponential distribution of *rate*
    ``lam`` (mean ``1 / lam``), unlike :func:`exponential`, which takes the scale."""
    return _draws(_exponential, ("random_exponential", float(lam)), shape, dtype, ctx, out)


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
    if _arrays("gamma", alpha, beta):
        return _sample.sample_gamma(alpha, beta, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_gamma, (float(alpha), float(beta)), shape, dtype, ctx, out)


def _gamma(ctx: Context, size: tuple[int, ...], dt: np.dtype, alpha: float, beta: float) -> Any:
    g = generator(ctx)
    _positive("gamma", alpha=alpha, beta=beta)
    return g.gamma(alpha, beta, size).astype(dt)


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
    if _arrays("negative_binomial", k, p):
        return _sample.sample_negative_binomial(k, p, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_negative_binomial, (float(k), float(p)), shape, dtype, ctx, out)


def _negative_binomial(
    ctx: Context, size: tuple[int, ...], dt: np.dtype, k: float, p: float
) -> Any:
    g = generator(ctx)
    _positive("negative_binomial", k=k)
    if not 0 < p <= 1:
        raise DistributionError(f"negative_binomial: p must be in (0, 1], got {p}")
    return g.negative_binomial(k, p, size).astype(dt)


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
    if _arrays("generalized_negative_binomial", mu, alpha):
        return _sample.sample_generalized_negative_binomial(mu, alpha, shape, dtype, out)  # type: ignore[arg-type]
    return _draws(_generalized_negative_binomial, (float(mu), float(alpha)), shape, dtype, ctx,
                  out)  # fmt: skip


def _generalized_negative_binomial(
    ctx: Context, size: tuple[int, ...], dt: np.dtype, mu: float, alpha: float
) -> Any:
    g = generator(ctx)
    _positive("generalized_negative_binomial", mu=mu)
    if not alpha >= 0:
        raise DistributionError(
            f"generalized_negative_binomial: alpha must be 0 or more, got {alpha}"
        )
    return g.poisson(g.gamma(1.0 / alpha, alpha * mu, size) if alpha > 0 else mu, size).astype(dt)


def multinomial(
    data: NDArray,
    shape: ShapeLike | None = None,
    get_prob: bool = False,
    out: NDArray | None = None,
    dtype: DTypeLike = "int32",
    **kwargs: Any,
) -> NDArray | list[NDArray]:
    """Draw category indices from the distributions in ``data``'s last axis (probabilities
    that sum to 1): ``shape`` samples per distribution (one without it), so the result has
    ``data.shape[:-1] + shape``. With ``get_prob``, a list that also holds the
    log-probability of each draw (differentiable for ``data``); see
    :func:`~.random_sample.sample_multinomial`."""
    return _sample.sample_multinomial(data, shape, get_prob, dtype, out)


def _like(
    draw: Callable[..., NDArray], data: NDArray, out: NDArray | None, *params: Any
) -> NDArray:
    if not isinstance(data, NDArray):
        raise DistributionError(
            f"the *_like samplers need an NDArray data, got {type(data).__name__}"
        )
    return draw(*params, shape=data.shape, dtype=data.dtype, ctx=data._ctx, out=out)


def uniform_like(
    data: NDArray, low: float = 0.0, high: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw from the uniform distribution on ``[low, high)`` an array of ``data``'s shape,
    dtype and context."""
    return _like(uniform, data, out, low, high)


def normal_like(
    data: NDArray, loc: float = 0.0, scale: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw from the normal distribution an array of ``data``'s shape, dtype and context."""
    return _like(normal, data, out, loc, scale)


def gamma_like(
    data: NDArray, alpha: float = 1.0, beta: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw from the gamma distribution of shape ``alpha`` and scale ``beta`` an array of
    ``data``'s shape, dtype and context."""
    return _like(gamma, data, out, alpha, beta)


def exponential_like(
    data: NDArray, lam: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw from the exponential distribution of *rate* ``lam`` (as MXNet's operator takes
    it; mean ``1 / lam``) an array of ``data``'s shape, dtype and context."""
    return _like(random_exponential, data, out, lam)


def poisson_like(
    data: NDArray, lam: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw from the Poisson distribution of rate ``lam`` an array of ``data``'s shape, dtype
    and context."""
    return _like(poisson, data, out, lam)


def negative_binomial_like(
    data: NDArray, k: float = 1, p: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw negative binomial counts (see :func:`negative_binomial`) into an array of
    ``data``'s shape, dtype and context."""
    return _like(negative_binomial, data, out, k, p)


def generalized_negative_binomial_like(
    data: NDArray, mu: float = 1.0, alpha: float = 1.0, out: NDArray | None = None, **kwargs: Any
) -> NDArray:
    """Draw generalized negative binomial counts (see :func:`generalized_negative_binomial`)
    into an array of ``data``'s shape, dtype and context."""
    return _like(generalized_negative_binomial, data, out, mu, alpha)
