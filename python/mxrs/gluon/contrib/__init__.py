"""Contributed Gluon blocks (``gluon.contrib``), as MXNet 1.9.1 groups them.

Layout
------
data
    ``IntervalSampler`` and the WikiText language-modelling datasets (``data.text``).
nn
    Concurrent containers, ``Identity``, ``SparseEmbedding``, ``SyncBatchNorm`` and the
    pixel-shuffle layers.
rnn
    Variational dropout, LSTM with projection and convolutional recurrent cells.
"""

from . import data, nn, rnn

__all__ = ["data", "nn", "rnn"]
