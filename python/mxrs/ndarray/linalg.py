"""Linear algebra on the last two axes (``mx.nd.linalg``, also ``mx.nd.linalg_<name>``), every
leading axis a batch, as MXNet 1.9.1's ``linalg`` operators: products (``gemm``, ``gemm2``,
``syrk``, ``trmm``), triangular solves (``trsm``), Cholesky (``potrf``, ``potri``), inverse and
determinants (``inverse``, ``det``, ``slogdet``), diagonals and triangles (``extractdiag``,
``makediag``, ``extracttrian``, ``maketrian``, ``sumlogdiag``). Each has its gradient;
triangular inputs get gradients on their triangle only.

A result with no matrix axes left (``det`` of one matrix) has shape ``(1,)``, as MXNet 1.x has
no zero-dimensional arrays.
"""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply
from .factorizations import gelqf, syevd
from .shape import swapaxes

__all__ = [
    "gemm",
    "gemm2",
    "syrk",
    "trmm",
    "trsm",
    "potrf",
    "potri",
    "inverse",
    "det",
    "slogdet",
    "extractdiag",
    "makediag",
    "extracttrian",
    "maketrian",
    "sumlogdiag",
    "gelqf",
    "syevd",
]


def _t(x):
    return x.swapaxes(-1, -2)


def _square(what, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise MXNetError(
            f"linalg.{what}: needs square matrices on the last two axes, got {a.shape}"
        )


def _batch_shape(x):
    """The shape of one value per matrix: the batch axes, or ``(1,)`` for one matrix."""
    return x.shape[:-2] or (1,)


def _tri(xp, a, lower):
    return xp.tril(a) if lower else xp.triu(a)


class _Gemm(Op):
    """``alpha * op(A) @ op(B) (+ beta * C)``."""

    def forward(self, a, b, *c, ta, tb, alpha, beta):
        self.a, self.b, self.ta, self.tb, self.alpha, self.beta = a, b, ta, tb, alpha, beta
        xp = self.xp
        opa, opb = (_t(a) if ta else a), (_t(b) if tb else b)
        if opa.shape[-1] != opb.shape[-2]:
            raise MXNetError(
                f"linalg.gemm: op(A) of shape {opa.shape} and op(B) of shape {opb.shape} do "
                "not multiply"
            )
        y = alpha * xp.matmul(opa, opb)
        if c:
            y = y + beta * c[0]
        return y.astype(a.dtype, copy=False)

    def backward(self, g):
        xp, a, b, al = self.xp, self.a, self.b, self.alpha
        opa, opb = (_t(a) if self.ta else a), (_t(b) if self.tb else b)
        da = al * xp.matmul(g, _t(opb))  # d op(A)
        db = al * xp.matmul(_t(opa), g)  # d op(B)
        grads = [_t(da) if self.ta else da, _t(db) if self.tb else db]
        if len(self.needs) == 3:
            grads.append(self.beta * g)
        return tuple(grads)


def gemm(
    A: ArrayT,
    B: ArrayT,
    C: ArrayT,
    transpose_a: bool = False,
    transpose_b: bool = False,
    alpha: float = 1.0,
    beta: float = 1.0,
    axis: int = -2,
) -> ArrayT:
    """``alpha * op(A) @ op(B) + beta * C``, ``op`` transposing when asked.

    The matrices' columns are the last axis and their rows axis ``axis`` (default the one
    before): any other axis is a batch, as if ``axis`` were swapped with the second-to-last
    one before and after.

    Raises
    ------
    MXNetError
        When the shapes do not multiply, or ``axis`` is the last axis or out of range.
    """
    attrs = {"ta": bool(transpose_a), "tb": bool(transpose_b), "beta": float(beta)}
    arrays, swap = _rows_at(("gemm", axis), A, B, C)
    return _unswap(apply(_Gemm, arrays, alpha=float(alpha), **attrs), swap)


def gemm2(
    A: ArrayT,
    B: ArrayT,
    transpose_a: bool = False,
    transpose_b: bool = False,
    alpha: float = 1.0,
    axis: int = -2,
) -> ArrayT:
    """``alpha * op(A) @ op(B)``; see :func:`gemm` (``axis`` too)."""
    attrs = {"ta": bool(transpose_a), "tb": bool(transpose_b), "beta": 0.0}
    arrays, swap = _rows_at(("gemm2", axis), A, B)
    return _unswap(apply(_Gemm, arrays, alpha=float(alpha), **attrs), swap)


def _rows_at(what: tuple[str, int], *arrays: ArrayT) -> tuple[tuple[ArrayT, ...], int | None]:
    """``arrays`` with row axis ``axis`` moved to the second-to-last place (MXNet's swap),
    and the axis to swap back (None when it is already there)."""
    name, axis = what
    ndim = arrays[0].ndim
    a = int(axis) + ndim if int(axis) < 0 else int(axis)
    if not 0 <= a < ndim - 1:
        raise MXNetError(
            f"linalg.{name}: axis {axis} cannot hold the rows of arrays of {ndim} dimensions "
            "(the columns are the last axis)"
        )
    if a == ndim - 2:
        return arrays, None
    return tuple(swapaxes(x, a, ndim - 2) for x in arrays), a


def _unswap(out: ArrayT, swap: int | None) -> ArrayT:
    return out if swap is None else swapaxes(out, swap, out.ndim - 2)


class _Syrk(Op):
    def forward(self, a, transpose, alpha):
        self.a, self.tr, self.alpha = a, transpose, alpha
        xp = self.xp
        y = xp.matmul(_t(a), a) if transpose else xp.matmul(a, _t(a))
        return (alpha * y).astype(a.dtype, copy=False)

    def backward(self, g):
        xp, a = self.xp, self.a
        s = g + _t(g)
        return self.alpha * (xp.matmul(a, s) if self.tr else xp.matmul(s, a))


def syrk(A: ArrayT, transpose: bool = False, alpha: float = 1.0) -> ArrayT:
    """``alpha * A @ A.T`` (``alpha * A.T @ A`` with ``transpose``)."""
    return apply(_Syrk, (A,), transpose=bool(transpose), alpha=float(alpha))


class _Triangular(Op):
    """``trmm`` (``alpha * op(T) @ B``) or ``trsm`` (``alpha * op(T)^-1 @ B``), ``B`` on the
    right with ``rightside``, ``T`` the lower (or upper) triangle of ``A``."""

    def forward(self, a, b, solve, transpose, rightside, lower, alpha):
        what = "trsm" if solve else "trmm"
        _square(what, a)
        n = a.shape[-1]
        if (b.shape[-1] if rightside else b.shape[-2]) != n:
            side = "columns" if rightside else "rows"
            raise MXNetError(f"linalg.{what}: B of shape {b.shape} needs {n} {side}")
        xp = self.xp
        t = _tri(xp, a, lower)
        m = _t(t) if transpose else t
        if solve:
            y = alpha * (_t(xp.linalg.solve(_t(m), _t(b))) if rightside else xp.linalg.solve(m, b))
        else:
            y = alpha * (xp.matmul(b, m) if rightside else xp.matmul(m, b))
        y = y.astype(b.dtype, copy=False)
        self.m, self.b, self.y, self.cfg = m, b, y, (solve, transpose, rightside, lower, alpha)
        return y

    def backward(self, g):
        xp, m, b, y = self.xp, self.m, self.b, self.y
        solve, transpose, rightside, lower, alpha = self.cfg
        if solve:
            if rightside:  # Y = alpha B M^-1
                db = alpha * _t(xp.linalg.solve(m, _t(g)))  # alpha G M^-T
                dm = -xp.matmul(_t(y), _t(xp.linalg.solve(m, _t(g))))  # -Y^T G M^-T
            else:  # Y = alpha M^-1 B
                db = alpha * xp.linalg.solve(_t(m), g)  # alpha M^-T G
                dm = -xp.matmul(xp.linalg.solve(_t(m), g), _t(y))  # -M^-T G Y^T
        elif rightside:  # Y = alpha B M
            db = alpha * xp.matmul(g, _t(m))
            dm = alpha * xp.matmul(_t(b), g)
        else:  # Y = alpha M B
            db = alpha * xp.matmul(_t(m), g)
            dm = alpha * xp.matmul(g, _t(b))
        dt = _t(dm) if transpose else dm
        return _tri(xp, dt, lower), db


def trmm(
    A: ArrayT,
    B: ArrayT,
    transpose: bool = False,
    rightside: bool = False,
    lower: bool = True,
    alpha: float = 1.0,
) -> ArrayT:
    """``alpha * op(T) @ B`` (``alpha * B @ op(T)`` with ``rightside``), ``T`` the lower (or
    upper) triangle of ``A``, ``op`` transposing with ``transpose``."""
    attrs = {"transpose": bool(transpose), "rightside": bool(rightside), "lower": bool(lower)}
    return apply(_Triangular, (A, B), solve=False, alpha=float(alpha), **attrs)


def trsm(
    A: ArrayT,
    B: ArrayT,
    transpose: bool = False,
    rightside: bool = False,
    lower: bool = True,
    alpha: float = 1.0,
) -> ArrayT:
    """The solution ``X`` of ``op(T) @ X = alpha * B`` (``X @ op(T) = alpha * B`` with
    ``rightside``); ``T`` and ``op`` as in :func:`trmm`."""
    attrs = {"transpose": bool(transpose), "rightside": bool(rightside), "lower": bool(lower)}
    return apply(_Triangular, (A, B), solve=True, alpha=float(alpha), **attrs)


def _copy_lower_to_upper(xp, x):
    low = xp.tril(x)
    return low + _t(xp.tril(x, -1))


class _Potrf(Op):
    def forward(self, a):
        _square("potrf", a)
        xp = self.xp
        try:
            low = xp.linalg.cholesky(a)
        except Exception as err:  # numpy.linalg.LinAlgError, CuPy's
            raise MXNetError(f"linalg.potrf: the matrix is not positive definite ({err})") from None
        self.low = low
        return low

    def backward(self, g):
        # dA = 0.5 L^-T copyLTU(L^T dL) L^-1, symmetric, as MXNet's gradient
        xp, low = self.xp, self.low
        inner = _copy_lower_to_upper(xp, xp.matmul(_t(low), xp.tril(g)))
        left = xp.linalg.solve(_t(low), inner)  # L^-T inner
        return 0.5 * _t(xp.linalg.solve(_t(low), _t(left)))  # (L^-T left^T)^T = left L^-1


def potrf(A: ArrayT) -> ArrayT:
    """The lower Cholesky factor ``L`` of symmetric positive-definite ``A = L @ L.T``.

    Raises
    ------
    MXNetError
        When ``A`` is not positive definite.
    """
    return apply(_Potrf, (A,))


class _Potri(Op):
    def forward(self, a):
        _square("potri", a)
        xp = self.xp
        low = xp.tril(a)
        inv_low = xp.linalg.inv(low)
        y = xp.matmul(_t(inv_low), inv_low)  # (L L^T)^-1
        self.low, self.y = low, y
        return y.astype(a.dtype, copy=False)

    def backward(self, g):
        xp, y = self.xp, self.y
        return xp.tril(-xp.matmul(xp.matmul(y, g + _t(g)), xp.matmul(y, self.low)))


def potri(A: ArrayT) -> ArrayT:
    """``(L @ L.T)^-1`` from the lower Cholesky factor ``L`` (``A``'s lower triangle), the
    inverse of the matrix :func:`potrf` factored."""
    return apply(_Potri, (A,))


class _Inverse(Op):
    def forward(self, a):
        _square("inverse", a)
        try:
            self.y = self.xp.linalg.inv(a)
        except Exception as err:
            raise MXNetError(f"linalg.inverse: the matrix is singular ({err})") from None
        return self.y

    def backward(self, g):
        xp, y = self.xp, self.y
        return -xp.matmul(xp.matmul(_t(y), g), _t(y))


def inverse(A: ArrayT) -> ArrayT:
    """The inverse of each square matrix ``A``.

    Raises
    ------
    MXNetError
        For a singular matrix.
    """
    return apply(_Inverse, (A,))


class _Det(Op):
    def forward(self, a, log):
        _square("slogdet" if log else "det", a)
        xp = self.xp
        self.a, self.log = a, log
        if log:
            sign, logdet = xp.linalg.slogdet(a)
            shape = _batch_shape(a)
            return sign.reshape(shape).astype(a.dtype), logdet.reshape(shape).astype(a.dtype)
        self.d = xp.linalg.det(a)
        return self.d.reshape(_batch_shape(a)).astype(a.dtype)

    def backward(self, *grads):
        xp, a = self.xp, self.a
        inv_t = _t(xp.linalg.inv(a))
        if self.log:
            g = grads[1]
            if g is None:
                return xp.zeros_like(a)
            return g.reshape(a.shape[:-2] + (1, 1)) * inv_t
        g = grads[0].reshape(a.shape[:-2] + (1, 1))
        return g * self.d.reshape(a.shape[:-2] + (1, 1)) * inv_t


def det(A: ArrayT) -> ArrayT:
    """The determinant of each square matrix ``A``."""
    return apply(_Det, (A,), log=False)


def slogdet(A: ArrayT) -> list[ArrayT]:
    """``[sign, log(abs(det))]`` of each square matrix ``A`` (the sign gets no gradient)."""
    return apply(_Det, (A,), log=True)


class _Diag(Op):
    """``extractdiag`` (``make=False``) and ``makediag`` (``make=True``) at ``offset``."""

    def forward(self, a, offset, make):
        xp = self.xp
        self.offset, self.make = offset, make
        if make:
            n = a.shape[-1] + abs(offset)
            out = xp.zeros(a.shape[:-1] + (n, n), dtype=a.dtype)
            out[(Ellipsis,) + self._index(a.shape[-1])] = a
            return out
        if a.ndim < 2:
            raise MXNetError(f"linalg.extractdiag: needs matrices, got shape {a.shape}")
        self.shape = a.shape
        return xp.ascontiguousarray(self._view(a))

    def _view(self, m):
        return self.xp.diagonal(m, offset=self.offset, axis1=-2, axis2=-1)

    def _index(self, length):
        """Row and column indices of the ``offset`` diagonal's ``length`` entries."""
        idx = self.xp.arange(length)
        return (idx, idx + self.offset) if self.offset >= 0 else (idx - self.offset, idx)

    def backward(self, g):
        xp = self.xp
        if self.make:
            return xp.ascontiguousarray(self._view(g))
        out = xp.zeros(self.shape, dtype=g.dtype)
        out[(Ellipsis,) + self._index(g.shape[-1])] = g
        return out


def extractdiag(A: ArrayT, offset: int = 0) -> ArrayT:
    """The diagonal of each matrix ``A`` at ``offset`` (above the main one when positive)."""
    return apply(_Diag, (A,), offset=int(offset), make=False)


def makediag(A: ArrayT, offset: int = 0) -> ArrayT:
    """Square matrices with ``A``'s last axis on the diagonal at ``offset``, zeros elsewhere."""
    return apply(_Diag, (A,), offset=int(offset), make=True)


def _trian_index(xp, n, offset, lower):
    """Rows and columns of a triangle's entries in MXNet's packing order: the lower triangle
    (``offset <= 0``, with ``lower`` at 0) row by row; the upper one column by column."""
    k = abs(offset)
    rows = [i for i in range(k, n) for _ in range(i - k + 1)]
    cols = [j for i in range(k, n) for j in range(i - k + 1)]
    if offset > 0 or (offset == 0 and not lower):
        rows, cols = cols, rows
    return xp.asarray(rows, dtype=xp.int64), xp.asarray(cols, dtype=xp.int64)


class _Trian(Op):
    """``extracttrian`` (``make=False``) and ``maketrian`` (``make=True``)."""

    def forward(self, a, offset, lower, make):
        xp = self.xp
        if make:
            m, k = a.shape[-1], abs(offset)
            side = int(round(((8 * m + 1) ** 0.5 - 1) / 2))
            if side * (side + 1) // 2 != m:
                raise MXNetError(f"linalg.maketrian: {m} entries make no triangle")
            n = side + k
            self.index = _trian_index(xp, n, offset, lower)
            out = xp.zeros(a.shape[:-1] + (n, n), dtype=a.dtype)
            out[(Ellipsis,) + self.index] = a
            return out
        _square("extracttrian", a)
        self.shape, self.index = a.shape, _trian_index(xp, a.shape[-1], offset, lower)
        return xp.ascontiguousarray(a[(Ellipsis,) + self.index])

    def backward(self, g):
        if hasattr(self, "shape"):  # extracttrian
            out = self.xp.zeros(self.shape, dtype=g.dtype)
            out[(Ellipsis,) + self.index] = g
            return out
        return self.xp.ascontiguousarray(g[(Ellipsis,) + self.index])


def extracttrian(A: ArrayT, offset: int = 0, lower: bool = True) -> ArrayT:
    """The lower (``offset < 0``, or 0 with ``lower``) or upper triangle of each square matrix
    ``A`` from the diagonal at ``offset`` on, packed into the last axis as MXNet packs it: the
    lower triangle row by row, the upper one column by column."""
    return apply(_Trian, (A,), offset=int(offset), lower=bool(lower), make=False)


def maketrian(A: ArrayT, offset: int = 0, lower: bool = True) -> ArrayT:
    """Square matrices holding the packed triangle ``A`` (as :func:`extracttrian` packs it),
    zeros elsewhere.

    Raises
    ------
    MXNetError
        When the last axis's length is not a triangular number.
    """
    return apply(_Trian, (A,), offset=int(offset), lower=bool(lower), make=True)


class _SumLogDiag(Op):
    def forward(self, a):
        _square("sumlogdiag", a)
        xp = self.xp
        self.a = a
        d = xp.diagonal(a, axis1=-2, axis2=-1)
        return xp.log(d).sum(axis=-1).reshape(_batch_shape(a)).astype(a.dtype)

    def backward(self, g):
        xp, a = self.xp, self.a
        n = a.shape[-1]
        out = xp.zeros_like(a)
        idx = xp.arange(n)
        d = a[..., idx, idx]
        out[..., idx, idx] = g.reshape(a.shape[:-2] + (1,)) / d
        return out


def sumlogdiag(A: ArrayT) -> ArrayT:
    """``sum(log(diag(A)))`` of each square matrix ``A``."""
    return apply(_SumLogDiag, (A,))


def _prefixed() -> dict[str, Any]:
    """MXNet's top-level names of these operators: ``linalg_gemm``..."""
    return {f"linalg_{n}": globals()[n] for n in __all__}
