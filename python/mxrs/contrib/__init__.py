"""``mx.contrib``: MXNet 1.x's experimental namespace.

``mx.contrib.nd`` (``mx.contrib.ndarray``) is the same module as ``mx.nd.contrib``.
"""

from ..ndarray import contrib as ndarray

nd = ndarray

__all__ = ["nd", "ndarray"]
