"""mx.rnn's data and files: ``encode_sentences``, ``BucketSentenceIter`` and the RNN checkpoints
(saved unpacked, loaded packed; MXNet 1.9.1 loads mxrs's)."""

import random

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError


# ----------------------------------------------------------------- encode_sentences
def test_encode_sentences_builds_a_vocabulary():
    sentences = [["a", "b", "c"], ["b", "c", "d", "a"]]
    encoded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=0, start_label=0)
    # 0 belongs to the invalid key, so the words count from 1
    assert vocab == {"\n": 0, "a": 1, "b": 2, "c": 3, "d": 4}
    assert encoded == [[1, 2, 3], [2, 3, 4, 1]]
    encoded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=-1, invalid_key="</s>")
    assert vocab == {"</s>": -1, "a": 0, "b": 1, "c": 2, "d": 3}
    assert encoded == [[0, 1, 2], [1, 2, 3, 0]]


def test_encode_sentences_with_a_given_vocabulary():
    vocab = {"a": 1, "b": 2, "c": 3}
    encoded, out = mx.rnn.encode_sentences([["a", "x", "c", "y"]], vocab=vocab,
                                           unknown_token="<unk>")  # fmt: skip
    # as in MXNet 1.9.1, every unknown word gives the unknown token the next id
    assert out is vocab and vocab == {"a": 1, "b": 2, "c": 3, "<unk>": 1}
    assert encoded == [[1, 0, 3, 1]]
    with pytest.raises(MXNetError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["a", "z"]], vocab={"a": 1})


# ----------------------------------------------------------------- BucketSentenceIter
def _sentences(n=40, seed=3):
    rng = np.random.default_rng(seed)
    return [list(rng.integers(1, 9, size=rng.integers(2, 9))) for _ in range(n)]


def test_bucket_sentence_iter_batches():
    random.seed(0)
    np.random.seed(0)
    sents = _sentences()
    it = mx.rnn.BucketSentenceIter(sents, 4, buckets=[3, 6, 8], invalid_label=-1)
    assert it.default_bucket_key == 8
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (4, 8)
    assert it.provide_label[0].name == "softmax_label" and it.provide_label[0].layout == "NT"
    fits = {b: sum(1 for s in sents if (b == 3 and len(s) <= 3) or
                   (b == 6 and 3 < len(s) <= 6) or (b == 8 and 6 < len(s) <= 8))
            for b in (3, 6, 8)}  # fmt: skip
    batches = list(it)
    assert len(batches) == sum(n // 4 for n in fits.values())
    seen = []
    for batch in batches:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert data.shape == label.shape == (4, batch.bucket_key)
        assert batch.provide_data[0].shape == data.shape and batch.pad == 0
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])  # the next token
        assert (label[:, -1] == -1).all()
        for row in data:
            n = int((row != -1).sum())
            assert (row[n:] == -1).all() and (row[:n] != -1).all()
            assert n <= batch.bucket_key and (
                batch.bucket_key == 3 or n > {6: 3, 8: 6}[batch.bucket_key]
            )
            seen.append(tuple(row[:n].astype(int)))
    assert set(seen) <= {tuple(s) for s in sents}
    with pytest.raises(StopIteration):
        it.next()


def test_bucket_sentence_iter_reset_shuffles_and_restarts():
    random.seed(1)
    np.random.seed(1)
    sents = _sentences(80)
    it = mx.rnn.BucketSentenceIter(sents, 5, buckets=[4, 8])

    def epoch():
        return [(b.bucket_key, tuple(map(tuple, b.data[0].asnumpy()))) for b in it]

    first = epoch()
    it.reset()
    second = epoch()
    assert len(first) == len(second) > 2
    assert first != second  # batch order and rows shuffled
    assert sorted(k for k, _ in first) == sorted(k for k, _ in second)
    rows = lambda e: sorted(r for _, b in e for r in b)  # noqa: E731
    # each epoch drops the same number of rows, from the same buckets
    assert len(rows(first)) == len(rows(second))


def test_bucket_sentence_iter_time_major_and_default_buckets(caplog):
    sents = [[1, 2], [3, 4], [5, 6, 7], [1, 1, 1], [2, 2, 2], [9] * 12]
    with caplog.at_level("WARNING"):
        it = mx.rnn.BucketSentenceIter(sents, 2, layout="TN", invalid_label=0, dtype="int32")
    assert it.buckets == [2, 3]  # the lengths with at least one batch of sentences
    assert "discarded 1 sentences" in caplog.text
    assert it.provide_data[0].shape == (3, 2)
    for batch in it:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert data.shape == (batch.bucket_key, 2) and data.dtype == np.int32
        np.testing.assert_array_equal(label[:-1], data[1:])
        assert (label[-1] == 0).all()


def test_bucket_sentence_iter_errors():
    with pytest.raises(MXNetError, match="invalid layout 'NC'"):
        mx.rnn.BucketSentenceIter([[1, 2]] * 4, 2, layout="NC")
    with pytest.raises(MXNetError, match="no bucket"):
        mx.rnn.BucketSentenceIter([[1, 2], [1, 2, 3]], 2)
    with pytest.raises(MXNetError, match="no sentence fits"):
        mx.rnn.BucketSentenceIter([[1, 2, 3]] * 4, 2, buckets=[2])


# ----------------------------------------------------------------- checkpoints
def _fused_net():
    cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="f_")
    out, _ = cell.unroll(4, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    net = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, 6)), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind([("data", (4, 2, 5))])
    mod.init_params(mx.init.Xavier())
    return cell, net, mod


def test_rnn_checkpoint_saves_unpacked_and_loads_packed(tmp_path):
    cell, net, mod = _fused_net()
    arg, aux = mod.get_params()
    prefix = str(tmp_path / "rnn")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, net, arg, aux)
    on_disk = mx.nd.load(f"{prefix}-0003.params")
    assert "arg:f_parameters" not in on_disk and "arg:f_r1_h2h_z_weight" in on_disk
    assert on_disk["arg:f_l0_i2h_r_weight"].shape == (3, 5)
    assert on_disk["arg:f_l1_i2h_r_weight"].shape == (3, 6)
    sym, arg2, aux2 = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    assert sym.list_arguments() == net.list_arguments() and aux2 == {}
    assert sorted(arg2) == sorted(arg)
    for k in arg:
        np.testing.assert_array_equal(arg2[k].asnumpy(), arg[k].asnumpy(), err_msg=k)
    # the unfused twin reads the unpacked weights as they are
    stack = cell.unfuse()
    _, unpacked, _ = mx.model.load_checkpoint(prefix, 3)
    packed = stack.pack_weights(unpacked)
    assert "f_l0_i2h_weight" in packed and packed["f_l0_i2h_weight"].shape == (9, 5)


def test_do_rnn_checkpoint_every_period(tmp_path):
    cell = mx.rnn.LSTMCell(2, prefix="c_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    arg = {
        n: mx.nd.ones(s)
        for n, s in zip(out.list_arguments(), out.infer_shape(data=(1, 2, 3))[0], strict=True)
    }
    arg.pop("data")
    callback = mx.rnn.do_rnn_checkpoint(cell, str(tmp_path / "c"), period=2)
    for epoch in range(4):
        callback(epoch, out, arg, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c-0002.params", "c-0004.params", "c-symbol.json",
    ]  # fmt: skip
    saved = mx.nd.load(str(tmp_path / "c-0002.params"))
    assert "arg:c_i2h_f_weight" in saved and saved["arg:c_i2h_f_weight"].shape == (2, 3)


LOAD = """
cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="f_")
sym, arg, aux = mx.rnn.load_rnn_checkpoint(cell, "rnn", 3)
result = sym.list_arguments()
for k, v in arg.items():
    arrays[k] = v.asnumpy()
stack = cell.unfuse()
_, unpacked, _ = mx.model.load_checkpoint("rnn", 3)
for k, v in stack.pack_weights(unpacked).items():
    arrays["stack_" + k] = v.asnumpy()
"""


def test_mxnet_loads_an_mxrs_rnn_checkpoint(tmp_path):
    cell, net, mod = _fused_net()
    arg, aux = mod.get_params()
    mx.rnn.save_rnn_checkpoint(cell, str(tmp_path / "rnn"), 3, net, arg, aux)
    names, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + LOAD)
    assert names == net.list_arguments()
    for k, v in arg.items():
        np.testing.assert_array_equal(want[k], v.asnumpy(), err_msg=k)
    _, unpacked, _ = mx.model.load_checkpoint(str(tmp_path / "rnn"), 3)
    for k, v in cell.unfuse().pack_weights(unpacked).items():
        np.testing.assert_array_equal(want["stack_" + k], v.asnumpy(), err_msg=k)
