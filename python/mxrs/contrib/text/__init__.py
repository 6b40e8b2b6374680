"""``mx.contrib.text``: counting the tokens of a text and indexing them.

Layout
------
utils
    ``count_tokens_from_str``: token frequencies of a string.
vocab
    ``Vocabulary``: tokens to indices and back, by frequency, with reserved tokens.
"""

from . import utils, vocab
from .vocab import Vocabulary

__all__ = ["Vocabulary", "utils", "vocab"]
