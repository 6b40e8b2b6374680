"""One random generator per context, created on first use, and the seed they derive from.

:func:`seed` resets the generators of every context (or of one), so a seeded program draws the
same numbers on each run; contexts seeded with the same value still get distinct streams.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...context import Context

__all__ = ["generator", "generators", "seed"]

_generators: dict[Context, Any] = {}
_base_seed: list[int | None] = [None]


def _derive(seed_state: int, ctx: Context) -> int:
    seq = np.random.SeedSequence([int(seed_state) & 0xFFFFFFFF, ctx.device_typeid, ctx.device_id])
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def generator(ctx: Context) -> Any:
    """Return the generator of context ``ctx`` (its backend's kind), creating it if needed."""
    gen = _generators.get(ctx)
    if gen is None:
        base = _base_seed[0]
        seed_value = None if base is None else _derive(base, ctx)
        gen = _generators[ctx] = ctx.backend.make_rng(seed_value, ctx.device_id)
    return gen


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
        return
    ctx = ctx if isinstance(ctx, Context) else Context(ctx)
    _generators[ctx] = ctx.backend.make_rng(_derive(seed_state, ctx), ctx.device_id)
