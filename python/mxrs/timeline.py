"""A worker's timeline as a Chrome trace (``MXRS_TIMELINE=file.json``; Perfetto, chrome://tracing).

With ``MXRS_TIMELINE`` set (read once, when mxrs is imported) a worker records:

* ``forward``: the outermost Gluon ``Block.__call__`` (not the child blocks it calls);
* ``backward``: ``autograd.backward`` and ``NDArray.backward``;
* ``step``: ``Trainer.step`` (``allreduce_grads`` and ``update`` as spans of their own name);
* ``push`` / ``pull``: each key of each distributed KVStore request, with ``args`` ``key``,
  ``bytes`` (the value as sent or received) and ``wait_us`` (how long the caller was blocked
  waiting for the request; one request carries many keys, which share its wait). A pushpull
  gives each key a ``push`` and a ``pull`` span. Such a span runs from when the request was
  made to when this worker saw it complete (waited for it, or found it done, which may be
  later than it completed); they lie on a lane of their own (tid 1), since requests overlap.

While tracing, ``step`` and ``allreduce_grads`` end once every KVStore request made so far is
complete: the new weights a step pulls would otherwise be waited for by the next forward pass,
and the step would look shorter than it is (so the next forward no longer overlaps their
arrival). With ``Trainer(overlap=True)`` the requests sent while backward runs begin there.
Only workers (and processes outside a job) record; schedulers and servers never do.

The file is written at exit (when anything was recorded) and by :func:`flush`, atomically,
as ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``: complete
(``"X"``) events with timestamps in whole microseconds since the process imported mxrs, pid
the worker's rank (``DMLC_WORKER_ID``, else 0), and in ``otherData`` the wall-clock time of
timestamp 0 (``wall_start_us``, microseconds since the epoch) so that workers' files can be put
on one clock (``mxrs-launch`` does so), and ``dropped_events``: at most :data:`MAX_EVENTS`
events are kept, the later ones only counted.

When ``MXRS_TIMELINE`` is not set nothing is recorded and the hooks are the functions
themselves: :func:`traced` returns the function it decorates unchanged.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "ENV",
    "KV_TID",
    "MAX_EVENTS",
    "active",
    "document",
    "flush",
    "now",
    "record",
    "traced",
    "write",
]

#: The environment variable naming the trace file.
ENV = "MXRS_TIMELINE"
#: Most events kept in memory; later ones are counted as dropped.
MAX_EVENTS = 1_000_000
#: The thread id of the KVStore requests' lane.
KV_TID = 1

_F = TypeVar("_F", bound=Callable[..., Any])


def _rank() -> int:
    """This worker's rank from ``DMLC_WORKER_ID`` (0 outside a job or when it is not a number)."""
    try:
        return max(0, int(os.environ.get("DMLC_WORKER_ID", "0")))
    except ValueError:
        return 0


def _target() -> str | None:
    """The trace file this process writes, or None: not asked for, or not a worker's process."""
    path = os.environ.get(ENV, "").strip()
    role = os.environ.get("DMLC_ROLE", "").strip().lower()
    return path if path and role in ("", "worker") else None


_path = _target()
#: bool: whether this process records a timeline (read-only: set from the environment).
active = _path is not None
_rank_id = _rank()
_pid = os.getpid()
# One event: (name, cat, start_ns, end_ns, tid, args)
_events: list[tuple[str, str, int, int, int, dict[str, Any] | None]] = []
_dropped = 0
_threads: dict[int, str] = {0: "main", KV_TID: "kvstore requests"}
_lock = threading.Lock()
# taken together: perf_counter's origin for this file, and the wall clock at that moment
_perf0 = time.perf_counter_ns()
_wall0_us = time.time_ns() // 1000

now = time.perf_counter_ns
"""int: the current time in nanoseconds, on the clock the timeline records."""


def _tid() -> int:
    """The calling thread's lane: 0 for the main thread, else its native id (named once)."""
    if threading.current_thread() is threading.main_thread():
        return 0
    tid = threading.get_native_id()
    if tid not in _threads:
        _threads[tid] = threading.current_thread().name
    return tid


def record(
    name: str,
    cat: str,
    start_ns: int,
    end_ns: int,
    args: dict[str, Any] | None = None,
    tid: int | None = None,
) -> None:
    """Add one complete span from ``start_ns`` to ``end_ns`` (:func:`now` readings).

    ``tid`` is the lane (default: the calling thread's). Does nothing unless :data:`active`;
    beyond :data:`MAX_EVENTS` events the span is only counted.
    """
    global _dropped
    if not active:
        return
    lane = _tid() if tid is None else tid
    with _lock:
        if len(_events) < MAX_EVENTS:
            _events.append((name, cat, start_ns, end_ns, lane, args))
        else:
            _dropped += 1


def traced(
    name: str, cat: str = "python", after: Callable[[], Any] | None = None
) -> Callable[[_F], _F]:
    """Decorator: record each outermost call of the function as a span called ``name``.

    Calls made while one is already running on the same thread (a child block's ``__call__``
    inside its parent's) are not recorded. ``after`` runs at the end of a recorded call that
    returned normally, inside the span. Without a timeline the function is returned as it is.
    """

    def decorate(func: _F) -> _F:
        if not active:
            return func
        depth = threading.local()

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if getattr(depth, "n", 0):
                return func(*args, **kwargs)
            depth.n = 1
            start = now()
            try:
                out = func(*args, **kwargs)
                if after is not None:
                    after()
                return out
            finally:
                depth.n = 0
                record(name, cat, start, now())

        return wrapper  # type: ignore[return-value]

    return decorate


def _us(ns: int, up: bool = False) -> int:
    """Nanoseconds since the file's origin, in whole microseconds (rounded ``up`` or down)."""
    d = ns - _perf0
    return -(-d // 1000) if up else d // 1000


def _meta(pid: int, tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A metadata (``"M"``) event."""
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def document() -> dict[str, Any]:
    """The trace recorded so far, as the JSON object the file holds."""
    pid = _rank_id
    meta = [
        _meta(pid, 0, "process_name", {"name": f"worker {pid}"}),
        _meta(pid, 0, "process_sort_index", {"sort_index": pid}),
    ]
    with _lock:
        events = list(_events)
        threads = dict(_threads)
        dropped = _dropped
    meta += [_meta(pid, t, "thread_name", {"name": n}) for t, n in threads.items()]
    spans = []
    for name, cat, start, end, tid, args in events:
        ts = _us(start)
        spans.append(
            {
                "name": name,
                "cat": cat,
                "ph": "X",
                "ts": ts,
                "dur": _us(end, up=True) - ts,
                "pid": pid,
                "tid": tid,
                "args": args or {},
            }
        )
    return {
        "traceEvents": meta + spans,
        "displayTimeUnit": "ms",
        "otherData": {"rank": pid, "wall_start_us": _wall0_us, "dropped_events": dropped},
    }


def write(path: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` as JSON to ``path`` atomically (a temporary file, then a rename); creates
    the folder if needed."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def flush() -> str | None:
    """Write the trace recorded so far to the ``MXRS_TIMELINE`` file now (it is written again,
    whole, at exit); returns its path, or None when no timeline is recorded."""
    if _path is None:
        return None
    write(_path, document())
    return _path


def _flush_at_exit() -> None:
    """At exit: write the trace, if anything was recorded (a process that only imported mxrs,
    such as ``mxrs-launch`` itself, writes nothing) and this is the worker's own process, not a
    child of it (forked, or started by multiprocessing), which would overwrite its file."""
    if not (_events or _dropped) or os.getpid() != _pid:
        return
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.parent_process() is not None:
        return
    try:
        flush()
    except Exception as e:  # noqa: BLE001  (exiting: say what was lost, do not fail)
        print(f"mxrs: could not write the timeline {_path!r}: {e}", file=sys.stderr)


if active:
    atexit.register(_flush_at_exit)
