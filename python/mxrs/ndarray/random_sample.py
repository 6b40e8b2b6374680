"""Sampling from many distributions at once (MXNet 1.9.1's ``sample_*`` operators).

The parameters are NDArrays of one shape ``S``: each element is one distribution, and each
distribution gets ``shape`` draws of its own, so the result has ``S + shape`` (just ``S`` without
``shape``). ``sample_multinomial`` draws categories from the distributions along its data's last
axis and can return each draw's log-probability, with its gradient for the probabilities;
``sample_unique_zipfian`` draws distinct classes from the log-uniform distribution.

Parameters are not checked against their distribution by MXNet (a negative scale gives garbage
or hangs); here they are, and a bad one is an error of the computation, as the samplers of
:mod:`.random` make theirs: the draws are a failed array raising :class:`DistributionError`,
naming it, at the next wait on them (see :mod:`mxrs._failure`). So are the draws from a failed
parameter array.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._failure import ComputeError, fail
from ..base import InvalidShapeError, MXNetError
from ._failed import failed_array, failure_of
from .core.op import Op, apply
from .core.rng import fail_device, generator
from .ndarray import NDArray, _wrap

if TYPE_CHECKING:
    from .._typing import DTypeLike, ShapeLike

__all__ = [
    "sample_uniform",
    "sample_normal",
    "sample_gamma",
    "sample_exponential",
    "sample_poisson",
    "sample_negative_binomial",
    "sample_generalized_negative_binomial",
    "sample_multinomial",
    "sample_unique_zipfian",
]


class DistributionError(ComputeError, ValueError):
    """A distribution's parameter is out of its range (also a :class:`ValueError`).

    An error of the computation, as MXNet's samplers check their parameters: raised where the
    draws are made, it reaches the program at the next wait on them (:func:`drawn`). Raised at
    the call for parameters that no draw can take (numbers mixed with arrays, an exponential of
    scale 0), it reaches it at once.
    """


_FLOATS = ("float16", "float32", "float64")
_MULTINOMIAL_DTYPES = ("float16", "float32", "float64", "int32", "uint8")
#: the largest category index each output dtype of sample_multinomial holds exactly
_LARGEST_INDEX = {"float16": 2**11, "float32": 2**24, "float64": 2**53, "int32": 2**31 - 1,
                  "uint8": 2**8 - 1}  # fmt: skip


def extra_shape(shape: ShapeLike | None) -> tuple[int, ...]:
    """``shape`` as a tuple of ints; None and ``()`` are no extra axes."""
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _dtype_name(op: str, dtype: DTypeLike | None, allowed: tuple[str, ...], default: str) -> str:
    if dtype is None or (isinstance(dtype, str) and dtype == "None"):
        return default
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    if name not in allowed:
        raise MXNetError(f"{op}: dtype must be one of {', '.join(allowed)}, got {dtype!r}")
    return name


def drawn(
    ctx: Any,
    size: tuple[int, ...],
    dtype: Any,
    draw: Callable[..., Any],
    args: tuple[Any, ...] = (),
    shared: bool = True,
    quiet: bool = False,
) -> NDArray:
    """The array of raw draws ``draw(*args)`` makes on ``ctx``, of ``size`` and ``dtype``.

    A :class:`DistributionError` ``draw`` raises (a parameter out of its range), the read of a
    failed parameter array, or the generator of a device where a sampler failed makes it a
    failed array raising that error at the next wait on it, as MXNet 1.9.1 raises its samplers'
    errors. The device's generator then fails the samplers after it (see
    :func:`~.core.rng.fail_device`), unless the sampler does not use the ``shared`` random
    resource. With ``quiet``, NumPy's floating-point warnings are off while it draws.
    """
    be = ctx.backend
    try:  # free while nothing fails
        with be.guard(ctx.device_id):
            if quiet:
                with np.errstate(all="ignore"):
                    return _wrap(draw(*args), ctx)
            return _wrap(draw(*args), ctx)
    except ComputeError as err:
        return failed_draws(err, ctx, size, dtype, shared)


def failed_draws(
    err: ComputeError, ctx: Any, size: tuple[int, ...], dtype: Any, shared: bool = True
) -> NDArray:
    """The failed array of a sampler that caught ``err`` (see :func:`drawn`); the samplers
    after it on ``ctx``'s device fail with it too when it uses the ``shared`` random resource."""
    res = failed_array(err, ctx, size, dtype)
    if shared:
        failure = failure_of(res)
        assert failure is not None  # just made
        fail_device(ctx, failure)
    return res


def _refuse(op: str, bad: Any, what: str) -> None:
    if bool(bad.any()):
        raise DistributionError(f"{op}: {what}")


def _draw_many(
    op: str,
    params: dict[str, NDArray],
    shape: ShapeLike | None,
    dtype: DTypeLike | None,
    out: NDArray | None,
    draw: Callable[..., Any],
    check: Callable[..., None],
) -> NDArray:
    """``shape`` draws of ``draw(g, xp, *params, size)`` per parameter element."""
    for key, value in params.items():
        if not isinstance(value, NDArray):
            raise MXNetError(f"{op}: {key} must be an NDArray, got {type(value).__name__}")
    arrays = list(params.values())
    first = arrays[0]
    for key, value in params.items():
        if value.shape != first.shape:
            shapes = {k: v.shape for k, v in params.items()}
            raise InvalidShapeError(f"{op}: parameter shapes differ: {shapes}")
        if value._ctx != first._ctx:
            raise MXNetError(f"{op}: {key} is on {value._ctx}, the others on {first._ctx}")
    extra = extra_shape(shape)
    size = first.shape + extra
    if out is not None and out.shape != size:
        raise InvalidShapeError(f"{op}: out has shape {out.shape}, the draws {size}")
    default = np.dtype(out.dtype).name if out is not None else "float32"
    dt = _dtype_name(op, dtype, _FLOATS, default)
    ctx = first._ctx
    xp = ctx.backend.xp

    def draws() -> Any:
        g = generator(ctx)
        values = [xp.asarray(v._data, dtype=np.float64) for v in arrays]
        check(op, *values)
        values = [v.reshape(v.shape + (1,) * len(extra)) for v in values]
        try:
            return draw(g, xp, *values, size).astype(dt)
        except ValueError as e:  # the generator refused a parameter (NaN, too large)
            raise DistributionError(f"{op}: {e}") from None

    result = drawn(ctx, size, dt, draws, quiet=True)
    if out is None:
        return result
    out[:] = result
    return out


def _no_check(op: str, *values: Any) -> None:
    """Any values are accepted."""


def _non_negative(*names: str | None) -> Callable[..., None]:
    """A check that the parameters named (None: not this one) are 0 or more."""

    def check(op: str, *values: Any) -> None:
        for name, v in zip(names, values, strict=True):
            if name is not None:
                _refuse(op, v < 0, f"{name} must be non-negative")

    return check


def sample_uniform(
    low: NDArray,
    high: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw from the uniform distributions on ``[low, high)``.

    Parameters
    ----------
    low, high : NDArray
        The bounds of each distribution, arrays of one shape ``S``.
    shape : int or tuple of int, optional
        Draws per distribution; the result has shape ``S + shape``.
    dtype : {'float16', 'float32', 'float64'}, optional
        Defaults to float32 (to ``out``'s dtype when given).
    out : NDArray, optional
        Array of shape ``S + shape`` to write into.

    Returns
    -------
    NDArray

    Raises
    ------
    MXNetError
        For parameters of differing shapes, an ``out`` of the wrong shape or another dtype.

    Examples
    --------
    >>> mx.nd.sample_uniform(mx.nd.array([0, 10]), mx.nd.array([1, 20]), shape=3).shape
    (2, 3)
    """

    def draw(g: Any, xp: Any, lo: Any, hi: Any, size: Any) -> Any:
        return g.uniform(lo, hi, size)

    return _draw_many("sample_uniform", {"low": low, "high": high}, shape, dtype, out, draw,
                      _no_check)  # fmt: skip


def sample_normal(
    mu: NDArray,
    sigma: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw from the normal distributions of means ``mu`` and standard deviations ``sigma``
    (non-negative); the rest as in :func:`sample_uniform`."""

    def draw(g: Any, xp: Any, mu: Any, sigma: Any, size: Any) -> Any:
        return g.normal(mu, sigma, size)

    return _draw_many("sample_normal", {"mu": mu, "sigma": sigma}, shape, dtype, out, draw,
                      _non_negative(None, "sigma"))  # fmt: skip


def sample_gamma(
    alpha: NDArray,
    beta: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw from the gamma distributions of shapes ``alpha`` and *scales* ``beta`` (mean
    ``alpha * beta``; both non-negative); the rest as in :func:`sample_uniform`."""

    def draw(g: Any, xp: Any, a: Any, b: Any, size: Any) -> Any:
        return g.gamma(a, b, size)

    return _draw_many("sample_gamma", {"alpha": alpha, "beta": beta}, shape, dtype, out, draw,
                      _non_negative("alpha", "beta"))  # fmt: skip


def sample_exponential(
    lam: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw from the exponential distributions of *rates* ``lam`` (mean ``1 / lam``;
    non-negative); the rest as in :func:`sample_uniform`."""

    def draw(g: Any, xp: Any, lam: Any, size: Any) -> Any:
        return g.standard_exponential(size) / lam

    return _draw_many("sample_exponential", {"lam": lam}, shape, dtype, out, draw,
                      _non_negative("lam"))  # fmt: skip


def sample_poisson(
    lam: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw counts (as floats) from the Poisson distributions of rates ``lam``
    (non-negative); the rest as in :func:`sample_uniform`."""

    def draw(g: Any, xp: Any, lam: Any, size: Any) -> Any:
        return g.poisson(lam, size)

    return _draw_many("sample_poisson", {"lam": lam}, shape, dtype, out, draw,
                      _non_negative("lam"))  # fmt: skip


def _poisson_of_gamma(g: Any, xp: Any, shape_: Any, scale: Any, size: Any) -> Any:
    """Poisson counts whose rates are gamma-distributed: a negative binomial."""
    return g.poisson(g.gamma(shape_, scale, size), size)


def sample_negative_binomial(
    k: NDArray,
    p: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw the number of failures before the ``k``-th success (``k`` non-negative) in trials
    of success probability ``p`` (in ``(0, 1]``); the rest as in :func:`sample_uniform`."""

    def check(op: str, k: Any, p: Any) -> None:
        _refuse(op, k < 0, "k must be non-negative")
        _refuse(op, (p < 0) | (p > 1) | ((p == 0) & (k > 0)), "p must be in (0, 1]")

    def draw(g: Any, xp: Any, k: Any, p: Any, size: Any) -> Any:
        safe = xp.where(p > 0, p, 1.0)
        return _poisson_of_gamma(g, xp, k, (1.0 - safe) / safe, size)

    return _draw_many("sample_negative_binomial", {"k": k, "p": p}, shape, dtype, out, draw, check)


def sample_generalized_negative_binomial(
    mu: NDArray,
    alpha: NDArray,
    shape: ShapeLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Draw from the negative binomials of means ``mu`` and dispersions ``alpha`` (variance
    ``mu + alpha mu**2``; both non-negative, ``alpha`` 0 is Poisson); the rest as in
    :func:`sample_uniform`."""

    def draw(g: Any, xp: Any, mu: Any, alpha: Any, size: Any) -> Any:
        safe = xp.where(alpha > 0, alpha, 1.0)
        rate = xp.where(alpha > 0, g.gamma(1.0 / safe, safe * mu, size), mu)
        return g.poisson(rate, size)

    return _draw_many("sample_generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape,
                      dtype, out, draw, _non_negative("mu", "alpha"))  # fmt: skip


class _LogProb(Op):
    """The log of the probabilities picked: ``log(data[row, picks[row, j]])``."""

    def forward(self, data: Any, picks: Any, shape: tuple[int, ...]) -> Any:
        xp = self.xp
        flat = data.reshape(-1, data.shape[-1])
        rows = xp.arange(flat.shape[0])[:, None]
        self.picked = flat[rows, picks]
        self.data_shape = data.shape
        with np.errstate(all="ignore"):
            return xp.log(self.picked).reshape(shape)

    def backward(self, g: Any) -> Any:
        xp = self.xp
        picks = self.attrs["picks"]
        flat = xp.zeros((picks.shape[0], self.data_shape[-1]), dtype=np.float64)
        rows = xp.broadcast_to(xp.arange(picks.shape[0])[:, None], picks.shape)
        with np.errstate(all="ignore"):
            values = g.reshape(picks.shape).astype(np.float64) / self.picked
        self.be.scatter_add(flat, (rows, picks), values)
        return flat.reshape(self.data_shape).astype(g.dtype)


def _pick(xp: Any, cdf: Any, u: Any) -> Any:
    """The first index whose cumulative probability exceeds each uniform draw, per row."""
    if cdf.size * u.shape[1] <= 1 << 24:
        return (u[:, :, None] >= cdf[:, None, :]).sum(axis=-1)
    return xp.stack([xp.searchsorted(c, row, side="right") for c, row in zip(cdf, u, strict=True)])


def sample_multinomial(
    data: NDArray,
    shape: ShapeLike | None = None,
    get_prob: bool = False,
    dtype: DTypeLike = "int32",
    out: NDArray | None = None,
) -> NDArray | list[NDArray]:
    """Draw categories from the distributions along ``data``'s last axis.

    Parameters
    ----------
    data : NDArray
        Probabilities (each row should sum to 1, as MXNet assumes: a draw past a row's total
        picks its last category), shape ``S + (k,)``.
    shape : int or tuple of int, optional
        Draws per distribution: the result has shape ``S + shape`` (``(1,)`` when that is
        empty).
    get_prob : bool, default False
        Also return each draw's log-probability ``log(data[..., draw])`` (of ``data``'s
        dtype), differentiable for ``data``: used with a reward as head gradient, it gives the
        REINFORCE estimate.
    dtype : {'int32', 'uint8', 'float16', 'float32', 'float64'}, default 'int32'
        Of the drawn indices.
    out : NDArray, optional
        Array to write the indices into.

    Returns
    -------
    NDArray, or [NDArray, NDArray] with ``get_prob``

    Raises
    ------
    MXNetError
        For another dtype, more categories than ``dtype`` can number exactly, negative
        probabilities or an ``out`` of the wrong shape.
    """
    op = "sample_multinomial"
    if not isinstance(data, NDArray):
        raise MXNetError(f"{op}: data must be an NDArray of probabilities")
    dt = _dtype_name(op, dtype, _MULTINOMIAL_DTYPES, "int32")
    if data.ndim == 0:
        raise InvalidShapeError(f"{op}: data needs a last axis of probabilities, got shape ()")
    k = data.shape[-1]
    if k - 1 > _LARGEST_INDEX[dt]:
        raise MXNetError(f"{op}: data has {k} categories, more than dtype {dt} numbers exactly")
    extra = extra_shape(shape)
    result_shape = (data.shape[:-1] + extra) or (1,)
    if out is not None and out.shape != result_shape:
        raise InvalidShapeError(f"{op}: out has shape {out.shape}, the draws {result_shape}")
    ctx = data._ctx
    be = ctx.backend
    xp = be.xp
    count = math.prod(extra) if extra else 1
    picked = []

    def draws() -> Any:
        probs = xp.asarray(data._data, dtype=np.float64).reshape(-1, k)
        _refuse(op, probs < 0, "data must hold non-negative probabilities")
        g = generator(ctx, shared=False)
        u = be.uniform(g, 0.0, 1.0, (probs.shape[0], count), np.dtype(np.float64))
        picked.append(xp.minimum(_pick(xp, xp.cumsum(probs, axis=1), u), k - 1))
        return picked[0].reshape(result_shape).astype(dt)

    result = drawn(ctx, result_shape, dt, draws, shared=False)
    failure = failure_of(result)
    if out is not None:
        out[:] = result
        result = out
    if not get_prob:
        return result
    if failure is not None:  # the log-probabilities fail with the draws
        with be.guard(ctx.device_id):
            logp = _wrap(xp.zeros(result_shape, data._dtype_raw()), ctx)
        fail((logp,), failure)
        return [result, logp]
    return [result, apply(_LogProb, (data,), picks=picked[0], shape=result_shape)]


def sample_unique_zipfian(
    range_max: int, shape: ShapeLike | None = None
) -> tuple[NDArray, NDArray]:
    """Draw distinct classes from ``[0, range_max)`` by the log-uniform (Zipfian) law
    ``P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1)``.

    Parameters
    ----------
    range_max : int
        The number of classes.
    shape : (int, int)
        ``(batch_size, num_sampled)``: each row gets ``num_sampled`` distinct classes.

    Returns
    -------
    (NDArray, NDArray)
        The classes, int64 of ``shape``, in the order drawn; the number of draws each row
        took to find them, int64 of ``(batch_size,)``.

    Raises
    ------
    MXNetError
        When ``shape`` is not two-dimensional or asks for more classes than there are.
    """
    op = "_sample_unique_zipfian"
    size = extra_shape(shape)
    if len(size) != 2:
        raise MXNetError(f"{op}: shape must be (batch_size, num_sampled), got {shape}")
    batch, wanted = size
    if not 0 < wanted <= int(range_max):
        raise MXNetError(f"{op}: cannot draw {wanted} distinct classes of range_max={range_max}")
    from ..context import current_context

    ctx = current_context()
    rng = generator(ctx)
    classes = np.empty(size, dtype=np.int64)
    trials = np.empty((batch,), dtype=np.int64)
    log_range = math.log(range_max + 1.0)
    for row in range(batch):
        stream = np.empty((0,), dtype=np.int64)
        while True:
            u = np.asarray(ctx.backend.to_host(
                ctx.backend.uniform(rng, 0.0, 1.0, (2 * wanted,), np.dtype(np.float64))
            ))  # fmt: skip
            drawn = (np.exp(u * log_range) - 1.0).astype(np.int64)
            stream = np.concatenate([stream, np.minimum(drawn, range_max - 1)])
            _, first = np.unique(stream, return_index=True)
            if first.size >= wanted:
                order = np.sort(first)[:wanted]
                classes[row] = stream[order]
                trials[row] = order[-1] + 1
                break
    return _wrap(ctx.backend.asarray(classes, None, ctx.device_id), ctx), _wrap(
        ctx.backend.asarray(trials, None, ctx.device_id), ctx
    )
