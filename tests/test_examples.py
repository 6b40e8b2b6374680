"""The examples end to end: the README's main command, multi-device training, full MNIST."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FULL_MNIST = ROOT.parent / "shared" / "data" / "mnist"
TIMEOUT = 600


def _env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _accuracies(text, pattern=r"final test accuracy ([0-9.]+)"):
    return [float(a) for a in re.findall(pattern, text)]


def _shell(command):
    """Run ``command`` in the checkout; its stdout, once it exited 0."""
    r = subprocess.run(
        command, shell=True, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_the_readme_main_command_trains_to_95_percent_on_the_shipped_subset():
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if "mxrs-launch local" in ln)
    out = _shell(line[line.index("mxrs-launch") :])
    accs = _accuracies(out)
    assert len(accs) == 2, out[-3000:]
    assert accs[0] == accs[1] and accs[0] >= 0.95, accs
    assert "[worker 1] worker 1/2: epoch 1" in out


def _example(*args):
    r = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_two_devices_with_an_uneven_work_load():
    out = _example(
        "examples/train_mnist.py",
        "--cpus",
        "2",
        "--kv-store",
        "device",
        "--work-load-list",
        "3,1",
        "--num-epochs",
        "2",
        "--no-progress",
    )
    assert _accuracies(out)[0] >= 0.9, out


def test_the_multi_device_tutorial_runs_on_two_cpu_contexts():
    out = _example("examples/gluon_multi_device.py", "--num-epochs", "6")
    assert "After epoch 6: accuracy = " in out
    (acc,) = _accuracies(out, r"Validation: accuracy = ([0-9.]+)")
    assert acc >= 0.85, out  # the tutorial's plain SGD at lr 0.04 on the 6,000-image subset


def test_the_distributed_tutorial_runs_as_a_job():
    r = subprocess.run(
        [
            "mxrs-launch",
            "local",
            "-n",
            "2",
            "-s",
            "2",
            sys.executable,
            "examples/dist.py",
            "--epochs",
            "2",
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "[worker 1] This worker's rank: 1" in r.stdout
    accs = [_accuracies(r.stdout, rf"\[worker {i}\] Epoch 1: Test_acc ([0-9.]+)") for i in (0, 1)]
    assert accs[0] == accs[1] and accs[0][0] >= 0.9, r.stdout[-3000:]


@pytest.mark.skipif(not FULL_MNIST.is_dir(), reason="the full MNIST is not beside the project")
def test_lenet_reaches_98_5_percent_on_the_full_mnist():
    out = _example(
        "examples/train_mnist.py",
        "--data-dir",
        str(FULL_MNIST),
        "--num-epochs",
        "4",
        "--batch-size",
        "64",
        "--lr",
        "0.02",
        "--no-progress",
    )
    assert _accuracies(out)[0] >= 0.985, out


def test_the_progress_bar_counts_batches_as_they_finish_and_shows_samples_per_s():
    r = subprocess.run(
        [sys.executable, "examples/train_mnist.py", "--num-epochs", "1"],
        cwd=ROOT,
        env={**_env(), "TQDM_MININTERVAL": "0"},  # a redraw per batch: no timing involved
        capture_output=True,
        timeout=TIMEOUT,
    )
    err = r.stderr.decode(errors="replace")  # bytes: text mode would turn \r into \n
    assert r.returncode == 0, r.stdout.decode()[-3000:] + err[-3000:]
    # tqdm draws on stderr: each redraw after a carriage return
    states = [s for s in err.split("\r") if "epoch 1/1" in s]
    counts = [tuple(map(int, m.groups())) for s in states if (m := re.search(r"(\d+)/(\d+) \[", s))]
    assert counts, err[-2000:]
    total = counts[-1][1]
    assert counts[-1] == (total, total), counts
    # every batch counted as it finished, not a stale count redrawn with a new postfix
    done = [d for d, _ in counts]
    assert done[: total + 1] == list(range(total + 1)) and set(done) == set(done[: total + 1])
    assert re.search(r"samples_per_s=\d+", states[-1]), states[-1]


def test_the_readme_first_program_is_the_quickstart_example_and_learns():
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "quickstart.py").read_text()
    block = readme.split("## A first program", 1)[1].split("```python\n", 1)[1].split("```")[0]
    assert block in example  # the README shows the file (less its docstring)
    out = _shell("mxrs-launch local -n 2 -s 2 python examples/quickstart.py")
    losses = [float(v) for v in re.findall(r"worker [01]: loss ([0-9.]+)", out)]
    assert len(losses) == 2, out[-3000:]
    assert max(losses) < 0.5, losses  # from about ln(10) = 2.3 at the start
