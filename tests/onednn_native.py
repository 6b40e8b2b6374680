"""What the tests of oneDNN's native kernels share: the platforms its wheel exists for, loading
it as a model's first operator does, and channels-last copies of arrays (the layout the
kernels compute in).

oneDNN is a dependency of mxrs on x86-64 Linux, so it must load there; tests marked with
:data:`needs_onednn` fail (not skip) where it does not.
"""

import os
import sys

import numpy as np
import pytest
from mxrs import kernels
from mxrs.kernels._layout import channels_last

#: Skips a test module off x86-64 Linux, where oneDNN's wheel does not exist.
needs_onednn = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and os.uname().machine == "x86_64"),
    reason="oneDNN's wheel is for x86-64 Linux",
)


def load_onednn() -> None:
    """Loads oneDNN through the provider, as a model's first operator does."""
    with kernels.use("onednn"):
        kernels.describe()


def channels_last_copy(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a channels-last array of its shape."""
    out = channels_last(a.shape)
    out[...] = a
    return out
