"""AMP's op lists: which operators run in low precision, in float32 or in either, per target
type (``symbol_fp16``, ``symbol_bf16``)."""

from typing import Any

from . import symbol_bf16, symbol_fp16

__all__ = ["symbol_bf16", "symbol_fp16"]


def _by_type(name: Any) -> Any:
    """The op-list module of type ``name`` (equal to 'float16' or 'bfloat16'), else None."""
    if name == "float16":
        return symbol_fp16
    if name == "bfloat16":
        return symbol_bf16
    return None
