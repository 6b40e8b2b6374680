"""Contributed Gluon blocks (``gluon.contrib``), as MXNet 1.9.1 groups them.

Layout
------
data
    ``IntervalSampler`` and the WikiText language-modelling datasets (``data.text``).
rnn
    Variational dropout, LSTM with projection and convolutional recurrent cells.
"""

from . import data, rnn

__all__ = ["data", "rnn"]
