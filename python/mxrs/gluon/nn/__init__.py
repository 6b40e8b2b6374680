"""Neural-network layers (``gluon.nn``).

Layout
------
basic_layers
    ``Sequential``, ``HybridSequential``, ``Dense``, ``Dropout``, ``Embedding``, ``Flatten``,
    ``Lambda``, ``HybridLambda``.
conv_layers
    ``Conv1D``, ``Conv2D``, ``Conv3D`` and their transposes (``Conv2DTranspose``...).
pooling
    Max, average and global pooling over 1-, 2- and 3-D windows (``MaxPool2D``...).
activations
    ``Activation``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``SELU``, ``GELU``, ``Swish``.
norm_layers
    ``BatchNorm``, ``BatchNormReLU``, ``LayerNorm``, ``InstanceNorm``, ``GroupNorm``,
    ``ReflectionPad2D``.
"""

from ..block import Block, HybridBlock  # noqa: F401
from .activations import *  # noqa: F403
from .basic_layers import *  # noqa: F403
from .conv_layers import *  # noqa: F403
from .norm_layers import *  # noqa: F403
from .pooling import *  # noqa: F403
