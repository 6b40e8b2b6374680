"""Neural-network layers (``gluon.nn``).

Layout
------
basic_layers
    ``Sequential``, ``HybridSequential``, ``Dense``, ``Dropout``, ``BatchNorm``, ``LayerNorm``,
    ``Embedding``, ``Flatten``, ``Lambda``, ``HybridLambda``.
conv_layers
    ``Conv1D``, ``Conv2D`` and the max, average and global pooling layers.
activations
    ``Activation``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``SELU``, ``Swish``.
"""

from ..block import Block, HybridBlock  # noqa: F401
from .activations import *  # noqa: F403
from .basic_layers import *  # noqa: F403
from .conv_layers import *  # noqa: F403
