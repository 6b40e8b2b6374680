"""mx.contrib.text (token counts, Vocabulary) against Apache MXNet 1.9.1, and
gluon.contrib.data: WikiText datasets read from local token files, IntervalSampler."""

import collections

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import InvalidUsageError, MXNetError
from mxrs.contrib.text import Vocabulary
from mxrs.contrib.text.utils import count_tokens_from_str
from mxrs.gluon.contrib.data import IntervalSampler
from mxrs.gluon.contrib.data.text import WikiText2, WikiText103

TEXT = " Life is great ! \n life is good . \n*a*b*a*\n zebra zebra apple apple banana \n"


def test_counts_and_vocabularies_match_mxnet(tmp_path):
    cases = [
        dict(),
        dict(most_freq_count=3),
        dict(min_freq=2),
        dict(reserved_tokens=["<eos>", "<pad>"], unknown_token="<UNK>"),
    ]
    script = f"""
    import collections
    from mxnet.contrib import text
    src = {TEXT!r}
    c = text.utils.count_tokens_from_str(src)
    low = text.utils.count_tokens_from_str(src, ' ', '\\n', True)
    star = text.utils.count_tokens_from_str(src, '\\\\*', '\\n')
    vocabs = [text.vocab.Vocabulary(c, **kw) for kw in {cases!r}]
    result = dict(counts=dict(c), low=dict(low), star=dict(star),
                  vocabs=[v.idx_to_token for v in vocabs],
                  indices=[v.to_indices(['is', 'nope', 'zebra']) for v in vocabs],
                  tokens=vocabs[0].to_tokens([0, 2, 1]))
    """
    ref, _ = mxnet_ref.run(tmp_path, script)
    c = count_tokens_from_str(TEXT)
    assert dict(c) == ref["counts"]
    assert dict(count_tokens_from_str(TEXT, " ", "\n", True)) == ref["low"]
    assert dict(count_tokens_from_str(TEXT, "\\*", "\n")) == ref["star"]
    vocabs = [Vocabulary(c, **kw) for kw in cases]
    assert [v.idx_to_token for v in vocabs] == ref["vocabs"]
    assert [v.to_indices(["is", "nope", "zebra"]) for v in vocabs] == ref["indices"]
    assert vocabs[0].to_tokens([0, 2, 1]) == ref["tokens"]
    assert vocabs[0].to_indices("zebra") == vocabs[0].token_to_idx["zebra"]
    assert len(vocabs[3]) == len(ref["vocabs"][3]) and vocabs[3].unknown_token == "<UNK>"


def test_counting_into_a_counter_and_bad_vocabulary_arguments():
    counter = collections.Counter(["a"])
    assert count_tokens_from_str("a b", counter_to_update=counter) is counter
    assert counter == collections.Counter({"a": 2, "b": 1})
    with pytest.raises(InvalidUsageError, match="min_freq must be at least 1"):
        Vocabulary(counter, min_freq=0)
    with pytest.raises(InvalidUsageError, match="cannot contain the unknown token"):
        Vocabulary(counter, reserved_tokens=["<unk>"])
    with pytest.raises(InvalidUsageError, match="duplicates"):
        Vocabulary(counter, reserved_tokens=["x", "x"])
    with pytest.raises(InvalidUsageError, match="must be a collections.Counter"):
        Vocabulary({"a": 1})
    with pytest.raises(MXNetError, match="token index 9 is invalid"):
        Vocabulary(counter).to_tokens(9)


def _write(folder, name, lines):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("\n".join(lines), encoding="utf8")


def test_wikitext_reads_token_files_into_fixed_length_samples(tmp_path):
    _write(tmp_path, "wiki.train.tokens", ["", " = Title = ", "", " b a b c b ", "", " a c "])
    train = WikiText2(str(tmp_path), "train", seq_len=3)
    vocab = train.vocabulary
    # <eos> after each non-empty line; the counts order the rest, ties in token order
    assert vocab.idx_to_token == ["<unk>", "<eos>", "b", "=", "a", "c", "Title"]
    stream = ["=", "Title", "=", "<eos>", "b", "a", "b", "c", "b", "<eos>", "a", "c", "<eos>"]
    ids = vocab.to_indices(stream)
    assert len(train) == 4  # 12 (data, label) pairs: four samples of three
    for i in range(4):
        data, label = train[i]
        assert data.dtype == np.int32 and data.shape == (3,)
        assert data.asnumpy().tolist() == ids[3 * i : 3 * i + 3]
        assert label.asnumpy().tolist() == ids[3 * i + 1 : 3 * i + 4]
    _write(tmp_path, "wiki.valid.tokens", [" a z b "])
    valid = WikiText2(str(tmp_path), "validation", vocab=vocab, seq_len=2)
    assert valid.vocabulary is vocab
    assert valid[0][0].asnumpy().tolist() == vocab.to_indices(["a", "z"])  # z is unknown: 0
    assert valid.frequencies == collections.Counter({"a": 1, "z": 1, "b": 1})


def test_wikitext_errors_name_the_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(MXNetError, match=r"wiki.test.tokens is missing; mxrs does not download"):
        WikiText103(str(tmp_path), "test")
    with pytest.raises(MXNetError, match="segment must be one of"):
        WikiText2(str(tmp_path), "dev")
    _write(tmp_path, "wiki.train.tokens", [" a "])
    with pytest.raises(MXNetError, match="fewer than seq_len"):
        WikiText2(str(tmp_path), seq_len=5)


def test_interval_sampler_feeds_a_dataloader_in_bptt_order():
    assert list(IntervalSampler(13, interval=3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert list(IntervalSampler(13, interval=3, rollover=False)) == [0, 3, 6, 9, 12]
    ds = mx.gluon.data.ArrayDataset(np.arange(6))
    loader = mx.gluon.data.DataLoader(ds, batch_size=2, sampler=IntervalSampler(6, 3))
    assert [b.asnumpy().tolist() for b in loader] == [[0, 3], [1, 4], [2, 5]]
    assert mx.gluon.contrib.data.text.WikiText2 is WikiText2
