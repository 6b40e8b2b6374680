"""Attribute scopes (``mx.AttrScope``): string attributes given to every symbol made inside.

Examples
--------
>>> with mx.AttrScope(ctx_group="dev1", lr_mult="0.1"):
...     w = mx.sym.Variable("w")
>>> w.attr("ctx_group")
'dev1'
"""

from __future__ import annotations

import threading
from typing import Literal

from .base import MXNetError

__all__ = ["AttrScope"]


class AttrScope:
    """Attributes (strings) that symbols created in its ``with`` block receive; nested scopes
    add to their parent's."""

    _current = threading.local()

    def __init__(self, **kwargs: str) -> None:
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise MXNetError(f"AttrScope: attribute {k!r} must be a string, not {v!r}")
        self._attr = kwargs
        self._old: AttrScope | None = None

    def get(self, attr: dict[str, str] | None) -> dict[str, str]:
        """This scope's attributes updated with ``attr`` (a new dict)."""
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return out

    def __enter__(self) -> AttrScope:
        self._old = AttrScope.current()
        merged = AttrScope(**self._old._attr)
        merged._attr.update(self._attr)
        self._attr = merged._attr
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        AttrScope._current.value = self._old
        return False

    @staticmethod
    def current() -> AttrScope:
        """This thread's innermost scope (an empty one outside any)."""
        scope = getattr(AttrScope._current, "value", None)
        if scope is None:
            scope = AttrScope._current.value = AttrScope()
        return scope
