"""``Vocabulary``: an index for the tokens of a text."""

from __future__ import annotations

import collections
from collections.abc import Hashable, Sequence
from typing import Any

from ...base import InvalidUsageError, MXNetError

__all__ = ["Vocabulary"]

#: the index of the unknown token, which every vocabulary keeps first
UNKNOWN_IDX = 0


class Vocabulary:
    """Tokens indexed by frequency: the unknown token is 0, the reserved tokens follow, then
    the counted tokens from the most frequent (ties in token order).

    Parameters
    ----------
    counter : collections.Counter, optional
        Token frequencies (see :func:`~mxrs.contrib.text.utils.count_tokens_from_str`).
    most_freq_count : int, optional
        Index at most this many counted tokens (reserved ones aside).
    min_freq : int, default 1
        Index only tokens counted at least this often.
    unknown_token : hashable, default '<unk>'
        What unknown tokens become.
    reserved_tokens : list, optional
        Tokens always indexed (padding, end of sentence...), without duplicates or the
        unknown token.

    Raises
    ------
    InvalidUsageError
        (an ``MXNetError`` and an ``AssertionError``, as MXNet asserts) For ``min_freq`` below
        1, bad reserved tokens, or a counter that is not a Counter.

    Examples
    --------
    >>> v = Vocabulary(collections.Counter(['a', 'b', 'b']), reserved_tokens=['<eos>'])
    >>> v.idx_to_token
    ['<unk>', '<eos>', 'b', 'a']
    >>> v.to_indices(['a', 'zzz'])
    [3, 0]
    """

    def __init__(
        self,
        counter: collections.Counter[Any] | None = None,
        most_freq_count: int | None = None,
        min_freq: int = 1,
        unknown_token: Hashable = "<unk>",
        reserved_tokens: Sequence[Hashable] | None = None,
    ) -> None:
        if min_freq < 1:
            raise InvalidUsageError(f"Vocabulary: min_freq must be at least 1, not {min_freq}")
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise InvalidUsageError(
                    "Vocabulary: reserved_tokens cannot contain the unknown token"
                )
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise InvalidUsageError("Vocabulary: reserved_tokens has duplicates")
        self._unknown_token = unknown_token
        self._reserved_tokens = list(reserved_tokens) if reserved_tokens is not None else None
        self._idx_to_token: list[Hashable] = [unknown_token, *(reserved_tokens or [])]
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index(counter, most_freq_count, min_freq)

    def _index(self, counter: collections.Counter[Any], most: int | None, min_freq: int) -> None:
        if not isinstance(counter, collections.Counter):
            raise InvalidUsageError(
                f"Vocabulary: counter must be a collections.Counter, not {counter!r}"
            )
        special = set(self._idx_to_token)
        cap = len(special) + (len(counter) if most is None else most)
        by_freq = sorted(sorted(counter.items(), key=lambda kv: kv[0]), key=lambda kv: -kv[1])
        for token, freq in by_freq:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> dict[Hashable, int]:
        """dict: each token's index."""
        return self._token_to_idx

    @property
    def idx_to_token(self) -> list[Hashable]:
        """list: the tokens in index order."""
        return self._idx_to_token

    @property
    def unknown_token(self) -> Hashable:
        """The token unknown tokens become."""
        return self._unknown_token

    @property
    def reserved_tokens(self) -> list[Hashable] | None:
        """list or None: the reserved tokens."""
        return self._reserved_tokens

    def to_indices(self, tokens: Any) -> Any:
        """The index of a token, or the list of indices of a list of tokens (unknown ones
        are 0)."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]

    def to_tokens(self, indices: Any) -> Any:
        """The token of an index, or the list of tokens of a list of indices.

        Raises
        ------
        MXNetError
            For an index that is not an integer in ``[0, len(self))``.
        """
        single = not isinstance(indices, list)
        out = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise MXNetError(f"Vocabulary: token index {idx!r} is invalid")
            out.append(self._idx_to_token[idx])
        return out[0] if single else out
