"""Random number generation (``mx.random``): seeding and sampling into NDArrays.

The same functions are reachable as ``mx.nd.random``; see :mod:`mxrs.ndarray.random`.
"""

from .ndarray.random import (
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    seed,
    shuffle,
    uniform,
)

__all__ = [
    "seed",
    "uniform",
    "normal",
    "randn",
    "randint",
    "shuffle",
    "poisson",
    "exponential",
    "gamma",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
]
