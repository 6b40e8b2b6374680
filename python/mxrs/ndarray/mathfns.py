"""More one-input math: inverse and hyperbolic trigonometry, tan, degrees/radians, log2/log10,
cube roots, fix, the error and gamma functions, hard_sigmoid, softmin and logical_not.

As in MXNet, the result has the input's dtype: an integer array is computed in float64 and
truncated back (``nd.degrees`` of int 1 is 57). erf, erfinv, gamma and gammaln come from
:mod:`.core.special` (computed in float64); the rest use the array library's own functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MXNetError
from . import unary
from .core import special as _special
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method
from .nn import softmax as _softmax
from .reduce import argsort as _argsort
from .reduce import sort as _sort

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = [
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sinh",
    "cosh",
    "tan",
    "degrees",
    "radians",
    "log2",
    "log10",
    "cbrt",
    "rcbrt",
    "fix",
    "erf",
    "erfinv",
    "gamma",
    "gammaln",
    "hard_sigmoid",
    "softmin",
    "logical_not",
]


class _Smooth(Op):
    """A differentiable elementwise function: ``_f(x)`` and its derivative ``_df(x, y)``,
    computed in floating point; integer inputs are computed in float64 and truncated back."""

    def _f(self, x: Any) -> Any:
        raise NotImplementedError

    def _df(self, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def forward(self, x):
        xf = x if x.dtype.kind == "f" else x.astype(np.float64)
        with np.errstate(all="ignore"):
            y = self._f(xf)
        self.x, self.y = xf, y
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        with np.errstate(all="ignore"):
            d = self._df(self.x, self.y)
        return (g * d).astype(g.dtype, copy=False)


class _Arcsin(_Smooth):
    def _f(self, x):
        return self.xp.arcsin(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(1 - x * x)


class _Arccos(_Smooth):
    def _f(self, x):
        return self.xp.arccos(x)

    def _df(self, x, y):
        return -1 / self.xp.sqrt(1 - x * x)


class _Arctan(_Smooth):
    def _f(self, x):
        return self.xp.arctan(x)

    def _df(self, x, y):
        return 1 / (1 + x * x)


class _Arcsinh(_Smooth):
    def _f(self, x):
        return self.xp.arcsinh(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(x * x + 1)


class _Arccosh(_Smooth):
    def _f(self, x):
        return self.xp.arccosh(x)

    def _df(self, x, y):
        return 1 / self.xp.sqrt(x * x - 1)


class _Arctanh(_Smooth):
    def _f(self, x):
        return self.xp.arctanh(x)

    def _df(self, x, y):
        return 1 / (1 - x * x)


class _Sinh(_Smooth):
    def _f(self, x):
        return self.xp.sinh(x)

    def _df(self, x, y):
        return self.xp.cosh(x)


class _Cosh(_Smooth):
    def _f(self, x):
        return self.xp.cosh(x)

    def _df(self, x, y):
        return self.xp.sinh(x)


class _Tan(_Smooth):
    def _f(self, x):
        return self.xp.tan(x)

    def _df(self, x, y):
        return 1 + y * y


class _Log2(_Smooth):
    def _f(self, x):
        return self.xp.log2(x)

    def _df(self, x, y):
        return 1 / (x * math.log(2.0))


class _Log10(_Smooth):
    def _f(self, x):
        return self.xp.log10(x)

    def _df(self, x, y):
        return 1 / (x * math.log(10.0))


def _cbrt(xp: Any, x: Any) -> Any:
    """Cube root through float64: NumPy's float32 cbrt is off by an ulp at exact cubes."""
    return xp.cbrt(x.astype(np.float64)).astype(x.dtype, copy=False)


class _Cbrt(_Smooth):
    def _f(self, x):
        return _cbrt(self.xp, x)

    def _df(self, x, y):
        return 1 / (3 * y * y)


class _Rcbrt(_Smooth):
    def _f(self, x):
        return 1 / _cbrt(self.xp, x)

    def _df(self, x, y):
        return -y / (3 * x)


class _Erf(_Smooth):
    def _f(self, x):
        return _special.erf(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return (2 / math.sqrt(math.pi)) * self.xp.exp(-x * x)


class _Erfinv(_Smooth):
    def _f(self, x):
        return _special.erfinv(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return (math.sqrt(math.pi) / 2) * self.xp.exp(y * y)


class _Gamma(_Smooth):
    def _f(self, x):
        return _special.gamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return y * _special.digamma(self.xp, x).astype(x.dtype, copy=False)


class _Gammaln(_Smooth):
    def _f(self, x):
        return _special.lgamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return _special.digamma(self.xp, x).astype(x.dtype, copy=False)


class _Digamma(_Smooth):
    """The derivative of gammaln, recorded in the create_graph rules of gamma and gammaln."""

    def _f(self, x):
        return _special.digamma(self.xp, x).astype(x.dtype, copy=False)

    def _df(self, x, y):
        return _special.trigamma(self.xp, x).astype(x.dtype, copy=False)


class _Scale(Op):
    """``x * factor`` (degrees, radians): linear."""

    def forward(self, x, factor):
        self.factor = factor
        y = x * factor
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        return g * self.factor


class _ZeroGrad(Op):
    """fix (round toward zero) and logical_not: piecewise constant, zero gradient."""

    def forward(self, x, fn):
        if fn == "fix":
            return x.copy() if x.dtype.kind in "iub" else self.xp.trunc(x)
        return (x == 0).astype(x.dtype)

    def backward(self, g):
        return None


class _HardSigmoid(Op):
    def forward(self, x, alpha, beta):
        self.alpha = alpha
        z = x * alpha + beta
        self.inside = (z > 0) & (z < 1)
        return self.xp.clip(z, 0, 1).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * (self.inside * self.alpha).astype(g.dtype)


def arcsin(data: ArrayT) -> ArrayT:
    """Return the inverse sine elementwise (NaN outside [-1, 1])."""
    return apply(_Arcsin, (data,))


def arccos(data: ArrayT) -> ArrayT:
    """Return the inverse cosine elementwise (NaN outside [-1, 1])."""
    return apply(_Arccos, (data,))


def arctan(data: ArrayT) -> ArrayT:
    """Return the inverse tangent elementwise."""
    return apply(_Arctan, (data,))


def arcsinh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic sine elementwise."""
    return apply(_Arcsinh, (data,))


def arccosh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic cosine elementwise (NaN below 1)."""
    return apply(_Arccosh, (data,))


def arctanh(data: ArrayT) -> ArrayT:
    """Return the inverse hyperbolic tangent elementwise (NaN outside [-1, 1])."""
    return apply(_Arctanh, (data,))


def sinh(data: ArrayT) -> ArrayT:
    """Return the hyperbolic sine elementwise."""
    return apply(_Sinh, (data,))


def cosh(data: ArrayT) -> ArrayT:
    """Return the hyperbolic cosine elementwise."""
    return apply(_Cosh, (data,))


def tan(data: ArrayT) -> ArrayT:
    """Return the tangent elementwise (gradient ``1 + tan(x)^2``)."""
    return apply(_Tan, (data,))


def degrees(data: ArrayT) -> ArrayT:
    """Convert radians to degrees: ``data * 180 / pi``."""
    return apply(_Scale, (data,), factor=180.0 / math.pi)


def radians(data: ArrayT) -> ArrayT:
    """Convert degrees to radians: ``data * pi / 180``."""
    return apply(_Scale, (data,), factor=math.pi / 180.0)


def log2(data: ArrayT) -> ArrayT:
    """Return the base-2 logarithm elementwise."""
    return apply(_Log2, (data,))


def log10(data: ArrayT) -> ArrayT:
    """Return the base-10 logarithm elementwise."""
    return apply(_Log10, (data,))


def cbrt(data: ArrayT) -> ArrayT:
    """Return the cube root elementwise (negative for negative inputs)."""
    return apply(_Cbrt, (data,))


def rcbrt(data: ArrayT) -> ArrayT:
    """Return ``1 / cbrt(data)`` elementwise."""
    return apply(_Rcbrt, (data,))


def fix(data: ArrayT) -> ArrayT:
    """Round toward zero, as :func:`trunc` (zero gradient)."""
    return apply(_ZeroGrad, (data,), fn="fix")


def erf(data: ArrayT) -> ArrayT:
    """Return the Gauss error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``."""
    return apply(_Erf, (data,))


def erfinv(data: ArrayT) -> ArrayT:
    """Return the inverse error function: +-inf at +-1, NaN outside [-1, 1]."""
    return apply(_Erfinv, (data,))


def gamma(data: ArrayT) -> ArrayT:
    """Return the gamma function elementwise (NaN at the negative integers, inf at 0).

    Examples
    --------
    >>> mx.nd.gamma(mx.nd.array([0.5, 5])).asnumpy()
    array([ 1.7724539, 24.       ], dtype=float32)
    """
    return apply(_Gamma, (data,))


def gammaln(data: ArrayT) -> ArrayT:
    """Return ``log |gamma(data)|`` elementwise (inf at 0 and the negative integers)."""
    return apply(_Gammaln, (data,))


def hard_sigmoid(data: ArrayT, alpha: float = 0.2, beta: float = 0.5) -> ArrayT:
    """Return ``clip(alpha * data + beta, 0, 1)``; the gradient is ``alpha`` strictly inside."""
    return apply(_HardSigmoid, (data,), alpha=float(alpha), beta=float(beta))


def softmin(
    data: ArrayT,
    axis: int = -1,
    temperature: float | None = None,
    dtype: DTypeLike | None = None,
    use_length: bool = False,
) -> ArrayT:
    """Softmin along ``axis``: ``exp(-x/T) / sum(exp(-x/T))``, :func:`softmax` of ``-data``.

    Parameters
    ----------
    axis : int, default -1
    temperature : float, optional
        Divides the input first; 1 when None.
    dtype : {None, 'float16', 'float32', 'float64'}, optional
        The output dtype (the computation runs in it); ``data``'s when None.
    use_length : bool, default False
        Must be False: ``nd.softmin`` takes no length input (as in MXNet).
    """
    if use_length:
        raise MXNetError("softmin: use_length=True needs a length input, which nd.softmin lacks")
    if dtype is not None and np.dtype(dtype) != data._data.dtype:
        data = unary.cast(data, dtype)
    return _softmax(unary.negative(data), axis=axis, temperature=temperature)


def logical_not(data: ArrayT) -> ArrayT:
    """Return 1 where ``data`` is zero, else 0, in ``data``'s dtype (zero gradient)."""
    return apply(_ZeroGrad, (data,), fn="not")


class MathMethods(ArrayCore):
    """The math functions MXNet's NDArray has as methods, with ``rint``, ``trunc``, ``sort``,
    ``argsort`` and ``softmin``."""

    __slots__ = ()
    arcsin = as_method(arcsin)
    arccos = as_method(arccos)
    arctan = as_method(arctan)
    arcsinh = as_method(arcsinh)
    arccosh = as_method(arccosh)
    arctanh = as_method(arctanh)
    sinh = as_method(sinh)
    cosh = as_method(cosh)
    tan = as_method(tan)
    degrees = as_method(degrees)
    radians = as_method(radians)
    log2 = as_method(log2)
    log10 = as_method(log10)
    cbrt = as_method(cbrt)
    rcbrt = as_method(rcbrt)
    fix = as_method(fix)
    rint = as_method(unary.rint)
    trunc = as_method(unary.trunc)
    softmin = as_method(softmin)
    sort = as_method(_sort)
    argsort = as_method(_argsort)
