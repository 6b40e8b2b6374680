"""scripts/mxnet_tests.py: fetching MXNet 1.9.1's tests from a repository over HTTP (a local
server on 127.0.0.1 stands in for GitHub), the shim that makes ``import mxnet`` mean mxrs, and
running the fetched files."""

import importlib.util
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "mxnet_tests.py"
spec = importlib.util.spec_from_file_location("mxnet_tests", SCRIPT)
mxnet_tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mxnet_tests)

PASSING = """import mxnet as mx
import mxnet.gluon.nn as nn
from mxnet.test_utils import assert_almost_equal


def test_mxnet_means_mxrs():
    import mxrs
    assert mx is mxrs and nn is mxrs.gluon.nn
    assert_almost_equal(mx.nd.ones((2,)).asnumpy(), [1, 1])
"""
FAILING = """import mxnet as mx


def test_fails():
    assert mx.nd.ones((2,)).sum().asscalar() == 3
"""


@pytest.fixture
def repo(tmp_path):
    """A tree with every path the script fetches, served on 127.0.0.1."""
    tree = tmp_path / "repo"
    for rel in mxnet_tests.FILES:
        f = tree / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"# {rel}\n")
    (tree / "tests/python/unittest/test_attr.py").write_text(PASSING)
    (tree / "tests/python/unittest/test_autograd.py").write_text(FAILING)
    # port 0: the server picks a free port and says which on its first line
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tree,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        ready, _, _ = select.select([server.stdout], [], [], 30)
        assert ready, "http.server did not start within 30 s"
        port = int(re.search(r"port (\d+)", server.stdout.readline()).group(1))
        yield tree, f"http://127.0.0.1:{port}/"
    finally:
        server.kill()
        server.wait(timeout=10)
        server.stdout.close()


def _script(*args, timeout=300):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout
    )


def test_fetch_copies_every_file_unchanged_and_writes_the_shim(repo, tmp_path):
    tree, url = repo
    dest = tmp_path / "mxnet"
    p = _script("fetch", "--dest", str(dest), "--base-url", url)
    assert p.returncode == 0, p.stderr
    for rel in mxnet_tests.FILES:
        assert (dest / rel).read_bytes() == (tree / rel).read_bytes(), rel
    assert (dest / "shim" / "mxnet" / "__init__.py").exists()
    # the shim alone: mxnet and its submodules are mxrs's own modules
    code = "import mxnet, mxnet.gluon, mxrs; assert mxnet is mxrs and mxnet.gluon is mxrs.gluon"
    env = dict(os.environ, PYTHONPATH=str(dest / "shim"))
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0
    code = "import mxnet.no_such_module"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "No module named 'mxnet.no_such_module'" in bad.stderr


def test_run_counts_passes_and_failures_per_file(repo, tmp_path):
    tree, url = repo
    dest = tmp_path / "mxnet"
    assert _script("fetch", "--dest", str(dest), "--base-url", url).returncode == 0
    ok = _script("run", "--dest", str(dest), "test_attr")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 passed" in ok.stdout and "mxnet_tests: 1 passed, 0 failed" in ok.stdout
    bad = _script("run", "--dest", str(dest), "test_autograd")
    assert bad.returncode == 1
    assert "mxnet_tests: 0 passed, 1 failed" in bad.stdout


def test_a_missing_file_stops_the_fetch_naming_its_url(repo, tmp_path):
    tree, url = repo
    (tree / "tests/python/train/test_bucketing.py").unlink()
    p = _script("fetch", "--dest", str(tmp_path / "mxnet"), "--base-url", url)
    assert p.returncode == 1
    assert f"cannot fetch {url}tests/python/train/test_bucketing.py" in p.stderr


def test_run_without_fetched_files_says_so(tmp_path):
    p = _script("run", "--dest", str(tmp_path / "nothing"))
    assert p.returncode == 2 and "run `fetch` first" in p.stderr
