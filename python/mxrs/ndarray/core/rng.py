"""One random generator per context, created on first use, and the seed they derive from.

:func:`seed` resets the generators of every context (or of one), so a seeded program draws the
same numbers on each run; contexts seeded with the same value still get distinct streams.

A sampler whose computation failed (see :mod:`mxrs._failure`) leaves the generators of its
device failed (:func:`fail_device`), as MXNet 1.9.1's samplers share one random resource per
device that the failure reaches: until the error is reported, :func:`generator` raises it, so
the samplers (and Dropout) after it fail with the same error instead of drawing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._failure import Failure, collecting
from ...context import Context

__all__ = ["fail_device", "generator", "generators", "seed"]

_generators: dict[Context, Any] = {}
_base_seed: list[int | None] = [None]
# devices ("cpu", or a GPU's id) whose samplers failed, with the failure, and the generators of
# their contexts while it is not reported
_failed: dict[object, Failure] = {}
_held: dict[Context, Any] = {}


def _device(ctx: Context) -> object:
    return ctx.device_id if ctx.device_typeid == 2 else "cpu"


def _derive(seed_state: int, ctx: Context) -> int:
    seq = np.random.SeedSequence([int(seed_state) & 0xFFFFFFFF, ctx.device_typeid, ctx.device_id])
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def generator(ctx: Context, shared: bool = True) -> Any:
    """Return the generator of context ``ctx`` (its backend's kind), creating it if needed.

    Raises
    ------
    ComputeError
        The error of a failed sampler on ``ctx``'s device, not reported yet (see
        :func:`fail_device`); not for a draw that does not use MXNet's shared random resource
        (``shared`` False: ``shuffle``, ``multinomial``), nor while a dispatcher reruns an
        operator on failed arrays' placeholders.
    """
    gen = _generators.get(ctx)
    if gen is None:
        gen = _new(ctx, shared)
    return gen


def _new(ctx: Context, shared: bool) -> Any:
    """:func:`generator` of a context without a usable generator: new, or failed."""
    f = _failed.get(_device(ctx))
    if f is not None:
        if not f.reported:
            if shared and not collecting():
                raise f.surface()
            gen = _held.get(ctx)
            if gen is None:
                gen = _held[ctx] = _make(ctx)
            return gen
        del _failed[_device(ctx)]  # reported: the device draws again
        for c in [c for c in _held if _device(c) == _device(ctx)]:
            _generators[c] = _held.pop(c)
        gen = _generators.get(ctx)
        if gen is not None:
            return gen
    gen = _generators[ctx] = _make(ctx)
    return gen


def _make(ctx: Context) -> Any:
    base = _base_seed[0]
    seed_value = None if base is None else _derive(base, ctx)
    return ctx.backend.make_rng(seed_value, ctx.device_id)


def fail_device(ctx: Context, failure: Failure) -> None:
    """A sampler on ``ctx`` failed with ``failure``: the generators of its device (every CPU
    context, or one GPU) raise it until it is reported."""
    device = _device(ctx)
    _failed[device] = failure
    for c in [c for c in _generators if _device(c) == device]:
        _held[c] = _generators.pop(c)


def generators() -> list[Any]:
    """list: the generators created so far, one per context."""
    return list(_generators.values())


def seed(seed_state: int, ctx: Context | str = "all") -> None:
    """Seed the random generators.

    Parameters
    ----------
    seed_state : int
    ctx : Context or 'all', default 'all'
        Seed only this context's generator, or every context's (including ones not used yet).
    """
    if ctx == "all":
        _base_seed[0] = int(seed_state)
        _generators.clear()
        _held.clear()  # a failed device stays failed, and is seeded anew
        return
    ctx = ctx if isinstance(ctx, Context) else Context(ctx)
    gen = ctx.backend.make_rng(_derive(seed_state, ctx), ctx.device_id)
    if ctx in _generators:
        _generators[ctx] = gen
    elif _device(ctx) in _failed:
        _held[ctx] = gen
        _generators.pop(ctx, None)
    else:
        _generators[ctx] = gen
