"""The Rust nodes' log lines: plain text into a file or a pipe, colours only on a terminal."""

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCHEDULER = Path(sys.executable).parent / "ps-scheduler"


def scheduler_log(tmp_path, terminal=None, **extra):
    """The scheduler's first log lines (up to its 'waiting for' line) as bytes, read from a
    pipe, or with ``terminal`` (a ``pty.openpty()`` pair: its stderr is the second end) from
    a pseudo-terminal."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "RUST_LOG")}
    env.update(
        DMLC_ROLE="scheduler",
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT="0",
        MXRS_ANNOUNCE=str(tmp_path / "port"),
        DMLC_NUM_WORKER="1",
        DMLC_NUM_SERVER="1",
        PS_VERBOSE="1",
        **extra,
    )
    if terminal is None:
        master, stderr = None, subprocess.PIPE
    else:
        master, stderr = terminal
    proc = subprocess.Popen([str(SCHEDULER)], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    if terminal is not None:
        os.close(stderr)
    fd = proc.stderr.fileno() if master is None else master
    out = b""
    deadline = time.monotonic() + 30
    try:
        while b"waiting for" not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                out += chunk
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if master is not None:
            os.close(master)
        elif proc.stderr is not None:
            proc.stderr.close()
    assert b"waiting for 1 workers and 1 servers" in out, out
    return out


def test_logs_into_a_pipe_are_plain_text(tmp_path):
    out = scheduler_log(tmp_path)
    assert b"\x1b[" not in out, out
    assert b" INFO scheduler listening on 127.0.0.1:" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal")
def test_logs_on_a_terminal_have_colours_unless_no_color(tmp_path):
    assert b"\x1b[32m INFO\x1b[0m" in scheduler_log(tmp_path, pty.openpty())
    plain = scheduler_log(tmp_path, pty.openpty(), NO_COLOR="1")
    assert b"\x1b[" not in plain, plain
