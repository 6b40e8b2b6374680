"""``mx.sym.random``: the symbolic samplers of :mod:`mxrs.ndarray.random`.

Numbers as parameters make a node of one distribution (``random_normal``); Symbols make a node
drawing per element of their values (``sample_normal``), as MXNet's do. ``pdf_*`` make density
nodes (``random_pdf_normal``). The ``*_like`` samplers draw per element of a parameter array
shaped like ``data`` (``sample_normal(zeros_like(data) + loc, ...)``), so their draws are
float32 (or the ``dtype`` given) whatever ``data``'s dtype.
"""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..ndarray import random as _nd_random
from .ops import make_function
from .symbol import Symbol

__all__ = [
    "uniform",
    "normal",
    "randn",
    "poisson",
    "exponential",
    "gamma",
    "multinomial",
    "negative_binomial",
    "generalized_negative_binomial",
    "shuffle",
    "randint",
]
# the *_like samplers and the densities, as mx.nd.random has them
__all__ += [n for n in _nd_random.__all__ if n.endswith("_like") or n.startswith("pdf_")]


def _node(
    dist: str, params: dict[str, Any], shape: Any, dtype: Any, kwargs: dict[str, Any]
) -> Symbol:
    """A ``sample_<dist>`` node over Symbol parameters or a ``random_<dist>`` node of numbers."""
    symbols = [isinstance(v, Symbol) for v in params.values()]
    if any(symbols) and not all(symbols):
        raise MXNetError(f"random.{dist}: give every parameter as a Symbol, or none")
    attrs = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    if all(symbols):
        return make_function(f"sample_{dist}")(*params.values(), **attrs, **kwargs)
    return make_function(f"random_{dist}")(**params, **attrs, **kwargs)


def uniform(low: Any = 0.0, high: Any = 1.0, shape: Any = None, dtype: Any = None,
            **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws from the uniform distribution on ``[low, high)`` (numbers or Symbols)."""
    return _node("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc: Any = 0.0, scale: Any = 1.0, shape: Any = None, dtype: Any = None,
           **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws from the normal distribution of mean ``loc`` and deviation ``scale``."""
    if isinstance(loc, Symbol) or isinstance(scale, Symbol):
        return _node("normal", {"mu": loc, "sigma": scale}, shape, dtype, kwargs)
    return _node("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def randn(*shape: int, loc: Any = 0.0, scale: Any = 1.0, dtype: Any = None,
          **kwargs: Any) -> Symbol:  # fmt: skip
    """Normal draws of ``shape`` (separate ints); given a Symbol ``data`` instead, draws of
    its shape (MXNet leaves that shape to inference from the nodes around it)."""
    data = kwargs.pop("data", None)
    if isinstance(data, Symbol) and not shape:
        if dtype is not None:
            kwargs["dtype"] = dtype
        return normal_like(data, loc, scale, **kwargs)
    return normal(loc, scale, shape or None, dtype, **kwargs)


def poisson(lam: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Draws from the Poisson distribution of rate ``lam``."""
    return _node("poisson", {"lam": lam}, shape, dtype, kwargs)


def exponential(scale: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Draws from the exponential distribution of mean ``scale`` (the operators take the
    rate ``1 / scale``)."""
    return _node("exponential", {"lam": 1.0 / scale}, shape, dtype, kwargs)


def gamma(alpha: Any = 1.0, beta: Any = 1.0, shape: Any = None, dtype: Any = None,
          **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws from the gamma distribution of shape ``alpha`` and scale ``beta``."""
    return _node("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def negative_binomial(k: Any = 1, p: Any = 1.0, shape: Any = None, dtype: Any = None,
                      **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws the failures before the ``k``-th success in trials of success probability ``p``."""
    return _node("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(mu: Any = 1.0, alpha: Any = 1.0, shape: Any = None,
                                  dtype: Any = None, **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws from the negative binomial of mean ``mu`` and dispersion ``alpha``."""
    return _node("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype,
                 kwargs)  # fmt: skip


def multinomial(data: Symbol, shape: Any = None, get_prob: bool = False, dtype: Any = "int32",
                **kwargs: Any) -> Symbol:  # fmt: skip
    """Draws categories from the distributions along ``data``'s last axis.

    Raises
    ------
    MXNetError
        With ``get_prob``: the symbolic node has one output here, so the log-probabilities
        are only available from ``mx.nd.random.multinomial``.
    """
    if get_prob:
        raise MXNetError(
            "random.multinomial: get_prob=True is not supported symbolically; use "
            "mx.nd.random.multinomial(..., get_prob=True)"
        )
    attrs = {"shape": shape} if shape is not None else {}
    return make_function("sample_multinomial")(data, dtype=dtype, **attrs, **kwargs)


def shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """``data`` with its first axis randomly permuted."""
    return make_function("shuffle")(data, **kwargs)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Integers drawn uniformly from ``[low, high)``."""
    attrs = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    return make_function("random_randint")(low=low, high=high, **attrs, **kwargs)


def _like(dist: str, data: Symbol, params: list[Any], kwargs: dict[str, Any]) -> Symbol:
    if not isinstance(data, Symbol):
        raise MXNetError(f"random.{dist}_like: data must be a Symbol")
    zeros = make_function("zeros_like")(data)
    arrays = [zeros + float(p) for p in params]
    return make_function(f"sample_{dist}")(*arrays, **kwargs)


def uniform_like(data: Symbol, low: float = 0.0, high: float = 1.0, **kwargs: Any) -> Symbol:
    """Uniform draws shaped like ``data``."""
    return _like("uniform", data, [low, high], kwargs)


def normal_like(data: Symbol, loc: float = 0.0, scale: float = 1.0, **kwargs: Any) -> Symbol:
    """Normal draws shaped like ``data``."""
    return _like("normal", data, [loc, scale], kwargs)


def gamma_like(data: Symbol, alpha: float = 1.0, beta: float = 1.0, **kwargs: Any) -> Symbol:
    """Gamma draws (shape ``alpha``, scale ``beta``) shaped like ``data``."""
    return _like("gamma", data, [alpha, beta], kwargs)


def exponential_like(data: Symbol, lam: float = 1.0, **kwargs: Any) -> Symbol:
    """Exponential draws of *rate* ``lam`` shaped like ``data``."""
    return _like("exponential", data, [lam], kwargs)


def poisson_like(data: Symbol, lam: float = 1.0, **kwargs: Any) -> Symbol:
    """Poisson draws of rate ``lam`` shaped like ``data``."""
    return _like("poisson", data, [lam], kwargs)


def negative_binomial_like(data: Symbol, k: float = 1, p: float = 1.0, **kwargs: Any) -> Symbol:
    """Negative binomial draws shaped like ``data``."""
    return _like("negative_binomial", data, [k, p], kwargs)


def generalized_negative_binomial_like(data: Symbol, mu: float = 1.0, alpha: float = 1.0,
                                       **kwargs: Any) -> Symbol:  # fmt: skip
    """Generalized negative binomial draws shaped like ``data``."""
    return _like("generalized_negative_binomial", data, [mu, alpha], kwargs)


def _pdf(dist: str) -> Any:
    """The function making ``random_pdf_<dist>`` nodes (looked up when first called)."""

    def fn(*args: Any, **kwargs: Any) -> Symbol:
        return make_function("random_pdf_" + dist, "pdf_" + dist)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = "pdf_" + dist
    fn.__doc__ = f"Density nodes of the {dist} distribution: ``mx.nd.random_pdf_{dist}``'s."
    return fn


pdf_uniform = _pdf("uniform")
pdf_normal = _pdf("normal")
pdf_gamma = _pdf("gamma")
pdf_exponential = _pdf("exponential")
pdf_poisson = _pdf("poisson")
pdf_negative_binomial = _pdf("negative_binomial")
pdf_generalized_negative_binomial = _pdf("generalized_negative_binomial")
pdf_dirichlet = _pdf("dirichlet")
