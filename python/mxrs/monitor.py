"""``mx.mon.Monitor``: statistics of an executor's arrays every few batches, for debugging.

A monitor is installed on executors (``mx.sym`` ``bind``/``simple_bind``); every ``interval``
batches, between :meth:`Monitor.tic` and :meth:`Monitor.toc`, it records a statistic of each
operator output the executors compute and, at ``toc``, of their arguments and auxiliary states,
for the names that match a regular expression.

Examples
--------
>>> mon = mx.mon.Monitor(10, pattern=".*weight|.*output")
>>> mon.install(exe)
>>> for batch in batches:
...     mon.tic()
...     exe.forward(is_train=True, data=batch)
...     exe.backward()
...     mon.toc_print()          # logs on every 10th batch
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from math import sqrt
from typing import Any

from . import ndarray as nd
from .base import MXNetError, py_str

__all__ = ["Monitor"]

StatFunc = Callable[[nd.NDArray], Any]


def _norm_stat(x: nd.NDArray) -> nd.NDArray:
    """MXNet's default statistic: ``norm(x) / sqrt(x.size)``, the root mean square of ``x``."""
    return nd.norm(x) / sqrt(x.size)


class Monitor:
    """Record a statistic of executor arrays every ``interval`` batches.

    Parameters
    ----------
    interval : int
        Batches between recordings: the ``tic`` of batches 0, ``interval``, ``2 * interval``...
        (counted by ``tic`` calls) starts one.
    stat_func : callable, default ``norm(x) / sqrt(x.size)``
        Takes an NDArray, returns an NDArray or a list of NDArrays.
    pattern : str, default '.*'
        Regular expression; only arrays whose names it matches (``re.match``) are recorded.
    sort : bool, default False
        Sort the results of :meth:`toc` by name.
    monitor_all : bool, default False
        Passed to the executors' ``set_monitor_callback``: MXNet reports operator inputs
        too then.
    """

    def __init__(
        self,
        interval: int,
        stat_func: StatFunc | None = None,
        pattern: str = ".*",
        sort: bool = False,
        monitor_all: bool = False,
    ) -> None:
        if int(interval) < 1:
            raise MXNetError(
                f"Monitor: interval must be a positive number of batches, got {interval}"
            )
        try:
            self.re_prog = re.compile(pattern)
        except re.error as e:
            raise MXNetError(
                f"Monitor: pattern {pattern!r} is not a regular expression: {e}"
            ) from e
        self.stat_func: StatFunc = _norm_stat if stat_func is None else stat_func
        self.interval = int(interval)
        self.activated = False
        self.queue: list[tuple[int, str, Any]] = []
        self.step = 0
        self.exes: list[Any] = []
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: str | bytes, array: nd.NDArray) -> None:
        """The executor callback: record ``stat_func(array)`` while a recording is on and
        ``name`` matches the pattern."""
        if not self.activated:
            return
        name = py_str(name)
        if self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe: Any) -> None:
        """Install the monitor on executor ``exe`` (several executors may share one monitor)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait_for_parameters(self) -> None:
        for exe in self.exes:
            for array in list(exe.arg_arrays) + list(exe.aux_arrays):
                array.wait_to_read()

    def tic(self) -> None:
        """Start a batch; call before ``forward``. Every ``interval``-th batch starts a
        recording."""
        if self.step % self.interval == 0:
            self._wait_for_parameters()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """End the batch; call after ``forward``/``backward``.

        Returns
        -------
        list of (int, str, str)
            ``(step, name, statistic)`` of each array recorded (none when this batch was not
            recorded): the operator outputs, then each executor's arguments and auxiliary
            states. A statistic is its values followed by a tab each (a one-element array as a
            scalar).
        """
        if not self.activated:
            return []
        self._wait_for_parameters()
        for exe in self.exes:
            symbol = exe._symbol
            named = list(zip(symbol.list_arguments(), exe.arg_arrays, strict=True))
            named += list(zip(symbol.list_auxiliary_states(), exe.aux_arrays, strict=True))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = [(step, name, self._format(name, stat)) for step, name, stat in self.queue]
        self.queue = []
        return res

    @staticmethod
    def _format(name: str, stat: Any) -> str:
        values = stat if isinstance(stat, list) else [stat]
        text = ""
        for v in values:
            if not isinstance(v, nd.NDArray):
                raise MXNetError(
                    f"Monitor: stat_func must return an NDArray or a list of NDArrays, "
                    f"got {type(v).__name__} for {name!r}"
                )
            text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
        return text

    def toc_print(self) -> None:
        """End the batch (as :meth:`toc`) and log each result at INFO level as
        ``Batch: STEP NAME STATISTIC``."""
        for step, name, stat in self.toc():
            logging.info(f"Batch: {step:7d} {name:30s} {stat:s}")
