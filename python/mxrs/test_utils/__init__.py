"""Helpers for testing code written against mxrs (or Apache MXNet 1.x), as MXNet 1.9.1's
``mx.test_utils`` provides them.

Layout
------
tolerances
    Default dtype, tolerances and finite-difference steps by dtype.
arrays
    Comparing arrays with those tolerances, random arrays and shapes (dense and sparse), the
    default test context, temporary environment variables.
reference
    NumPy reference computations (element-wise maps, multi-axis reductions, broadcast sums).
matrices
    Random matrices with known spectra (real eigenvalues, orthonormal, symmetric).
large_tensors
    NDArrays with position-determined values for tests of large tensors.
gradients
    An optimizer against a reference one; gradients against finite differences; a Symbol's
    outputs against expected values.
symbols
    Running a Symbol once; comparing two Symbols' graphs.
consistency
    A Symbol across contexts and dtypes; a HybridBlock imperative against hybridized.
speed
    Timing a Symbol's passes.
generators
    Statistical checks of random generators; retrying stochastic tests.
data
    Downloads, MNIST, CIFAR-10, zip and bz2 archives, the ``im2rec`` tool, ``DummyIter``.
platform_checks
    GPUs, CPU architecture, continuous delivery runs, TVM operators.

``from mxrs.test_utils import *`` also brings what MXNet's module imports and MXNet's test
files use through that star import: ``np``, ``npt`` (``numpy.testing``), ``rnd``
(``numpy.random``), ``mx``, ``array``, ``NDArray``, ``Symbol``, ``Context``,
``current_context`` and standard modules (``os``, ``sys``, ``time``, ``json``...).
"""

# MXNet's test files use these through the star import
import bz2  # noqa: F401
import errno  # noqa: F401
import gzip  # noqa: F401
import json  # noqa: F401
import logging  # noqa: F401
import numbers  # noqa: F401
import os  # noqa: F401
import platform  # noqa: F401
import struct  # noqa: F401
import sys  # noqa: F401
import time  # noqa: F401
import traceback  # noqa: F401
import zipfile  # noqa: F401
from collections import OrderedDict  # noqa: F401
from contextlib import contextmanager  # noqa: F401

import numpy as np  # noqa: F401
import numpy.random as rnd  # noqa: F401
import numpy.testing as npt  # noqa: F401

import mxrs as mx  # noqa: F401

from ..context import Context, current_context  # noqa: F401
from ..ndarray import NDArray, array  # noqa: F401
from ..symbol import Symbol  # noqa: F401
from ..util import getenv, setenv, use_np  # noqa: F401
from .arrays import *  # noqa: F403
from .consistency import *  # noqa: F403
from .data import *  # noqa: F403
from .generators import *  # noqa: F403
from .gradients import *  # noqa: F403
from .large_tensors import *  # noqa: F403
from .matrices import *  # noqa: F403
from .platform_checks import *  # noqa: F403
from .reference import *  # noqa: F403
from .speed import *  # noqa: F403
from .symbols import *  # noqa: F403
from .tolerances import *  # noqa: F403
