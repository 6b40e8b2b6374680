"""Image decoding, resizing, augmentation and image iterators (``mx.image``, also ``mx.img``).

Layout
------
image
    The OpenCV operations on NDArrays (``imdecode``, ``imread``, ``imresize``,
    ``copyMakeBorder``), crops, ``imrotate``, the classification augmenters, ``CreateAugmenter``
    and ``ImageIter``.
detection (``det``)
    The detection augmenters (boxes move with the pixels), ``CreateDetAugmenter`` and
    ``ImageDetIter``.
_cv
    The OpenCV calls on NumPy images, with OpenCV 3.4.2's rounding where newer OpenCV rounds
    otherwise (MXNet 1.9.1 builds OpenCV 3.4.2 in).
"""

from . import detection, image
from . import detection as det
from .detection import *  # noqa: F403
from .image import *  # noqa: F403

__all__ = image.__all__ + detection.__all__ + ["image", "detection", "det"]
