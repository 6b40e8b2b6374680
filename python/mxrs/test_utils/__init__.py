"""Helpers for testing code written against mxrs (or Apache MXNet 1.x), as MXNet 1.9.1's
``mx.test_utils`` provides them.

Layout
------
arrays
    Comparing arrays with dtype-aware tolerances, random arrays and shapes (dense and sparse),
    the default test context, temporary environment variables.
gradients
    An optimizer against a reference one; gradients against finite differences; a Symbol's
    outputs against expected values.
generators
    Statistical checks of random generators; retrying stochastic tests.

``from mxrs.test_utils import *`` also brings ``np``, ``mx``, ``rnd`` (Python's ``random``)
and ``array``, as MXNet's does.
"""

import random as rnd  # noqa: F401  (MXNet's test files use it through the star import)

import numpy as np  # noqa: F401

import mxrs as mx  # noqa: F401

from ..ndarray import array  # noqa: F401
from .arrays import *  # noqa: F403
from .generators import *  # noqa: F403
from .gradients import *  # noqa: F403
