"""Starting a job's scheduler and learning the port it listens on.

The scheduler binds ``DMLC_PS_ROOT_PORT``, where 0 takes any free port, and once listening writes
the port as one line to the path in ``MXRS_ANNOUNCE``. :func:`start_scheduler` hands it the write
end of a pipe as ``/dev/fd/N`` and reads that line within a time limit, so the port is the
scheduler's own (nothing can take it between a guess and the bind) and the scheduler is already
listening when the servers and workers start. A scheduler that fails first ends the wait at once:
its end of the pipe closes when it exits.
"""

import os
import select
import subprocess
import time

from .job import LaunchError

#: The scheduler's setting naming where it writes its port.
ANNOUNCE_VAR = "MXRS_ANNOUNCE"
#: Seconds a scheduler has to start and announce its port.
START_TIMEOUT_S = 60.0
_EXIT_WAIT_S = 10.0  # for a scheduler whose pipe closed to be seen exiting
_LINE_MAX = 32  # bytes: a port line is at most 6


class SchedulerStartError(LaunchError):
    """The scheduler exited, or said nothing usable, before announcing its port.

    ``status`` is its exit status when it exited (negative: killed by that signal), else None.
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def start_scheduler(argv, env, timeout=START_TIMEOUT_S, popen=subprocess.Popen, **kwargs):
    """Start the scheduler ``argv`` with environment ``env`` and wait for the port it announces.

    ``popen(argv, env=..., pass_fds=..., **kwargs)`` starts the process (default
    :class:`subprocess.Popen`); ``env`` gets ``MXRS_ANNOUNCE=/dev/fd/N`` for the pipe's write end,
    which is passed to the process and closed here. Returns ``(process, port)``. When the
    scheduler exits, closes the pipe without a port line, writes something else, or has not
    announced within ``timeout`` seconds, the process is killed (if still running) and
    :class:`SchedulerStartError` says which.
    """
    read_fd, write_fd = os.pipe()
    try:
        proc = popen(
            argv, env={**env, ANNOUNCE_VAR: f"/dev/fd/{write_fd}"}, pass_fds=(write_fd,), **kwargs
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # the scheduler holds the only write end: its exit means EOF here
    try:
        return proc, _read_port(read_fd, proc, timeout)
    except BaseException:
        _kill(proc)
        raise
    finally:
        os.close(read_fd)


def _read_port(fd, proc, timeout):
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
        if not ready:
            raise SchedulerStartError(
                f"the scheduler did not announce its port within {timeout:g} s"
            )
        chunk = os.read(fd, 64)
        if not chunk:
            raise _closed(proc, data)
        data += chunk
        if len(data) > _LINE_MAX:
            break
    line = data.split(b"\n", 1)[0]
    if not line.isdigit() or not 0 < int(line) < 65536:
        raise SchedulerStartError(f"the scheduler announced {line[:_LINE_MAX]!r}, not a port")
    return int(line)


def _closed(proc, data):
    """The error for a pipe that closed before a whole port line came."""
    try:
        status = proc.wait(timeout=_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        said = f" after {data!r}" if data else ""
        return SchedulerStartError(
            f"the scheduler closed its announcement pipe{said} without announcing its port"
        )
    how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
    return SchedulerStartError(f"the scheduler {how} before announcing its port", status)


def _kill(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()
