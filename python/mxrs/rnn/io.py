"""Language-model data: ``encode_sentences`` (tokens to integer ids) and ``BucketSentenceIter``
(batches of sentences of similar length, padded to their bucket's length)."""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(
    sentences: Sequence[Sequence[str]],
    vocab: dict[str, int] | None = None,
    invalid_label: int = -1,
    invalid_key: str = "\n",
    start_label: int = 0,
    unknown_token: str | None = None,
) -> tuple[list[list[int]], dict[str, int]]:
    """Encode tokenized sentences as integer ids, growing the vocabulary as it goes.

    Parameters
    ----------
    sentences : list of list of str
    vocab : dict of str to int or None
        The vocabulary to use; a new one (holding only ``invalid_key``) when None. New words
        join it with the next free id, counting from ``start_label`` and skipping
        ``invalid_label``.
    invalid_label : int, default -1
        The id of ``invalid_key`` (end of sentence).
    invalid_key : str, default '\\n'
    start_label : int, default 0
        The first id given to a new word.
    unknown_token : str or None
        With a given ``vocab``, words not in it map to this token (added on first use);
        without it such words are an error.

    Returns
    -------
    encoded : list of list of int
    vocab : dict of str to int
        The vocabulary (``vocab`` itself, grown, when given).

    Raises
    ------
    MXNetError
        For a word not in a given ``vocab`` when there is no ``unknown_token``.
    """
    idx = start_label
    new_vocab = vocab is None
    if vocab is None:
        vocab = {invalid_key: invalid_label}
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise MXNetError(
                        f"encode_sentences: unknown token {word!r} (not in the vocabulary and "
                        "no unknown_token given)"
                    )
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences for a language model, bucketed by length.

    Each sentence goes to the smallest bucket at least as long, padded with ``invalid_label``;
    longer sentences are dropped (with a warning). A batch holds ``batch_size`` sentences of
    one bucket (its ``bucket_key`` is the bucket's length); the label at each step is the next
    token, ``invalid_label`` after the last. Incomplete batches are dropped. :meth:`reset`
    shuffles the batches and the sentences within each bucket (``random`` and
    ``numpy.random``).

    Parameters
    ----------
    sentences : list of list of int
    batch_size : int
    buckets : list of int or None
        Bucket lengths; when None, every length that at least ``batch_size`` sentences have.
    invalid_label : int, default -1
    data_name : str, default 'data'
    label_name : str, default 'softmax_label'
    dtype : str, default 'float32'
    layout : str, default 'NT'
        'NT' for ``(batch, length)`` batches, 'TN' for ``(length, batch)``.
    """

    def __init__(
        self,
        sentences: Sequence[Sequence[int]],
        batch_size: int,
        buckets: list[int] | None = None,
        invalid_label: int = -1,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: str = "float32",
        layout: str = "NT",
    ) -> None:
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise MXNetError(
                f"BucketSentenceIter: invalid layout {layout!r}; use 'NT' (batch major) or "
                "'TN' (time major)"
            )
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [i for i, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise MXNetError(
                f"BucketSentenceIter: no bucket; no sentence length occurs {batch_size} times"
            )
        rows: list[list[np.ndarray]] = [[] for _ in buckets]
        used = [False] * len(buckets)
        discarded = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                discarded += 1
                continue
            used[b] = True
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[: len(sentence)] = sentence
            rows[b].append(row)
        if discarded:
            logging.warning("discarded %d sentences longer than the largest bucket.", discarded)
        self.buckets = [n for n, u in zip(buckets, used, strict=True) if u]
        self.data = [np.asarray(r, dtype=dtype) for r in rows if r]
        if not self.buckets:
            raise MXNetError("BucketSentenceIter: no sentence fits in any bucket")
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        self.nddata: list[Any] = []
        self.ndlabel: list[Any] = []
        shape = self._shape(self.default_bucket_key)
        self.provide_data = [DataDesc(data_name, shape, layout=layout)]
        self.provide_label = [DataDesc(label_name, shape, layout=layout)]
        self.idx = [(i, j) for i, bucket in enumerate(self.data)
                    for j in range(0, len(bucket) - batch_size + 1, batch_size)]  # fmt: skip
        self.curr_idx = 0
        self.reset()

    def _shape(self, length: int) -> tuple[int, int]:
        return (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)

    def reset(self) -> None:
        """Start again, with the batches and the sentences in each bucket shuffled."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for bucket in self.data:
            np.random.shuffle(bucket)
        self.nddata = []
        self.ndlabel = []
        for bucket in self.data:
            label = np.empty_like(bucket)
            label[:, :-1] = bucket[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(nd.array(bucket, dtype=self.dtype))
            self.ndlabel.append(nd.array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        """The next batch; ``StopIteration`` after the last."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j : j + self.batch_size]
        label = self.ndlabel[i][j : j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch(
            [data], [label], pad=0, bucket_key=self.buckets[i],
            provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
            provide_label=[DataDesc(self.label_name, label.shape, layout=self.layout)],
        )  # fmt: skip
