"""Vision data sets and image transforms (``gluon.data.vision``).

Layout
------
datasets
    ``MNIST`` and ``FashionMNIST``, read from gzip'd IDX files in a local folder.
transforms
    ``ToTensor``, ``Normalize``, ``Compose``, ``Cast``, ``RandomFlipLeftRight``.
fetch_mnist
    ``python -m mxrs.gluon.data.vision.fetch_mnist``: fetch and convert the full MNIST once.
_idx
    Reading and writing the IDX format.
"""

from . import transforms
from .datasets import MNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "transforms"]
