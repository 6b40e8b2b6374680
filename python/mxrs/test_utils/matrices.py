"""Random NumPy matrices with known spectra, as inputs of linear-algebra tests: well
conditioned ones with real eigenvalues, orthonormal ones, symmetric ones.

The random draws (``numpy.random``) come in the order MXNet 1.9.1's helpers make them, so
the same NumPy random state gives the same matrices under either."""

from __future__ import annotations

import numpy as np

__all__ = [
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
]


def _well_conditioned_basis(n: int) -> np.ndarray:
    """``H @ diag(d)`` with ``H`` a random Householder reflection and ``d`` uniform in
    [-1, 1), drawn again until its 2-norm condition number is below 3."""
    while True:
        d = np.random.uniform(-1.0, 1.0, n)
        v = np.random.uniform(-1.0, 1.0, n).reshape(n, 1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        reflection = np.eye(n) - 2 * (v @ v.T)
        basis = reflection @ np.diag(d)
        if np.linalg.cond(basis, 2) < 3:
            return basis


def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """An ``n x n`` float64 matrix ``Q^-1 D Q``: well conditioned (``cond(Q) < 3``), with real
    eigenvalues, the diagonal of ``D``, uniform in [-10, 10)."""
    basis = _well_conditioned_basis(n)
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(basis) @ eigvals @ basis


def _batch(shape, make) -> np.ndarray:
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([make(shape[-1]) for _ in range(n)]).reshape(shape)


def new_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """A batch of :func:`new_matrix_with_real_eigvals_2d` matrices of ``shape``
    (``(..., n, n)``)."""
    return _batch(shape, new_matrix_with_real_eigvals_2d)


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """An ``n x n`` orthonormal float64 matrix: the Q of the QR factorization of ``X^T X``
    for a standard normal ``X``."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """An ``n x n`` symmetric float64 matrix ``Q^T D Q`` (``Q`` orthonormal), its eigenvalues
    the diagonal of ``D``, uniform in [-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, n))
    return q.T @ eigvals @ q


def new_sym_matrix_with_real_eigvals_nd(shape) -> np.ndarray:
    """A batch of :func:`new_sym_matrix_with_real_eigvals_2d` matrices of ``shape``
    (``(..., n, n)``)."""
    return _batch(shape, new_sym_matrix_with_real_eigvals_2d)
