"""mx.io: DataDesc/DataBatch, NDArrayIter's last-batch modes, ResizeIter, PrefetchingIter,
MNISTIter on IDX files written here, CSVIter."""

import gzip
import pickle
import struct
import threading

import mxrs as mx
import numpy as np
import pytest

N, BS = 10, 3


def _rows(batch):
    """(data rows as ints, labels as ints, pad) of a batch whose data is arange(N) column."""
    return (
        batch.data[0].asnumpy()[:, 0].astype(int).tolist(),
        batch.label[0].asnumpy().astype(int).tolist(),
        batch.pad,
    )


def _iter(handle, **kw):
    data = np.arange(N, dtype=np.float32).reshape(N, 1) * np.ones((1, 2), np.float32)
    return mx.io.NDArrayIter(data, np.arange(N), batch_size=BS, last_batch_handle=handle, **kw)


# ---------------------------------------------------------------------- DataDesc / DataBatch
def test_datadesc_is_a_named_pair_with_dtype_and_layout():
    d = mx.io.DataDesc("data", (2, 3), "float16", "NTC")
    assert d == ("data", (2, 3))
    name, shape = d
    assert (name, shape, d.dtype, d.layout) == ("data", (2, 3), "float16", "NTC")
    assert mx.io.DataDesc("x", [4]).dtype is np.float32
    assert mx.io.DataDesc("x", [4]).layout == "NCHW"
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    back = pickle.loads(pickle.dumps(d))
    assert (back, back.dtype, back.layout) == (d, "float16", "NTC")
    descs = mx.io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", "int32"), ("b", "f")])
    assert [(x.name, x.shape, x.dtype) for x in descs] == [("a", (1,), "int32"), ("b", (2,), "f")]


def test_databatch_fields_and_str():
    b = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1, index=[4, 5])
    assert (b.pad, b.index, b.bucket_key) == (1, [4, 5], None)
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(TypeError, match="list of NDArrays"):
        mx.io.DataBatch(mx.nd.zeros((2, 3)))


def test_dataiter_base_is_an_empty_iterator():
    it = mx.io.DataIter(batch_size=4)
    assert it.batch_size == 4 and iter(it) is it
    assert list(it) == []


# ---------------------------------------------------------------------- NDArrayIter
def test_pad_wraps_around_and_counts_the_filler():
    it = _iter("pad")
    expect = [
        ([0, 1, 2], [0, 1, 2], 0),
        ([3, 4, 5], [3, 4, 5], 0),
        ([6, 7, 8], [6, 7, 8], 0),
        ([9, 0, 1], [9, 0, 1], 2),
    ]
    assert [_rows(b) for b in it] == expect
    it.reset()
    assert [_rows(b) for b in it] == expect
    batch = _iter("pad").next()
    assert isinstance(batch.data[0], mx.nd.NDArray) and batch.data[0].shape == (3, 2)
    assert batch.index is None


def test_pad_with_batch_larger_than_data_tiles():
    it = mx.io.NDArrayIter(np.arange(4).reshape(4, 1), batch_size=10)
    (batch,) = list(it)
    assert batch.data[0].asnumpy().ravel().tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert batch.pad == 6 and batch.label == []


def test_discard_drops_the_incomplete_batch():
    it = _iter("discard")
    expect = [([0, 1, 2], [0, 1, 2], 0), ([3, 4, 5], [3, 4, 5], 0), ([6, 7, 8], [6, 7, 8], 0)]
    assert [_rows(b) for b in it] == expect
    it.reset()
    assert [_rows(b) for b in it] == expect


def test_roll_over_carries_leftovers_into_the_next_epoch():
    it = _iter("roll_over")
    assert [_rows(b) for b in it] == [
        ([0, 1, 2], [0, 1, 2], 0),
        ([3, 4, 5], [3, 4, 5], 0),
        ([6, 7, 8], [6, 7, 8], 0),
    ]
    it.reset()
    # pad of the first batch counts the samples carried over from the last epoch
    assert [_rows(b) for b in it] == [
        ([9, 0, 1], [9, 0, 1], 1),
        ([2, 3, 4], [2, 3, 4], 0),
        ([5, 6, 7], [5, 6, 7], 0),
    ]
    it.reset()
    assert [_rows(b) for b in it] == [
        ([8, 9, 0], [8, 9, 0], 2),
        ([1, 2, 3], [1, 2, 3], 0),
        ([4, 5, 6], [4, 5, 6], 0),
        ([7, 8, 9], [7, 8, 9], 0),
    ]
    it.hard_reset()
    assert _rows(it.next()) == ([0, 1, 2], [0, 1, 2], 0)


def test_cursor_protocol_matches_next():
    it = _iter("pad")
    seen = []
    while it.iter_next():
        seen.append((it.getdata()[0].asnumpy()[:, 0].tolist(), it.getpad()))
    assert seen[-1] == ([9, 0, 1], 2) and len(seen) == 4
    with pytest.raises(StopIteration):
        it.next()


def test_shuffle_is_a_permutation_that_keeps_labels_aligned():
    np.random.seed(3)
    data = np.arange(N, dtype=np.float32).reshape(N, 1)
    it = mx.io.NDArrayIter(data, np.arange(N) * 10, batch_size=5, shuffle=True)
    orders = []
    for _ in range(3):
        rows, labels = [], []
        for b in it:
            rows += b.data[0].asnumpy()[:, 0].tolist()
            labels += b.label[0].asnumpy().tolist()
        assert sorted(rows) == list(range(N))
        assert labels == [r * 10 for r in rows]
        orders.append(rows)
        it.reset()
    assert orders[0] != list(range(N))  # shuffled on construction
    assert orders[1] != orders[0]  # and again at every reset
    # the source arrays are left alone
    assert data[:, 0].tolist() == list(range(N))


def test_dict_and_list_inputs_are_named_and_sorted():
    # numpy arrays become float32 NDArrays (as mx.nd.array makes them); NDArrays keep their dtype
    x, y = np.zeros((6, 2, 3), dtype=np.float64), mx.nd.ones((6, 4), dtype="int32")
    it = mx.io.NDArrayIter({"x": x, "a": y}, {"lab": np.arange(6)}, batch_size=4)
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [
        ("a", (4, 4), np.int32),
        ("x", (4, 2, 3), np.float32),
    ]
    assert [(d.name, d.shape) for d in it.provide_label] == [("lab", (4,))]
    batch = it.next()
    assert [d.shape for d in batch.data] == [(4, 4), (4, 2, 3)]
    assert batch.data[0].asnumpy().sum() == 16
    listed = mx.io.NDArrayIter([x, y], batch_size=2, data_name="in", label_name="out")
    assert [d.name for d in listed.provide_data] == ["_0_in", "_1_in"]
    assert listed.provide_label == []
    single = mx.io.NDArrayIter(mx.nd.ones((4, 5)), [np.arange(4)], batch_size=2, label_name="y")
    assert [d.name for d in single.provide_data + single.provide_label] == ["data", "y"]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"label": np.arange(9)}, ValueError, "'data' has 10 but 'softmax_label' has 9"),
        ({"last_batch_handle": "wrap"}, ValueError, "last_batch_handle"),
        ({"batch_size": 0}, ValueError, "batch_size"),
    ],
)
def test_ndarrayiter_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        mx.io.NDArrayIter(np.zeros((N, 2)), **kwargs)


def test_ndarrayiter_bad_input_types():
    with pytest.raises(TypeError, match="data must be"):
        mx.io.NDArrayIter("not an array")
    with pytest.raises(ValueError, match="no arrays"):
        mx.io.NDArrayIter([])
    with pytest.raises(TypeError, match="label must be"):
        mx.io.NDArrayIter(np.zeros((2, 1)), label=object())


# ---------------------------------------------------------------------- ResizeIter
def test_resize_stretches_and_cuts_epochs():
    longer = mx.io.ResizeIter(_iter("pad"), 6)
    assert longer.provide_data == _iter("pad").provide_data and longer.batch_size == BS
    firsts = [_rows(b)[0][0] for b in longer]
    assert firsts == [0, 3, 6, 9, 0, 3]  # the inner iterator restarted after 4 batches
    longer.reset()
    assert len(list(longer)) == 6
    shorter = mx.io.ResizeIter(_iter("pad"), 2, reset_internal=False)
    assert [_rows(b)[0][0] for b in shorter] == [0, 3]
    shorter.reset()
    assert [_rows(b)[0][0] for b in shorter] == [6, 9]  # goes on where it stopped
    shorter.reset()
    assert [_rows(b)[0][0] for b in shorter] == [0, 3]


# ---------------------------------------------------------------------- PrefetchingIter
def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("mxrs-io-prefetch")]


def test_prefetching_yields_the_same_batches_and_stops_cleanly():
    before = len(_prefetch_threads())
    with mx.io.PrefetchingIter(_iter("pad")) as it:
        assert it.batch_size == BS
        assert it.provide_data == _iter("pad").provide_data
        for _ in range(2):
            got = [_rows(b) for b in it]
            assert got == [_rows(b) for b in _iter("pad")]
            with pytest.raises(StopIteration):
                it.next()
            it.reset()
    assert len(_prefetch_threads()) == before
    with pytest.raises(mx.MXNetError, match="closed"):
        it.next()


def test_prefetching_joins_iterators_and_renames():
    a = mx.io.NDArrayIter(np.arange(6).reshape(6, 1), np.arange(6), batch_size=2)
    b = mx.io.NDArrayIter(np.arange(6).reshape(6, 1) + 100, np.arange(6), batch_size=2)
    it = mx.io.PrefetchingIter(
        [a, b], rename_data=[{"data": "a"}, {"data": "b"}], rename_label=[{}, {}]
    )
    try:
        assert [d.name for d in it.provide_data] == ["a", "b"]
        assert [d.name for d in it.provide_label] == ["softmax_label", "softmax_label"]
        batches = list(it)
        assert len(batches) == 3
        assert [x.asnumpy().ravel().tolist() for x in batches[1].data] == [[2, 3], [102, 103]]
        assert len(batches[1].label) == 2
        assert [d.name for d in batches[0].provide_data] == ["a", "b"]
    finally:
        it.close()
    it.close()  # a second close is harmless


def test_prefetching_mismatched_lengths_and_errors():
    short = mx.io.NDArrayIter(np.zeros((2, 1)), batch_size=2)
    with mx.io.PrefetchingIter([_iter("pad"), short]) as it:
        it.next()
        with pytest.raises(mx.MXNetError, match="ended before the others"):
            it.next()

    class Broken(mx.io.DataIter):
        provide_data = [mx.io.DataDesc("data", (1,))]
        provide_label = []

        def next(self):
            raise OSError("disk gone")

    with mx.io.PrefetchingIter(Broken()) as it:
        with pytest.raises(OSError, match="disk gone"):
            it.next()


def test_prefetching_threads_end_when_dropped():
    before = len(_prefetch_threads())
    it = mx.io.PrefetchingIter(_iter("pad"))
    it.next()
    del it
    assert len(_prefetch_threads()) == before


# ---------------------------------------------------------------------- MNISTIter
def _write_idx(path, arr, gz=False):
    arr = np.asarray(arr, dtype=np.uint8)
    raw = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    raw += arr.tobytes()
    (path.write_bytes(gzip.compress(raw)) if gz else path.write_bytes(raw))
    return str(path)


@pytest.fixture
def tiny_mnist(tmp_path):
    """7 images of 28x28: image i is filled with 10*i + its pixel's column; label i % 10."""
    images = np.array([[[10 * i + c for c in range(28)]] * 28 for i in range(7)], dtype=np.uint8)
    labels = np.arange(7) % 10
    return (
        _write_idx(tmp_path / "img-idx3-ubyte.gz", images, gz=True),
        _write_idx(tmp_path / "lab-idx1-ubyte", labels),
        images,
    )


def test_mnist_reads_idx_files_scaled_by_1_over_256(tiny_mnist):
    img, lab, images = tiny_mnist
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=3, shuffle=False, silent=True)
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (3, 1, 28, 28))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (3,))]
    batches = list(it)
    assert len(batches) == 2  # the 7th sample does not fill a batch
    first = batches[0]
    assert first.data[0].dtype == np.float32 and first.data[0].shape == (3, 1, 28, 28)
    np.testing.assert_allclose(first.data[0].asnumpy()[:, 0], images[:3] / 256.0, rtol=1e-6)
    assert batches[1].label[0].asnumpy().tolist() == [3, 4, 5]
    assert first.pad == 0 and first.index.tolist() == [0, 1, 2]
    it.reset()
    assert len(list(it)) == 2
    it.reset()
    assert it.iter_next()  # the cursor protocol gives one NDArray each, as MXNet's MNISTIter
    assert it.getdata().shape == (3, 1, 28, 28) and it.getlabel().asnumpy().tolist() == [0, 1, 2]


def test_mnist_flat_shuffle_and_parts(tiny_mnist):
    img, lab, images = tiny_mnist
    flat = mx.io.MNISTIter(image=img, label=lab, batch_size=7, flat=True, seed=1, silent=True)
    (batch,) = list(flat)
    assert batch.data[0].shape == (7, 784)
    labels = batch.label[0].asnumpy().astype(int)
    assert sorted(labels.tolist()) == list(range(7)) and labels.tolist() != list(range(7))
    # each row is still its own image: pixel (0, 0) is 10 * label
    np.testing.assert_allclose(batch.data[0].asnumpy()[:, 0] * 256, labels * 10)
    again = mx.io.MNISTIter(image=img, label=lab, batch_size=7, flat=True, seed=1, silent=True)
    assert again.next().label[0].asnumpy().tolist() == labels.tolist()
    part = mx.io.MNISTIter(
        image=img, label=lab, batch_size=1, shuffle=False, num_parts=2, part_index=1, silent=True
    )
    assert [b.label[0].asnumpy().tolist() for b in part] == [[3], [4], [5], [6]]


def test_mnist_bad_files(tmp_path, tiny_mnist):
    img, lab, _ = tiny_mnist
    short = _write_idx(tmp_path / "short-labels", np.arange(5))
    with pytest.raises(ValueError, match="7 images"):
        mx.io.MNISTIter(image=img, label=short, silent=True)
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x12\x34\x56\x78hello")
    with pytest.raises(ValueError, match="not an IDX file"):
        mx.io.MNISTIter(image=str(junk), label=lab, silent=True)
    with pytest.raises(ValueError, match="part_index"):
        mx.io.MNISTIter(image=img, label=lab, num_parts=2, part_index=2, silent=True)


def test_read_idx_checks_the_size(tmp_path):
    path = tmp_path / "cut"
    path.write_bytes(struct.pack(">BBBBI", 0, 0, 8, 1, 5) + b"\x01\x02")
    with pytest.raises(ValueError, match="2 bytes of data, 5 expected"):
        mx.io.read_idx(path)


# ---------------------------------------------------------------------- CSVIter
def test_csv_round_batch(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("\n".join(f"{i},{i + 0.5}" for i in range(5)) + "\n")
    labels = tmp_path / "l.csv"
    labels.write_text("\n".join(str(i * 2) for i in range(5)) + "\n")
    it = mx.io.CSVIter(data_csv=str(data), data_shape=(2,), label_csv=str(labels), batch_size=2)
    assert [(d.name, d.shape) for d in it.provide_data + it.provide_label] == [
        ("data", (2, 2)),
        ("softmax_label", (2,)),
    ]
    got = [(b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it]
    assert got == [([0, 1], [0, 2], 0), ([2, 3], [4, 6], 0), ([4, 0], [8, 0], 1)]
    it.reset()  # starts after the row the last batch borrowed
    assert [b.data[0].asnumpy()[0, 0] for b in it] == [1, 3]
    no_label = mx.io.CSVIter(data_csv=str(data), data_shape=(1, 2), batch_size=5)
    batch = no_label.next()
    assert batch.data[0].shape == (5, 1, 2) and batch.label[0].asnumpy().tolist() == [0] * 5
    assert no_label.getdata().shape == (5, 1, 2)  # one NDArray, as MXNet's CSVIter gives it
    with pytest.raises(ValueError, match="columns"):
        mx.io.CSVIter(data_csv=str(data), data_shape=(3,))


def test_feedforward_trains_predicts_and_scores_on_ndarray_iters():
    """FeedForward takes mx.io iterators: reset every epoch, padding left out of predictions."""
    from mxrs.gluon import nn

    np.random.seed(0)
    mx.random.seed(0)
    x = np.random.rand(100, 4).astype(np.float32)
    y = (x.sum(axis=1) > 2).astype(np.float32)
    model = mx.model.FeedForward(nn.Dense(2), num_epoch=20, learning_rate=0.5)
    model.fit(mx.io.NDArrayIter(x, y, batch_size=16, last_batch_handle="pad"))
    pred = model.predict(mx.io.NDArrayIter(x, None, batch_size=16))
    assert pred.shape == (100, 2)  # 7 batches of 16, the last padded by 12: trimmed
    assert (pred.argmax(axis=1) == y).mean() > 0.9
    assert model.score(mx.io.NDArrayIter(x, y, batch_size=16)) > 0.9


def test_ndarray_iter_takes_the_samples_of_the_first_data_array():
    # as MXNet 1.9.1: a longer label array's extra rows are not used; a shorter one is an error
    data = np.arange(12, dtype=np.float32).reshape(6, 2)
    it = mx.io.NDArrayIter(data, np.arange(10, dtype=np.float32), batch_size=4)
    labels = [b.label[0].asnumpy()[: 4 - b.pad] for b in it]
    np.testing.assert_array_equal(np.concatenate(labels), np.arange(6))
    assert it.num_data == 6
    with pytest.raises(ValueError, match="'data' has 6 but 'softmax_label' has 5"):
        mx.io.NDArrayIter(data, np.arange(5, dtype=np.float32), batch_size=4)


def test_ndarray_iter_takes_csr_only_with_discard_and_shuffles_its_rows():
    import scipy.sparse as spsp

    rng = np.random.default_rng(0)
    dense = (rng.random((7, 5)) > 0.5) * rng.random((7, 5)).astype(np.float32)
    labels = np.arange(7, dtype=np.float32)
    for source in (spsp.csr_matrix(dense), mx.nd.array(dense).tostype("csr")):
        with pytest.raises(NotImplementedError, match="last_batch_handle='discard'"):
            mx.io.NDArrayIter({"data": source}, labels, 2)
        np.random.seed(3)
        it = mx.io.NDArrayIter(
            {"data": source}, labels, 2, shuffle=True, last_batch_handle="discard"
        )
        seen = []
        for batch in it:
            data, label = batch.data[0], batch.label[0]
            assert data.stype == "csr" and data.shape == (2, 5)
            for row, lab in zip(data.asnumpy(), label.asnumpy(), strict=True):
                np.testing.assert_array_equal(row, dense[int(lab)])  # rows move with labels
                seen.append(int(lab))
        assert len(seen) == 6 and len(set(seen)) == 6 and seen != sorted(seen)
    assert mx.nd.array(spsp.csr_matrix(dense)).stype == "csr"
