"""A pod's log read with Kubernetes' timestamps, across reopened streams: each line shown once.

The launcher asks for ``timestamps=true``: every line then starts with its RFC 3339 time. When
a stream ends while its pod runs, the launcher opens it again from a little before the last line
shown (``since_seconds``: the client has no ``since_time``), and :class:`Stamped` drops what
was shown already, resuming a line the cut stream stopped in, and strips the timestamps from
what it passes on. Lines without a timestamp pass as they are.
"""

from __future__ import annotations

import datetime
import math
import re
import time

#: Seconds of a reopened log asked for again (the node's clock may be ahead of this one's).
OVERLAP_S = 60
#: The timestamp before each line of a log read with ``timestamps`` (RFC 3339, and a space).
_STAMP = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) ")
_STAMP_START = re.compile(rb"[\d:.TZ+-]*")  # what a timestamp cut short may be
_STAMP_LEN = 40  # a line's start this long without a space has no timestamp


class Stamped:
    """A pod's log as read with ``timestamps``: its lines' timestamps taken off, less what a
    reopened stream repeats (the lines not after the last one begun, and what of that one was
    shown). Chunks may split lines, and timestamps, anywhere; what of a line has come is shown
    at once (a progress bar's redraws); a line without a timestamp is shown as it is."""

    def __init__(self):
        self.last: tuple[int, int] | None = None  # the last line begun: (seconds, nanoseconds)
        self._came = 0.0  # when it began (time.monotonic())
        self._head = b""  # a line's start, until its timestamp has all come
        self._line: bool | None = None  # the line coming: shown, a repeat, or not begun
        self._at = 0  # bytes of the line coming so far, its timestamp left out
        self._skip = 0  # of these, the bytes shown before (by a stream cut in the line)
        self._resume: int | None = None  # after a cut in a line: the bytes shown of it

    def take(self, chunk: bytes) -> bytes:
        """What of ``chunk`` to show."""
        out = bytearray()
        while chunk:
            if self._line is None:
                chunk = self._begin(self._head + chunk)
                if self._line is None:  # its timestamp is still coming
                    break
            end = chunk.find(b"\n") + 1 or len(chunk)
            if self._line:
                out += chunk[max(0, self._skip - self._at) : end]
            self._at += end
            if chunk[end - 1 : end] == b"\n":
                self._line = None
            chunk = chunk[end:]
        return bytes(out)

    def rest(self) -> bytes:
        """What is left to show once the log ended (not a timestamp cut short)."""
        head, self._head = self._head, b""
        return b"" if _STAMP_START.fullmatch(head) else head

    def reopen(self) -> int | None:
        """``since_seconds`` for the log's next stream (None: from its start): from before the
        last line begun by the local clock and by the node's, and some more in case the node's
        is ahead."""
        if self._line:  # the stream was cut in a line shown: it comes again whole
            self._resume = self._at
        self._head, self._line = b"", None
        if self.last is None:
            return None
        at = self.last[0] + self.last[1] / 1e9
        ago = max(time.time() - at, time.monotonic() - self._came)
        return max(1, math.ceil(ago)) + OVERLAP_S

    def _begin(self, data: bytes) -> bytes:
        """Take the timestamp off ``data``, a line's start; returns the rest of it."""
        start = data[:_STAMP_LEN]
        if len(start) < _STAMP_LEN and b" " not in start and b"\n" not in start:
            self._head = data
            return b""
        self._head, self._at, self._skip = b"", 0, 0
        m = _STAMP.match(data)
        at = _instant(m) if m else None
        if m is None or at is None:
            self._line = True
            return data
        if self.last is None or at > self.last:
            self._line, self._resume = True, None
            self.last, self._came = at, time.monotonic()
        elif at == self.last and self._resume is not None:  # the line a stream was cut in
            self._line, self._skip, self._resume = True, self._resume, None
        else:
            self._line = False
        return data[m.end() :]


def _instant(m) -> tuple[int, int] | None:
    """A matched timestamp as (seconds since the epoch, nanoseconds); None if no date."""
    day, fraction, zone = (g.decode() if g else "" for g in m.groups())
    try:
        at = datetime.datetime.fromisoformat(day + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return int(at.timestamp()), int(fraction.ljust(9, "0"))
