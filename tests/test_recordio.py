"""mx.recordio: the RecordIO format byte for byte as MXNet 1.9.1 writes and reads it (records
holding the magic word, padding, multi-label headers, index files), pickling, and errors."""

import os
import pickle
import struct

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError

MAGIC = struct.pack("<I", 0xCED7230A)

#: writes the same records with mxrs and with MXNet (``lib``) in the differential test
_WRITE = """
def write(lib, folder):
    folder.mkdir()
    w = lib.recordio.MXIndexedRecordIO(str(folder / "r.idx"), str(folder / "r.rec"), "w")
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    for k, lab in enumerate(labels):
        w.write_idx(100 + k, lib.recordio.pack(lib.recordio.IRHeader(0, lab, k, 0), MAGIC))
    w.write_idx(200, lib.recordio.pack(lib.recordio.IRHeader(0, 7.0, 77, 1), b"x"))
    w.write_idx(300, lib.recordio.pack_img((0, 1.0, 3, 0), color, quality=80))
    w.write_idx(301, lib.recordio.pack_img((0, 2.0, 4, 0), gray, 3, img_fmt=".png"))
    w.close()
"""

#: payloads covering the format's corners: empty, unpadded lengths, the magic word at aligned
#: offsets (cut into parts, also back to back and at both ends) and at unaligned ones (not cut)
PAYLOADS = [
    b"",
    b"a",
    b"abcd",
    b"hello world",
    MAGIC,
    MAGIC + b"xyz",
    b"abcd" + MAGIC + b"efgh",
    b"abcd" + MAGIC + MAGIC + b"ef",
    b"ab" + MAGIC + b"cd",
    b"abcdefgh" + MAGIC,
    MAGIC * 3,
    bytes(range(256)) * 5,
]


def _cv2_path(tmp_path):
    """A folder that lends mxrs's OpenCV to MXNet's Python (for its pack_img/unpack_img)."""
    where = tmp_path / "cv2path"
    where.mkdir(exist_ok=True)
    link = where / "cv2"
    if not link.exists():
        link.symlink_to(os.path.dirname(cv2.__file__))
    return str(where)


def _images():
    rng = np.random.default_rng(3)
    color = cv2.resize(rng.integers(0, 256, (5, 6, 3), dtype=np.uint8), (30, 20))
    gray = cv2.resize(rng.integers(0, 256, (4, 4), dtype=np.uint8), (17, 13))
    return color, gray


def test_records_round_trip(tmp_path):
    path = str(tmp_path / "a.rec")
    writer = mx.recordio.MXRecordIO(path, "w")
    for p in PAYLOADS:
        writer.write(p)
    writer.close()
    reader = mx.recordio.MXRecordIO(path, "r")
    assert [reader.read() for _ in PAYLOADS] == PAYLOADS
    assert reader.read() is None
    reader.reset()
    assert reader.read() == PAYLOADS[0]
    assert os.path.getsize(path) % 4 == 0


def test_record_layout():
    """The parts: a whole record is flag 0; the magic word at an aligned offset cuts it into
    parts 1, 2..., 3, the word itself left out; the bytes are padded to 4."""
    from mxrs.recordio import encode_record

    def words(b):
        return list(struct.unpack(f"<{len(b) // 4}I", b))

    assert words(encode_record(b"abcde")) == [0xCED7230A, 5, *words(b"abcde\0\0\0")]
    cut = encode_record(b"abcd" + MAGIC + b"ef")
    assert words(cut) == [
        *(0xCED7230A, (1 << 29) | 4, *words(b"abcd")),
        *(0xCED7230A, (3 << 29) | 2, *words(b"ef\0\0")),
    ]
    three = words(encode_record(MAGIC * 2))
    assert three == [0xCED7230A, 1 << 29, 0xCED7230A, 2 << 29, 0xCED7230A, 3 << 29]


def test_indexed_records_and_tell(tmp_path):
    idx, rec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    positions = []
    for i, p in enumerate(PAYLOADS):
        positions.append(writer.tell())
        writer.write_idx(i, p)
    writer.close()
    lines = (tmp_path / "a.idx").read_text().splitlines()
    assert lines == [f"{i}\t{pos}" for i, pos in enumerate(positions)]
    reader = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    assert reader.keys == list(range(len(PAYLOADS)))
    for i in reversed(range(len(PAYLOADS))):
        assert reader.read_idx(i) == PAYLOADS[i]
    with pytest.raises(KeyError, match="no record with key 99"):
        reader.read_idx(99)
    reader.close()
    keyed = mx.recordio.MXIndexedRecordIO(idx, rec, "r", key_type=str)
    assert keyed.keys[:2] == ["0", "1"] and keyed.read_idx("3") == PAYLOADS[3]


def test_pack_and_unpack():
    header = mx.recordio.IRHeader(7, 2.5, 12345678901, 3)
    s = mx.recordio.pack(header, b"payload")
    assert len(s) == 24 + 7
    h, payload = mx.recordio.unpack(s)
    assert h == mx.recordio.IRHeader(0, 2.5, 12345678901, 3) and payload == b"payload"
    labels = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    h, payload = mx.recordio.unpack(mx.recordio.pack((0, labels, 4, 0), b"xy"))
    assert h.flag == 3 and h.id == 4 and payload == b"xy"
    np.testing.assert_array_equal(h.label, labels)
    h, _ = mx.recordio.unpack(mx.recordio.pack((0, [9], 1, 0), b""))
    assert h.flag == 1 and h.label.tolist() == [9.0]
    with pytest.raises(MXNetError, match="at least 24 bytes"):
        mx.recordio.unpack(b"short")
    with pytest.raises(MXNetError, match="announces 5 labels"):
        mx.recordio.unpack(struct.pack("<IfQQ", 5, 0, 0, 0) + b"abcd")


def test_pack_img_and_unpack_img():
    color, gray = _images()
    h, img = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1.0, 2, 0), color, 1, ".png"))
    assert h.label == 1.0 and h.id == 2
    np.testing.assert_array_equal(img, color)
    _, img = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1, 0, 0), gray, 3, ".png"), 0)
    np.testing.assert_array_equal(img, gray)
    _, img = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1, 0, 0), color, quality=100))
    assert img.shape == color.shape and np.abs(img.astype(int) - color).mean() < 10
    low = mx.recordio.pack_img((0, 1, 0, 0), color, quality=10)
    assert len(low) < len(mx.recordio.pack_img((0, 1, 0, 0), color, quality=100))
    with pytest.raises(MXNetError, match="cannot decode"):
        mx.recordio.unpack_img(mx.recordio.pack((0, 1, 5, 0), b"not an image"))


def test_pickling_reopens(tmp_path):
    idx, rec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(4):
        writer.write_idx(i, b"rec%d" % i)
    writer.close()
    reader = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    assert reader.read_idx(1) == b"rec1"
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.is_open and copy.keys == [0, 1, 2, 3] and copy.read_idx(2) == b"rec2"
    # pickling closed the original (as in MXNet); reading by key reopens it
    assert not reader.is_open
    assert reader.read_idx(3) == b"rec3"
    closed = mx.recordio.MXRecordIO(rec, "r")
    closed.close()
    again = pickle.loads(pickle.dumps(closed))
    assert not again.is_open


def test_other_process_is_refused(tmp_path):
    idx, rec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    writer.write_idx(0, b"zero")
    writer.close()
    reader = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    reader.pid = -1  # as if opened by another process
    with pytest.raises(RuntimeError, match="multiple processes"):
        reader.read()
    assert reader.read_idx(0) == b"zero"  # seeking reopens in this process


def test_errors(tmp_path):
    rec = str(tmp_path / "a.rec")
    with pytest.raises(ValueError, match="Invalid flag x"):
        mx.recordio.MXRecordIO(rec, "x")
    with pytest.raises(MXNetError, match="cannot open .*missing.rec for reading"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    writer = mx.recordio.MXRecordIO(rec, "w")
    with pytest.raises(MXNetError, match="opened for writing"):
        writer.read()
    with pytest.raises(TypeError, match="bytes, not str"):
        writer.write("text")
    writer.write(b"abc")
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(b"more")
    reader = mx.recordio.MXRecordIO(rec, "r")
    with pytest.raises(MXNetError, match="opened for reading"):
        reader.write(b"x")
    (tmp_path / "bad.rec").write_bytes(b"\x01\x02\x03\x04\x05\x00\x00\x00")
    with pytest.raises(MXNetError, match="Invalid RecordIO file .*magic word"):
        mx.recordio.MXRecordIO(str(tmp_path / "bad.rec"), "r").read()
    reader.close()
    (tmp_path / "cut.rec").write_bytes((tmp_path / "a.rec").read_bytes()[:10])
    with pytest.raises(MXNetError, match="ends inside a record"):
        mx.recordio.MXRecordIO(str(tmp_path / "cut.rec"), "r").read()
    with pytest.raises(MXNetError, match="cannot open the index file"):
        mx.recordio.MXIndexedRecordIO(str(tmp_path / "none.idx"), rec, "r")


def test_against_mxnet_both_ways(tmp_path):
    """MXNet 1.9.1 reads what mxrs writes and the other way round; both write the same bytes
    (records, index files, packed headers, pack_img's encodings)."""
    color, gray = _images()
    np.save(tmp_path / "color.npy", color)
    np.save(tmp_path / "gray.npy", gray)
    with open(tmp_path / "payloads.pkl", "wb") as f:
        pickle.dump(PAYLOADS, f, protocol=2)
    labels = [np.arange(k, dtype=np.float32) * 1.5 - 1 for k in range(1, 5)]

    ns = {"payloads": PAYLOADS, "labels": labels, "color": color, "gray": gray, "MAGIC": MAGIC}
    exec(_WRITE, ns)
    ns["write"](mx, tmp_path / "rs")
    script = f"""
import sys, pickle, pathlib
sys.path.append({_cv2_path(tmp_path)!r})
import mxnet as mx
here = pathlib.Path('.')
payloads = pickle.load(open('payloads.pkl', 'rb'))
color, gray = np.load('color.npy'), np.load('gray.npy')
labels = [np.arange(k, dtype=np.float32) * 1.5 - 1 for k in range(1, 5)]
MAGIC = {MAGIC!r}
{_WRITE}
write(mx, here / 'mx')
r = mx.recordio.MXIndexedRecordIO('rs/r.idx', 'rs/r.rec', 'r')
ok = [r.read_idx(i) == p for i, p in enumerate(payloads)]
heads = []
for k in range(4):
    h, s = mx.recordio.unpack(r.read_idx(100 + k))
    heads.append([int(h.flag), [float(v) for v in h.label], int(h.id), s == MAGIC])
h, s = mx.recordio.unpack(r.read_idx(200))
heads.append([int(h.flag), float(h.label), int(h.id), int(h.id2), s == b'x'])
h, img = mx.recordio.unpack_img(r.read_idx(300))
arrays['color'] = img
h, img = mx.recordio.unpack_img(r.read_idx(301), 0)
arrays['gray'] = img
plain = mx.recordio.MXRecordIO('rs/r.rec', 'r')
n = 0
while plain.read() is not None:
    n += 1
result = dict(ok=ok, heads=heads, n=n)
"""
    result, arrays = mxnet_ref.run(tmp_path, script)
    assert all(result["ok"]) and result["n"] == len(PAYLOADS) + 7
    for k, lab in enumerate(labels):
        assert result["heads"][k] == [len(lab), lab.tolist(), k, True]
    assert result["heads"][4] == [0, 7.0, 77, 1, True]
    _, want = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1.0, 3, 0), color, quality=80))
    np.testing.assert_array_equal(arrays["color"], want)
    np.testing.assert_array_equal(arrays["gray"], gray)

    # byte for byte the same files
    for name in ("r.rec", "r.idx"):
        assert (tmp_path / "rs" / name).read_bytes() == (tmp_path / "mx" / name).read_bytes()
    # and mxrs reads MXNet's
    r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "mx/r.idx"), str(tmp_path / "mx/r.rec"), "r")
    assert [r.read_idx(i) for i in range(len(PAYLOADS))] == PAYLOADS
    h, s = mx.recordio.unpack(r.read_idx(103))
    assert h.flag == 4 and s == MAGIC
    np.testing.assert_array_equal(h.label, labels[3])
