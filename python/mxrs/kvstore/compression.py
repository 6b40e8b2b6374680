"""Gradient compression's settings: what ``set_gradient_compression`` takes, checked once for
every store (the codecs themselves are in the Rust extension, shared with the servers)."""

from __future__ import annotations

import math

import numpy as np

from ..base import KVStoreError

__all__ = ["compression_spec", "pulls_weights"]


#: The gradient-compression types and the keys each takes besides 'type'.
_COMPRESSION_KEYS: dict[str, tuple[str, ...]] = {
    "2bit": ("threshold",),
    "fp16": ("pull_weights",),
    "bf16": ("pull_weights",),
}
#: MXNet 1.9.1's default threshold of 2bit compression.
_DEFAULT_THRESHOLD = 0.5


def compression_spec(params: object) -> tuple[str, float]:
    """Check ``set_gradient_compression``'s argument; returns ``(type, threshold)``.

    Parameters
    ----------
    params : dict
        ``{'type': '2bit', 'threshold': t}`` (t > 0, default 0.5; MXNet 1.9.1's only type),
        ``{'type': 'fp16'}`` or ``{'type': 'bf16'}`` (with ``'pull_weights': True``, see
        :func:`pulls_weights`). A threshold may be a number or a str holding one, as MXNet
        takes it.

    Raises
    ------
    KVStoreError
        Naming what is wrong: not a dict, no or an unknown type, a key the type does not take
        (MXNet 1.9.1 ignores those silently), a threshold that is not a number, or not above 0
        and finite as a float32, or a ``pull_weights`` that is not a bool.
    """
    what = "set_gradient_compression"
    if not isinstance(params, dict):
        raise KVStoreError(
            f"{what}: compression_params must be a dict such as {{'type': '2bit', "
            f"'threshold': 0.5}}, got {type(params).__name__}"
        )
    kinds = ", ".join(_COMPRESSION_KEYS)
    if "type" not in params:
        raise KVStoreError(f"{what}: the 'type' key is required ({kinds})")
    kind = params["type"]
    if not isinstance(kind, str) or kind not in _COMPRESSION_KEYS:
        raise KVStoreError(
            f"{what}: unknown compression type {kind!r}; mxrs takes {kinds} (MXNet 1.9.1 takes "
            "only 2bit)"
        )
    takes = _COMPRESSION_KEYS[kind]
    unexpected = sorted(map(str, set(params) - {"type", *takes}))
    if unexpected:
        allowed = f"only {', '.join(repr(k) for k in takes)} besides 'type'" if takes else "none"
        raise KVStoreError(
            f"{what}: unexpected key(s) {', '.join(map(repr, unexpected))} for type {kind!r} "
            f"(it takes {allowed})"
        )
    pulls_weights(params)
    raw = params.get("threshold", _DEFAULT_THRESHOLD)
    try:
        if isinstance(raw, bool):
            raise TypeError
        threshold = float(raw)
    except (TypeError, ValueError):
        raise KVStoreError(f"{what}: threshold must be a number, got {raw!r}") from None
    with np.errstate(over="ignore"):
        t32 = float(np.float32(threshold))  # what the workers compare with
    if kind == "2bit" and not (math.isfinite(t32) and t32 > 0):
        raise KVStoreError(
            f"{what}: threshold must be greater than 0 and finite (as a float32), got {raw!r}"
        )
    return kind, threshold


def pulls_weights(params: dict) -> bool:
    """Whether ``fp16``/``bf16`` compression also pulls weights in 16 bits.

    Under ``{'type': 'fp16'}`` (or ``'bf16'``) what a worker pulls travels in 16 bits where it
    is the sum of the workers' pushes (no optimizer on the servers, as with
    ``update_on_kvstore=False``); weights an optimizer on the servers updates, and initial
    values, come back in float32. ``'pull_weights': True`` asks for those in 16 bits too: the
    servers keep float32 weights and send each pull rounded.

    Raises
    ------
    KVStoreError
        For a ``pull_weights`` that is not a bool.
    """
    on = params.get("pull_weights", False)
    if not isinstance(on, bool):
        raise KVStoreError(
            f"set_gradient_compression: pull_weights must be True or False, got {on!r}"
        )
    return on
