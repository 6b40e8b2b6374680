"""How a distributed store's keys and priorities are written for the parameter-server client."""

from __future__ import annotations

import hashlib

from ..base import MXNetError
from .base import Key

__all__ = ["wire_key", "priority"]

_STR_KEY_BIT = 1 << 63


def wire_key(key: Key) -> int:
    """The 64-bit key on the wire: ints as they are, strs hashed into the upper half."""
    if isinstance(key, str):
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") | _STR_KEY_BIT
    if key >= _STR_KEY_BIT:
        raise MXNetError(f"KVStore: int key {key} is too large (keys must be below 2**63)")
    return key


def priority(value: int) -> int:
    """``value`` as the parameter-server client takes a priority (a 32-bit int; larger ones are
    clamped: only their order matters)."""
    return max(-(2**31), min(2**31 - 1, int(value)))
