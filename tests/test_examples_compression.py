"""``examples/train_mnist.py --gradient-compression``: LeNet trained by a 2-worker dist_sync job
with fp16 gradients on the wire ends as accurate as with float32 ones."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FULL_MNIST = ROOT.parent / "shared" / "data" / "mnist"
TIMEOUT = 120


def _train(compression, *args):
    """Final test accuracy of worker 0 of an ``mxrs-launch local -n 2 -s 2`` job."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "2"]
    cmd += [sys.executable, "examples/train_mnist.py", "--kv-store", "dist_sync", "--no-progress"]
    cmd += ["--gradient-compression", compression, *args]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    accs = [float(a) for a in re.findall(r"final test accuracy ([0-9.]+)", r.stdout)]
    assert len(accs) == 2 and accs[0] == accs[1], r.stdout[-3000:]
    return accs[0]


@pytest.mark.skipif(not FULL_MNIST.is_dir(), reason="the full MNIST is not beside the project")
def test_fp16_gradients_train_lenet_as_accurately_as_float32_on_the_full_mnist():
    # One epoch of the 60,000 images, tested on all 10,000: on this many test images the
    # rounding of the gradients moves the accuracy by a few hundredths of a percent.
    args = ("--num-epochs", "1", "--data-dir", str(FULL_MNIST))
    f32, f16 = _train("none", *args), _train("fp16", *args)
    assert f32 >= 0.97, f32
    assert abs(f16 - f32) <= 0.003, (f16, f32)


def test_fp16_and_bf16_gradients_train_lenet_on_the_shipped_subset():
    # On the 1,000 test images of the subset any perturbation of training (another seed, or the
    # rounding of the gradients) moves the accuracy after two epochs by up to about 1.5%, so
    # here the compressed runs are held to that.
    f32 = _train("none", "--num-epochs", "2")
    assert f32 >= 0.92, f32
    for kind in ("fp16", "bf16"):
        acc = _train(kind, "--num-epochs", "2")
        assert abs(acc - f32) <= 0.015, (kind, acc, f32)
