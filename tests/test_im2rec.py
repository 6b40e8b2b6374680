"""im2rec (mxrs.tools.im2rec): the image lists and RecordIO files it makes are byte for byte
those of MXNet 1.9.1's tools/im2rec.py run with the same arguments (and the same OpenCV)."""

import os
import subprocess
import sys

import cv2
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.tools import im2rec

#: image lists written by hand: index, labels, path
_LISTS = {
    "packed.lst": "3\t1.000000\t2.500000\ta/a0.jpg\n1\t0.000000\t-1.000000\tb/b1.png\n"
    "7\t4.000000\t5.000000\ttop0.jpg\n",
    "raw.lst": "0\t1.000000\ta/a1.jpg\n5\t2.000000\tb/b0.png\n",
    "gray.lst": "2\t0.000000\ta/a2.jpg\n4\t1.000000\tb/b2.png\n",
}

#: im2rec runs, relative to an output folder ``{out}``; the last flag set only for mxrs
RUNS = [
    ["{out}/all", "images", "--list", "--recursive"],
    [
        "{out}/split",
        "images",
        "--list",
        "--recursive",
        "--chunks",
        "2",
        "--train-ratio",
        "0.5",
        "--test-ratio",
        "0.25",
    ],
    ["{out}/flat", "images", "--list", "--no-shuffle", "--exts", ".jpg"],
    ["{out}/all", "images", "--resize", "20", "--quality", "80"],
    [
        "{out}/packed",
        "images",
        "--center-crop",
        "--encoding",
        ".png",
        "--quality",
        "3",
        "--pack-label",
    ],
    ["{out}/raw", "images", "--pass-through"],
    ["{out}/gray", "images", "--color", "0", "--resize", "12"],
]

_MXNET_SCRIPT = """
import os, runpy, sys
sys.path.append({cv2path!r})
import mxnet
tool = os.path.join(os.path.dirname(mxnet.__file__), 'tools', 'im2rec.py')
own_argv = sys.argv
for argv in {runs!r}:
    sys.argv = ['im2rec.py'] + [a.format(out='mx') for a in argv]
    runpy.run_path(tool, run_name='__main__')
sys.argv = own_argv
"""


def _cv2_path(tmp_path):
    """A folder that lends mxrs's OpenCV to MXNet's Python (its im2rec needs ``cv2``)."""
    where = tmp_path / "cv2path"
    where.mkdir(exist_ok=True)
    (where / "cv2").symlink_to(os.path.dirname(cv2.__file__))
    return str(where)


def _make_images(root):
    rng = np.random.default_rng(2)
    for sub, ext, n in (("a", ".jpg", 3), ("b", ".png", 3)):
        (root / sub).mkdir(parents=True)
        for i in range(n):
            small = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)
            img = cv2.resize(small, (30 + 4 * i, 22 + 3 * i))
            cv2.imwrite(str(root / sub / f"{sub}{i}{ext}"), img)
    for i in range(2):
        cv2.imwrite(str(root / f"top{i}.jpg"), np.full((16, 24, 3), 40 * i, np.uint8))
    (root / "notes.txt").write_text("not an image")
    (root / "a" / "skip.bmp").write_bytes(b"BM")


def test_lists_and_records_equal_mxnet(tmp_path):
    _make_images(tmp_path / "images")
    for out in ("rs", "mx"):
        (tmp_path / out).mkdir()
        for name, text in _LISTS.items():
            (tmp_path / out / name).write_text(text)
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        for argv in RUNS:
            args = [a.format(out="rs") for a in argv]
            if "--list" not in args:
                args += ["--num-thread", "3"]
            assert im2rec.main(args) == 0
    finally:
        os.chdir(here)
    mxnet_ref.run(tmp_path, _MXNET_SCRIPT.format(cv2path=_cv2_path(tmp_path), runs=RUNS))

    made = sorted(os.listdir(tmp_path / "rs"))
    assert made == sorted(os.listdir(tmp_path / "mx"))
    for want in (
        "all.lst",
        "split_0_train.lst",
        "split_1_test.lst",
        "split_1_val.lst",
        "flat.lst",
        "all.rec",
        "all.idx",
        "packed.rec",
        "raw.rec",
        "gray.rec",
    ):
        assert want in made
    for name in made:
        assert (tmp_path / "rs" / name).read_bytes() == (tmp_path / "mx" / name).read_bytes(), name

    lines = (tmp_path / "rs" / "all.lst").read_text().splitlines()
    assert len(lines) == 8 and {ln.split("\t")[-1].split("/")[0] for ln in lines} >= {"a", "b"}
    flat = (tmp_path / "rs" / "flat.lst").read_text()
    assert flat == "0\t0.000000\ttop0.jpg\n1\t0.000000\ttop1.jpg\n"

    rec = mx.recordio.MXIndexedRecordIO(
        str(tmp_path / "rs" / "packed.idx"), str(tmp_path / "rs" / "packed.rec"), "r"
    )
    assert rec.keys == [3, 1, 7]
    header, img = mx.recordio.unpack_img(rec.read_idx(7))
    assert header.label.tolist() == [4.0, 5.0] and img.shape == (16, 16, 3)
    gray = mx.recordio.MXIndexedRecordIO(
        str(tmp_path / "rs" / "gray.idx"), str(tmp_path / "rs" / "gray.rec"), "r"
    )
    _, img = mx.recordio.unpack_img(gray.read_idx(2))
    assert img.ndim == 2 and min(img.shape) == 12


def test_bad_images_are_skipped(tmp_path, capsys):
    _make_images(tmp_path / "images")
    (tmp_path / "job.lst").write_text(
        "0\t1.0\ta/a0.jpg\n1\t1.0\tmissing.jpg\n2\t2.0\tnotes.txt\nbad line\n3\t0.0\tb/b0.png\n"
    )
    assert im2rec.main([str(tmp_path / "job"), str(tmp_path / "images"), "--num-thread", "2"]) == 0
    out = capsys.readouterr().out
    assert "imread read blank (None) image for file" in out and "missing.jpg" in out
    assert "lst should have at least has three parts" in out
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "job.idx"), str(tmp_path / "job.rec"), "r")
    assert rec.keys == [0, 3]
    assert im2rec.main([str(tmp_path / "nothing"), str(tmp_path / "images")]) == 0
    assert "Did not find and list file with prefix" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        im2rec.main([str(tmp_path / "x"), str(tmp_path), "--color", "2"])


def test_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "mxrs.tools.im2rec", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--pass-through" in proc.stdout and "prefix" in proc.stdout
