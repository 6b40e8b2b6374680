"""Neural-network layers (``gluon.nn``).

Layout
------
basic_layers
    ``Sequential``, ``HybridSequential``, ``Dense``, ``Dropout``, ``Embedding``, ``Flatten``,
    ``Lambda``, ``HybridLambda``.
conv_layers
    ``Conv1D``, ``Conv2D``, ``Conv3D`` and the 1-D/2-D max, average and global pooling layers.
conv_transpose
    ``Conv1DTranspose``, ``Conv2DTranspose``, ``Conv3DTranspose``.
pool3d
    ``MaxPool3D``, ``AvgPool3D``, ``GlobalMaxPool3D``, ``GlobalAvgPool3D``.
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
from .conv_transpose import *  # noqa: F403
from .norm_layers import *  # noqa: F403
from .pool3d import *  # noqa: F403
