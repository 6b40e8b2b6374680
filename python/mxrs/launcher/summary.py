"""The job summary ``mxrs-launch`` prints when a job ends, and the report lines it is made of.

Each process of a job may write, just before it exits, one line ``mxrs-report: {JSON object}``
(:mod:`mxrs._report` writes a worker's). The console takes such lines out of the output
(:meth:`JobSummary.take`) and the summary shows, per process, its exit status and what it
reported: a worker's steps and samples/s, a server's bytes in and out::

    mxrs-launch: job summary
      worker 0    exit 0   steps 93      samples/s 4120.5
      worker 1    exit 0   steps 93      samples/s 3987.2
      server 0    exit 0   in 12.3 MiB   out 45.6 MiB
      scheduler   exit 0
      slowest worker: worker 1 (3987.2 samples/s)

A status is ``exit N``, ``signal N`` (killed by it), ``stopped`` (still running when the
launcher stopped the job) or ``running``, with ``(restarted N×)`` for a restarted process;
``-`` stands for what a process did not report. A line that looks like a report but is not a
valid one stays an ordinary output line.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

#: What starts a report line (bytes, as the output is read); the same as
#: ``mxrs._report.PREFIX``, which is not imported: importing it arms a worker's report.
PREFIX = b"mxrs-report: "

HEADER = "mxrs-launch: job summary"

_INTS = ("rank", "steps", "bytes_in", "bytes_out")  # keys whose values are counts
_NUMBERS = ("samples", "seconds")  # keys whose values may have a fraction
_ROLE_ORDER = {"worker": 0, "server": 1}
_MISSING = "-"
_LIMIT = 2**64  # counts are 64-bit; larger numbers are no report's


@dataclass(frozen=True)
class Report:
    """What one process reported; None for what it did not."""

    role: str | None = None
    rank: int | None = None
    steps: int | None = None
    samples: float | None = None
    seconds: float | None = None
    bytes_in: int | None = None
    bytes_out: int | None = None

    @property
    def name(self) -> str | None:
        """str: ``role rank`` (``worker 3``) when both were reported, else None."""
        if self.role is None or self.rank is None:
            return None
        return f"{self.role} {self.rank}"

    @property
    def samples_per_s(self) -> float | None:
        """float: samples / seconds, when both were reported and seconds > 0."""
        if self.samples is None or not self.seconds:
            return None
        return self.samples / self.seconds


def parse_report(text: bytes) -> Report | None:
    """The :class:`Report` in ``text`` (the JSON object after :data:`PREFIX`), or None when it
    is not one: bad JSON, not an object, or a known key with a value of the wrong type.

    Unknown keys are ignored, and so are known ones that are null. ``role`` must be a string;
    ``rank``, ``steps``, ``bytes_in`` and ``bytes_out`` integers and ``samples`` and
    ``seconds`` finite numbers, all in [0, 2**64).
    """
    try:
        obj = json.loads(text.decode())
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    role = obj.get("role")
    if role is not None and not isinstance(role, str):
        return None
    values: dict[str, Any] = {}
    for key in _INTS + _NUMBERS:
        value = obj.get(key)
        if value is None:  # not reported (missing or null)
            continue
        kinds = (int,) if key in _INTS else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value < _LIMIT:
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        values[key] = value
    return Report(role=role, **values)


def split_report(line: bytes) -> tuple[bytes | None, Report | None]:
    """Split a finished output line into (what to show, the report it ends with).

    A report usually is the whole line (nothing to show: None); text before the prefix (a
    progress bar drawn without a line end before the report came) is shown. A line without
    a valid report is shown as it is.
    """
    at = line.find(PREFIX)
    if at < 0:
        return line, None
    report = parse_report(line[at + len(PREFIX) :])
    if report is None:
        return line, None
    return (line[:at] or None), report


def format_bytes(n: float) -> str:
    """``n`` bytes in human units: ``512 B``, ``1.5 KiB``, ``12.3 MiB``, ``2.0 GiB``."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB"):
        n /= 1024
        if round(n, 1) < 1024:
            return f"{n:.1f} {unit}"
    return f"{n / 1024:.1f} GiB"


@dataclass
class _Process:
    """One label's process (the latest start of it) as the summary knows it."""

    role: str
    starts: int = 1
    returncode: int | None = None  # None while it runs
    stopped: bool = False  # still running when the launcher stopped the job
    reports: dict[str, Report] = field(default_factory=dict)  # row name -> latest report

    def status(self) -> str:
        """str: ``exit N``, ``signal N``, ``stopped`` or ``running``, and restarts."""
        if self.stopped:
            text = "stopped"
        elif self.returncode is None:
            text = "running"
        elif self.returncode < 0:
            text = f"signal {-self.returncode}"
        else:
            text = f"exit {self.returncode}"
        if self.starts > 1:
            text += f" (restarted {self.starts - 1}×)"
        return text


class JobSummary:
    """Collects, per process label, the exit status and report of a job's processes, and
    formats the summary table (thread-safe: every process's output is read by its own thread).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: dict[str, _Process] = {}

    def started(self, label: str, role: str) -> None:
        """``label`` (of ``role``) was started; a second start of a label is a restart, whose
        report replaces the previous process's (which is dropped)."""
        with self._lock:
            proc = self._procs.get(label)
            if proc is None:
                self._procs[label] = _Process(role)
            else:
                proc.starts += 1
                proc.returncode = None
                proc.stopped = False
                proc.reports.clear()

    def take(self, label: str, line: bytes) -> bytes | None:
        """Keep the report ``line`` of ``label`` ends with, if any; returns what of the line is
        still to be shown (None: nothing). The console's hook for each finished line."""
        shown, report = split_report(line)
        if report is not None:
            with self._lock:
                proc = self._procs.setdefault(label, _Process(report.role or ""))
                proc.reports[report.name or label] = report
        return shown

    def ended(self, label: str, returncode: int) -> None:
        """``label``'s process exited with ``returncode`` (negative: killed by that signal)."""
        with self._lock:
            proc = self._procs.setdefault(label, _Process(""))
            proc.returncode = returncode

    def stopping(self) -> None:
        """The launcher stops the job: every process still running is shown as stopped."""
        with self._lock:
            for proc in self._procs.values():
                if proc.returncode is None:
                    proc.stopped = True

    def format(self) -> list[str]:
        """The summary's lines: the header, one row per process (workers, servers, then the
        others) and the slowest worker, when at least two workers reported samples/s."""
        with self._lock:
            rows = sorted(self._rows(), key=_row_order)
            table = [[name, status, *_columns(role, report)] for name, role, status, report in rows]
        if not table:
            return []
        lines = [HEADER, *("  " + line for line in _align(table))]
        rates = [
            (rate, name)
            for name, role, _, report in rows
            if role == "worker" and report and (rate := report.samples_per_s) is not None
        ]
        if len(rates) >= 2:
            rate, name = min(rates, key=lambda r: r[0])
            lines.append(f"  slowest worker: {name} ({rate:.1f} samples/s)")
        return lines

    def _rows(self) -> list[tuple[str, str, str, Report | None]]:
        """(name, role, status, report) of each row: one per report of a label (one launch may
        run several processes, each reporting its own role and rank), or the label's own."""
        rows: list[tuple[str, str, str, Report | None]] = []
        for label, proc in self._procs.items():
            status = proc.status()
            if not proc.reports:
                rows.append((label, proc.role, status, None))
            for name, report in proc.reports.items():
                rows.append((name, report.role or proc.role, status, report))
        return rows


def _columns(role: str, report: Report | None) -> list[str]:
    """The cells after the status: what a process of ``role`` reports, ``-`` where it did not."""
    r = report or Report()
    if role == "worker":
        rate = r.samples_per_s
        return [
            f"steps {_MISSING if r.steps is None else r.steps}",
            f"samples/s {_MISSING if rate is None else f'{rate:.1f}'}",
        ]
    if role == "server":
        return [
            f"in {_MISSING if r.bytes_in is None else format_bytes(r.bytes_in)}",
            f"out {_MISSING if r.bytes_out is None else format_bytes(r.bytes_out)}",
        ]
    return []


def _row_order(row: tuple[str, str, str, Report | None]) -> tuple[int, int, str]:
    """Rows sort by role (workers, servers, the others), then by the number that ends the
    name (``worker 12`` after ``worker 2``), then by name."""
    name, role = row[0], row[1]
    last = name.rsplit(" ", 1)[-1]
    return (_ROLE_ORDER.get(role, 2), int(last) if last.isdigit() else -1, name)


def _align(table: list[list[str]]) -> list[str]:
    """Rows of cells as lines: each column padded to its widest cell, three spaces apart."""
    widths: list[int] = []
    for row in table:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(0)
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in table:
        lines.append("   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return lines
