"""Contributed Gluon layers (``gluon.contrib.nn``), as MXNet 1.9.1 defines them.

Layout
------
basic_layers
    ``Concurrent`` and ``HybridConcurrent`` (children side by side, outputs concatenated),
    ``Identity``, and ``SparseEmbedding`` (row_sparse weight and gradient).
sync_batch_norm
    ``SyncBatchNorm``: batch normalization synchronized across devices in MXNet.
pixel_shuffle
    ``PixelShuffle1D``, ``PixelShuffle2D``, ``PixelShuffle3D``: upsampling by moving channels
    into blocks of pixels.
"""

from . import basic_layers, pixel_shuffle, sync_batch_norm
from .basic_layers import *  # noqa: F403
from .pixel_shuffle import *  # noqa: F403
from .sync_batch_norm import *  # noqa: F403

__all__ = basic_layers.__all__ + sync_batch_norm.__all__ + pixel_shuffle.__all__
