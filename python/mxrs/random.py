"""Random number generation (``mx.random``): seeding and sampling into NDArrays.

The same functions are reachable as ``mx.nd.random``; see :mod:`mxrs.ndarray.random`.
"""

from .ndarray.random import normal, randint, randn, seed, shuffle, uniform

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle"]
