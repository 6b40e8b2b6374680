"""``mx.sym.image``: the symbolic forms of :mod:`mxrs.ndarray.image` (``mx.sym.image.crop``
makes a node of MXNet's ``_image_crop`` operator named ``crop<n>``, as MXNet names it)."""

from __future__ import annotations

from typing import Any

from .opinfo import has_op
from .ops import make_function


def __getattr__(name: str) -> Any:
    """``mx.sym.image.<operator>``."""
    op = "_image_" + name
    if name.startswith("_") or not has_op(op):
        raise AttributeError(f"module 'mxrs.symbol.image' has no attribute {name!r}")
    return make_function(op, name)
