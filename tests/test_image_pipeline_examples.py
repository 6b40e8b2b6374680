"""The image pipeline end to end: JPEG folders, ``im2rec``, ``ImageRecordIter`` under MXNet 1.9.1's
own ``train_imagenet.py`` (unchanged, single process and dist_sync 2x2), and a Gluon program in
the manner of MXNet's ``example/distributed_training/cifar10_dist.py`` on CIFAR-10's binary files.

The images are coloured shapes, one shape and colour family per class, drawn at random places,
sizes and shades over a noisy background: learnable in a few epochs.
``train_imagenet.py`` and the shim that maps ``mxnet`` to ``mxrs`` are read from ``../shared``
(as ``test_mxnet_examples.py`` reads them) and run in ``.venv-np1`` (``scripts/np1-venv.sh``).
"""

import os
import re
import subprocess
from pathlib import Path

import cv2
import mxrs as mx
import numpy as np
import pytest
from jobs import launch

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLES = SHARED / "mxnet-examples" / "image-classification"
SHIM = SHARED / "mxnet-tests" / "shim"
NP1_PYTHON = ROOT / ".venv-np1" / "bin" / "python"
TIMEOUT = 300

CLASSES = 4

needs_examples = pytest.mark.skipif(
    not (EXAMPLES.is_dir() and SHIM.is_dir()),
    reason="MXNet's example scripts and the shim live in ../shared, not beside this clone",
)


# ---------------------------------------------------------------------- the images
def _shape_image(rng, label, h, w):
    """A BGR image of class ``label``: 0 a reddish disc, 1 a greenish square, 2 a bluish
    triangle, 3 a yellowish cross, of random size, place and shade over noise."""
    img = rng.integers(40, 110, (h, w, 3), dtype=np.uint8)
    img = cv2.GaussianBlur(img, (5, 5), 0)
    size = int(rng.integers(min(h, w) // 4, min(h, w) // 2))
    cy = int(rng.integers(size, h - size))
    cx = int(rng.integers(size, w - size))
    base = [(40, 40, 210), (50, 200, 60), (210, 70, 50), (50, 210, 220)][label]
    colour = tuple(int(v) for v in np.clip(np.add(base, rng.integers(-50, 51, 3)), 0, 255))
    if label == 0:
        cv2.circle(img, (cx, cy), size, colour, -1)
    elif label == 1:
        cv2.rectangle(img, (cx - size, cy - size), (cx + size, cy + size), colour, -1)
    elif label == 2:
        pts = np.array([[cx, cy - size], [cx - size, cy + size], [cx + size, cy + size]])
        cv2.fillPoly(img, [pts.astype(np.int32)], colour)
    else:
        t = max(2, size // 3)
        cv2.rectangle(img, (cx - size, cy - t), (cx + size, cy + t), colour, -1)
        cv2.rectangle(img, (cx - t, cy - size), (cx + t, cy + size), colour, -1)
    return img


def _jpeg_folders(root, per_class, seed):
    """``root/c<label>/<n>.jpg``: ``per_class`` JPEGs of each class, 40-64 pixels a side."""
    rng = np.random.default_rng(seed)
    for label in range(CLASSES):
        folder = root / f"c{label}"
        folder.mkdir(parents=True)
        for n in range(per_class):
            h, w = (int(v) for v in rng.integers(40, 65, 2))
            cv2.imwrite(str(folder / f"{n}.jpg"), _shape_image(rng, label, h, w))


def _python():
    if not NP1_PYTHON.exists():
        pytest.fail("the NumPy 1.x environment of MXNet's scripts is missing: run "
                    "`scripts/np1-venv.sh` (test.sh does)")  # fmt: skip
    return str(NP1_PYTHON)


def _env():
    """The scripts' environment: ``import mxnet`` means mxrs; one compute thread a process (as
    mxrs-launch gives each worker here: a second OpenMP thread waits for a busy core)."""
    env = dict(os.environ, PYTHONPATH=str(SHIM))
    env.update({var: "1" for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    for var in ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"):
        env.pop(var, None)
    return env


def _im2rec(cwd, *args):
    r = subprocess.run([_python(), "-m", "mxrs.tools.im2rec", *args], cwd=cwd, env=_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """train.rec (400 images) and val.rec (120), made by im2rec from JPEG folders: the lists
    with ``--list --recursive``, the records with ``--resize 32``."""
    where = tmp_path_factory.mktemp("records")
    _jpeg_folders(where / "images" / "train", 100, seed=1)
    _jpeg_folders(where / "images" / "val", 30, seed=2)
    for name in ("train", "val"):
        out = _im2rec(where, name, f"images/{name}", "--list", "--recursive")
        assert out.split() == [w for c in range(CLASSES) for w in (f"c{c}", str(c))], out
        _im2rec(where, name, f"images/{name}", "--resize", "32", "--num-thread", "2")
    rec = mx.recordio.MXIndexedRecordIO(str(where / "train.idx"), str(where / "train.rec"), "r")
    assert sorted(rec.keys) == list(range(400))
    header, img = mx.recordio.unpack_img(rec.read_idx(rec.keys[0]))
    assert min(img.shape[:2]) == 32 and img.shape[2] == 3 and header.label in range(CLASSES)
    rec.close()
    return where


# ---------------------------------------------------------------------- train_imagenet.py
def _train_imagenet(cwd, kv, epochs, launch_nodes=None):
    """Run MXNet's ``train_imagenet.py`` on train.rec/val.rec in ``cwd``: a residual network of
    8 layers (the script's CIFAR layout for images of at most 28 pixels), random crops of
    the records' 32-pixel images (padded by 2), random mirror, rotation, aspect ratio, scale,
    shear, hue, saturation and lightness, two decoding threads."""
    py = _python()
    cmd = [
        py, str(EXAMPLES / "train_imagenet.py"), "--data-train", "train.rec",
        "--data-val", "val.rec", "--network", "resnet", "--num-layers", "8",
        "--image-shape", "3,28,28", "--num-classes", str(CLASSES), "--num-examples", "400",
        "--batch-size", "16", "--num-epochs", str(epochs), "--lr", "0.1",
        "--lr-step-epochs", str(epochs - 2), "--disp-batches", "1", "--data-nthreads", "2",
        "--random-crop", "1", "--random-mirror", "1", "--pad-size", "2",
        "--max-random-rotate-angle", "10", "--max-random-aspect-ratio", "0.1",
        "--max-random-scale", "1.05", "--min-random-scale", "0.95",
        "--max-random-shear-ratio", "0.05", "--max-random-h", "5", "--max-random-s", "10",
        "--max-random-l", "20",
        "--kv-store", kv,
    ]  # fmt: skip
    if launch_nodes is not None:
        n, s = launch_nodes
        cmd = [py, "-m", "mxrs.launcher", "local", "-n", str(n), "-s", str(s), *cmd]
    r = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    return out


def _epochs(out, name, epochs, worker=None):
    """The per-epoch values of the script's ``Epoch[k] <name>=`` lines (of one worker)."""
    tag = "" if worker is None else rf"\[worker {worker}\] "
    found = re.findall(tag + rf"INFO:root:Epoch\[(\d+)\] {name}=([0-9.]+)", out)
    assert [int(e) for e, _ in found] == list(range(epochs)), out[-3000:]
    return [float(v) for _, v in found]


def _batches_per_epoch(out, epochs, worker=None):
    """Batches in each epoch, from the Speedometer's lines (``--disp-batches 1`` logs
    ``Batch [k-1-k]`` for every batch k after the first)."""
    tag = "" if worker is None else rf"\[worker {worker}\] "
    counts = []
    for e in range(epochs):
        last = re.findall(tag + rf"INFO:root:Epoch\[{e}\] Batch \[\d+-(\d+)\]\tSpeed", out)
        assert last, out[-3000:]
        counts.append(int(last[-1]) + 1)
    return counts


# Chance is 1/4. The script seeds nothing: the best validation accuracy of its 6 epochs was
# 0.99 or 1.0 in 6 unseeded runs of each test (the last epoch's wanders, down to 0.91).
_BAR = 0.8


@needs_examples
def test_train_imagenet_on_im2rec_records_one_process(records):
    epochs = 6
    out = _train_imagenet(records, "local", epochs)
    assert "kv_store='local'" in out and "data_train='train.rec'" in out
    assert _batches_per_epoch(out, epochs) == [25] * epochs  # 400 images, batches of 16
    assert max(_epochs(out, "Validation-accuracy", epochs)) >= _BAR, out[-3000:]


@needs_examples
def test_train_imagenet_on_im2rec_records_dist_sync_two_workers_two_servers(records):
    epochs = 6
    out = _train_imagenet(records, "dist_sync", epochs, launch_nodes=(2, 2))
    # each worker's epoch is half the single process's: ceil(400 / 2 / 16) = 13 batches
    assert out.count("Resizing training data to 13 batches per machine") == 2, out[-3000:]
    for w in (0, 1):
        assert _batches_per_epoch(out, epochs, worker=w) == [13] * epochs
        assert max(_epochs(out, "Validation-accuracy", epochs, worker=w)) >= _BAR, out[-3000:]
    # dist_sync gives both workers the same weights each step, and their iterators the same
    # seeds: only different records make their training accuracies differ
    train = [_epochs(out, "Train-accuracy", epochs, worker=w) for w in (0, 1)]
    assert train[0] != train[1], train
    # the parts the script asks for (num_parts=2, part_index=rank, no .idx: byte ranges)
    ids = []
    for part in (0, 1):
        it = mx.io.ImageRecordIter(path_imgrec=str(records / "train.rec"), data_shape=(3, 28, 28),
                                   batch_size=16, num_parts=2, part_index=part)  # fmt: skip
        ids.append([int(i) for b in it for i in b.index[: 16 - b.pad]])
        it.close()
    assert sorted(ids[0] + ids[1]) == list(range(400)), ids
    assert all(170 <= len(part) <= 230 for part in ids), [len(part) for part in ids]


# ---------------------------------------------------------------------- Gluon on CIFAR-10 files
def _cifar_files(root, per_file, test_count):
    """CIFAR-10's binary files (data_batch_1..5.bin, test_batch.bin) of shape images: records
    of a label byte and the red, green and blue 32x32 planes."""
    rng = np.random.default_rng(3)
    root.mkdir()
    for name, n in [*((f"data_batch_{i}.bin", per_file) for i in range(1, 6)),
                    ("test_batch.bin", test_count)]:  # fmt: skip
        labels = rng.integers(0, CLASSES, n)
        rows = []
        for label in labels:
            rgb = _shape_image(rng, int(label), 32, 32)[:, :, ::-1]
            rows.append(np.concatenate([[label], rgb.transpose(2, 0, 1).ravel()]))
        (root / name).write_bytes(np.asarray(rows, dtype=np.uint8).tobytes())


CIFAR10_DIST = """
import random, sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon, kv
from mxrs.gluon.data.vision import transforms

store = kv.create('dist_sync')
batch_size, epochs, ctx = 16, int(sys.argv[1]), mx.cpu()


class SplitSampler(gluon.data.sampler.Sampler):
    # the samples [part_index * part_len, (part_index + 1) * part_len), shuffled
    def __init__(self, length, num_parts=1, part_index=0):
        self.part_len = length // num_parts
        self.start = self.part_len * part_index
        self.end = self.start + self.part_len

    def __iter__(self):
        indices = list(range(self.start, self.end))
        random.shuffle(indices)
        return iter(indices)

    def __len__(self):
        return self.part_len


transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
])
train_set = gluon.data.vision.CIFAR10(root='cifar', train=True).transform_first(transform)
test_set = gluon.data.vision.CIFAR10(root='cifar', train=False).transform_first(transform)
train_data = gluon.data.DataLoader(
    train_set, batch_size, sampler=SplitSampler(len(train_set), store.num_workers, store.rank))
test_data = gluon.data.DataLoader(test_set, batch_size, shuffle=False)

net = gluon.nn.HybridSequential()
net.add(gluon.nn.Conv2D(16, 3, padding=1, activation='relu'), gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(32, 3, padding=1, activation='relu'), gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(32, 3, padding=1, activation='relu'), gluon.nn.GlobalMaxPool2D(),
        gluon.nn.Dense(32, activation='relu'), gluon.nn.Dense(10))
net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
net.hybridize()
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.005, 'momentum': 0.9},
                        kvstore=store)


def evaluate_accuracy(data_iterator, net):
    acc = mx.metric.Accuracy()
    for data, label in data_iterator:
        acc.update(preds=mx.nd.argmax(net(data.as_in_context(ctx)), axis=1), labels=label)
    return acc.get()[1]


for epoch in range(epochs):
    steps = 0
    for data, label in train_data:
        with autograd.record():
            loss = loss_fn(net(data.as_in_context(ctx)), label.as_in_context(ctx))
        loss.backward()
        trainer.step(data.shape[0])
        steps += 1
    print(f'Epoch {epoch}: rank {store.rank} steps {steps} '
          f'test accuracy {evaluate_accuracy(test_data, net):.6f}', flush=True)
net.save_parameters(f'final{store.rank}.params')
"""


def test_gluon_cifar10_dist_sync_two_workers_two_servers(tmp_path):
    epochs = 6
    _cifar_files(tmp_path / "cifar", per_file=96, test_count=120)
    result = launch(tmp_path, CIFAR10_DIST, args=[str(epochs)], timeout=TIMEOUT)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    accs = {}
    for w in (0, 1):
        found = re.findall(rf"Epoch (\d+): rank {w} steps (\d+) test accuracy ([0-9.]+)", out)
        assert [int(e) for e, _, _ in found] == list(range(epochs)), out[-3000:]
        assert {int(s) for _, s, _ in found} == {15}, found  # 240 of the 480 images, by 16
        accs[w] = [float(a) for _, _, a in found]
    # the same weights on both workers: the same test accuracy after every epoch; SGD at
    # 0.005 (the servers add the two workers' gradients) ended at 0.99 or 1.0 in 12 runs
    assert accs[0] == accs[1], accs
    assert accs[0][-1] >= _BAR, accs
    finals = [mx.nd.load(str(tmp_path / f"final{w}.params")) for w in (0, 1)]
    assert len(finals[0]) == 10 and finals[0].keys() == finals[1].keys()  # 5 layers' w and b
    for key, value in finals[0].items():
        np.testing.assert_array_equal(value.asnumpy(), finals[1][key].asnumpy(), err_msg=key)
