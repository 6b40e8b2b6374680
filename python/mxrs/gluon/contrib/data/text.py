"""WikiText language-modelling datasets read from their token files in a local folder.

mxrs never downloads at run time: ``root`` must hold the segment's file (``wiki.train.tokens``,
``wiki.valid.tokens`` or ``wiki.test.tokens``, as in the WikiText archives). Each line's tokens
are followed by ``<eos>``; the whole segment becomes one stream of indices, cut into samples of
``seq_len`` (the tail that does not fill one is dropped), each labelled with the stream one
token further on.
"""

from __future__ import annotations

import os

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError, data_dir
from ....contrib.text import Vocabulary
from ....contrib.text.utils import count_tokens_from_str
from ...data.dataset import Dataset

__all__ = ["WikiText2", "WikiText103"]

EOS_TOKEN = "<eos>"
_FILES = {
    "train": "wiki.train.tokens",
    "validation": "wiki.valid.tokens",
    "test": "wiki.test.tokens",
}
_ARCHIVES = {
    "wikitext-2": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
    "wikitext-103": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip",
}


class _WikiText(Dataset):
    """A WikiText segment: samples ``(data, label)``, int32 NDArrays of ``seq_len`` indices."""

    _name = ""

    def __init__(
        self, root: str | None, segment: str, vocab: Vocabulary | None, seq_len: int
    ) -> None:
        if segment not in _FILES:
            raise MXNetError(
                f"{type(self).__name__}: segment must be one of {list(_FILES)}, not {segment!r}"
            )
        if seq_len < 1:
            raise MXNetError(f"{type(self).__name__}: seq_len must be positive, not {seq_len}")
        default = os.path.join(data_dir(), "datasets", self._name)
        self._root = os.path.expanduser(root) if root is not None else default
        self._segment, self._seq_len = segment, int(seq_len)
        self._vocab = vocab
        self._counter = None
        path = os.path.join(self._root, _FILES[segment])
        if not os.path.isfile(path):
            raise MXNetError(
                f"{type(self).__name__}: {path} is missing; mxrs does not download at run time. "
                f"Unpack {_ARCHIVES[self._name]} into {self._root}"
            )
        with open(path, encoding="utf8") as f:
            content = f.read()
        self._counter = count_tokens_from_str(content)
        if self._vocab is None:
            self._vocab = Vocabulary(counter=self._counter, reserved_tokens=[EOS_TOKEN])
        tokens = [
            t for line in content.splitlines() if line.split() for t in [*line.split(), EOS_TOKEN]
        ]
        ids = np.asarray(self._vocab.to_indices(tokens), dtype=np.int32)
        n = (len(ids) - 1) // self._seq_len * self._seq_len
        if n == 0:
            raise MXNetError(f"{type(self).__name__}: {path} has fewer than seq_len + 1 tokens")
        self._data = nd.array(ids[:n].reshape(-1, self._seq_len), dtype=np.int32)
        self._label = nd.array(ids[1 : n + 1].reshape(-1, self._seq_len), dtype=np.int32)

    @property
    def vocabulary(self) -> Vocabulary:
        """The vocabulary indexing this segment (given, or built from its tokens)."""
        assert self._vocab is not None
        return self._vocab

    @property
    def frequencies(self) -> object:
        """collections.Counter: the segment's token counts."""
        return self._counter

    def __getitem__(self, idx: int) -> tuple[nd.NDArray, nd.NDArray]:
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return int(self._label.shape[0])


class WikiText2(_WikiText):
    """WikiText-2 (Salesforce research; CC BY-SA) for word-level language modelling.

    Parameters
    ----------
    root : str, optional
        The folder with the token files; default ``$MXRS_HOME/datasets/wikitext-2``
        (``~/.mxrs/...``).
    segment : {'train', 'validation', 'test'}, default 'train'
    vocab : Vocabulary, optional
        Index tokens with this vocabulary (the training segment's, for the other segments);
        by default one is built from this segment, with ``<eos>`` reserved.
    seq_len : int, default 35
        Tokens per sample, across sentence ends.

    Raises
    ------
    MXNetError
        When the segment's file is missing (the message says where to get it) or too short.
    """

    _name = "wikitext-2"

    def __init__(
        self,
        root: str | None = None,
        segment: str = "train",
        vocab: Vocabulary | None = None,
        seq_len: int = 35,
    ) -> None:
        super().__init__(root, segment, vocab, seq_len)


class WikiText103(_WikiText):
    """WikiText-103 (Salesforce research; CC BY-SA); arguments as :class:`WikiText2`, default
    folder ``$MXRS_HOME/datasets/wikitext-103``."""

    _name = "wikitext-103"

    def __init__(
        self,
        root: str | None = None,
        segment: str = "train",
        vocab: Vocabulary | None = None,
        seq_len: int = 35,
    ) -> None:
        super().__init__(root, segment, vocab, seq_len)
