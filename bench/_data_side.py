"""One measurement of ``bench/data.py``: images per second of an image input pipeline reading a
RecordIO file, the same program under mxrs or Apache MXNet 1.9.1 (``BENCH_LIB``).

Usage: ``BENCH_LIB=mxrs|mxnet python _data_side.py --rec FILE.rec --pipeline iter|loader
[--threads N] [--epochs N] [--batch N]``

``iter``: ``mx.io.ImageRecordIter`` making 3×224×224 float32 batches: each image's shorter edge
resized to 256 (``resize``), a random 224×224 crop (``rand_crop``), a random horizontal flip
(``rand_mirror``), ImageNet's mean and standard deviation subtracted and divided,
``preprocess_threads=N``, ``prefetch_buffer=4``. ``loader``: a Gluon ``DataLoader`` with ``N``
worker processes over ``gluon.data.vision.ImageRecordDataset`` with
``transform_first(Compose([RandomResizedCrop(224), RandomFlipLeftRight(), ToTensor(),
Normalize(mean, std)]))``. Both read every record once per epoch; the first epoch is a warm-up
(threads and worker processes start, the file enters the page cache), the next ``--epochs``
are timed whole (each ``reset()`` or new ``iter(loader)`` included), every batch read back with
``wait_to_read()``.

Prints one JSON line: ``{"lib", "pipeline", "threads", "images_per_s", "secs", "images",
"mean", "peak_rss_mb", "children_peak_rss_mb", "cpu_s"}``: ``images`` counts every image of the
timed batches (padding records included: they are decoded and augmented too), ``mean`` is their
mean value (a sanity check); ``peak_rss_mb`` this process's peak resident memory,
``children_peak_rss_mb`` the largest of its finished child processes' (the loader's workers; 0
for ``iter``), both MiB from ``getrusage``; ``cpu_s`` the user plus system CPU seconds of the
timed epochs, this process and its child processes together.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import resource
import time

MEAN = (123.68, 116.779, 103.939)
STD = (58.393, 57.12, 57.375)


def _iter(mx, args):
    """An epoch function over ``mx.io.ImageRecordIter``: returns (images, sum of their
    means)."""
    it = mx.io.ImageRecordIter(
        path_imgrec=args.rec,
        data_shape=(3, 224, 224),
        batch_size=args.batch,
        resize=256,
        rand_crop=True,
        rand_mirror=True,
        mean_r=MEAN[0],
        mean_g=MEAN[1],
        mean_b=MEAN[2],
        std_r=STD[0],
        std_g=STD[1],
        std_b=STD[2],
        preprocess_threads=args.threads,
        prefetch_buffer=4,
    )
    first = [True]

    def epoch():
        if not first[0]:
            it.reset()
        first[0] = False
        images, total = 0, 0.0
        for batch in it:
            data = batch.data[0]
            data.wait_to_read()
            images += data.shape[0]  # padding records too: decoded and augmented all the same
            total += float(data.mean().asscalar()) * data.shape[0]
        return images, total

    return epoch, it


def _loader(mx, args):
    """An epoch function over a Gluon DataLoader of ImageRecordDataset: (images, sum of
    their means)."""
    transforms = mx.gluon.data.vision.transforms
    mean = [m / 255 for m in MEAN]
    std = [s / 255 for s in STD]
    dataset = mx.gluon.data.vision.ImageRecordDataset(args.rec).transform_first(
        transforms.Compose(
            [
                transforms.RandomResizedCrop(224),
                transforms.RandomFlipLeftRight(),
                transforms.ToTensor(),
                transforms.Normalize(mean, std),
            ]
        )
    )
    loader = mx.gluon.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, num_workers=args.threads
    )

    def epoch():
        images, total = 0, 0.0
        for data, _ in loader:
            data.wait_to_read()
            images += data.shape[0]
            total += float(data.mean().asscalar()) * data.shape[0]
        return images, total

    return epoch, loader


def _cpu():
    """CPU seconds (user + system) of this process and of its children, finished or alive."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return total
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids = f.read().split()
        except OSError:
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def main(argv=None):
    """Parse the options, warm up one epoch, time the others and print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rec", required=True, help="the .rec file (its .idx beside it)")
    ap.add_argument("--pipeline", choices=("iter", "loader"), required=True)
    ap.add_argument("--threads", type=int, default=1, help="preprocess threads or workers")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs after one warm-up")
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args(argv)
    lib = os.environ.get("BENCH_LIB", "mxrs")
    mx = importlib.import_module(lib)
    mx.random.seed(0)
    epoch, holder = (_iter if args.pipeline == "iter" else _loader)(mx, args)
    epoch()
    cpu0 = _cpu()
    t0 = time.perf_counter()
    images, total = 0, 0.0
    for _ in range(args.epochs):
        n, t = epoch()
        images, total = images + n, total + t
    secs = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    del holder, epoch  # the loader's workers end (and count as finished children)
    gc.collect()
    result = {
        "lib": lib,
        "pipeline": args.pipeline,
        "threads": args.threads,
        "images_per_s": images / secs,
        "secs": secs,
        "images": images,
        "mean": total / images,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "children_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "cpu_s": cpu,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
