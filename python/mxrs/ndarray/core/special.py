"""Special functions on raw arrays of either library: erf, erfc, erfinv, gamma, lgamma, digamma
and trigamma.

Neither NumPy nor CuPy's core has them, so they are written with elementwise arithmetic alone
(every branch is computed and the right one picked with ``where``), in float64, to about 1e-15
relative error:

erf, erfc
    Below ``|x| = 2`` the everywhere-positive series ``erf(x) = 2/sqrt(pi) exp(-x^2) sum
    (2x^2)^n x / (2n+1)!!``; above it the continued fraction of ``erfc``.
erfinv
    A closed-form first guess refined by Halley steps on ``erf`` (or on ``erfc`` near +-1, where
    ``1 - |y|`` is exact).
gamma, lgamma
    The Lanczos approximation (g = 7, nine terms) with the reflection formula below 1/2;
    exact factorials at the positive integers.
digamma, trigamma
    The recurrences up to ``x >= 10`` and the asymptotic series there, with reflection below 1/2.

Each function takes a floating array and returns a float64 array; the callers cast back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["erf", "erfc", "erfinv", "gamma", "lgamma", "digamma", "trigamma"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SERIES_TERMS = 48
_CF_DEPTH = 60
_SPLIT = 2.0


def _f64(xp: Any, x: Any) -> Any:
    return x.astype(np.float64) if x.dtype != np.float64 else x


def _erf_series(xp: Any, x: Any) -> Any:
    """erf(x) for small |x| (all terms positive, no cancellation)."""
    x2 = x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, _SERIES_TERMS):
        term = term * (2.0 * x2 / (2 * n + 1))
        total = total + term
    return _TWO_OVER_SQRT_PI * xp.exp(-x2) * total


def _erfc_fraction(xp: Any, z: Any) -> Any:
    """erfc(z) for z >= _SPLIT: exp(-z^2)/sqrt(pi) / (z + 1/2 / (z + 1 / (z + 3/2 / ...)))."""
    frac = z.copy()
    for k in range(_CF_DEPTH, 0, -1):
        frac = z + (0.5 * k) / frac
    return xp.exp(-z * z) / (math.sqrt(math.pi) * frac)


def _erf_erfc(xp: Any, x: Any) -> tuple[Any, Any]:
    """(erf(|x|), erfc(|x|)) for a float64 array."""
    z = xp.abs(x)
    small = z < _SPLIT
    zs = xp.where(small, z, 0.0)
    zl = xp.where(small, _SPLIT, z)
    e_small = _erf_series(xp, zs)
    c_large = _erfc_fraction(xp, zl)
    erf_abs = xp.where(small, e_small, 1.0 - c_large)
    erfc_abs = xp.where(small, 1.0 - e_small, c_large)
    return erf_abs, erfc_abs


def erf(xp: Any, x: Any) -> Any:
    """The Gauss error function."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        e, _ = _erf_erfc(xp, x)
        return xp.where(xp.isnan(x), x, xp.sign(x) * e)


def erfc(xp: Any, x: Any) -> Any:
    """The complementary error function ``1 - erf(x)``."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        _, c = _erf_erfc(xp, x)
        return xp.where(x < 0, 2.0 - c, c)


def erfinv(xp: Any, y: Any) -> Any:
    """The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside."""
    y = _f64(xp, y)
    with np.errstate(all="ignore"):
        z = xp.abs(y)
        inside = z < 1.0
        zi = xp.where(inside, z, 0.5)
        # Winitzki's closed form, within a few 1e-3 of the answer
        a = 0.147
        ln = xp.log1p(-zi) + xp.log1p(zi)
        t = 2.0 / (math.pi * a) + 0.5 * ln
        x = xp.sqrt(xp.sqrt(t * t - ln / a) - t)
        tail = zi > 0.5
        target = xp.where(tail, 1.0 - zi, zi)  # exact for zi in [0.5, 1]
        for _ in range(4):
            e, c = _erf_erfc(xp, x)
            f = xp.where(tail, target - c, e - target)
            u = f / (_TWO_OVER_SQRT_PI * xp.exp(-x * x))
            x = x - u / (1.0 + x * u)
        out = xp.where(inside, x, xp.where(z == 1.0, xp.inf, xp.nan))
        return xp.where(xp.isnan(y), y, xp.sign(y) * out)


_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def _lanczos_parts(xp: Any, x: Any) -> tuple[Any, Any]:
    """For x >= 1/2: (t, A) with gamma(x) = sqrt(2 pi) t^(x - 1/2) exp(-t) A."""
    z = x - 1.0
    acc = xp.full(x.shape, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        acc = acc + c / (z + i)
    return z + _LANCZOS_G + 0.5, acc


_FACTORIALS = np.array([float(math.factorial(n)) for n in range(171)])


def _exact_at_integers(xp: Any, x: Any, out: Any, log: bool) -> Any:
    """``out`` with gamma (or its log) of the positive integers up to 171 exact: (x-1)!."""
    whole = (x >= 1) & (x <= 171) & (x == xp.round(x))
    table = xp.asarray(np.log(_FACTORIALS) if log else _FACTORIALS)
    idx = xp.where(whole, x - 1, 0).astype(np.int64)
    return xp.where(whole, table[idx], out)


def _sinpi(xp: Any, x: Any) -> Any:
    """sin(pi x), exactly zero at the integers."""
    n = xp.round(x)
    r = x - n
    sign = 1.0 - 2.0 * xp.mod(n, 2.0)
    return sign * xp.sin(math.pi * r)


def lgamma(xp: Any, x: Any) -> Any:
    """log |gamma(x)|: +inf at the poles 0, -1, -2, ..."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        refl = x < 0.5
        xr = xp.where(refl, 1.0 - x, x)
        t, acc = _lanczos_parts(xp, xr)
        lg = 0.5 * math.log(2.0 * math.pi) + (xr - 0.5) * xp.log(t) - t + xp.log(acc)
        s = xp.abs(_sinpi(xp, x))
        lg_refl = math.log(math.pi) - xp.log(s) - lg
        out = _exact_at_integers(xp, x, xp.where(refl, lg_refl, lg), log=True)
        return xp.where(xp.isinf(x), xp.inf, out)


def gamma(xp: Any, x: Any) -> Any:
    """The gamma function: NaN at the negative integers, +-inf at +-0."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        refl = x < 0.5
        xr = xp.where(refl, 1.0 - x, x)
        t, acc = _lanczos_parts(xp, xr)
        # t^(x-1/2) e^-t as two half powers, so large x overflows only when gamma does
        half = xp.power(t, 0.5 * (xr - 0.5))
        g = math.sqrt(2.0 * math.pi) * half * (xp.exp(-t) * half) * acc
        g_refl = math.pi / (_sinpi(xp, x) * g)
        out = _exact_at_integers(xp, x, xp.where(refl, g_refl, g), log=False)
        pole = (x < 0) & (x == xp.round(x))
        out = xp.where(pole, xp.nan, out)
        return xp.where(x == 0, xp.copysign(xp.inf, x), out)


_SHIFT_TO = 10.0
_SHIFT_STEPS = 10


def _shift_up(xp: Any, x: Any, power: int) -> tuple[Any, Any]:
    """Move every positive x to x + n >= 10, returning (x + n, sum_k 1 / (x + k)^power)."""
    acc = xp.zeros_like(x)
    for _ in range(_SHIFT_STEPS):
        low = x < _SHIFT_TO
        acc = acc + xp.where(low, 1.0 / x**power, 0.0)
        x = xp.where(low, x + 1.0, x)
    return x, acc


def digamma(xp: Any, x: Any) -> Any:
    """The digamma function ``gamma'(x) / gamma(x)``: NaN at the poles 0, -1, -2, ..."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        refl = x < 0.5
        xr = xp.where(refl, 1.0 - x, x)
        big, acc = _shift_up(xp, xr, 1)
        r = 1.0 / (big * big)
        series = r * (
            -1.0 / 12 + r * (1.0 / 120 + r * (-1.0 / 252 + r * (1.0 / 240 + r * (-1.0 / 132))))
        )
        psi = xp.log(big) - 0.5 / big + series - acc
        # psi(1 - x) - psi(x) = pi cot(pi x)
        r_pi = math.pi * (x - xp.round(x))  # cot has period pi
        out = xp.where(refl, psi - math.pi * xp.cos(r_pi) / xp.sin(r_pi), psi)
        return xp.where(refl & (x == xp.round(x)), xp.nan, out)


def trigamma(xp: Any, x: Any) -> Any:
    """The trigamma function ``digamma'(x)``: +inf at the poles."""
    x = _f64(xp, x)
    with np.errstate(all="ignore"):
        refl = x < 0.5
        xr = xp.where(refl, 1.0 - x, x)
        big, acc = _shift_up(xp, xr, 2)
        inv = 1.0 / big
        r = inv * inv
        tail = 1.0 / 6 + r * (-1.0 / 30 + r * (1.0 / 42 + r * (-1.0 / 30 + r * (5.0 / 66))))
        series = inv + 0.5 * r + inv * r * tail
        psi1 = series + acc
        # psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
        s = _sinpi(xp, x)
        out = xp.where(refl, math.pi**2 / (s * s) - psi1, psi1)
        return xp.where(refl & (x == xp.round(x)), xp.inf, out)
