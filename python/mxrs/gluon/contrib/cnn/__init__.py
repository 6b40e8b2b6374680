"""Contributed convolution layers (``gluon.contrib.cnn``), as MXNet 1.9.1 defines them.

Layout
------
conv_layers
    ``DeformableConvolution`` (v1) and ``ModulatedDeformableConvolution`` (v2): 2-D
    convolutions whose taps read the input at offsets a second convolution learns.
"""

from . import conv_layers
from .conv_layers import *  # noqa: F403

__all__ = conv_layers.__all__
