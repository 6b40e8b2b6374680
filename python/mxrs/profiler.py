"""``mx.profiler``: spans, counters and markers of the user's code, as a Chrome trace.

MXNet 1.9.1's API: :func:`set_config`, :func:`set_state`, :func:`pause`/:func:`resume`,
:func:`dump` (a ``chrome://tracing`` / Perfetto JSON file), :func:`dumps` (aggregate statistics)
and the profiling objects :class:`Domain`, :class:`Task`, :class:`Frame`, :class:`Event`,
:class:`Counter`, :class:`Marker`; plus :func:`state` and :func:`scope` (MXNet 2's scope).

What is recorded, while the state is 'run' and not paused: the user's Task/Frame/Event spans
(``start``/``stop`` or ``with``), Counter values and Markers, and the operators that run (see
below), each with a timestamp in microseconds (from ``time.perf_counter_ns``), the process id
and the thread id.

Operators are recorded as MXNet 1.9.1 names them (:mod:`mxrs._profiler_ops`), in the category
``operator``: with ``profile_imperative`` those of ``mx.nd`` and NDArray's arithmetic
(``sqrt``, ``_plus_scalar`` for ``a + 1``, ``_zeros`` for ``mx.nd.zeros``), with
``profile_symbolic`` each node an executor runs (``FullyConnected``); ``profile_all`` sets
both. A custom operator (``mx.operator.CustomOp``) is recorded in the category ``Custom
Operator``: ``OPTYPE::pure_python`` (its forward), ``_backward_OPTYPE::pure_python`` and
``OPTYPE::op`` for each operator its Python code runs. The ``profile_memory`` and
``profile_api`` options are accepted and record nothing. Nothing is hooked while the profiler
is off, so it costs nothing then.

``profile_process='server'`` is accepted everywhere and records nothing here: mxrs's parameter
servers are Rust processes, outside this Python profiler.

Examples
--------
>>> mx.profiler.set_config(filename="trace.json", aggregate_stats=True)
>>> mx.profiler.set_state("run")
>>> with mx.profiler.Domain("train").new_task("epoch"):
...     train_one_epoch()
>>> mx.profiler.set_state("stop")
>>> print(mx.profiler.dumps())
>>> mx.profiler.dump()                      # writes trace.json
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from . import _profiler_ops
from ._profiler_stats import SORT_KEYS, format_stats
from .base import InvalidUsageError, MXNetError

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "scope",
           "Domain", "Task", "Frame", "Event", "Counter", "Marker",
           "profiler_set_config", "profiler_set_state", "dump_profile"]  # fmt: skip

_DEFAULTS: dict[str, Any] = {
    "profile_all": False,
    "profile_symbolic": True,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "filename": "profile.json",
    "continuous_dump": True,
    "dump_period": 1.0,
    "aggregate_stats": False,
    "profile_process": "worker",
}
#: trace events kept between dumps; later ones are counted, not kept (memory stays bounded)
MAX_EVENTS = 1_000_000
_BOOL_KEYS = {k for k, v in _DEFAULTS.items() if isinstance(v, bool)}
_PROCESSES = ("worker", "server")
_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}

# The innermost :func:`scope`'s name in this thread / task (None outside any scope).
_scope: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mxrs_profiler_scope", default=None
)


class _Profiler:
    """The worker's profiler: configuration, state, trace events and aggregate statistics."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.config = dict(_DEFAULTS)
        self.running = False
        self.paused = False
        self.recording = False  # running and not paused: the one flag the hot paths read
        self.has_run = False  # set_state('run') since the last finishing dump
        self.events: list[dict[str, Any]] = []
        self.dropped = 0  # events not kept since the last finishing dump (past MAX_EVENTS)
        # (category, name) -> [count, total ms, min ms, max ms] / [count, last, min, max]
        self.spans: dict[tuple[str, str], list[float]] = {}
        self.counters: dict[tuple[str, str], list[int]] = {}

    def set_flags(self, running: bool | None = None, paused: bool | None = None) -> None:
        with self.lock:
            if running is not None:
                self.running = running
                self.has_run = self.has_run or running
            if paused is not None:
                self.paused = paused
            self.recording = self.running and not self.paused
        self.sync_operators()

    def sync_operators(self) -> None:
        """Have operators timed as the state and the ``profile_*`` options say."""
        c = self.config
        _profiler_ops.configure(
            imperative=self.recording and (c["profile_all"] or c["profile_imperative"]),
            symbolic=self.recording and (c["profile_all"] or c["profile_symbolic"]),
            sink=self.add_operator,
        )

    def add_operator(self, name: str, cat: str, t0: int, t1: int) -> None:
        """Record the span of an operator (``_profiler_ops``'s sink)."""
        self.add_span(name, cat, t0, t1, 0, _scope.get())

    def add(self, name: str, cat: str, ph: str, ts_ns: int, tid: int = 0, **fields: Any) -> bool:
        """Append a trace event (``tid`` 0: this thread's) while recording; whether it did."""
        tid = tid or threading.get_native_id()
        event = dict(name=name, cat=cat, ph=ph, ts=ts_ns / 1000, pid=os.getpid(), tid=tid, **fields)
        with self.lock:
            if self.recording:
                if len(self.events) < MAX_EVENTS:
                    self.events.append(event)
                else:
                    if not self.dropped:
                        warnings.warn(
                            f"mx.profiler: {MAX_EVENTS} trace events are held; later ones are "
                            "dropped until the next dump(finished=True)",
                            stacklevel=4,
                        )
                    self.dropped += 1
            return self.recording

    def add_span(self, name: str, cat: str, t0: int, t1: int, tid: int, where: str | None) -> None:
        extra = {} if where is None else {"args": {"scope": where}}
        if not self.add(name, cat, "X", t0, tid, dur=(t1 - t0) / 1000, **extra):
            return
        if self.config["aggregate_stats"]:
            ms = (t1 - t0) / 1e6
            with self.lock:
                s = self.spans.setdefault((cat, name), [0, 0.0, ms, ms])
                s[0], s[1], s[2], s[3] = s[0] + 1, s[1] + ms, min(s[2], ms), max(s[3], ms)

    def add_counter(self, name: str, cat: str, value: int) -> None:
        if not self.add(name, cat, "C", time.perf_counter_ns(), args={name: value}):
            return
        if self.config["aggregate_stats"]:
            with self.lock:
                c = self.counters.setdefault((cat, name), [0, value, value, value])
                c[0], c[1], c[2], c[3] = c[0] + 1, value, min(c[2], value), max(c[3], value)


_prof = _Profiler()


def _check_process(profile_process: str, what: str) -> bool:
    """Whether ``profile_process`` is the worker (this process); an error if neither."""
    if profile_process not in _PROCESSES:
        raise MXNetError(
            f"{what}: profile_process must be 'worker' or 'server', got {profile_process!r}"
        )
    return profile_process == "worker"


def _parse(key: str, value: Any) -> Any:
    if key in _BOOL_KEYS:
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in ("0", "1", "true", "false"):
            return text in ("1", "true")
        raise MXNetError(f"Invalid Parameter format for {key} expect boolean but value={value!r}")
    if key == "dump_period":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise MXNetError(
                f"Invalid Parameter format for dump_period expect float but value={value!r}"
            ) from None
    if key == "profile_process":
        if value not in _PROCESSES:
            raise MXNetError(f"Invalid Input: {value!r}, valid values are: {{'server', 'worker'}}")
        return value
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)  # filename


def set_config(**kwargs: Any) -> None:
    """Configure the profiler (keyword arguments only; each is checked before any is applied).

    Parameters
    ----------
    filename : str, default 'profile.json'
        The file :func:`dump` writes.
    aggregate_stats : bool, default False
        Keep per-name statistics for :func:`dumps`.
    profile_imperative : bool, default True
        Record the operators run imperatively (``mx.nd``, NDArray arithmetic).
    profile_symbolic : bool, default True
        Record the operators executors run.
    profile_all : bool, default False
        Both of the above.
    profile_memory, profile_api : bool
        Accepted for MXNet's scripts; mxrs records no memory or API events.
    continuous_dump : bool, dump_period : float
        Accepted; the trace is written by :func:`dump` only.
    profile_process : {'worker', 'server'}, default 'worker'
        'server' configures nothing here (the servers are Rust processes).

    Raises
    ------
    MXNetError
        For an unknown argument (the message lists the known ones) or a value of the wrong
        kind, as MXNet does.
    """
    for key in kwargs:
        if key not in _DEFAULTS:
            raise MXNetError(
                f"Cannot find argument {key!r}, Possible Arguments: {', '.join(_DEFAULTS)}"
            )
    parsed = {k: _parse(k, v) for k, v in kwargs.items()}
    if parsed.get("profile_process", "worker") == "server":
        return
    with _prof.lock:
        _prof.config.update(parsed)
    _prof.sync_operators()


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start ('run') or stop ('stop') recording. 'run' also ends a :func:`pause`, as in
    MXNet.

    Raises
    ------
    MXNetError
        For a state other than 'run' and 'stop', or a process other than 'worker' / 'server'.
    """
    if state not in ("run", "stop"):
        raise MXNetError(f"set_state: state must be 'run' or 'stop', got {state!r}")
    if _check_process(profile_process, "set_state"):
        run = state == "run"
        _prof.set_flags(running=run, paused=False if run else None)


def state() -> str:
    """The worker's profiler state: 'run' or 'stop' (an mxrs addition; pausing keeps 'run')."""
    return "run" if _prof.running else "stop"


def pause(profile_process: str = "worker") -> None:
    """Stop recording until :func:`resume`, without leaving the 'run' state."""
    if _check_process(profile_process, "pause"):
        _prof.set_flags(paused=True)


def resume(profile_process: str = "worker") -> None:
    """Record again after :func:`pause`."""
    if _check_process(profile_process, "resume"):
        _prof.set_flags(paused=False)


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace recorded so far to the configured ``filename``.

    The file is Chrome's trace format, ``{"traceEvents": [...], "displayTimeUnit": "ms"}``,
    for ``chrome://tracing`` or Perfetto: spans are complete events (``"ph": "X"``), counter
    values ``"C"`` events, markers instant (``"i"``) events; categories are the domain's name,
    ``"DOMAIN,frame"``, ``"event"`` and ``"DOMAIN,instant_marker"`` as in MXNet.

    Parameters
    ----------
    finished : bool, default True
        End this profiling session: the profiler stops and the written events are dropped, so
        a later dump needs ``set_state('run')`` again. With False the events are kept and a
        later dump writes them again with the newer ones.
    profile_process : {'worker', 'server'}
        'server' writes nothing here.

    Raises
    ------
    MXNetError
        When the profiler has not run since the last finishing dump, or the file cannot be
        written.
    """
    if not _check_process(profile_process, "dump"):
        return
    with _prof.lock:
        if not _prof.has_run:
            raise MXNetError(
                "dump: the profiler hasn't been run: configure it with set_config "
                "and start it with set_state('run') first"
            )
        events = list(_prof.events)
        dropped = _prof.dropped
        filename = _prof.config["filename"]
    args: dict[str, Any] = {"name": "mxrs"}
    if dropped:
        args["dropped_events"] = dropped
    meta = {"name": "process_name", "ph": "M", "pid": os.getpid(), "args": args}
    try:
        with open(filename, "w") as f:
            json.dump({"traceEvents": [meta, *events], "displayTimeUnit": "ms"}, f, indent=1)
    except OSError as e:
        raise MXNetError(f"dump: cannot write the profile to {filename!r}: {e}") from e
    if finished is True:
        with _prof.lock:
            del _prof.events[: len(events)]
            _prof.dropped = 0
            _prof.has_run = False
        _prof.set_flags(running=False)


def dumps(
    reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False
) -> str:
    """The aggregate statistics, when ``aggregate_stats`` was set ('' otherwise).

    Spans are listed per category with count and total / min / max / average time in
    milliseconds, counters with count and last / min / max value.

    Parameters
    ----------
    reset : bool, default False
        Clear the statistics after reading them.
    format : {'table', 'json'}
    sort_by : {'total', 'avg', 'min', 'max', 'count'}
        Order of the spans within a category.
    ascending : bool, default False

    Raises
    ------
    InvalidUsageError
        (an ``AssertionError``, as MXNet raises) for a value outside those listed.
    """
    for what, value, allowed in (
        ("format", format, ("table", "json")),
        ("sort_by", sort_by, tuple(SORT_KEYS)),
        ("ascending", ascending, (False, True)),
        ("reset", reset, (False, True)),
    ):
        if value not in allowed:
            support = ", ".join(map(repr, allowed))
            raise InvalidUsageError(
                f"Invalid value provided for {what}: {value}. Support: {support}"
            )
    with _prof.lock:
        if not _prof.config["aggregate_stats"]:
            return ""
        spans = {k: list(v) for k, v in _prof.spans.items()}
        counters = {k: list(v) for k, v in _prof.counters.items()}
        if reset:
            _prof.spans.clear()
            _prof.counters.clear()
    return format_stats(spans, counters, format, sort_by, ascending)


@contextlib.contextmanager
def scope(name: str = "<unk>:", append_mode: bool = False) -> Iterator[None]:
    """Name the spans that start inside the ``with`` block (MXNet 2's profiler scope).

    Each span recorded in the block carries ``{"scope": NAME}`` in its trace ``args``. Names
    end with ':'; with ``append_mode`` the name is appended to the enclosing scope's.
    """
    name = name if name.endswith(":") else name + ":"
    outer = _scope.get()
    token = _scope.set(outer + name if append_mode and outer is not None else name)
    try:
        yield
    finally:
        _scope.reset(token)


class Domain:
    """A group of profiling objects: the category of their trace events.

    Parameters
    ----------
    name : str
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> Task:
        """A :class:`Task` of this domain."""
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        """A :class:`Frame` of this domain."""
        return Frame(self, name)

    def new_counter(self, name: str, value: int | None = None) -> Counter:
        """A :class:`Counter` of this domain, set to ``value`` when one is given."""
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        """A :class:`Marker` of this domain."""
        return Marker(self, name)


class _Span:
    """A timed region between :meth:`start` and :meth:`stop` (or a ``with`` block).

    A region is recorded when the profiler records both at its start and at its stop.
    """

    def __init__(self, name: str, category: str) -> None:
        self.name = name
        self._category = category
        self._t0: int | None = None
        self._live = False
        self._tid = 0
        self._where: str | None = None

    def start(self) -> None:
        """Start timing (a second start restarts the region)."""
        self._live = _prof.recording
        self._tid = threading.get_native_id()
        self._where = _scope.get()
        self._t0 = time.perf_counter_ns()

    def stop(self) -> None:
        """Stop timing and record the region.

        Raises
        ------
        MXNetError
            When the region was not started.
        """
        t1 = time.perf_counter_ns()
        if self._t0 is None:
            raise MXNetError(f"{type(self).__name__} {self.name!r} stopped without being started")
        t0, self._t0 = self._t0, None
        if self._live and _prof.recording:
            _prof.add_span(self.name, self._category, t0, t1, self._tid, self._where)

    def __enter__(self) -> _Span:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Span):
    """A unit of work of a domain; every pass is recorded and aggregated under its name.

    Parameters
    ----------
    domain : Domain
    name : str
    """

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(name, domain.name)


class Frame(_Span):
    """A frame of a domain (category ``DOMAIN,frame``): a recurring period, such as one batch.

    Parameters
    ----------
    domain : Domain
    name : str
    """

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(name, f"{domain.name},frame")


class Event(_Span):
    """A timed region outside any domain (category ``event``).

    Parameters
    ----------
    name : str
    """

    def __init__(self, name: str) -> None:
        super().__init__(name, "event")


class Counter:
    """A value that changes over time; each change while recording is a trace event.

    Parameters
    ----------
    domain : Domain
    name : str
    value : int, optional
        The first value (the counter starts at 0 otherwise).
    """

    def __init__(self, domain: Domain, name: str, value: int | None = None) -> None:
        self.name = name
        self._category = domain.name
        self._value = 0
        if value is not None:
            self.set_value(value)

    @property
    def value(self) -> int:
        """The current value."""
        return self._value

    def _changed(self) -> None:
        if _prof.recording:
            _prof.add_counter(self.name, self._category, self._value)

    def set_value(self, value: int) -> None:
        """Set the counter to ``value``."""
        self._value = int(value)
        self._changed()

    def increment(self, delta: int = 1) -> None:
        """Add ``delta``."""
        self._value += int(delta)
        self._changed()

    def decrement(self, delta: int = 1) -> None:
        """Subtract ``delta``."""
        self._value -= int(delta)
        self._changed()

    def __iadd__(self, delta: int) -> Counter:
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> Counter:
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """An instant in time (category ``DOMAIN,instant_marker``).

    Parameters
    ----------
    domain : Domain
    name : str
    """

    def __init__(self, domain: Domain, name: str) -> None:
        self.name = name
        self.domain = domain

    def mark(self, scope: str = "process") -> None:
        """Record the instant; ``scope`` is 'global', 'process', 'thread', 'task' or 'marker'
        (the trace's instant scope: global, process or thread).

        Raises
        ------
        MXNetError
            For another scope.
        """
        s = _MARKER_SCOPES.get(scope)
        if s is None:
            raise MXNetError(
                f"Marker.mark: scope must be one of {list(_MARKER_SCOPES)}, got {scope!r}"
            )
        if _prof.recording:
            cat = f"{self.domain.name},instant_marker"
            _prof.add(self.name, cat, "i", time.perf_counter_ns(), s=s)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"profiler.{old}() is deprecated. Please use profiler.{new}() instead",
        DeprecationWarning,
        stacklevel=3,
    )


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated: ``set_config(profile_<mode>=True, filename=filename)``."""
    _deprecated("profiler_set_config", "set_config")
    set_config(**{"profile_" + mode: True, "filename": filename})


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated: :func:`set_state`."""
    _deprecated("profiler_set_state", "set_state")
    set_state(state)


def dump_profile() -> None:
    """Deprecated: ``dump(True)``."""
    _deprecated("dump_profile", "dump")
    dump(True)
