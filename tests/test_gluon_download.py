"""gluon.utils.download / check_sha1 / replace_file against a local HTTP server (no internet)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import mxrs as mx
import pytest

download = mx.gluon.utils.download
check_sha1 = mx.gluon.utils.check_sha1

CONTENT = b"mxrs download test\n" * 1000 + b"\x00\xff binary tail"
CONTENT_SHA1 = hashlib.sha1(CONTENT).hexdigest()
OTHER = b"different content"


class _Server:
    """State shared with the handler: request counter and how many requests to fail."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.fail_first = 0
        self.url = ""


class _Handler(http.server.SimpleHTTPRequestHandler):
    state: _Server

    def do_GET(self) -> None:  # noqa: N802 (the http.server method name)
        with self.state.lock:
            self.state.requests += 1
            fail = self.state.requests <= self.state.fail_first
        if fail:
            self.send_error(503, "failing on purpose")
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture
def server(tmp_path: Any) -> Iterator[_Server]:
    root = tmp_path / "served"
    root.mkdir()
    (root / "data.bin").write_bytes(CONTENT)
    state = _Server()
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _leftovers(directory: Any) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_download_into_directory_writes_exact_content(server: _Server, tmp_path: Any) -> None:
    out = tmp_path / "out"
    out.mkdir()
    fname = download(f"{server.url}/data.bin", path=str(out))
    assert fname == os.path.join(str(out), "data.bin")
    assert (out / "data.bin").read_bytes() == CONTENT
    assert _leftovers(out) == ["data.bin"]  # the temporary file is gone
    assert server.requests == 1


def test_download_to_file_name_creates_directories(server: _Server, tmp_path: Any) -> None:
    target = tmp_path / "a" / "b" / "renamed.dat"
    fname = download(f"{server.url}/data.bin", path=str(target), sha1_hash=CONTENT_SHA1)
    assert fname == str(target)
    assert target.read_bytes() == CONTENT


def test_download_default_path_is_url_name_in_cwd(
    server: _Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert download(f"{server.url}/data.bin") == "data.bin"
    assert (tmp_path / "data.bin").read_bytes() == CONTENT


def test_download_skips_existing_file(server: _Server, tmp_path: Any) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(OTHER)
    # exists and no hash given: kept as is, no request made
    assert download(f"{server.url}/data.bin", path=str(target)) == str(target)
    assert target.read_bytes() == OTHER
    assert server.requests == 0
    # exists with the right hash: no request either
    target.write_bytes(CONTENT)
    download(f"{server.url}/data.bin", path=str(target), sha1_hash=CONTENT_SHA1)
    assert server.requests == 0


def test_download_replaces_file_with_wrong_hash(server: _Server, tmp_path: Any) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(OTHER)
    download(f"{server.url}/data.bin", path=str(target), sha1_hash=CONTENT_SHA1)
    assert target.read_bytes() == CONTENT
    assert server.requests == 1


def test_download_overwrite(server: _Server, tmp_path: Any) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(OTHER)
    download(f"{server.url}/data.bin", path=str(target), overwrite=True)
    assert target.read_bytes() == CONTENT
    assert server.requests == 1
    download(f"{server.url}/data.bin", path=str(target), overwrite=True)
    assert server.requests == 2
    assert _leftovers(tmp_path) == ["data.bin", "served"]


def test_download_sha1_mismatch_raises_after_every_attempt(server: _Server, tmp_path: Any) -> None:
    target = tmp_path / "data.bin"
    with pytest.raises(UserWarning, match="data.bin"):
        download(f"{server.url}/data.bin", path=str(target), sha1_hash="0" * 40, retries=3)
    assert server.requests == 3
    assert _leftovers(tmp_path) == ["data.bin", "served"]


def test_download_retries_until_success(server: _Server, tmp_path: Any) -> None:
    server.fail_first = 2
    target = tmp_path / "data.bin"
    download(f"{server.url}/data.bin", path=str(target), retries=3, sha1_hash=CONTENT_SHA1)
    assert server.requests == 3
    assert target.read_bytes() == CONTENT


def test_download_gives_up_after_retries(server: _Server, tmp_path: Any) -> None:
    server.fail_first = 10
    target = tmp_path / "data.bin"
    with pytest.raises(RuntimeError, match="503"):
        download(f"{server.url}/data.bin", path=str(target), retries=4)
    assert server.requests == 4
    assert not target.exists()
    assert _leftovers(tmp_path) == ["served"]


def test_download_zero_retries_makes_one_attempt(server: _Server, tmp_path: Any) -> None:
    server.fail_first = 1
    with pytest.raises(RuntimeError):
        download(f"{server.url}/data.bin", path=str(tmp_path / "x"), retries=0)
    assert server.requests == 1


def test_download_http_404_names_url_and_status(server: _Server, tmp_path: Any) -> None:
    url = f"{server.url}/missing.bin"
    with pytest.raises(RuntimeError, match="404") as err:
        download(url, path=str(tmp_path), retries=2)
    assert url in str(err.value)
    assert server.requests == 2
    assert _leftovers(tmp_path) == ["served"]


def test_download_connection_error_is_reraised(tmp_path: Any) -> None:
    import requests

    # a port that was just free: nothing listens there
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(requests.exceptions.ConnectionError):
        download(f"http://127.0.0.1:{port}/x.bin", path=str(tmp_path), retries=1)
    assert _leftovers(tmp_path) == []


def test_download_negative_retries(tmp_path: Any) -> None:
    with pytest.raises(AssertionError, match="retries"):
        download("http://127.0.0.1:9/x.bin", path=str(tmp_path), retries=-1)


def test_download_without_file_name(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="path"):
        download("http://127.0.0.1:9/dir/")


def test_download_verify_ssl_false_warns(server: _Server, tmp_path: Any) -> None:
    with pytest.warns(UserWarning, match="^Unverified HTTPS request"):
        download(f"{server.url}/data.bin", path=str(tmp_path), verify_ssl=False)
    assert (tmp_path / "data.bin").read_bytes() == CONTENT


def _download_in_child(url: str, path: str) -> None:
    download(url, path=path, sha1_hash=CONTENT_SHA1)


def test_download_from_several_processes_leaves_one_file(server: _Server, tmp_path: Any) -> None:
    out = tmp_path / "out"
    out.mkdir()
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_download_in_child, args=(f"{server.url}/data.bin", str(out)))
        for _ in range(6)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6
    assert _leftovers(out) == ["data.bin"]
    assert (out / "data.bin").read_bytes() == CONTENT
    assert 1 <= server.requests <= 6


def test_check_sha1(tmp_path: Any) -> None:
    f = tmp_path / "f"
    f.write_bytes(CONTENT)
    assert check_sha1(str(f), CONTENT_SHA1)
    assert check_sha1(str(f), CONTENT_SHA1.upper())
    assert not check_sha1(str(f), hashlib.sha1(OTHER).hexdigest())
    (tmp_path / "empty").write_bytes(b"")
    assert check_sha1(str(tmp_path / "empty"), "da39a3ee5e6b4b0d3255bfef95601890afd80709")


def test_replace_file(tmp_path: Any) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"new")
    dst.write_bytes(b"old")
    mx.gluon.utils.replace_file(str(src), str(dst))
    assert dst.read_bytes() == b"new"
    assert not src.exists()


def test_import_mxrs_does_not_import_requests() -> None:
    code = "import sys, mxrs; mxrs.gluon.utils.download; print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
