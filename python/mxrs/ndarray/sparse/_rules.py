"""Which operators keep a sparse input sparse, and how (``mxrs.ndarray.core.op.sparse_rules``).

As in MXNet: an elementwise function with ``f(0) = 0`` (``-x``, ``x * s``, ``x / s``, ``sqrt``,
``square``, ``abs``, ``sign``, ``relu``, rounding, ``clip`` around 0, casts...) maps the stored
values and keeps the storage type; ``+``, ``-`` and ``*`` of two arrays of one sparse type give
that type (row_sparse: the union of rows, the intersection for ``*``); a row_sparse array times a
dense one stays row_sparse; ``dot(csr, dense)`` is computed from the non-zeros, and its gradient
for the dense (or row_sparse) operand is row_sparse; an embedding lookup in a row_sparse weight
reads only the stored rows. Inside ``autograd.record()`` a rule that cannot record its op
declines and the operator runs on dense copies (MXNet's storage fallback); the gradient is then
stored in each variable's ``.grad`` in that gradient's own storage type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _sparse_rows as sr
from ...autograd import _state
from .. import elementwise as ew
from .. import indexing as ix
from .. import matmul as mm
from .. import unary as un
from ..core.op import Op, sparse_rules
from . import _storage as st
from ._arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, make_csr, make_rsp

__all__: list[str] = []


def _recording(arrays: Any) -> bool:
    return _state.recording and any(a._needs_grad() for a in arrays)


def _like(x: BaseSparseNDArray, values: Any) -> BaseSparseNDArray:
    """A new array of ``x``'s class and layout holding ``values`` instead of its own."""
    if isinstance(x, RowSparseNDArray):
        return make_rsp(x._sp_idx, values, x._sp_shape, x._ctx)
    return make_csr(values, x._sp_idx, x._sp_ptr, x._sp_shape, x._ctx)


# ----------------------------------------------------------------- f(0) = 0 elementwise
def _zero_preserving(op_cls: type[Op], arrays: Any, attrs: dict[str, Any]) -> Any:
    (x,) = arrays
    if _recording(arrays):
        return NotImplemented
    if op_cls is un._Clip and not attrs["a_min"] <= 0 <= attrs["a_max"]:
        return NotImplemented
    if op_cls is ew._DivS and attrs["s"] == 0:
        return NotImplemented
    if op_cls is ew._PowS and not attrs["s"] > 0:
        return NotImplemented
    be = x._ctx.backend
    op = op_cls()
    op.xp, op.be, op.ctx, op.needs = be.xp, be, x._ctx, (False,)
    with be.guard(x._ctx.device_id):
        return _like(x, op.forward(x._sp_vals, **attrs))


for _cls in (
    un._Neg,
    un._Sqrt,
    un._Square,
    un._Abs,
    un._NoGrad,
    un._Relu,
    un._Sin,
    un._Tanh,
    un._Log1p,
    un._Expm1,
    un._Softsign,
    un._Clip,
    un._Cast,
    ew._MulS,
    ew._DivS,
    ew._DivIntS,
    ew._PowS,
    un._Arcsin,
    un._Arctan,
    un._Arcsinh,
    un._Arctanh,
    un._Sinh,
    un._Tan,
    un._Cbrt,
):
    sparse_rules[_cls] = _zero_preserving


# ----------------------------------------------------------------- two arrays
def _rows(x: RowSparseNDArray) -> sr.SparseRows:
    return sr.SparseRows(x._sp_idx, x._sp_vals, x._sp_shape, x._ctx.backend)


def _binary(op_cls: type[Op], arrays: Any, attrs: dict[str, Any]) -> Any:
    a, b = arrays
    if _recording(arrays) or tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return NotImplemented
    ctx, be = a._ctx, a._ctx.backend
    xp = be.xp
    with be.guard(ctx.device_id):
        if isinstance(a, RowSparseNDArray) and isinstance(b, RowSparseNDArray):
            if op_cls is ew._Mul:
                common, ia, ib = xp.intersect1d(a._sp_idx, b._sp_idx, return_indices=True)
                return make_rsp(common, a._sp_vals[ia] * b._sp_vals[ib], a._sp_shape, ctx)
            rb = _rows(b)
            if op_cls is ew._Sub:
                rb = sr.SparseRows(b._sp_idx, -b._sp_vals, b._sp_shape, be)
            total = sr.add_grads(_rows(a), rb)
            return make_rsp(total.indices, total.values, a._sp_shape, ctx)
        if op_cls is ew._Mul and isinstance(a, RowSparseNDArray) and not b._sparse:
            return make_rsp(a._sp_idx, a._sp_vals * b._data[a._sp_idx], a._sp_shape, ctx)
        if op_cls is ew._Mul and isinstance(b, RowSparseNDArray) and not a._sparse:
            return make_rsp(b._sp_idx, a._data[b._sp_idx] * b._sp_vals, b._sp_shape, ctx)
        if isinstance(a, CSRNDArray) and isinstance(b, CSRNDArray):
            out = op_cls()
            out.xp, out.be, out.ctx, out.needs = xp, be, ctx, (False, False)
            vals, idx, ptr = st.csr_from_dense(be, out.forward(a._dense(), b._dense()))
            return make_csr(vals, idx, ptr, a._sp_shape, ctx)
    return NotImplemented


for _bin in (ew._Add, ew._Sub, ew._Mul):
    sparse_rules[_bin] = _binary


# ----------------------------------------------------------------- dot(csr, x)
def _record(op: Op, arrays: Any, out: Any) -> Any:
    """Keep ``op`` as ``out``'s graph node when ``arrays`` need gradients (as ``apply`` does)."""
    if _state.recording:
        needs = tuple(a._needs_grad() for a in arrays)
        op.needs = needs
        if True in needs:
            op.inputs = arrays
            op.attrs = {}
            out._node = op
    return out


def _csr_matmul(be: Any, a: CSRNDArray, dense: Any, transpose: bool) -> Any:
    """``a @ dense`` (or ``a.T @ dense``) from ``a``'s non-zeros; ``dense`` is 2-D."""
    xp = be.xp
    rows = st.csr_rows(be, a._sp_ptr)
    cols = a._sp_idx
    src, dst = (cols, rows) if not transpose else (rows, cols)
    m = a._sp_shape[1] if transpose else a._sp_shape[0]
    contrib = a._sp_vals[:, None].astype(dense.dtype, copy=False) * dense[src]
    out = xp.zeros((m, dense.shape[1]), dense.dtype)
    if contrib.shape[0]:
        be.scatter_add(out, dst, contrib)
    return out


class _CsrDot(Op):
    """``dot(csr, rhs)``; the gradient for ``rhs`` is row_sparse (rows: ``csr``'s columns)."""

    def run(self, a: CSRNDArray, rhs: Any) -> Any:
        self.a = a
        self.rshape = tuple(rhs.shape)
        r2 = rhs.reshape(rhs.shape[0], -1)
        y = _csr_matmul(self.be, a, r2, transpose=False)
        return y.reshape((a._sp_shape[0],) + self.rshape[1:])

    def backward(self, g: Any) -> Any:
        if not self.needs[1]:
            return None, None
        a, be = self.a, self.be
        g2 = g.reshape(g.shape[0], -1)
        rows = st.csr_rows(be, a._sp_ptr)
        contrib = a._sp_vals[:, None].astype(g2.dtype, copy=False) * g2[rows]
        idx, vals = sr.sum_rows(be, a._sp_idx, contrib)
        vals = vals.reshape((vals.shape[0],) + self.rshape[1:])
        return None, sr.SparseRows(idx, vals, self.rshape, be)


def _dot(op_cls: type[Op], arrays: Any, attrs: dict[str, Any]) -> Any:
    a, b = arrays
    if not isinstance(a, CSRNDArray) or attrs.get("tb") or b.ndim < 1:
        return NotImplemented
    if a._sp_shape[0 if attrs.get("ta") else 1] != b.shape[0]:
        return NotImplemented  # the dense op reports the mismatch
    ctx, be = a._ctx, a._ctx.backend
    with be.guard(ctx.device_id):
        if attrs.get("ta"):  # dot(csr.T, dense) is row_sparse, as in MXNet
            if _recording(arrays):
                return NotImplemented
            y = _csr_matmul(be, a, b._data.reshape(b.shape[0], -1), transpose=True)
            y = y.reshape((a._sp_shape[1],) + tuple(b.shape[1:]))
            idx, vals = st.rsp_from_dense(be, y)
            return make_rsp(idx, vals, y.shape, ctx)
        if a._needs_grad() and _state.recording:
            return NotImplemented  # a gradient for the csr operand: computed densely
        op = _CsrDot()
        op.xp, op.be, op.ctx = be.xp, be, ctx
        out = b._new(op.run(a, b._data), ctx)
        return _record(op, arrays, out)


sparse_rules[mm._Dot] = _dot


# ----------------------------------------------------------------- embedding lookups
class _TakeStored(ix._TakeRows):
    """Rows ``ids`` of a row_sparse weight, read from its stored rows (absent rows: zeros); its
    gradient is ``_TakeRows``'s, row-sparse."""

    def run(self, w: RowSparseNDArray, ids: Any) -> Any:
        xp = self.xp
        n = w._sp_shape[0]
        flat = xp.clip(ids.reshape(-1).astype(np.int64), 0, n - 1)  # Embedding clips
        self.shape, self.flat = w._sp_shape, flat
        rows = st.rsp_rows(self.be, w._sp_idx, w._sp_vals, flat)
        return rows.reshape(tuple(ids.shape) + w._sp_shape[1:])


def _take(op_cls: type[Op], arrays: Any, attrs: dict[str, Any]) -> Any:
    w, ids = arrays
    if not isinstance(w, RowSparseNDArray) or ids._sparse or attrs.get("axis", 0) != 0:
        return NotImplemented
    if attrs.get("mode", "clip") != "clip":
        return NotImplemented
    if ids._needs_grad() and _state.recording:
        return NotImplemented
    ctx, be = w._ctx, w._ctx.backend
    op = _TakeStored()
    op.xp, op.be, op.ctx = be.xp, be, ctx
    with be.guard(ctx.device_id):
        out = ids._new(op.run(w, ids._data), ctx)
    return _record(op, arrays, out)


sparse_rules[ix._Take] = _take
sparse_rules[ix._TakeRows] = _take
