"""AMP's op lists: which operators run in low precision, in float32 or in either, per target
type (``symbol_fp16``, ``symbol_bf16``)."""

from . import symbol_bf16, symbol_fp16

__all__ = ["symbol_bf16", "symbol_fp16"]
