"""MXNet 1.9.1's own image-classification scripts, unchanged, with ``import mxnet`` meaning mxrs.

The scripts and the shim that maps ``mxnet`` to ``mxrs`` are read from ``../shared`` (see
``../shared/mxnet-examples/README.md``); ``train_mnist.py`` reads MNIST with ``np.fromstring``,
which NumPy 2 removed, so the scripts run in ``.venv-np1`` (``scripts/np1-venv.sh``, which
``test.sh`` runs): NumPy 1.x and the mxrs of ``.venv``.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLES = SHARED / "mxnet-examples" / "image-classification"
SHIM = SHARED / "mxnet-tests" / "shim"
MNIST = SHARED / "data" / "mnist"
NP1_PYTHON = ROOT / ".venv-np1" / "bin" / "python"
TIMEOUT = 600

pytestmark = pytest.mark.skipif(
    not (EXAMPLES.is_dir() and MNIST.is_dir()),
    reason="MXNet's example scripts and the full MNIST live in ../shared, not beside this clone",
)


def _python():
    if not NP1_PYTHON.exists():
        pytest.fail("the NumPy 1.x environment of MXNet's scripts is missing: run "
                    "`scripts/np1-venv.sh` (test.sh does)")  # fmt: skip
    return str(NP1_PYTHON)


def _run(tmp_path, args, launch=None):
    """Run ``args`` (a script of EXAMPLES and its options) in ``tmp_path`` with MNIST in data/;
    under ``mxrs-launch local -n N -s S`` when ``launch`` is (N, S)."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for f in MNIST.glob("*.gz"):
        shutil.copy(f, data / f.name)
    py = _python()
    cmd = [py, str(EXAMPLES / args[0]), *args[1:]]
    if launch is not None:
        n, s = launch
        cmd = [py, "-m", "mxrs.launcher", "local", "-n", str(n), "-s", str(s), *cmd]
    env = dict(os.environ, PYTHONPATH=str(SHIM))
    for var in ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"):
        env.pop(var, None)
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    return out


def _final_validation(out, epochs, worker=None):
    """The best validation accuracy of the run's epochs (the script seeds nothing, so the last
    epoch's wanders by about a point from run to run around the plateau)."""
    tag = "" if worker is None else rf"\[worker {worker}\] "
    found = re.findall(tag + r"INFO:root:Epoch\[(\d+)\] Validation-accuracy=([0-9.]+)", out)
    assert [int(e) for e, _ in found] == list(range(epochs)), out[-3000:]
    return max(float(a) for _, a in found)


# LeNet's first epoch ends between 97.4% and 98.4% from one unseeded run to the next (measured
# on both kernel providers), too near the bar; its second ends past 98%. The MLP's best of five
# epochs ranged over 96.8-98.0% in 29 unseeded runs (median 97.6%): its bar is 96.5%.
_BAR = {"mlp": 0.965, "lenet": 0.97}


@pytest.mark.parametrize(
    "network,epochs,kv",
    [("mlp", 5, "local"), ("mlp", 5, "device"), ("lenet", 2, "local"), ("lenet", 2, "device")],
)
def test_train_mnist_reaches_the_bar(tmp_path, network, epochs, kv):
    out = _run(tmp_path, ["train_mnist.py", "--network", network, "--num-epochs", str(epochs),
                          "--kv-store", kv])  # fmt: skip
    assert f"kv_store='{kv}'" in out
    assert "Speed: " in out and "samples/sec" in out  # the script's Speedometer
    assert _final_validation(out, epochs) >= _BAR[network], out[-3000:]


@pytest.mark.parametrize("network,epochs", [("mlp", 5), ("lenet", 2)])
def test_train_mnist_dist_sync_two_workers_two_servers(tmp_path, network, epochs):
    out = _run(tmp_path, ["train_mnist.py", "--network", network, "--num-epochs", str(epochs),
                          "--kv-store", "dist_sync"], launch=(2, 2))  # fmt: skip
    # the script cuts the epoch per worker (mx.io.ResizeIter over num_examples / num_workers)
    assert out.count("Resizing training data to 469 batches per machine") == 2, out[-3000:]
    accs = [_final_validation(out, epochs, worker=w) for w in (0, 1)]
    assert accs[0] == accs[1] >= _BAR[network], accs  # dist_sync: the same weights on both workers


def test_train_imagenet_benchmark_resnet18_dist_sync(tmp_path):
    out = _run(
        tmp_path,
        ["train_imagenet.py", "--benchmark", "1", "--network", "resnet", "--num-layers", "18",
         "--image-shape", "3,32,32", "--batch-size", "16", "--num-epochs", "1",
         "--num-examples", "256", "--disp-batches", "2", "--kv-store", "dist_sync"],
        launch=(2, 2),
    )  # fmt: skip
    for w in (0, 1):
        speeds = re.findall(
            rf"\[worker {w}\] INFO:root:Epoch\[0\] Batch \[\d+-\d+\]\tSpeed: ([0-9.]+) samples/sec",
            out,
        )
        assert len(speeds) >= 3 and all(float(s) > 0 for s in speeds), out[-3000:]
        assert re.search(rf"\[worker {w}\] INFO:root:Epoch\[0\] Time cost=", out), out[-3000:]
