"""Loss functions (``gluon.loss``), with MXNet 1.x's formulas.

Every loss is a HybridBlock called as ``loss(pred, label[, sample_weight])``. The per-element
loss is multiplied by ``sample_weight`` (broadcast) and by the scalar ``weight``, then averaged
over every axis but ``batch_axis``: the result has one value per sample.

Examples
--------
>>> loss = gluon.loss.SoftmaxCrossEntropyLoss()
>>> loss(mx.nd.array([[1, 2, 3], [11, 7, 5]]), mx.nd.array([2, 0])).shape
(2,)
"""

from .core import *  # noqa: F403
from .core import __all__ as _core
from .ctc import CTCLoss
from .embedding import CosineEmbeddingLoss, PoissonNLLLoss, SDMLLoss, TripletLoss

__all__ = [
    *_core,
    "CTCLoss",
    "TripletLoss",
    "PoissonNLLLoss",
    "CosineEmbeddingLoss",
    "SDMLLoss",
]
