"""Token counting for building vocabularies."""

from __future__ import annotations

import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(
    source_str: str,
    token_delim: str = " ",
    seq_delim: str = "\n",
    to_lower: bool = False,
    counter_to_update: collections.Counter[str] | None = None,
) -> collections.Counter[str]:
    """Count the tokens of ``source_str``.

    Parameters
    ----------
    source_str : str
        The text: tokens separated by ``token_delim``, sequences by ``seq_delim``.
    token_delim, seq_delim : str
        Regular expressions that separate tokens and sequences (escape special characters:
        ``'\\*'``).
    to_lower : bool, default False
        Count lower-cased tokens.
    counter_to_update : collections.Counter, optional
        Add the counts to this counter (and return it) instead of a new one.

    Returns
    -------
    collections.Counter
        Each token's count; empty strings between delimiters are not tokens.

    Examples
    --------
    >>> count_tokens_from_str(' Life is great ! \\n life is good . \\n', ' ', '\\n', True)
    Counter({'life': 2, 'is': 2, 'great': 1, '!': 1, 'good': 1, '.': 1})
    """
    tokens = [t for t in re.split(f"{token_delim}|{seq_delim}", source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
