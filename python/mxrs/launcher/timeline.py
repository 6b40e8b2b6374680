"""One timeline for a whole job: each worker's Chrome trace, merged when the job ends.

When the launcher's environment, ``--env`` or ``--env-worker`` sets ``MXRS_TIMELINE=F``, worker
``r`` is started with ``MXRS_TIMELINE=F.parts/worker<r>.json`` (``F`` made absolute from the
launcher's working directory) and writes its own trace there (:mod:`mxrs.timeline`). When the job
ends, however it ends, the launcher merges the part files that exist into ``F``: every worker keeps
its events and its pid (its rank), and each part is shifted onto the wall clock, which is the only
clock the workers share (each part's timestamps count from its own start, whose wall-clock time it
records as ``otherData.wall_start_us``). A missing or unreadable part is skipped with a warning.

The merge reads the part files from the launcher's own file system: it sees them for local
jobs, and for remote ones (ssh) only where the workers write to a file system the launching
host shares (the path is the same absolute path on every host). The batch launchers (mpi, sge,
yarn, slurm), which set each worker's rank in a shim, do not give workers part files: they
refuse ``MXRS_TIMELINE`` (:mod:`.clashes`).
"""

import json
import os
import sys
from dataclasses import dataclass

from .. import timeline

ENV = timeline.ENV


@dataclass
class Parts:
    """Where a job's workers write their traces and where the merged one goes."""

    target: str
    num_workers: int

    def path(self, rank):
        """str: the part file of worker ``rank``."""
        return part_path(self.target, rank)


def part_path(target, rank):
    """str: the part file worker ``rank`` writes for merged file ``target``."""
    return f"{target}.parts/worker{rank}.json"


def requested(job):
    """Parts of ``job``, or None when no timeline is asked for (``MXRS_TIMELINE`` from
    ``--env-worker``, else ``--env``, else the launcher's environment)."""
    source = next((e for e in (job.env_worker, job.extra_env) if ENV in e), os.environ)
    target = source.get(ENV, "").strip()
    if not target:
        return None
    return Parts(os.path.abspath(target), job.num_workers)


def worker_env(job, rank):
    """dict: what worker ``rank``'s environment gets for the timeline (empty when none)."""
    parts = requested(job)
    return {} if parts is None else {ENV: parts.path(rank)}


def prepare(job):
    """Before the job starts: remove part files a previous job left; returns the job's
    :class:`Parts`, or None when no timeline is asked for."""
    parts = requested(job)
    if parts is not None:
        for rank in range(parts.num_workers):
            try:
                os.remove(parts.path(rank))
            except FileNotFoundError:
                pass
            except OSError as e:
                print(f"mxrs-launch: could not remove the old timeline part {e}", file=sys.stderr)
    return parts


def load_part(path):
    """A part file's trace; raises ValueError (or OSError) saying what is wrong with it."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("no traceEvents list")
    other = doc.get("otherData")
    anchor = other.get("wall_start_us") if isinstance(other, dict) else None
    if not isinstance(anchor, int) or isinstance(anchor, bool):
        raise ValueError("no otherData.wall_start_us")
    if not all(isinstance(e, dict) for e in doc["traceEvents"]):
        raise ValueError("an event is not a JSON object")
    return doc


def merge_docs(docs):
    """One trace of part traces ``docs``: each shifted by its wall-clock start, so that time 0
    is the earliest worker's start (``otherData.wall_start_us`` of the result)."""
    origin = min(d["otherData"]["wall_start_us"] for d in docs)
    events = []
    dropped = 0
    for d in docs:
        shift = d["otherData"]["wall_start_us"] - origin
        dropped += int(d["otherData"].get("dropped_events", 0))
        for e in d["traceEvents"]:
            if "ts" in e:
                e = {**e, "ts": e["ts"] + shift}
            events.append(e)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"wall_start_us": origin, "workers": len(docs), "dropped_events": dropped},
    }


def merge(parts, err=None):
    """Merge the part files of ``parts`` (from :func:`prepare`; None: nothing to do) into its
    target, saying so on ``err`` (default stderr); returns how many workers' traces it holds.

    Never raises for a part: a missing or unreadable one is skipped with a warning naming it.
    """
    if parts is None:
        return 0
    err = err or sys.stderr
    if not any(os.path.exists(parts.path(r)) for r in range(parts.num_workers)):
        print(f"mxrs-launch: no worker wrote a timeline (for {parts.target})", file=err)
        return 0
    docs, used = [], []
    for rank in range(parts.num_workers):
        path = parts.path(rank)
        try:
            docs.append(load_part(path))
            used.append(path)
        except FileNotFoundError:
            print(f"mxrs-launch: worker {rank} wrote no timeline ({path}); skipped", file=err)
        except (OSError, ValueError) as e:
            print(f"mxrs-launch: timeline part {path} is unreadable ({e}); skipped", file=err)
    if not docs:
        print(f"mxrs-launch: no readable worker timeline (for {parts.target})", file=err)
        return 0
    try:
        timeline.write(parts.target, merge_docs(docs))
    except OSError as e:
        print(f"mxrs-launch: could not write the timeline {parts.target}: {e}", file=err)
        return 0
    _remove(used, os.path.dirname(used[0]))
    n = len(docs)
    what = f"{n} worker" if n == 1 else f"{n} workers"
    print(f"mxrs-launch: timeline of {what} written to {parts.target}", file=err)
    return n


def _remove(paths, folder):
    """Remove merged part files, and their folder once empty (best effort)."""
    for p in paths:
        try:
            os.remove(p)
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass
