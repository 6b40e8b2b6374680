"""The launcher's console: progress-bar redraws live on a terminal, dropped from logs."""

import io
import os
import pty
import select
import subprocess
import sys
import textwrap
import time

import pytest
from jobs import TIMEOUT, launch
from mxrs.launcher.console import MAX_LINE, Console, Lines

UP_CLEAR = b"\x1b[1F\x1b[J"  # one live line taken back before the screen changes


def _console(progress="worker0", tty=True):
    out = io.BytesIO()
    return Console(out, progress, tty=tty), out


def test_without_a_terminal_redraws_are_dropped_and_the_last_state_kept():
    c, out = _console(tty=False)
    c.feed("worker 0", b"epoch 0\n\r  0%|    | 0/3")
    c.feed("worker 0", b"\r 33%|#   | 1/3\r 67%|##  | 2/3")
    assert out.getvalue() == b"[worker 0] epoch 0\n"
    assert c.feed("worker 0", b"\r100%|####| 3/3\nloss 0.5\r\n") == [b"100%|####| 3/3", b"loss 0.5"]
    c.feed("worker 1", b"\rhalf")
    c.close("worker 1")
    assert out.getvalue() == (
        b"[worker 0] epoch 0\n[worker 0] 100%|####| 3/3\n[worker 0] loss 0.5\n[worker 1] half\n"
    )


def test_on_a_terminal_worker_0s_redraws_show_live_and_others_only_finish():
    c, out = _console()
    c.feed("worker 0", b"\r 1/3")
    assert out.getvalue() == b"[worker 0]  1/3\n"
    c.feed("worker 1", b"\rw1 1/3")  # not shown: worker 1 is not live by default
    c.feed("worker 0", b"\r 2/3")
    assert out.getvalue() == b"[worker 0]  1/3\n" + UP_CLEAR + b"[worker 0]  2/3\n"
    mark = len(out.getvalue())
    c.feed("server 0", b"serving\n")  # a finished line goes above the live one
    assert out.getvalue()[mark:] == UP_CLEAR + b"[server 0] serving\n[worker 0]  2/3\n"
    mark = len(out.getvalue())
    c.feed("worker 0", b"\r 3/3\n")  # finished: printed once, no live line left
    assert out.getvalue()[mark:] == UP_CLEAR + b"[worker 0]  3/3\n"
    mark = len(out.getvalue())
    c.feed("worker 1", b"\rw1 3/3\n")
    assert out.getvalue()[mark:] == b"[worker 1] w1 3/3\n"


def test_progress_all_keeps_one_live_line_per_worker_and_off_none():
    c, out = _console("all")
    c.feed("worker 0", b"\ra")
    c.feed("worker 1", b"\rb")
    c.feed("worker 0", b"\rc")
    assert out.getvalue().endswith(b"\x1b[2F\x1b[J[worker 0] c\n[worker 1] b\n")
    c.feed("scheduler", b"\rnot a worker")  # only workers draw live lines
    assert out.getvalue().endswith(b"[worker 0] c\n[worker 1] b\n")
    c, out = _console("off")
    c.feed("worker 0", b"\ra\rb\n")
    assert out.getvalue() == b"[worker 0] b\n"


def test_messages_go_between_the_finished_and_the_live_lines():
    c, out = _console()
    c.feed("worker 0", b"\rstep 1")
    err = io.StringIO()
    c.message("mxrs-launch: something happened", err)
    assert err.getvalue() == "mxrs-launch: something happened\n"
    assert out.getvalue() == b"[worker 0] step 1\n" + UP_CLEAR + b"[worker 0] step 1\n"


def test_a_bad_progress_choice_is_named():
    with pytest.raises(ValueError, match="worker0, all, off.*'some'"):
        Console(io.BytesIO(), "some")


_BAR = """
import os, sys, time
import mxrs as mx
kv = mx.kv.create('dist_sync')
go = os.environ['GO_FILE']
for i in range(1, 4):
    sys.stdout.write(f'\\rbatch {i}/3 rank {kv.rank}')
    sys.stdout.flush()
    if i == 1 and kv.rank == 0:
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)  # the test creates it once it saw this redraw
        assert os.path.exists(go), 'the redraw never reached the terminal'
sys.stdout.write('\\n')
print('done', kv.rank, flush=True)
"""


def test_a_logged_job_keeps_finished_lines_only(tmp_path):
    (tmp_path / "go").write_text("")
    r = launch(tmp_path, _BAR, env=[f"GO_FILE={tmp_path / 'go'}"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\r" not in r.stdout and "\x1b" not in r.stdout
    for rank in (0, 1):
        # each worker's own lines, in order (the two workers' lines interleave as they finish)
        mine = [ln for ln in r.stdout.splitlines() if ln.startswith(f"[worker {rank}] ")]
        assert f"[worker {rank}] batch 3/3 rank {rank}" in mine, r.stdout
        at = mine.index(f"[worker {rank}] batch 3/3 rank {rank}")
        assert mine[at + 1 : at + 2] == [f"[worker {rank}] done {rank}"], r.stdout
        assert f"batch 1/3 rank {rank}" not in r.stdout


def test_on_a_terminal_worker_0s_bar_is_seen_while_it_runs(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(_BAR))
    go = tmp_path / "go"
    env = dict(os.environ, GO_FILE=str(go), COLUMNS="200")
    cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", "2", "-s", "1"]
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*cmd, sys.executable, str(script)], stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    seen = bytearray()
    deadline = time.monotonic() + TIMEOUT
    try:
        while b"[worker 0] batch 1/3 rank 0" not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            if select.select([master], [], [], 1.0)[0]:
                seen += os.read(master, 65536)
        go.write_text("")  # the live line arrived while worker 0 waits on it
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            if select.select([master], [], [], 1.0)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:  # the terminal closed with the launcher
                    break
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        os.close(master)
    text = seen.decode(errors="replace")
    assert "[worker 0] batch 3/3 rank 0\r\n" in text  # the terminal turns \n into \r\n
    assert "batch 1/3 rank 1" not in text  # worker 1's redraws are not drawn by default
    assert "[worker 1] batch 3/3 rank 1\r\n" in text


def test_lines_keep_one_redraw_and_split_endless_output():
    lines = Lines()
    assert lines.feed(b"abc\r") == ([], True)
    assert lines.feed(b"\n") == ([b"abc"], False)  # \r and \n in different chunks
    for i in range(10_000):
        lines.feed(b"\r%d%%" % i)
    assert bytes(lines.line) == b"9999%"  # one redraw held, not all of them
    done, _ = lines.feed(b"x" * (MAX_LINE + 1))
    assert done == [b"9999%" + b"x" * (MAX_LINE + 1)]  # the text went on after the redraw
    assert lines.line == bytearray()
