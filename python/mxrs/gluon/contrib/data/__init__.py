"""``gluon.contrib.data``: language-model text datasets and the interval sampler.

Layout
------
text
    ``WikiText2``, ``WikiText103``: token files as fixed-length index sequences.
"""

from ...data.sampler import IntervalSampler
from . import text

__all__ = ["IntervalSampler", "text"]
