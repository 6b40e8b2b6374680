"""Matrix products: dot, batch_dot, the fully connected layer and khatri_rao.

dot, batch_dot and FullyConnected are each one GEMM forward and (at most) two GEMMs backward;
transposed operands are passed to BLAS as transposed views, not copies. khatri_rao (the
column-wise Kronecker product) is built from recorded ops, so it differentiates (to any order)
through them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from ..base import MXNetError
from . import elementwise, shape
from .core.array import ArrayT
from .core.op import Op, apply
from .unary import _Identity

__all__ = ["dot", "batch_dot", "FullyConnected", "khatri_rao"]


class _Dot(Op):
    def forward(self, a, b, ta, tb):
        A = a.T if ta else a
        B = b.T if tb else b
        k = A.shape[-1]
        if B.shape[0] != k:
            raise MXNetError(f"dot: shapes {A.shape} and {B.shape} do not align")
        self.ta, self.tb = ta, tb
        self.A2 = A.reshape(-1, k)
        self.B2 = B.reshape(k, -1)
        self.Ashape, self.Bshape = A.shape, B.shape
        y = (self.A2 @ self.B2).reshape(A.shape[:-1] + B.shape[1:])
        return y if y.ndim else y.reshape(1)

    def backward(self, g):
        g2 = g.reshape(self.A2.shape[0], self.B2.shape[1])
        ga = gb = None
        if self.needs[0]:
            ga = (g2 @ self.B2.T).reshape(self.Ashape)
            if self.ta:
                ga = ga.T
        if self.needs[1]:
            gb = (self.A2.T @ g2).reshape(self.Bshape)
            if self.tb:
                gb = gb.T
        return ga, gb


def dot(
    lhs: ArrayT,
    rhs: ArrayT,
    transpose_a: bool = False,
    transpose_b: bool = False,
    forward_stype: str | None = None,
) -> ArrayT:
    """Dot product: contracts the last axis of ``lhs`` with the first axis of ``rhs``.

    For 2-D arrays this is the matrix product; ``transpose_a``/``transpose_b`` reverse the axes
    of an operand first. Two vectors give shape ``(1,)``.

    Examples
    --------
    >>> mx.nd.dot(mx.nd.ones((2, 3, 4)), mx.nd.ones((4, 5))).shape
    (2, 3, 5)
    """
    return apply(_Dot, (lhs, rhs), ta=transpose_a, tb=transpose_b)


class _BatchDot(Op):
    def forward(self, a, b, ta, tb):
        self.A = a.swapaxes(-1, -2) if ta else a
        self.B = b.swapaxes(-1, -2) if tb else b
        self.ta, self.tb = ta, tb
        return self.xp.matmul(self.A, self.B)

    def backward(self, g):
        xp = self.xp
        ga = gb = None
        if self.needs[0]:
            ga = xp.matmul(g, self.B.swapaxes(-1, -2))
            if self.ta:
                ga = ga.swapaxes(-1, -2)
        if self.needs[1]:
            gb = xp.matmul(self.A.swapaxes(-1, -2), g)
            if self.tb:
                gb = gb.swapaxes(-1, -2)
        return ga, gb


def batch_dot(
    lhs: ArrayT,
    rhs: ArrayT,
    transpose_a: bool = False,
    transpose_b: bool = False,
    forward_stype: str | None = None,
) -> ArrayT:
    """Batched matrix product of ``(B, N, K)`` and ``(B, K, M)`` arrays: ``(B, N, M)``."""
    return apply(_BatchDot, (lhs, rhs), ta=transpose_a, tb=transpose_b)


class _FC(Op):
    def forward(self, x, w, *b, flatten):
        self.xshape = x.shape
        rest = int(np.prod(x.shape[1:], dtype=np.int64))  # not -1: an empty batch has no size
        x2 = x.reshape(x.shape[0], rest) if flatten else x.reshape(-1, x.shape[-1])
        self.x2shape = x2.shape  # the 2-D shape the layer multiplies (the gradient rules read it)
        k = kernels.select("FullyConnected", self.be, x.dtype)
        y, self.grad = k.fully_connected(x2, w, b[0] if b else None, True in self.needs)
        if not flatten:
            y = y.reshape(x.shape[:-1] + (w.shape[0],))
        return y

    def backward(self, g):
        gx, gw, gb = self.grad(g.reshape(-1, g.shape[-1]), self.needs)
        if gx is not None:
            gx = gx.reshape(self.xshape)
        return (gx, gw, gb) if len(self.needs) == 3 else (gx, gw)


def FullyConnected(
    data: ArrayT,
    weight: ArrayT,
    bias: ArrayT | None = None,
    num_hidden: int | None = None,
    no_bias: bool = False,
    flatten: bool = True,
    **kwargs: Any,
) -> ArrayT:
    """Fully connected layer: ``data @ weight.T + bias``.

    Parameters
    ----------
    data : NDArray
        ``(N, ...)``; flattened to ``(N, in_units)`` when ``flatten`` (else the last axis is
        the input axis).
    weight : NDArray
        ``(num_hidden, in_units)``.
    bias : NDArray, optional
        ``(num_hidden,)``; ignored when ``no_bias``.
    num_hidden : int
        Number of outputs (taken from ``weight`` when omitted).
    """
    if bias is None or no_bias:
        return apply(_FC, (data, weight), flatten=flatten)
    return apply(_FC, (data, weight, bias), flatten=flatten)


def khatri_rao(*args: ArrayT) -> ArrayT:
    """The column-wise Kronecker product of matrices with one number of columns ``k``.

    For ``A`` of shape ``(m, k)`` and ``B`` of shape ``(n, k)`` the result has shape
    ``(m * n, k)`` with row ``i * n + j`` equal to ``A[i] * B[j]``.

    Examples
    --------
    >>> a, b = mx.nd.array([[1, -1], [2, -3]]), mx.nd.array([[1, 4], [2, 5], [3, 6]])
    >>> mx.nd.khatri_rao(a, b).shape
    (6, 2)
    """
    if not args:
        raise MXNetError("khatri_rao needs at least one matrix")
    if args[0].ndim != 2:
        raise MXNetError(f"khatri_rao: the inputs must be matrices, not of shape {args[0].shape}")
    k = args[0].shape[1]
    for i, m in enumerate(args):
        if m.ndim != 2 or m.shape[1] != k:
            raise MXNetError(
                f"khatri_rao: input {i} has shape {m.shape}; every input must be a matrix with "
                f"{k} columns, as the first"
            )
    out: Any = apply(_Identity, (args[0],))
    for m in args[1:]:
        prod = elementwise.multiply(shape.expand_dims(out, 1), shape.expand_dims(m, 0))
        out = shape.reshape(prod, (-1, k))
    return out
