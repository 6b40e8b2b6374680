"""Write the MNIST subset shipped in data/mnist/ from the full set (reproducibly).

Takes the first 6,000 training and the first 1,000 test images and labels of the full MNIST
(gzip'd IDX files, as ``python -m mxrs.gluon.data.vision.fetch_mnist`` writes them) and writes
them under the same four file names. The gzip output carries no time stamp, so running the
script again gives byte-identical files.

Usage::

    python scripts/make_mnist_subset.py [--src ../shared/data/mnist] [--dst data/mnist]
"""

import argparse
import os
import sys

import numpy as np
from mxrs.gluon.data.vision._idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx, write_idx

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SPLITS = (("train", 6000), ("t10k", 1000))


def make_subset(src, dst, counts=None):
    """Copy the first ``counts[split]`` samples of each split from ``src`` to ``dst``.

    Returns the training pixel mean divided by 255, which the tests pin.
    """
    counts = dict(_SPLITS) if counts is None else counts
    os.makedirs(dst, exist_ok=True)
    mean = None
    for split, count in counts.items():
        images = read_idx(os.path.join(src, f"{split}-images-idx3-ubyte.gz"), IMAGES_MAGIC)
        labels = read_idx(os.path.join(src, f"{split}-labels-idx1-ubyte.gz"), LABELS_MAGIC)
        if len(images) < count:
            raise SystemExit(f"{src} holds {len(images)} {split} images, fewer than {count}")
        write_idx(os.path.join(dst, f"{split}-images-idx3-ubyte.gz"), images[:count])
        write_idx(os.path.join(dst, f"{split}-labels-idx1-ubyte.gz"), labels[:count])
        print(f"{split}: {count} samples, first labels {labels[:10].tolist()}")
        if split == "train":
            mean = float(images[:count].astype(np.float64).mean() / 255.0)
    return mean


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--src",
        default=os.path.join(os.path.dirname(_REPO), "shared", "data", "mnist"),
        help="folder with the full MNIST IDX files (default: ../shared/data/mnist beside the "
        "repository)",
    )
    parser.add_argument(
        "--dst",
        default=os.path.join(_REPO, "data", "mnist"),
        help="output folder (default: data/mnist in the repository)",
    )
    args = parser.parse_args(argv)
    mean = make_subset(args.src, args.dst)
    print(f"training pixel mean / 255 of the subset: {mean:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
