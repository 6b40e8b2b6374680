"""``mx.contrib``: MXNet 1.x's experimental namespace.

``mx.contrib.nd`` (``mx.contrib.ndarray``) is the same module as ``mx.nd.contrib``;
``mx.contrib.text`` counts and indexes the tokens of texts; ``mx.contrib.autograd`` is
MXNet's first autograd API (``train_section``, ``grad_and_loss``...) over :mod:`mxrs.autograd`;
``mx.contrib.amp`` is automatic mixed precision. ``amp`` stands on Gluon, which ``text`` sits
below, so ``mxrs/__init__`` imports it (after Gluon) rather than this package.
"""

from ..ndarray import contrib as ndarray
from . import autograd, text

nd = ndarray

__all__ = ["autograd", "nd", "ndarray", "text"]
