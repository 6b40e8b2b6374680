"""The naming scope of Gluon blocks: prefixes (``dense0_``, ``sequential0_dense0_``) and the
ParameterDict each new block gets, as in MXNet 1.x."""

from __future__ import annotations

import threading
from typing import Literal, Protocol

from .. import name as _naming
from .parameter_dict import ParameterDict

__all__ = ["_BlockScope", "Named"]


class Named(Protocol):
    """What a scope needs of its block (a :class:`~mxrs.gluon.Block` is one)."""

    _empty_prefix: bool

    @property
    def prefix(self) -> str: ...

    @property
    def params(self) -> ParameterDict: ...


class _BlockScope:
    """The naming scope a block opens for the children created in ``with block.name_scope()``."""

    _current = threading.local()

    def __init__(self, block: Named) -> None:
        self._block = block
        self._counter: dict[str, int] = {}
        self._old_scope: _BlockScope | None = None
        self._name_scope: _naming.Prefix | None = None

    @staticmethod
    def create(
        prefix: str | None, params: ParameterDict | None, hint: str
    ) -> tuple[str, ParameterDict]:
        """Return the prefix and ParameterDict of a new block of alias ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _naming.current().get(None, hint) + "_"
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self) -> _BlockScope:
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        # symbols made in the scope get the block's prefix too (``dense0_fwd``), as in MXNet
        self._name_scope = _naming.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        if self._block._empty_prefix:
            return False
        if self._name_scope is not None:
            self._name_scope.__exit__(*exc)
            self._name_scope = None
        _BlockScope._current.value = self._old_scope
        return False
