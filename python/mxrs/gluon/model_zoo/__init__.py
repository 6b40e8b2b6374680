"""Predefined models (``gluon.model_zoo``), as MXNet 1.9.1's zoo defines them.

Layout
------
vision
    Image classification networks (ResNet V1/V2, VGG, AlexNet, MobileNet V1/V2) and
    ``get_model``.
model_store
    Where pretrained weights would come from: mxrs ships none and downloads nothing.
"""

from . import model_store, vision

__all__ = ["model_store", "vision"]
