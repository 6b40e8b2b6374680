"""Random number generation (``mx.random``): seeding and sampling into NDArrays.

The same functions are reachable as ``mx.nd.random``; see :mod:`mxrs.ndarray.random`.
"""

from .ndarray import random as _random
from .ndarray.random import *  # noqa: F403

__all__ = list(_random.__all__)
