"""Orthogonal factorizations of the last two axes, every leading axis a batch, as MXNet 1.9.1's
``linalg.gelqf`` (LQ) and ``linalg.syevd`` (symmetric eigendecomposition), with gradients;
``mx.nd.linalg`` exports them with the other linear-algebra operators.

Signs follow MXNet's: ``gelqf`` is LAPACK's (what a QR of the transpose gives), and each
eigenvector of ``syevd`` has its largest-magnitude entry positive.
"""

from __future__ import annotations

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["gelqf", "syevd"]


def _t(x):
    return x.swapaxes(-1, -2)


def _float(what, a):
    if a.dtype.kind != "f" or a.dtype.itemsize < 4:
        raise MXNetError(f"linalg.{what}: supports float32 and float64 only, not {a.dtype}")


def _copyltu(xp, m):
    """The symmetric matrix with ``m``'s lower triangle (diagonal included)."""
    low = xp.tril(m)
    return low + _t(xp.tril(m, -1))


class _Gelqf(Op):
    def forward(self, a):
        _float("gelqf", a)
        if a.ndim < 2 or a.shape[-2] > a.shape[-1]:
            raise MXNetError(
                f"linalg.gelqf: needs matrices (x, y) with x <= y on the last two axes, got "
                f"{a.shape}"
            )
        xp = self.xp
        q, r = xp.linalg.qr(_t(a))  # A^T = Q' R  =>  A = R^T Q'^T
        self.q, self.low = _t(q).astype(a.dtype), _t(r).astype(a.dtype)
        diag = xp.abs(xp.diagonal(self.low, axis1=-2, axis2=-1))
        tiny = diag.max(axis=-1, keepdims=True) * a.shape[-1] * xp.finfo(a.dtype).eps
        if bool(xp.any(diag <= tiny)):
            raise MXNetError("linalg.gelqf: the matrix does not have full row rank")
        return self.q, self.low

    def backward(self, dq, dl):
        xp, q, low = self.xp, self.q, self.low
        dq = xp.zeros_like(q) if dq is None else dq
        dl = xp.zeros_like(low) if dl is None else dl
        m = xp.matmul(_t(low), dl) - xp.matmul(dq, _t(q))
        rhs = dq + xp.matmul(_copyltu(xp, m), q)
        # dA = L^-T rhs: a triangular solve with L^T (upper)
        return xp.linalg.solve(_t(low), rhs)


def gelqf(A: ArrayT) -> list[ArrayT]:
    """LQ factorization ``A = L @ Q`` of each matrix ``A`` ``(x, y)``, ``x <= y``, full rank.

    Returns
    -------
    list of NDArray
        ``[Q, L]``: ``Q`` ``(x, y)`` with orthonormal rows, ``L`` ``(x, x)`` lower triangular.

    Raises
    ------
    MXNetError
        For more rows than columns, a rank-deficient matrix, or a dtype other than float32
        and float64.
    """
    return apply(_Gelqf, (A,))


class _Syevd(Op):
    def forward(self, a):
        _float("syevd", a)
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise MXNetError(
                f"linalg.syevd: needs square matrices on the last two axes, got {a.shape}"
            )
        xp = self.xp
        lam, vecs = xp.linalg.eigh(a)  # columns are eigenvectors, eigenvalues ascending
        u = _t(vecs)
        n = u.shape[-1]
        big = xp.take_along_axis(u, xp.argmax(xp.abs(u), axis=-1)[..., None], axis=-1)
        u = u * xp.where(big < 0, -1.0, 1.0).astype(u.dtype)
        self.u, self.lam = u.astype(a.dtype), lam.astype(a.dtype)
        self.n = n
        return self.u, self.lam

    def backward(self, du, dlam):
        xp, u, lam = self.xp, self.u, self.lam
        inner = xp.zeros(u.shape, dtype=u.dtype)
        if du is not None:
            # eigenvector part: (U dU^T) off the diagonal over the eigengaps
            gaps = lam[..., None, :] - lam[..., :, None]  # lam_j - lam_i
            eye = xp.eye(self.n, dtype=bool)
            safe = xp.where(eye, 1.0, gaps)
            inner = xp.where(eye, 0.0, xp.matmul(u, _t(du)) / safe).astype(u.dtype)
        if dlam is not None:
            idx = xp.arange(self.n)
            inner[..., idx, idx] += dlam
        grad = xp.matmul(xp.matmul(_t(u), inner), u)
        return 0.5 * (grad + _t(grad))


def syevd(A: ArrayT) -> list[ArrayT]:
    """Eigendecomposition ``U @ A = diag(L) @ U`` of each symmetric matrix ``A``.

    Returns
    -------
    list of NDArray
        ``[U, L]``: the eigenvectors as the rows of the orthonormal ``U`` (each with its
        largest-magnitude entry positive) and the eigenvalues ``L`` in ascending order.

    Raises
    ------
    MXNetError
        For non-square matrices or a dtype other than float32 and float64.
    """
    return apply(_Syevd, (A,))
