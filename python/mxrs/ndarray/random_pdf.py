"""Probability densities of samples (``random_pdf_*``, ``mx.nd.random.pdf_*``), as MXNet 1.9.1
defines them, with the gradient for the sample and for every parameter.

Each distribution's parameters are arrays of one shape ``S``, the leading part of the sample's
shape: the densities of ``sample[i]`` (one value, or a whole array of them) are those of the
distribution at ``params[i]``, and the result has the sample's shape. The Dirichlet's ``alpha``
has ``S + (k,)``, its sample ``S + T + (k,)`` and its result ``S + T``.

The formulas are evaluated as written, as MXNet does: there is no check of the support (the
uniform density is ``1 / (high - low)`` everywhere, a negative count gets a density of zero
through ``lgamma``), and the discrete distributions have no gradient for the sample (zero).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import InvalidShapeError, MXNetError
from .core import special
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = [
    "random_pdf_uniform",
    "random_pdf_normal",
    "random_pdf_gamma",
    "random_pdf_exponential",
    "random_pdf_poisson",
    "random_pdf_negative_binomial",
    "random_pdf_generalized_negative_binomial",
    "random_pdf_dirichlet",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class _Dist:
    """A distribution's log density and its derivatives (for the sample first, None when it
    has none, then each parameter), all of the broadcast sample's shape."""

    params: tuple[str, ...]
    logpdf: Callable[..., Any]
    grads: Callable[..., list[Any]]
    discrete: bool = False
    vector: bool = False  # the Dirichlet: one sample is the last axis


def _nb_logpdf(xp: Any, x: Any, k: Any, p: Any) -> Any:
    lg = special.lgamma
    return lg(xp, x + k) - lg(xp, x + 1) - lg(xp, k) + k * xp.log(p) + x * xp.log1p(-p)


def _nb_dk(xp: Any, x: Any, k: Any, p: Any) -> Any:
    return special.digamma(xp, x + k) - special.digamma(xp, k) + xp.log(p)


def _gnb_logpdf(xp: Any, x: Any, mu: Any, alpha: Any) -> Any:
    return _nb_logpdf(xp, x, 1.0 / alpha, 1.0 / (mu * alpha + 1.0))


def _gnb_grads(xp: Any, x: Any, mu: Any, alpha: Any) -> list[Any]:
    k, p, spread = 1.0 / alpha, 1.0 / (mu * alpha + 1.0), mu * alpha + 1.0
    d_mu = (x - mu) / (mu * spread)
    d_alpha = -_nb_dk(xp, x, k, p) / (alpha * alpha) + (x - mu) / (alpha * spread)
    return [None, d_mu, d_alpha]


def _dirichlet_logpdf(xp: Any, x: Any, alpha: Any) -> Any:
    lg = special.lgamma
    norm = lg(xp, alpha.sum(axis=-1)) - lg(xp, alpha).sum(axis=-1)
    return ((alpha - 1.0) * xp.log(x)).sum(axis=-1) + norm


def _dirichlet_grads(xp: Any, x: Any, alpha: Any) -> list[Any]:
    dg = special.digamma
    total = dg(xp, alpha.sum(axis=-1, keepdims=True))
    d_alpha = xp.log(x) + total - dg(xp, alpha)
    return [(alpha - 1.0) / x, d_alpha]


_DISTS: dict[str, _Dist] = {
    "uniform": _Dist(
        ("low", "high"),
        lambda xp, x, lo, hi: xp.broadcast_to(-xp.log(hi - lo), x.shape),
        lambda xp, x, lo, hi: [xp.zeros_like(x), 1.0 / (hi - lo), -1.0 / (hi - lo)],
    ),
    "normal": _Dist(
        ("mu", "sigma"),
        lambda xp, x, mu, s: -0.5 * ((x - mu) / s) ** 2 - xp.log(s) - _HALF_LOG_2PI,
        lambda xp, x, mu, s: [-(x - mu) / s**2, (x - mu) / s**2, (((x - mu) / s) ** 2 - 1.0) / s],
    ),
    "gamma": _Dist(
        ("alpha", "beta"),
        lambda xp, x, a, b: a * xp.log(b) - special.lgamma(xp, a) + (a - 1.0) * xp.log(x) - b * x,
        lambda xp, x, a, b: [
            (a - 1.0) / x - b,
            xp.log(b) - special.digamma(xp, a) + xp.log(x),
            a / b - x,
        ],
    ),
    "exponential": _Dist(
        ("lam",),
        lambda xp, x, lam: xp.log(lam) - lam * x,
        lambda xp, x, lam: [-lam, 1.0 / lam - x],
    ),
    "poisson": _Dist(
        ("lam",),
        lambda xp, x, lam: x * xp.log(lam) - lam - special.lgamma(xp, x + 1.0),
        lambda xp, x, lam: [None, x / lam - 1.0],
        discrete=True,
    ),
    "negative_binomial": _Dist(
        ("k", "p"),
        _nb_logpdf,
        lambda xp, x, k, p: [None, _nb_dk(xp, x, k, p), k / p - x / (1.0 - p)],
        discrete=True,
    ),
    "generalized_negative_binomial": _Dist(("mu", "alpha"), _gnb_logpdf, _gnb_grads, discrete=True),
    "dirichlet": _Dist(("alpha",), _dirichlet_logpdf, _dirichlet_grads, vector=True),
}


def _param_view(p: Any, sample_ndim: int, vector: bool) -> Any:
    """Parameter ``p`` of shape ``S`` (``S + (k,)``) with ones inserted for the sample's
    trailing axes, so it broadcasts against the sample."""
    if vector:
        lead = p.shape[:-1]
        return p.reshape(lead + (1,) * (sample_ndim - len(lead) - 1) + p.shape[-1:])
    return p.reshape(p.shape + (1,) * (sample_ndim - p.ndim))


def _sum_to(xp: Any, g: Any, shape: tuple[int, ...], vector: bool) -> Any:
    """Gradient ``g`` (of the sample's shape) summed over the sample's own axes to ``shape``."""
    lead = len(shape) - 1 if vector else len(shape)
    axes = tuple(range(lead, g.ndim - (1 if vector else 0)))
    return (g.sum(axis=axes) if axes else g).reshape(shape)


class _Pdf(Op):
    def forward(self, sample: Any, *params: Any, dist: str, is_log: bool) -> Any:
        xp = self.xp
        d = _DISTS[dist]
        with np.errstate(all="ignore"):
            x = sample.astype(np.float64)
            ps = [_param_view(p.astype(np.float64), x.ndim, d.vector) for p in params]
            log = d.logpdf(xp, x, *ps)
            value = log if is_log else xp.exp(log)
        self.saved = (
            x,
            ps,
            value,
            sample.dtype,
            [p.shape for p in params],
            [p.dtype for p in params],
        )
        return value.astype(sample.dtype)

    def backward(self, g: Any) -> Any:
        xp = self.xp
        d = _DISTS[self.attrs["dist"]]
        x, ps, value, sdt, pshapes, pdts = self.saved
        with np.errstate(all="ignore"):
            scale = g.astype(np.float64) * (1.0 if self.attrs["is_log"] else value)
            if d.vector:
                scale = scale[..., None]
            dlogs = d.grads(xp, x, *ps)
            grads: list[Any] = []
            dx = dlogs[0]
            if not self.needs[0]:
                grads.append(None)
            elif dx is None:
                grads.append(xp.zeros(x.shape, dtype=sdt))
            else:
                grads.append((scale * dx).astype(sdt))
            for i, dp in enumerate(dlogs[1:]):
                if not self.needs[i + 1]:
                    grads.append(None)
                    continue
                grads.append(_sum_to(xp, scale * dp, pshapes[i], d.vector).astype(pdts[i]))
        return tuple(grads)


def _check(name: str, sample: ArrayT, params: dict[str, ArrayT], vector: bool) -> None:
    """Refuse parameters of differing shapes, or not the leading part of the sample's."""
    op = f"random_pdf_{name}"
    for key, value in [("sample", sample), *params.items()]:
        if not hasattr(value, "_data"):
            raise MXNetError(f"{op}: {key} must be an NDArray, got {type(value).__name__}")
    shapes = {k: tuple(v.shape) for k, v in params.items()}
    first = next(iter(shapes.values()))
    for k, s in shapes.items():
        if s != first:
            raise InvalidShapeError(
                f"{op}: the parameters must have one shape; got {shapes}, {k} differs"
            )
    lead = first[:-1] if vector else first
    if vector and not first:
        raise InvalidShapeError(f"{op}: alpha needs a last axis of the categories, got ()")
    s = tuple(sample.shape)
    if s[: len(lead)] != lead or len(s) < len(first):
        raise InvalidShapeError(
            f"{op}: the parameters' shape {lead} must lead the sample's shape {s}"
        )
    if vector and s[-1] != first[-1]:
        raise InvalidShapeError(
            f"{op}: the sample's last axis ({s[-1]}) must match alpha's ({first[-1]})"
        )


def _pdf(name: str, sample: ArrayT, params: dict[str, ArrayT], is_log: bool) -> ArrayT:
    d = _DISTS[name]
    _check(name, sample, params, d.vector)
    return apply(_Pdf, (sample, *params.values()), dist=name, is_log=bool(is_log))


def random_pdf_uniform(sample: ArrayT, low: ArrayT, high: ArrayT, is_log: bool = False) -> ArrayT:
    """Density of ``sample`` under the uniform distributions on ``[low, high)``.

    Parameters
    ----------
    sample : NDArray
        Its leading axes are the parameters' shape.
    low, high : NDArray
        Bounds of the distributions, of one shape.
    is_log : bool, default False
        Return the log density instead.

    Returns
    -------
    NDArray
        Of the sample's shape and dtype: ``1 / (high - low)`` (MXNet does not check that the
        sample lies inside the bounds).

    Raises
    ------
    MXNetError
        When the parameters' shapes differ or do not lead the sample's.
    """
    return _pdf("uniform", sample, {"low": low, "high": high}, is_log)


def random_pdf_normal(sample: ArrayT, mu: ArrayT, sigma: ArrayT, is_log: bool = False) -> ArrayT:
    """Density of ``sample`` under the normal distributions of means ``mu`` and standard
    deviations ``sigma``; shapes and ``is_log`` as in :func:`random_pdf_uniform`."""
    return _pdf("normal", sample, {"mu": mu, "sigma": sigma}, is_log)


def random_pdf_gamma(sample: ArrayT, alpha: ArrayT, beta: ArrayT, is_log: bool = False) -> ArrayT:
    """Density of ``sample`` under the gamma distributions of shapes ``alpha`` and *rates*
    ``beta`` (``beta**alpha x**(alpha-1) exp(-beta x) / Gamma(alpha)``); shapes and ``is_log``
    as in :func:`random_pdf_uniform`."""
    return _pdf("gamma", sample, {"alpha": alpha, "beta": beta}, is_log)


def random_pdf_exponential(sample: ArrayT, lam: ArrayT, is_log: bool = False) -> ArrayT:
    """Density of ``sample`` under the exponential distributions of rates ``lam``
    (``lam exp(-lam x)``); shapes and ``is_log`` as in :func:`random_pdf_uniform`."""
    return _pdf("exponential", sample, {"lam": lam}, is_log)


def random_pdf_poisson(sample: ArrayT, lam: ArrayT, is_log: bool = False) -> ArrayT:
    """Probability of the counts ``sample`` under the Poisson distributions of rates ``lam``;
    shapes and ``is_log`` as in :func:`random_pdf_uniform`. The sample gets no gradient."""
    return _pdf("poisson", sample, {"lam": lam}, is_log)


def random_pdf_negative_binomial(
    sample: ArrayT, k: ArrayT, p: ArrayT, is_log: bool = False
) -> ArrayT:
    """Probability of ``sample`` failures before the ``k``-th success in trials of success
    probability ``p``; shapes and ``is_log`` as in :func:`random_pdf_uniform`. The sample gets
    no gradient."""
    return _pdf("negative_binomial", sample, {"k": k, "p": p}, is_log)


def random_pdf_generalized_negative_binomial(
    sample: ArrayT, mu: ArrayT, alpha: ArrayT, is_log: bool = False
) -> ArrayT:
    """Probability of the counts ``sample`` under the negative binomials of means ``mu`` and
    dispersions ``alpha`` (``k = 1 / alpha``, ``p = 1 / (mu alpha + 1)``); shapes and ``is_log``
    as in :func:`random_pdf_uniform`. The sample gets no gradient."""
    return _pdf("generalized_negative_binomial", sample, {"mu": mu, "alpha": alpha}, is_log)


def random_pdf_dirichlet(sample: ArrayT, alpha: ArrayT, is_log: bool = False) -> ArrayT:
    """Density of ``sample`` under the Dirichlet distributions of concentrations ``alpha``.

    Parameters
    ----------
    sample : NDArray
        Shape ``S + T + (k,)``: points of the ``k``-simplex.
    alpha : NDArray
        Shape ``S + (k,)``.
    is_log : bool, default False
        Return the log density instead.

    Returns
    -------
    NDArray
        Shape ``S + T``.
    """
    return _pdf("dirichlet", sample, {"alpha": alpha}, is_log)
