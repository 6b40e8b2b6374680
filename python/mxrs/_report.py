"""A worker's end-of-job report for ``mxrs-launch``: steps, samples and their time span.

The launcher starts every process of a job with ``MXRS_REPORT=1``. A worker process
(``DMLC_ROLE=worker``) that imported this module then writes, once, as it exits, one line on
stderr::

    mxrs-report: {"role": "worker", "rank": 0, "steps": 93, "samples": 5952, "seconds": 12.5}

``steps`` and ``samples`` count the calls to :func:`record_step` and their batch sizes;
``seconds`` is the time from the first step to the last (0 with fewer than two steps); ``rank``
is ``DMLC_WORKER_ID`` (left out when it is not a number). The launcher takes the line out of
the job's output and shows it in its job summary (:mod:`mxrs.launcher.summary`).
"""

import atexit
import json
import os
import sys
import time

#: What starts a report line; a JSON object follows it.
PREFIX = "mxrs-report: "

_steps = 0
_samples: float = 0
_first: float | None = None  # time.monotonic() of the first step
_last: float | None = None  # ... and of the last one


def record_step(batch_size: float) -> None:
    """Count one training step of ``batch_size`` samples (cheap: called every step, from the
    training loop's thread; it takes no lock)."""
    global _steps, _samples, _first, _last
    now = time.monotonic()
    if _first is None:
        _first = now
    _last = now
    _steps += 1
    _samples += batch_size


def report() -> dict:
    """dict: this worker's report as it stands now (what :func:`line` writes)."""
    out: dict = {"role": "worker"}
    rank = os.environ.get("DMLC_WORKER_ID", "").strip()
    if rank.isdigit():
        out["rank"] = int(rank)
    seconds = 0.0 if _first is None or _last is None else _last - _first
    out.update(steps=_steps, samples=_samples, seconds=seconds)
    return out


def line() -> str:
    """str: the report line, without its line end."""
    return PREFIX + json.dumps(report(), separators=(", ", ": "))


def wanted() -> bool:
    """Whether this process writes its report: a worker of a job run by ``mxrs-launch``."""
    return (
        os.environ.get("MXRS_REPORT") == "1"
        and os.environ.get("DMLC_ROLE", "").strip().lower() == "worker"
    )


def _at_exit() -> None:
    if not wanted():
        return
    try:
        sys.stdout.flush()  # what the program printed comes first
    except (OSError, ValueError, AttributeError):
        pass
    try:
        sys.stderr.write(line() + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed or gone: nobody to tell
        pass


atexit.register(_at_exit)
