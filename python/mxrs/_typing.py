"""Type aliases shared by mxrs's annotations (imported under ``TYPE_CHECKING`` by the modules
below the NDArray class, so importing it at run time is never needed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from numpy.typing import DTypeLike

from .context import Context

__all__ = ["CtxLike", "DTypeLike", "ShapeLike"]

#: A context, or a device type name such as ``'cpu'``.
CtxLike: TypeAlias = Context | str
#: An array shape: one int or a sequence of ints.
ShapeLike: TypeAlias = int | Sequence[int]
