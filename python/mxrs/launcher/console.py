"""The launcher's console: the processes' output, prefixed, with progress bars shown live.

A process's output is split as a terminal would show it: text after a carriage return
replaces the line being drawn (a progress bar's redraw), a newline finishes it. Finished lines
are printed with the process's label, in the order they end. On a terminal, the line each
*live* process is drawing (worker 0's by default, every worker's with ``--progress all``) is
kept at the bottom of the screen and redrawn as it changes; other processes' redraws are
dropped and only their finished lines appear. Without a terminal (a log file, a pipe) every
redraw is dropped: the log keeps the lines as they ended, the bar's last state included.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from typing import BinaryIO, TextIO

#: ``--progress`` choices: whose redraws are shown live on a terminal.
PROGRESS = ("worker0", "all", "off")

#: Bytes of output without a line end after which they are shown as a line of their own.
MAX_LINE = 1 << 16

_CLEAR_BELOW = b"\x1b[J"  # erase from the cursor to the end of the screen


def _up(n: int) -> bytes:
    """Move the cursor to the start of the line ``n`` lines up."""
    return f"\x1b[{n}F".encode()


class Lines:
    """One process's output as a terminal shows it: the line being drawn (``line``: at most
    one redraw long) and the lines it finished."""

    __slots__ = ("line", "returned")

    def __init__(self) -> None:
        self.line = bytearray()
        self.returned = False  # a carriage return came: the next text redraws the line

    def feed(self, data: bytes) -> tuple[list[bytes], bool]:
        """Take ``data``; returns the lines it finished and whether the drawn line changed."""
        done: list[bytes] = []
        changed = False
        start = 0
        for i, b in enumerate(data):
            if b not in (0x0A, 0x0D):
                continue
            self._text(data[start:i])
            if b == 0x0A:
                done.append(bytes(self.line))
                self.line.clear()
                self.returned = False
            else:
                self.returned = True
            start = i + 1
            changed = True
        if start < len(data):
            self._text(data[start:])
            changed = True
        if len(self.line) > MAX_LINE:  # no end in sight: what came so far is a line
            done.append(bytes(self.line))
            self.line.clear()
        return done, changed and bool(self.line)

    def _text(self, text: bytes) -> None:
        if not text:
            return
        if self.returned:
            self.line.clear()
            self.returned = False
        self.line += text


class Console:
    """Writes the output of a job's processes to ``out`` (thread-safe).

    ``progress`` says whose redraws are shown live (:data:`PROGRESS`); ``tty`` whether ``out``
    is a terminal (default: asked of ``out``). ``take``, when given, is called with each
    finished line (label, line) and returns what of it to show, or None for nothing: how
    report lines leave the output (:meth:`.summary.JobSummary.take`).
    """

    def __init__(
        self,
        out: BinaryIO,
        progress: str = "worker0",
        tty: bool | None = None,
        take: Callable[[str, bytes], bytes | None] | None = None,
    ):
        if progress not in PROGRESS:
            raise ValueError(f"progress must be one of {', '.join(PROGRESS)}, not {progress!r}")
        self._out = out
        self._progress = progress
        self._tty = out.isatty() if tty is None else tty
        self._take = take
        self._lock = threading.Lock()
        self._streams: dict[str, Lines] = {}
        self._drawn: dict[str, bytes] = {}  # label -> its live line, in the order first drawn
        self._shown = 0  # live lines on the screen now

    def _is_live(self, label: str) -> bool:
        if not self._tty or self._progress == "off":
            return False
        if self._progress == "all":
            return label.startswith("worker ")
        return label == "worker 0"

    def feed(self, label: str, data: bytes) -> list[bytes]:
        """Take a chunk of ``label``'s output; returns the lines it finished and shows (as drawn
        last, without their line ends)."""
        with self._lock:
            stream = self._streams.setdefault(label, Lines())
            done, changed = stream.feed(data)
            live = self._is_live(label)
            if done:
                self._drawn.pop(label, None)
            if changed and live:
                self._drawn[label] = bytes(stream.line)
            shown = self._shown_of(label, done)
            if done or (changed and live):  # a taken line still ends the live one
                self._render([f"[{label}] ".encode() + line for line in shown])
            return shown

    def close(self, label: str) -> list[bytes]:
        """``label``'s output ended: what it was drawing stays as a finished line (returned,
        if there was one and it is shown)."""
        with self._lock:
            stream = self._streams.pop(label, None)
            self._drawn.pop(label, None)
            last = [bytes(stream.line)] if stream is not None and stream.line else []
            last = self._shown_of(label, last)
            self._render([f"[{label}] ".encode() + line for line in last])
            return last

    def _shown_of(self, label: str, lines: list[bytes]) -> list[bytes]:
        """What of ``label``'s finished ``lines`` is shown (all of it without ``take``)."""
        if self._take is None:
            return lines
        return [kept for line in lines if (kept := self._take(label, line)) is not None]

    def message(self, text: str, stream: TextIO) -> None:
        """Print a line of the launcher's own on ``stream`` (stderr), above the live lines."""
        with self._lock:
            if self._shown:
                self._out.write(_up(self._shown) + _CLEAR_BELOW)
                self._out.flush()
                self._shown = 0
            print(text, file=stream, flush=True)
            self._render([])

    def _render(self, finished: list[bytes]) -> None:
        """Print ``finished`` lines above the live area, then redraw the live lines."""
        out = bytearray()
        if self._shown:
            out += _up(self._shown) + _CLEAR_BELOW
        for line in finished:
            out += line + b"\n"
        width = max(shutil.get_terminal_size().columns - 1, 1) if self._tty else 0
        for label, line in self._drawn.items():
            text = f"[{label}] " + line.decode(errors="replace")
            out += text[:width].encode() + b"\n"  # one screen row each
        self._shown = len(self._drawn)
        if out:
            self._out.write(bytes(out))
            self._out.flush()
