"""``im2rec``: image lists and RecordIO image databases, with MXNet 1.9.1's command line.

With ``--list``, walks ``root`` and writes ``<prefix>.lst`` (or ``<prefix>_train.lst``,
``_val.lst``, ``_test.lst``, per chunk with ``--chunks``): a line
``index<TAB>label...<TAB>relative path`` per image. Without it, reads every ``<prefix>*.lst``
and writes for each a ``.rec`` (the images, re-encoded or as they are) and its ``.idx`` beside
it, encoding on ``--num-thread`` threads; the records are written in the list's order.

Run as ``im2rec PREFIX ROOT [options]`` or ``python -m mxrs.tools.im2rec``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..recordio import IRHeader, MXIndexedRecordIO, pack, pack_img

__all__ = ["image_encode", "list_image", "main", "make_list", "parse_args", "read_list"]


def list_image(root: str, recursive: bool, exts: Sequence[str]) -> Iterator[tuple[int, str, int]]:
    """``(index, path relative to root, label)`` of each image under ``root`` whose extension
    (lower-cased) is in ``exts``, in sorted order.

    With ``recursive``, every folder is walked and the images of each folder get that folder's
    number as label (folders numbered as met, which is printed at the end); without, only the
    images directly in ``root``, with label 0.
    """
    i = 0
    if recursive:
        folders: dict[str, int] = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                fpath = os.path.join(path, fname)
                if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                    folders.setdefault(path, len(folders))
                    yield i, os.path.relpath(fpath, root), folders[path]
                    i += 1
        for folder, label in sorted(folders.items(), key=lambda kv: kv[1]):
            print(os.path.relpath(folder, root), label)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                yield i, os.path.relpath(fpath, root), 0
                i += 1


def write_list(path_out: str, image_list: Sequence[Sequence[Any]]) -> None:
    """Write ``(index, path, label...)`` items as ``index<TAB>label...<TAB>path`` lines."""
    with open(path_out, "w") as fout:
        for item in image_list:
            labels = "".join(f"{float(v):f}\t" for v in item[2:])
            fout.write(f"{int(item[0])}\t{labels}{item[1]}\n")


def make_list(args: argparse.Namespace) -> None:
    """Write the image list(s) of ``args.root``: shuffled (seed 100) unless ``--no-shuffle``,
    cut into ``--chunks`` chunks, each split into train/val/test by the ratios."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.Random(100).shuffle(image_list)
    n = len(image_list)
    chunk_size = (n + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size : (i + 1) * chunk_size]
        suffix = f"_{i}" if args.chunks > 1 else ""
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + suffix + ".lst", chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + suffix + "_test.lst", chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + suffix + "_val.lst", chunk[sep_test + sep :])
            write_list(args.prefix + suffix + "_train.lst", chunk[sep_test : sep_test + sep])


def read_list(path_in: str) -> Iterator[list[Any]]:
    """The items ``[index, path, label...]`` of an image list; malformed lines are reported
    and skipped."""
    with open(path_in) as fin:
        for raw in fin:
            line = [field.strip() for field in raw.strip().split("\t")]
            if len(line) < 3:
                print(
                    f"lst should have at least has three parts, but only has {len(line)} parts "
                    f"for {line}"
                )
                continue
            try:
                item = [int(line[0]), line[-1], *(float(v) for v in line[1:-1])]
            except ValueError as err:
                print(f"Parsing lst met error for {line}, detail: {err}")
                continue
            yield item


def image_encode(args: argparse.Namespace, item: Sequence[Any]) -> bytes | None:
    """The packed record of one list item (its image read from ``args.root``), or ``None``
    when the image cannot be read or encoded (the reason is printed)."""
    import cv2
    import numpy as np

    fullpath = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = IRHeader(0, list(item[2:]), item[0], 0)
    else:
        header = IRHeader(0, item[2], item[0], 0)

    if args.pass_through:
        try:
            with open(fullpath, "rb") as fin:
                return pack(header, fin.read())
        except Exception as err:  # noqa: BLE001 (reported, the image is skipped)
            traceback.print_exc()
            print("pack_img error:", item[1], err)
            return None

    try:
        img = cv2.imread(fullpath, args.color)
    except Exception:  # noqa: BLE001 (reported, the image is skipped)
        traceback.print_exc()
        print(f"imread error trying to load file: {fullpath} ")
        return None
    if img is None:
        print(f"imread read blank (None) image for file: {fullpath}")
        return None
    if args.center_crop:
        rows, cols = img.shape[:2]
        if rows > cols:
            margin = (rows - cols) // 2
            img = img[margin : margin + cols, :]
        else:
            margin = (cols - rows) // 2
            img = img[:, margin : margin + rows]
    if args.resize:
        rows, cols = img.shape[:2]
        if rows > cols:
            newsize = (args.resize, rows * args.resize // cols)
        else:
            newsize = (cols * args.resize // rows, args.resize)
        img = cv2.resize(np.ascontiguousarray(img), newsize)
    try:
        return pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except Exception as err:  # noqa: BLE001 (reported, the image is skipped)
        traceback.print_exc()
        print(f"pack_img error on file: {fullpath}", err)
        return None


def _encoded(args: argparse.Namespace, items: Iterator[list[Any]]) -> Iterator[tuple[Any, Any]]:
    """``(item, record)`` for each item, in order, encoded on ``args.num_thread`` threads (a
    bounded number of items in flight)."""
    if args.num_thread <= 1:
        for item in items:
            yield item, image_encode(args, item)
        return
    with ThreadPoolExecutor(max_workers=args.num_thread) as pool:
        window: deque[tuple[Any, Any]] = deque()
        for item in items:
            window.append((item, pool.submit(image_encode, args, item)))
            if len(window) >= 4 * args.num_thread:
                done, job = window.popleft()
                yield done, job.result()
        while window:
            done, job = window.popleft()
            yield done, job.result()


def write_record(args: argparse.Namespace, fname: str, working_dir: str) -> int:
    """Write the .rec and .idx of the image list ``fname`` into ``working_dir``; returns the
    number of records written."""
    base = os.path.splitext(os.path.basename(fname))[0]
    record = MXIndexedRecordIO(
        os.path.join(working_dir, base + ".idx"), os.path.join(working_dir, base + ".rec"), "w"
    )
    count = 0
    pre_time = time.time()
    try:
        for i, (item, packed) in enumerate(_encoded(args, read_list(fname))):
            if packed is not None:
                record.write_idx(item[0], packed)
                count += 1
            if i % 1000 == 0:
                cur_time = time.time()
                print("time:", cur_time - pre_time, " count:", i)
                pre_time = cur_time
    finally:
        record.close()
    return count


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's arguments (``prefix`` and ``root`` made absolute)."""
    parser = argparse.ArgumentParser(
        prog="im2rec",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list",
    )
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")

    cgroup = parser.add_argument_group("Options for creating image lists")
    cgroup.add_argument(
        "--list",
        action="store_true",
        help="If this is set im2rec will create image list(s) by traversing root folder and "
        "output to <prefix>.lst. Otherwise im2rec will read <prefix>.lst and create a database "
        "at <prefix>.rec",
    )
    cgroup.add_argument(
        "--exts",
        nargs="+",
        default=[".jpeg", ".jpg", ".png"],
        help="list of acceptable image extensions.",
    )
    cgroup.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    cgroup.add_argument(
        "--train-ratio", type=float, default=1.0, help="Ratio of images to use for training."
    )
    cgroup.add_argument(
        "--test-ratio", type=float, default=0, help="Ratio of images to use for testing."
    )
    cgroup.add_argument(
        "--recursive",
        action="store_true",
        help="If true recursively walk through subdirs and assign an unique label to images in "
        "each folder. Otherwise only include images in the root folder and give them label 0.",
    )
    cgroup.add_argument(
        "--no-shuffle",
        dest="shuffle",
        action="store_false",
        help="If this is passed, im2rec will not randomize the image order in <prefix>.lst",
    )
    rgroup = parser.add_argument_group("Options for creating database")
    rgroup.add_argument(
        "--pass-through",
        action="store_true",
        help="whether to skip transformation and save image as is",
    )
    rgroup.add_argument(
        "--resize",
        type=int,
        default=0,
        help="resize the shorter edge of image to the newsize, original images will be packed "
        "by default.",
    )
    rgroup.add_argument(
        "--center-crop",
        action="store_true",
        help="specify whether to crop the center image to make it rectangular.",
    )
    rgroup.add_argument(
        "--quality",
        type=int,
        default=95,
        help="JPEG quality for encoding, 1-100; or PNG compression for encoding, 1-9",
    )
    rgroup.add_argument(
        "--num-thread",
        type=int,
        default=1,
        help="number of threads to use for encoding (the records keep the list's order).",
    )
    rgroup.add_argument(
        "--color",
        type=int,
        default=1,
        choices=[-1, 0, 1],
        help="specify the color mode of the loaded image. 1: Loads a color image. Any "
        "transparency of image will be neglected. It is the default flag. 0: Loads image in "
        "grayscale mode. -1:Loads image as such including alpha channel.",
    )
    rgroup.add_argument(
        "--encoding",
        type=str,
        default=".jpg",
        choices=[".jpg", ".png"],
        help="specify the encoding of the images.",
    )
    rgroup.add_argument(
        "--pack-label",
        action="store_true",
        help="Whether to also pack multi dimensional label in the record file",
    )
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error(f"--chunks must be at least 1, got {args.chunks}")
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``im2rec`` command; returns the exit status."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        if not os.path.isdir(args.root):
            print(f"im2rec: root {args.root} is not a folder", file=sys.stderr)
            return 1
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(
        os.path.join(working_dir, fname)
        for fname in os.listdir(working_dir)
        if os.path.isfile(os.path.join(working_dir, fname))
    )
    count = 0
    for fname in lists:
        if fname.startswith(args.prefix) and fname.endswith(".lst"):
            print("Creating .rec file from", fname, "in", working_dir)
            count += 1
            write_record(args, fname, working_dir)
    if not count:
        print(f"Did not find and list file with prefix {args.prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
