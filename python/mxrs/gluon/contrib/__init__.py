"""Contributed Gluon blocks (``gluon.contrib``), as MXNet 1.9.1 groups them.

Layout
------
cnn
    ``DeformableConvolution`` and ``ModulatedDeformableConvolution``.
data
    ``IntervalSampler`` and the WikiText language-modelling datasets (``data.text``).
estimator
    ``Estimator``, its event handlers and ``BatchProcessor``: a high-level training loop.
nn
    Concurrent containers, ``Identity``, ``SparseEmbedding``, ``SyncBatchNorm`` and the
    pixel-shuffle layers.
rnn
    Variational dropout, LSTM with projection and convolutional recurrent cells.
"""

from . import cnn, data, estimator, nn, rnn

__all__ = ["cnn", "data", "estimator", "nn", "rnn"]
