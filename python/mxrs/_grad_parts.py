"""Gradients an op adds up itself: the parts of an output's gradient, not yet summed.

When an array feeds several ops, backward adds their gradients before its producer runs. A
producer whose backward reads its output gradient in one pass anyway (``relu(a + b)`` at the
end of a residual unit, whose output feeds the next unit's body and its shortcut) can add the
parts in that same pass: its op class sets ``sums_gradients = True``, the tape hands it a
:class:`GradParts` instead of the sum, and the op either passes the parts to a kernel that
takes them or adds them with :func:`total`. Only dense CPU arrays are kept apart this way.

This module sits below autograd and the op modules and knows only raw NumPy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._sparse_rows import add_grads

__all__ = ["GradParts", "defer", "total"]


class GradParts(tuple):
    """Two or more gradients of one array, to be added: dense NumPy arrays of one shape."""

    __slots__ = ()


def defer(have: Any, more: Any) -> GradParts | None:
    """``have`` and ``more`` as parts to add later, or None when they must be added now (a
    sparse or GPU gradient, or arrays of different shapes)."""
    parts = have if type(have) is GradParts else (have,)
    if type(more) is not np.ndarray or more.shape != parts[0].shape:
        return None
    if type(have) is not GradParts and type(have) is not np.ndarray:
        return None
    return GradParts((*parts, more))


def total(g: Any) -> Any:
    """``g`` itself, or the sum of its parts when it is a :class:`GradParts`."""
    if type(g) is not GradParts:
        return g
    out = g[0]
    for part in g[1:]:
        out = add_grads(out, part)
    return out
