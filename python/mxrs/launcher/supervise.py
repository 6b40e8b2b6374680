"""Runs the processes of a job: prefixed output, and the whole job ends on the first failure
(unless it is a worker, or a server whose keys have backups, with restarts left, which is started
again with the same rank); a process killed by a signal is named as the failure over one that
exited with an error status just before it (its consequence). When the job ends, a summary: each
process's exit status and report.
"""

import collections
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from .console import Console
from .job import LaunchError
from .summary import JobSummary

_GRACE_S = 5.0  # between SIGTERM and SIGKILL when stopping the job
_DRAIN_S = 60.0  # for servers and scheduler to exit after the last worker finished
# After a process that exited with an error status, how long another that was killed by a signal
# may take to be seen: a killed node is the job's cause, the error exits that follow (the
# scheduler's "job failed", a worker's lost node) its consequences.
_CAUSE_S = 1.0


def _exit_status(code):
    """A process's exit status as a shell shows it: 128 + the signal that killed it."""
    return code if code >= 0 else 128 - code


class Supervisor:
    """Starts processes in their own process groups and watches them.

    Every output line is written to ``out`` prefixed with the process's label. :meth:`wait`
    returns 0 once every worker exited 0 and the other processes ended by themselves; on the
    first process to fail (or on SIGINT/SIGTERM to this process) every process group started here
    is terminated, the failing process's last lines are repeated, and its status is returned. A
    worker started with ``restarts`` left is started again instead, with the same command and
    environment (its rank), and the job goes on.

    Every process is started with ``MXRS_REPORT=1``: the ``mxrs-report:`` line a process may
    write as it exits is taken out of its output, and when :meth:`wait` ends, a summary of
    the processes' exit statuses and reports is written to ``err`` (:mod:`.summary`).
    """

    def __init__(self, out=None, err=None, progress="worker0"):
        self._summary = JobSummary()
        self._console = Console(out or sys.stdout.buffer, progress, take=self._summary.take)
        self._err = err or sys.stderr
        self._procs: list[tuple[str, str, subprocess.Popen, collections.deque[bytes]]] = []
        self._pumps: dict[str, threading.Thread] = {}  # label -> the thread copying its output
        # (label, exit status) of each process that ended; (None, None) for a signal to stop
        self._exits: queue.Queue[tuple[str | None, int | None]] = queue.Queue()
        # label -> (role, argv, env, stdin, restarts left, restarts allowed) of restartable ones
        self._again: dict[str, tuple[str, list, dict, bytes | None, int, int]] = {}
        self._expendable: set[str] = set()

    def start(self, label, role, argv, env, stdin=None, pass_fds=(), restarts=0, expendable=False):
        """Start ``argv`` with environment ``env``; ``role`` 'worker' marks the job's workers.

        ``stdin`` bytes are written to the process, whose stdin then stays open until the job
        ends (closing it is how remote launchers learn to stop). ``pass_fds`` are descriptors
        the process inherits (the scheduler's announcement pipe). A worker that fails is started
        again up to ``restarts`` times, and so is an ``expendable`` process (a server whose keys
        have backups), which otherwise does not end the job when it fails: the scheduler says
        whether it can go on. The process's environment also gets ``MXRS_REPORT=1``.
        """
        env = {**env, "MXRS_REPORT": "1"}
        try:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                pass_fds=pass_fds,
            )
        except OSError as e:
            self._terminate()
            raise LaunchError(f"{label}: cannot start {argv[0]}: {e.strerror}") from None
        if proc.stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        tail: collections.deque[bytes] = collections.deque(maxlen=20)
        self._procs.append((label, role, proc, tail))
        self._summary.started(label, role)
        if expendable:
            self._expendable.add(label)
        restartable = role == "worker" or expendable
        if restarts and restartable and label not in self._again:
            self._again[label] = (role, list(argv), dict(env), stdin, restarts, restarts)
        pump = threading.Thread(target=self._pump, args=(label, proc, tail), daemon=True)
        self._pumps[label] = pump
        pump.start()
        return proc

    def _pump(self, label, proc, tail):
        fd = proc.stdout.fileno()
        # the tail keeps finished lines as they ended, without redraws
        while chunk := os.read(fd, 65536):
            tail.extend(line + b"\n" for line in self._console.feed(label, chunk))
        tail.extend(line + b"\n" for line in self._console.close(label))
        proc.stdout.close()
        code = proc.wait()
        self._summary.ended(label, code)  # before the watcher hears of it (restarts)
        self._exits.put((label, code))

    def say(self, msg):
        """Write ``mxrs-launch: msg`` to the launcher's stderr, above any live progress lines."""
        self._say(msg)

    def _say(self, msg):
        self._console.message(f"mxrs-launch: {msg}", self._err)

    def wait(self):
        """Supervise until the job ends; returns the job's exit status."""
        caught: list[int] = []  # the signal that stops the job, once one came
        previous = {}

        def on_signal(signum, _frame):
            caught.append(signum)
            self._exits.put((None, None))

        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                previous[s] = signal.signal(s, on_signal)
        try:
            return self._watch(caught)
        finally:
            self._print_summary()
            for s, h in previous.items():
                signal.signal(s, h)

    def _print_summary(self):
        """Write the job summary, once every process's output ended (or a grace passed)."""
        deadline = time.monotonic() + _GRACE_S
        for pump in list(self._pumps.values()):
            pump.join(max(0.0, deadline - time.monotonic()))
        lines = self._summary.format()
        if lines:
            self._console.message("\n".join(lines), self._err)

    def _watch(self, caught):
        workers = {label for label, role, _, _ in self._procs if role == "worker"}
        running = {label for label, _, _, _ in self._procs}
        while running:
            try:
                label, code = self._exits.get(timeout=None if workers else _DRAIN_S)
            except queue.Empty:
                self._say(
                    f"{', '.join(sorted(running))} still running {_DRAIN_S:.0f} s after "
                    "the last worker finished; stopping them"
                )
                self._terminate()
                return 1
            if caught:
                self._say(f"interrupted (signal {caught[0]}); stopping the job")
                self._terminate()
                return 128 + caught[0]
            assert label is not None and code is not None  # only a signal puts (None, None)
            running.discard(label)
            workers.discard(label)
            if code != 0:
                status = _exit_status(code)
                role = self._restart(label, status)
                if role is not None:
                    running.add(label)
                    if role == "worker":
                        workers.add(label)
                    continue
                if label in self._expendable:
                    self._say(
                        f"{label} failed with exit status {status}; its keys are served by "
                        "their backups"
                    )
                    continue
                if code > 0:
                    label, status = self._killed_meanwhile() or (label, status)
                self._report(label, status)
                self._terminate()
                return status
        return 0

    def _killed_meanwhile(self):
        """(label, status) of a process killed by a signal within :data:`_CAUSE_S` of now (the
        other exits meanwhile are passed over: the job is ending); None when none was."""
        deadline = time.monotonic() + _CAUSE_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                label, code = self._exits.get(timeout=left)
            except queue.Empty:
                return None
            if label is None or code is None:  # a signal to stop: the job ends anyway
                return None
            if code < 0:
                return label, _exit_status(code)
        return None

    def _restart(self, label, status):
        """Start ``label`` again if it has restarts left; its role when it was, else None."""
        again = self._again.get(label)
        if again is None or again[4] == 0:
            return None
        role, argv, env, stdin, left, allowed = again
        self._again[label] = (role, argv, env, stdin, left - 1, allowed)
        self._pumps[label].join(_GRACE_S)  # its last lines are out before the new ones
        n = allowed - left + 1
        self._say(f"{label} failed with exit status {status}; restarting it ({n} of {allowed})")
        self.start(label, role, argv, env, stdin=stdin, expendable=label in self._expendable)
        return role

    def _report(self, label, status):
        lines = self.last_lines(label)
        shown = f"; its last lines:\n{lines}" if lines else ""
        self._say(f"{label} failed with exit status {status}; stopping the job{shown}")

    def last_lines(self, label, wait=_GRACE_S):
        """str: the last output lines of ``label``, once its output ended (or ``wait`` passed)."""
        self._pumps[label].join(wait)
        tail = [t for lab, _, _, t in self._procs if lab == label][-1]
        return b"".join(tail).decode(errors="replace").rstrip()

    def stop(self):
        """End every process started here (SIGTERM to each group, SIGKILL after a grace)."""
        self._terminate()

    def _terminate(self):
        """SIGTERM every process group started here, then SIGKILL what is left after a grace."""
        self._summary.stopping()
        for _, _, p, _ in self._procs:
            if p.stdin is not None and not p.stdin.closed:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for _, _, p, _ in self._procs:  # also groups whose leader is gone but children remain
            _signal_group(p, signal.SIGTERM)
        live = [p for _, _, p, _ in self._procs if p.poll() is None]
        for p in live:
            try:
                p.wait(timeout=_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()
        for _, _, p, _ in self._procs:
            _signal_group(p, signal.SIGKILL)


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
