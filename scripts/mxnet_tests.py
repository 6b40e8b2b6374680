#!/usr/bin/env python3
"""Apache MXNet 1.9.1's own tests and example scripts, run against mxrs: the yardstick of
docs/compatibility.md, for any machine with the network.

    python scripts/mxnet_tests.py fetch [--dest DIR]
    python scripts/mxnet_tests.py run [--dest DIR] [--python PY] [FILTER]

``fetch`` downloads, from MXNet's repository at tag 1.9.1, the unit-test files mxrs is
measured on (``tests/python/unittest/``: 28 files with their ``common.py``;
``tests/python/common/models.py``; ``tests/python/train/test_bucketing.py`` with its
``common.py``) and the example scripts
(``example/image-classification/`` and ``example/gluon/word_language_model/``) into ``DIR``
(default ``~/.mxrs/mxnet-1.9.1``), unchanged, and writes ``DIR/shim/mxnet``: a package that makes
``import mxnet`` (and ``mxnet.X``) mean mxrs, nothing more, so a test passes only where mxrs
itself provides what it uses. MXNet's files stay MXNet's (Apache License 2.0): they are fetched
and run, never copied into mxrs.

``run`` runs each test file (or those whose name holds ``FILTER``) in its own pytest process
with ``PY`` (default: this interpreter; it needs mxrs, pytest, scipy and nose, and with
pytest-timeout each test gets 120 s), and prints one line per file and the totals. The tests
that read data from the internet are deselected. The exit status is 0 when every selected test
passed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

BASE_URL = "https://raw.githubusercontent.com/apache/mxnet/1.9.1/"

UNITTESTS = [
    "test_attr.py",
    "test_autograd.py",
    "test_contrib_autograd.py",
    "test_contrib_optimizer.py",
    "test_exc_handling.py",
    "test_gluon_contrib.py",
    "test_gluon_data.py",
    "test_gluon_data_vision.py",
    "test_gluon_estimator.py",
    "test_gluon_event_handler.py",
    "test_gluon_rnn.py",
    "test_gluon_save.py",
    "test_gluon_trainer.py",
    "test_gluon_utils.py",
    "test_image.py",
    "test_infer_type.py",
    "test_init.py",
    "test_io.py",
    "test_kvstore.py",
    "test_kvstore_custom.py",
    "test_loss.py",
    "test_metric.py",
    "test_multi_device_exec.py",
    "test_optimizer.py",
    "test_profiler.py",
    "test_random.py",
    "test_recordio.py",
    "test_rnn.py",
    "common.py",
]

IMAGE_CLASSIFICATION = [
    "README.md",
    "train_mnist.py",
    "train_imagenet.py",
    "train_cifar10.py",
    *(f"common/{f}" for f in ("__init__", "data", "find_mxnet", "fit", "modelzoo", "util")),
    *(
        f"symbols/{f}"
        for f in (
            "__init__",
            "alexnet",
            "inception-bn",
            "lenet",
            "mlp",
            "mobilenet",
            "resnet-v1",
            "resnet",
            "resnetv1",
            "vgg",
        )
    ),
]

#: Repository paths fetched, in order.
FILES = (
    [f"tests/python/unittest/{f}" for f in UNITTESTS]
    + ["tests/python/common/models.py", "tests/python/train/common.py"]
    + ["tests/python/train/test_bucketing.py"]
    + [
        f"example/image-classification/{f}" + ("" if f.endswith((".py", ".md")) else ".py")
        for f in IMAGE_CLASSIFICATION
    ]
    + [f"example/gluon/word_language_model/{f}" for f in ("README.md", "model.py", "train.py")]
)

#: Tests that read data from the internet.
DESELECT = [
    "test_gluon_data.py::test_datasets",
    "test_gluon_data.py::test_image_folder_dataset",
    "test_gluon_data.py::test_recordimage_dataset",
    "test_gluon_data.py::test_recordimage_dataset_with_data_loader_multiworker",
]

SHIM = '''"""``import mxnet`` means mxrs: ``mxnet`` is ``mxrs``, ``mxnet.X`` is ``mxrs.X``.

Written by mxrs's scripts/mxnet_tests.py for running Apache MXNet's own tests against mxrs.
"""

import importlib
import importlib.abc
import importlib.util
import sys

import mxrs


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``mxnet.X`` wherever ``mxrs.X`` exists, and loads it as that very module."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("mxnet."):
            return None
        try:
            if importlib.util.find_spec("mxrs" + name[len("mxnet"):]) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # the import system takes whatever sys.modules holds under the name after this
        sys.modules[module.__name__] = importlib.import_module("mxrs" + module.__name__[5:])


sys.meta_path.insert(0, _Alias())
sys.modules["mxnet"] = mxrs
'''


def default_dest() -> Path:
    home = os.environ.get("MXRS_HOME", os.path.join(os.path.expanduser("~"), ".mxrs"))
    return Path(home) / "mxnet-1.9.1"


def fetch(dest: Path, base_url: str = BASE_URL, timeout: float = 60.0) -> None:
    """Download :data:`FILES` from ``base_url`` into ``dest`` and write the shim.

    Raises
    ------
    SystemExit
        Naming the URL, when a file cannot be fetched.
    """
    for rel in FILES:
        url = base_url + rel
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                data = resp.read()
        except (urllib.error.URLError, OSError) as err:
            raise SystemExit(f"mxnet_tests: cannot fetch {url}: {err}") from None
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    shim = dest / "shim" / "mxnet"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text(SHIM)
    print(f"mxnet_tests: {len(FILES)} files of MXNet 1.9.1 and the shim in {dest}")


def _summary(log: str) -> tuple[int, int, str]:
    """Passed and failed (or errored) counts of pytest's last summary line, and the line."""
    lines = [ln for ln in log.splitlines() if re.search(r"\d+ (passed|failed|errors?)", ln)]
    if not lines:
        return 0, 0, ""
    last = lines[-1]
    passed = sum(int(n) for n in re.findall(r"(\d+) passed", last))
    failed = sum(int(n) for n in re.findall(r"(\d+) (?:failed|errors?)", last))
    return passed, failed, last.strip("= ")


def run(dest: Path, python: str, pattern: str = "") -> int:
    """Run the fetched test files; return 0 when every selected test passed."""
    tests = sorted((dest / "tests/python/unittest").glob("test_*.py"))
    tests += sorted((dest / "tests/python/train").glob("test_*.py"))
    tests = [t for t in tests if pattern in t.name]
    if not tests:
        print(f"mxnet_tests: no test files in {dest} (run `fetch` first)", file=sys.stderr)
        return 2
    env = dict(os.environ, PYTHONPATH=str(dest / "shim"))
    for var in ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER"):
        env.pop(var, None)
    total_p = total_f = 0
    deselect = [arg for d in DESELECT for arg in ("--deselect", d)]
    probe = subprocess.run([python, "-c", "import pytest_timeout"], capture_output=True)
    limit = ["--timeout=120"] if probe.returncode == 0 else []
    if not limit:
        print("mxnet_tests: pytest-timeout is missing: tests run without a time limit")
    for t in tests:
        with tempfile.TemporaryDirectory() as work:
            cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(t.parent)]
            cmd += [*limit, "-q", *deselect, str(t)]
            try:
                p = subprocess.run(
                    cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800
                )
                out = p.stdout + p.stderr
            except subprocess.TimeoutExpired:
                out = "timed out after 1800 s: 1 error"
        passed, failed, line = _summary(out)
        if not line:
            failed, line = 1, "no result: " + (out.strip().splitlines() or ["no output"])[-1]
        total_p += passed
        total_f += failed
        print(f"{t.name:32s} {line}", flush=True)
    print(f"mxnet_tests: {total_p} passed, {total_f} failed or errored")
    return 0 if total_f == 0 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="download MXNet 1.9.1's tests and examples")
    f.add_argument("--dest", type=Path, default=default_dest())
    f.add_argument("--base-url", default=BASE_URL, help="the repository at tag 1.9.1, raw files")
    r = sub.add_parser("run", help="run the fetched tests against mxrs")
    r.add_argument("--dest", type=Path, default=default_dest())
    r.add_argument("--python", default=sys.executable)
    r.add_argument("filter", nargs="?", default="")
    args = ap.parse_args(argv)
    if args.cmd == "fetch":
        fetch(args.dest, args.base_url)
        return 0
    return run(args.dest, args.python, args.filter)


if __name__ == "__main__":
    sys.exit(main())
