"""mx.io.LibSVMIter against what Apache MXNet 1.9.1 gives: CSR data and labels, the rounded
last batch and the next epoch, a worker's part of the file; and the errors for malformed
files."""

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n5 1:3\n"
LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n5\n"
#: (arguments, epochs)
CASES = [
    (dict(batch_size=2), 2),
    (dict(batch_size=3, label_libsvm="label.t", label_shape=(3,)), 2),
    (dict(batch_size=2, num_parts=2, part_index=1), 2),
]
#: What MXNet 1.9.1's LibSVMIter gives for CASES on DATA and LABEL (values rounded to 4
#: places): written down, as its iterator crashes now and then in a process that makes a
#: second one, and on some files (the first of two parts of DATA, one batch of all of it)
EXPECTED = [
    {
        "provide": [[2, 3], [2]],
        "0.0": ["csr", "default", [[0.5, 0.0, 1.2], [0.0, 0.0, 0.0]], [1.0, -2.0], 0, [0, 1]],
        "0.1": ["csr", "default", [[0.6, 2.4, 1.2], [0.0, 0.0, -1.2]], [-3.0, 4.0], 0, [2, 3]],
        "0.2": ["csr", "default", [[0.0, 3.0, 0.0], [0.5, 0.0, 1.2]], [5.0, 1.0], 1, [4, 0]],
        "1.0": ["csr", "default", [[0.0, 0.0, 0.0], [0.6, 2.4, 1.2]], [-2.0, -3.0], 0, [1, 2]],
        "1.1": ["csr", "default", [[0.0, 0.0, -1.2], [0.0, 3.0, 0.0]], [4.0, 5.0], 0, [3, 4]],
    },
    {
        "provide": [[3, 3], [3, 3]],
        "0.0": [
            "csr",
            "csr",
            [[0.5, 0.0, 1.2], [0.0, 0.0, 0.0], [0.6, 2.4, 1.2]],
            [[0.0, 0.0, 0.0], [0.125, 0.0, 0.0], [0.0, 0.0, 1.2000000476837158]],
            0,
            [0, 1, 2],
        ],
        "0.1": [
            "csr",
            "csr",
            [[0.0, 0.0, -1.2], [0.0, 3.0, 0.0], [0.5, 0.0, 1.2]],
            [[0.0, 1.0, -1.2000000476837158], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            1,
            [3, 4, 0],
        ],
        "1.0": [
            "csr",
            "csr",
            [[0.0, 0.0, 0.0], [0.6, 2.4, 1.2], [0.0, 0.0, -1.2]],
            [[0.125, 0.0, 0.0], [0.0, 0.0, 1.2000000476837158], [0.0, 1.0, -1.2000000476837158]],
            0,
            [1, 2, 3],
        ],
        "1.1": [
            "csr",
            "csr",
            [[0.0, 3.0, 0.0], [0.5, 0.0, 1.2], [0.0, 0.0, 0.0]],
            [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.125, 0.0, 0.0]],
            2,
            [4, 0, 1],
        ],
    },
    {
        "provide": [[2, 3], [2]],
        "0.0": ["csr", "default", [[0.0, 0.0, -1.2], [0.0, 3.0, 0.0]], [4.0, 5.0], 0, [0, 1]],
        "1.0": ["csr", "default", [[0.0, 0.0, -1.2], [0.0, 3.0, 0.0]], [4.0, 5.0], 0, [0, 1]],
    },
]


def _epochs(kwargs, n):
    it = mx.io.LibSVMIter(data_libsvm="data.t", data_shape=(3,), **kwargs)
    out = {"provide": [list(d.shape) for d in it.provide_data + it.provide_label]}
    for epoch in range(n):
        for k, b in enumerate(it):
            d, lab = b.data[0], b.label[0]
            index = [int(i) for i in b.index]
            values = [d.asnumpy().tolist(), lab.asnumpy().tolist()]
            out[f"{epoch}.{k}"] = [d.stype, lab.stype, *values, b.pad, index]
        it.reset()
    return out


@pytest.mark.parametrize("case", range(len(CASES)))
def test_libsvm_iter_gives_mxnets_batches(tmp_path, monkeypatch, case):
    (tmp_path / "data.t").write_text(DATA)
    (tmp_path / "label.t").write_text(LABEL)
    monkeypatch.chdir(tmp_path)
    got, want = _epochs(*CASES[case]), EXPECTED[case]
    assert sorted(got) == sorted(want)
    assert got["provide"] == want["provide"]
    for key in sorted(set(got) - {"provide"}):
        g, w = got[key], want[key]
        assert g[0] == w[0] and g[1] == w[1] and g[4:] == w[4:], key
        np.testing.assert_allclose(g[2], w[2], atol=1e-4, err_msg=key)
        np.testing.assert_allclose(g[3], w[3], atol=1e-4, err_msg=key)


def test_one_batch_of_the_whole_file(tmp_path):
    (tmp_path / "data.t").write_text(DATA)
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(3,), batch_size=5)
    for _ in range(2):
        (b,) = list(it)
        assert b.pad == 0 and b.index.tolist() == [0, 1, 2, 3, 4]
        assert b.label[0].asnumpy().tolist() == [1.0, -2.0, -3.0, 4.0, 5.0]
        assert b.data[0].stype == "csr" and b.data[0].asnumpy()[4].tolist() == [0.0, 3.0, 0.0]
        it.reset()


def test_parts_split_the_file_by_bytes(tmp_path):
    (tmp_path / "data.t").write_text(DATA)
    rows = []
    for part in range(2):
        it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "data.t"), data_shape=(3,),
                              batch_size=1, num_parts=2, part_index=part)  # fmt: skip
        rows.append([b.label[0].asnumpy().tolist()[0] for b in it])
    # 59 bytes: the first three lines start in the first half, the last two in the second
    assert rows == [[1.0, -2.0, -3.0], [4.0, 5.0]]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1 0:1\n-3.0 -1:0.6 1:2.4\n", r"line 2: index -1 is outside \[0, 3\)"),
        ("1 0:1\n2 3:1\n", r"index 3 is outside \[0, 3\)"),
        ("1 0:1\n2 1-1\n", r"'1-1' is not index:value"),
        ("1 0:1\nx 1:1\n", r"'x' is not a number"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, text, match):
    path = tmp_path / "bad.t"
    path.write_text(text)
    with pytest.raises(MXNetError, match=match):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=2)


def test_bad_arguments_and_mismatched_files(tmp_path):
    (tmp_path / "data.t").write_text(DATA)
    (tmp_path / "short.t").write_text("1\n2\n")
    data = str(tmp_path / "data.t")
    with pytest.raises(MXNetError, match="does not exist"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "none.t"), data_shape=(3,))
    with pytest.raises(MXNetError, match="has 5 rows but"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), label_libsvm=str(tmp_path / "short.t"),
                         label_shape=(2,))  # fmt: skip
    with pytest.raises(MXNetError, match="part_index 2 is outside"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), num_parts=2, part_index=2)
    with pytest.raises(MXNetError, match=r"data_shape must be \(features,\)"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(3, 1))


def test_a_sparse_linear_model_trains_on_libsvm_batches(tmp_path):
    rng = np.random.default_rng(0)
    w = np.array([1.0, -2.0, 0.0, 3.0])
    lines = []
    for _ in range(64):
        cols = np.sort(rng.choice(4, size=2, replace=False))
        vals = rng.standard_normal(2)
        y = float(vals @ w[cols])
        lines.append(f"{y} " + " ".join(f"{c}:{v}" for c, v in zip(cols, vals, strict=True)))
    (tmp_path / "train.t").write_text("\n".join(lines) + "\n")
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "train.t"), data_shape=(4,), batch_size=16)
    weight = mx.nd.zeros((4, 1))
    weight.attach_grad()
    for _ in range(60):
        it.reset()
        for b in it:
            with mx.autograd.record():
                pred = mx.nd.sparse.dot(b.data[0], weight)
                loss = ((pred.reshape((-1,)) - b.label[0]) ** 2).mean()
            loss.backward()
            weight[:] = weight - 0.3 * weight.grad
    np.testing.assert_allclose(weight.asnumpy().ravel(), w, atol=0.05)
