"""Image input pipelines side by side: ``ImageRecordIter`` and a Gluon ``DataLoader`` over
``ImageRecordDataset`` reading the same RecordIO file, under Apache MXNet 1.9.1 and under mxrs.

Usage::

    pip install . && bash bench/setup_mxnet.sh      # mxrs in .venv, MXNet in bench/.venv-mxnet
    .venv/bin/python bench/data.py [--repeats 3] [--images 500] [--epochs 5] [--write]

The RecordIO file is made at run time: ``--images`` synthetic JPEGs of about 400×320 pixels
(smooth gradients, shapes and grain, written by OpenCV at quality 95) in 10 class folders,
listed and packed by mxrs's ``im2rec`` (``--list --recursive``, then ``--num-thread 2``,
re-encoded at im2rec's default quality 95). Each cell (a pipeline and its thread or worker
count) runs ``bench/_data_side.py`` once per library per repeat, in fresh processes, the library
that starts alternating; a figure is the median over the repeats. The children's
``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``MXNET_OMP_MAX_THREADS``
are the cell's thread count for ``ImageRecordIter`` and 1 for the ``DataLoader`` (whose workers
are processes), with ``MXNET_CPU_WORKER_NTHREADS=1``. ``--write`` replaces the section between
``<!-- data:begin -->`` and ``<!-- data:end -->`` of ``bench/RESULTS.md``; ``--json`` (default
``bench/out/data.json``) keeps every run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _jobs import LIBS, THREAD_VARS, python_for
from _report import machine, publish, version

ROOT = Path(__file__).resolve().parent.parent
SIDE = ROOT / "bench" / "_data_side.py"
RESULTS = ROOT / "bench" / "RESULTS.md"
JSON_OUT = ROOT / "bench" / "out" / "data.json"
BEGIN, END = "<!-- data:begin -->", "<!-- data:end -->"
TITLE = "## Image input pipelines on CPU: mxrs vs Apache MXNet 1.9.1"
#: name -> (label, _data_side.py pipeline, threads or workers)
CELLS = {
    "iter1": ("`ImageRecordIter`, `preprocess_threads=1`", "iter", 1),
    "iter2": ("`ImageRecordIter`, `preprocess_threads=2`", "iter", 2),
    "loader2": ("Gluon `DataLoader(ImageRecordDataset)`, `num_workers=2`", "loader", 2),
}
NOTES = """\
mxrs's `ImageRecordIter` reads, decodes (OpenCV's `imdecode`), augments and normalises each
record on its `preprocess_threads` Python threads (OpenCV and NumPy release the GIL), straight
into the batch array, while one more thread lays out the batches; MXNet 1.9.1's parses with
`preprocess_threads` OpenMP threads in C++ behind a prefetching thread. mxrs's `DataLoader`
forks its worker processes at each epoch and gets batches back as NumPy arrays through pipes;
MXNet's keeps a pool of worker processes and passes batches in shared memory. Decoding alone
costs about the same in both: `mx.image.imdecode` of these JPEGs on one thread took 0.84 ms
(mxrs) and 0.73 ms (MXNet) per image on 2026-11-28; the CPU time per image above is the whole
pipeline's."""

_IMAGES = """
import sys
from pathlib import Path
import cv2
import numpy as np

root, count = Path(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
for n in range(count):
    h, w = int(rng.integers(300, 341)), int(rng.integers(380, 421))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    for c in range(3):
        a, b, d = rng.uniform(-0.4, 0.4, 3)
        wave = 40 * np.sin(xx / (9 + 30 * d * d))
        img[:, :, c] = 128 + a * (xx - w / 2) + b * (yy - h / 2) + wave
    for _ in range(int(rng.integers(3, 7))):
        colour = [int(v) for v in rng.integers(0, 256, 3)]
        cx, cy, r = int(rng.integers(0, w)), int(rng.integers(0, h)), int(rng.integers(15, 90))
        if rng.random() < 0.5:
            cv2.circle(img, (cx, cy), r, colour, -1)
        else:
            cv2.rectangle(img, (cx - r, cy - r // 2), (cx + r, cy + r // 2), colour, -1)
    img = cv2.GaussianBlur(img, (0, 0), 1.5) + rng.normal(0, 6, (h, w, 3))
    folder = root / f"class{n % 10}"
    folder.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(folder / f"{n}.jpg"), np.clip(img, 0, 255).astype(np.uint8),
                [cv2.IMWRITE_JPEG_QUALITY, 95])
"""

_MXRS_DECODER = """
import re, cv2
jpeg = re.search(r"JPEG:[^\\n]*?libjpeg-turbo \\(ver ([0-9.]+)", cv2.getBuildInformation())
print(f"OpenCV {cv2.__version__} (opencv-python-headless), "
      f"libjpeg-turbo {jpeg.group(1) if jpeg else '?'}")
"""

_MXNET_DECODER = """
import mmap, os, re, mxnet
lib = os.path.join(os.path.dirname(mxnet.__file__), "libmxnet.so")

def after(m, tag):
    at = m.find(tag)
    got = re.match(rb"[0-9.]+", m[at + len(tag) : at + len(tag) + 16]) if at >= 0 else None
    return got.group(0).decode() if got else "?"

with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    cv = after(m, b"General configuration for OpenCV ")
    jpeg = after(m, b"libjpeg-turbo version ")
print(f"OpenCV {cv} built into libmxnet.so, libjpeg-turbo {jpeg}")
"""


def make_rec(folder: Path, images: int) -> Path:
    """Write ``images`` JPEGs under ``folder/images`` and pack them with mxrs's im2rec;
    returns the .rec path."""
    py = python_for("mxrs")
    subprocess.run([py, "-c", _IMAGES, str(folder / "images"), str(images)], check=True,
                   timeout=600)  # fmt: skip
    im2rec = [py, "-m", "mxrs.tools.im2rec", str(folder / "data"), str(folder / "images")]
    for extra in (["--list", "--recursive"], ["--num-thread", "2"]):
        subprocess.run([*im2rec, *extra], check=True, timeout=600, capture_output=True)
    return folder / "data.rec"


def decoders() -> dict[str, str]:
    """Which image library decodes and resizes, per library."""
    out = {}
    for lib, code in (("mxrs", _MXRS_DECODER), ("mxnet", _MXNET_DECODER)):
        p = subprocess.run([python_for(lib), "-c", code], capture_output=True, text=True,
                           timeout=300)  # fmt: skip
        out[lib] = p.stdout.strip() or f"? ({p.stderr.strip()[-200:]})"
    return out


def _env(lib: str, threads: int) -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "PS_", "MXRS_", "MXNET_"))
    }
    env.update({v: str(threads) for v in (*THREAD_VARS, "MXNET_OMP_MAX_THREADS")})
    env["MXNET_CPU_WORKER_NTHREADS"] = "1"
    env["BENCH_LIB"] = lib
    return env


def _measure(lib: str, cell: str, rec: Path, epochs: int) -> dict:
    _, pipeline, threads = CELLS[cell]
    cmd = [python_for(lib), str(SIDE), "--rec", str(rec), "--pipeline", pipeline,
           "--threads", str(threads), "--epochs", str(epochs)]  # fmt: skip
    env = _env(lib, threads if pipeline == "iter" else 1)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900,
                           cwd=SIDE.parent)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": "ran past 900 s"}
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not results:
        return {"error": (p.stdout + p.stderr)[-2000:]}
    return results[-1]


def _med(runs: list[dict], field: str) -> float | None:
    good = [r[field] for r in runs if "error" not in r]
    return statistics.median(good) if good else None


def _rss(runs: list[dict]) -> str:
    main, workers = _med(runs, "peak_rss_mb"), _med(runs, "children_peak_rss_mb")
    if main is None:
        return "–"
    return f"{main:,.0f}" + (f" + {workers:,.0f}" if workers else "")


def main(argv=None) -> None:
    """Make the RecordIO file, run the matrix, print (and with ``--write`` record) medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs after one warm-up")
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    ap.add_argument("--json", type=Path, default=JSON_OUT)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    start = machine(load=True)
    runs: dict = {cell: {lib: [] for lib in LIBS} for cell in args.cells}
    with tempfile.TemporaryDirectory(prefix="mxrs-bench-data-") as tmp:
        rec = make_rec(Path(tmp), args.images)
        rec_mb = rec.stat().st_size / 2**20
        for rep in range(args.repeats):
            order = LIBS if rep % 2 == 0 else LIBS[::-1]
            for cell in args.cells:
                for lib in order:
                    got = _measure(lib, cell, rec, args.epochs)
                    runs[cell][lib].append(got)
                    what = got.get("error", "").strip().splitlines()[-1:] or [
                        f"{got['images_per_s']:,.1f} images/s, {got['peak_rss_mb']:,.0f} MiB"
                    ]
                    print(f"{cell} {lib} (repeat {rep}): {what[0]}", file=sys.stderr, flush=True)
    end_load = os.getloadavg()[0]
    dec = decoders()
    rows = []
    for cell in args.cells:
        med = {lib: _med(runs[cell][lib], "images_per_s") for lib in LIBS}
        cpu = {lib: _med(runs[cell][lib], "cpu_s") for lib in LIBS}
        imgs = {lib: _med(runs[cell][lib], "images") for lib in LIBS}
        ratio = f"{med['mxrs'] / med['mxnet']:.2f}" if med["mxrs"] and med["mxnet"] else "–"
        rate = [f"{med[lib]:,.1f}" if med[lib] else "failed" for lib in LIBS]
        per_k = [
            f"{cpu[lib] / imgs[lib] * 1000:.1f}" if cpu[lib] and imgs[lib] else "–" for lib in LIBS
        ]
        listed = "; ".join(
            ", ".join(f"{r['images_per_s']:,.0f}" if "error" not in r else "failed" for r in rs)
            for rs in (runs[cell][lib] for lib in LIBS)
        )
        rows.append(
            f"| {CELLS[cell][0]} | {rate[0]} | {rate[1]} | {ratio} | {_rss(runs[cell]['mxrs'])} "
            f"| {_rss(runs[cell]['mxnet'])} | {per_k[0]} | {per_k[1]} | {listed} |"
        )
    text = "\n".join(
        [
            BEGIN,
            TITLE,
            "",
            f"Machine: {start}, {end_load:.2f} at the end; mxrs {version('mxrs')}, MXNet "
            f"{version('mxnet')}; {datetime.date.today().isoformat()}. Command: "
            f"`.venv/bin/python bench/data.py --repeats {args.repeats} --images {args.images} "
            f"--epochs {args.epochs} --write`.",
            "",
            f"One RecordIO file of {args.images} synthetic JPEGs of about 400×320 pixels "
            f"({rec_mb:.1f} MiB; gradients, shapes and grain, packed by mxrs's `im2rec` at "
            "quality 95), read by both libraries. `ImageRecordIter`: 3×224×224 float32 batches "
            "of 32, `resize=256` (shorter edge), `rand_crop`, `rand_mirror`, ImageNet's mean and "
            "std. `DataLoader`: `ImageRecordDataset(...).transform_first(Compose([RandomResized"
            "Crop(224), RandomFlipLeftRight(), ToTensor(), Normalize(...)]))`, batches of 32, "
            "shuffled, worker processes. Images/s over "
            f"{args.epochs} whole epochs after a warm-up epoch, every batch read with "
            f"`wait_to_read()` (`bench/_data_side.py`); medians of {args.repeats} fresh "
            "processes per library, the library that starts alternating. Peak RSS: the "
            "process's `ru_maxrss`, + the largest worker process's for the `DataLoader`. CPU s "
            "per 1,000 images: user + system time of the timed epochs, workers included.",
            "",
            f"Decoding and resizing: mxrs: {dec['mxrs']}; MXNet 1.9.1: {dec['mxnet']}.",
            "",
            "| pipeline | mxrs images/s | MXNet 1.9.1 images/s | mxrs / MXNet | mxrs peak RSS "
            "MiB | MXNet peak RSS MiB | mxrs CPU s / 1k images | MXNet CPU s / 1k images | "
            "runs: mxrs; MXNet |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            NOTES,
            "",
            "This 2-core machine is shared with other work: the load average at the start and "
            "the end says how much; compare the ratio column within one run.",
            END,
        ]
    )
    publish(
        {"settings": vars(args) | {"json": str(args.json)}, "decoders": dec, "runs": runs},
        text, args.json, RESULTS, args.write, BEGIN, END,
    )  # fmt: skip


if __name__ == "__main__":
    main()
