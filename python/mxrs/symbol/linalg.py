"""``mx.sym.linalg``: the symbolic forms of :mod:`mxrs.ndarray.linalg` (``mx.sym.linalg.gemm2``
makes a ``linalg_gemm2`` node named ``gemm2<n>``, as MXNet names it)."""

from __future__ import annotations

from typing import Any

from .opinfo import has_op
from .ops import make_function


def __getattr__(name: str) -> Any:
    """``mx.sym.linalg.<operator>``."""
    op = "linalg_" + name
    if name.startswith("_") or not has_op(op):
        raise AttributeError(f"module 'mxrs.symbol.linalg' has no attribute {name!r}")
    return make_function(op, name)
