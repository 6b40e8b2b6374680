"""Worker pools that load DataLoader batches in parallel: processes, or threads.

Both pools take numbered batch requests (``submit(key, indices)``) and hand results back by
number (``get(key, timeout)``), so the iterator in :mod:`.dataloader` returns batches in order
whatever order the workers finish in.

Processes are forked, as MXNet's are on Linux: a worker inherits the dataset and the batchify
function without pickling them, and scripts need no ``if __name__ == '__main__'`` guard. What a
worker must never do is touch the state it inherits but does not own: GPU contexts, the
parameter-server connections and their runtime threads. So a worker only runs the dataset and
the batchify function on the CPU, sends its batches back as NumPy arrays (the parent wraps them
into NDArrays), never garbage-collects what it inherited (the fork happens under
``gc.freeze()``), and leaves through ``os._exit`` (the way every forked multiprocessing child
leaves), which runs no exit handlers and no destructors of inherited objects.

Each worker has two one-way pipes: tasks in, results out. A thread inside the worker reads the
task pipe all the time, so the parent's small task sends never wait on a worker that is busy
writing a large batch back; the parent itself starts no threads. When the parent goes away the
task pipe reaches end-of-file and the worker exits, so no worker outlives its parent: to make
that hold, every worker closes the parent's ends of all pipes it inherited.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import multiprocessing
import pickle
import queue
import random
import signal
import threading
import time
import traceback
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as _FutureTimeout
from multiprocessing import connection as _connection
from typing import Any

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from ...context import cpu
from ...ndarray.core import rng as _rng

_live_pools: weakref.WeakSet[_ProcessPool] = weakref.WeakSet()
_pool_counter = itertools.count()
_GRACE_S = 1.0
_inherited: list[Any] = []


class _WorkerTraceback(Exception):
    """The traceback of an exception raised in a worker, attached as its ``__cause__``."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return self.text


class _Host:
    """An NDArray travelling from a worker to the parent as a NumPy array."""

    def __init__(self, array):
        self.array = array

    def __reduce__(self):
        return (_Host, (self.array,))


def _require_host(obj):
    """Raise if a (nested) sample or batch holds an array on a GPU, which a forked worker must
    not touch: the CUDA context belongs to the parent."""
    if isinstance(obj, nd.NDArray):
        if obj.context.device_type == "gpu":
            raise MXNetError(
                f"a DataLoader worker process got an array on {obj.context}; workers run on "
                "the CPU only. Return CPU arrays from the dataset and transforms and move each "
                "batch to the GPU in the training loop (as_in_context / split_and_load)"
            )
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _require_host(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            _require_host(x)


def _to_host(obj):
    """Replace every NDArray in a (nested) batch by a :class:`_Host` wrapper of its values."""
    if isinstance(obj, nd.NDArray):
        _require_host(obj)
        return _Host(obj.asnumpy())
    if isinstance(obj, list):
        return [_to_host(x) for x in obj]
    if isinstance(obj, tuple):
        items = [_to_host(x) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: _to_host(v) for k, v in obj.items()}
    return obj


def _from_host(obj):
    """Turn the :class:`_Host` wrappers of a received batch back into NDArrays on ``cpu(0)``."""
    if isinstance(obj, _Host):
        return nd.array(obj.array, ctx=cpu(0), dtype=obj.array.dtype)
    if isinstance(obj, list):
        return [_from_host(x) for x in obj]
    if isinstance(obj, tuple):
        items = [_from_host(x) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: _from_host(v) for k, v in obj.items()}
    return obj


def _describe_error(err):
    """Pack a worker's exception for the parent: the exception itself when it survives pickling,
    and always its type name, message and formatted traceback."""
    try:
        blob = pickle.dumps(err, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(blob)
    except Exception:  # exceptions with unusual constructors do not round-trip
        blob = None
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return blob, type(err).__name__, str(err), tb


def _rebuild_error(info, worker, pid, key):
    """The exception to raise in the parent for a worker's packed error."""
    blob, name, message, tb = info
    where = f"DataLoader worker {worker} (pid {pid}) loading batch {key}"
    exc = None
    if blob is not None:
        with contextlib.suppress(Exception):
            exc = pickle.loads(blob)
    if not isinstance(exc, BaseException):
        exc = MXNetError(f"{where} raised {name}: {message}")
    elif hasattr(exc, "add_note"):
        exc.add_note(f"(raised in {where})")
    cause = _WorkerTraceback(f"{where} raised {name}: {message}\n\n{tb}")
    return exc, cause


def _load(dataset, batchify_fn, indices):
    return batchify_fn([dataset[i] for i in indices])


def _load_on_host(dataset, batchify_fn, indices):
    samples = [dataset[i] for i in indices]
    _require_host(samples)
    return _to_host(batchify_fn(samples))


def _read_tasks(conn, tasks):
    """Worker thread: move every task from the pipe to the queue; None (or EOF) ends it."""
    try:
        while True:
            task = conn.recv()
            tasks.put(task)
            if task is None:
                return
    except (EOFError, OSError):
        tasks.put(None)


def _seed_worker(seed):
    """Give each worker its own random streams (NumPy, Python and mxrs's host generators)."""
    np.random.seed(seed)
    random.seed(seed)
    # Reseeding drops the inherited generators; keep them referenced so that none is destroyed
    # here (a GPU generator's destructor would call into the parent's CUDA context).
    _inherited.extend(_rng.generators())
    nd.random.seed(seed)


def _worker_main(task_conn, result_conn, dataset, batchify_fn, seed):
    """Body of a worker process: load the batches named on the task pipe, in order."""
    for pool in list(_live_pools):
        pool._close_parent_ends()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _seed_worker(seed)
    tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
    threading.Thread(target=_read_tasks, args=(task_conn, tasks), daemon=True).start()
    while True:
        task = tasks.get()
        if task is None:
            return
        key, indices = task
        try:
            batch = _load_on_host(dataset, batchify_fn, indices)
            msg = pickle.dumps((key, True, batch), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:
            msg = pickle.dumps((key, False, _describe_error(err)), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            result_conn.send_bytes(msg)
        except OSError:  # the parent has gone
            return


def _worker_seeds(n):
    """Per-worker seeds derived from NumPy's global state without drawing from it, so a program
    seeded with ``np.random.seed`` gets the same worker streams on every run."""
    # NumPy's stub types get_state() as the dict of legacy=False; the default is the tuple.
    _, key, pos = np.random.get_state()[:3]  # type: ignore[index]
    seq = np.random.SeedSequence([next(_pool_counter), int(pos), *key.tolist()])
    return seq.generate_state(n, dtype=np.uint32).tolist()


@contextlib.contextmanager
def _forking():
    """Around a fork: the child's garbage collector never sees what it inherits (so no GPU or
    socket object of the parent is finalised in a worker), and the parent's collector is back to
    normal right after."""
    gc.freeze()
    try:
        # Python 3.12+ warns on every fork of a process that runs threads (BLAS, the parameter
        # server's runtime). The workers use none of those threads' locks: they run NumPy code.
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore",
                category=DeprecationWarning,
                message=r".*use of fork\(\) may lead to deadlocks",
            )
            yield
    finally:
        gc.unfreeze()


class _ProcessPool:
    """``num_workers`` forked processes; batch ``key`` goes to worker ``key % num_workers``."""

    def __init__(self, num_workers, dataset, batchify_fn):
        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:
            raise MXNetError(
                "DataLoader worker processes need the 'fork' start method, which "
                "this platform lacks; use thread_pool=True"
            ) from None
        self._parent_ends = []
        self._tasks: list[Any] = []
        self._results: list[Any] = []
        self._procs: list[Any] = []
        self._pending: list[set[int]] = [set() for _ in range(num_workers)]
        self._done = {}
        self._closed = False
        _live_pools.add(self)
        try:
            for seed in _worker_seeds(num_workers):
                task_r, task_w = ctx.Pipe(duplex=False)
                result_r, result_w = ctx.Pipe(duplex=False)
                self._parent_ends += [task_w, result_r]
                proc = ctx.Process(
                    target=_worker_main,
                    daemon=True,
                    name=f"mxrs-dataloader-{len(self._procs)}",
                    args=(task_r, result_w, dataset, batchify_fn, seed),
                )
                with _forking():
                    proc.start()
                task_r.close()
                result_w.close()
                self._tasks.append(task_w)
                self._results.append(result_r)
                self._procs.append(proc)
        except BaseException:
            self.shutdown()
            raise

    def _close_parent_ends(self):
        for conn in self._parent_ends:
            conn.close()

    def _dead(self, worker):
        proc = self._procs[worker]
        proc.join(_GRACE_S)
        return MXNetError(
            f"DataLoader worker {worker} (pid {proc.pid}) exited unexpectedly with exit code "
            f"{proc.exitcode} while loading batch(es) {sorted(self._pending[worker])}; it may "
            "have run out of memory or crashed in native code"
        )

    def submit(self, key, indices):
        """Queue batch number ``key`` (a list of sample indices) on its worker."""
        worker = key % len(self._procs)
        try:
            self._tasks[worker].send((key, indices))
        except OSError:
            raise self._dead(worker) from None
        self._pending[worker].add(key)

    def _receive(self, worker):
        key, ok, payload = pickle.loads(self._results[worker].recv_bytes())
        self._pending[worker].discard(key)
        self._done[key] = (worker, ok, payload)

    def get(self, key, timeout):
        """Return batch ``key``, waiting at most ``timeout`` seconds for it.

        Raises
        ------
        Exception
            What the worker raised while loading it (its traceback is the ``__cause__``).
        MXNetError
            When a worker dies or nothing arrives within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        readers = {conn: i for i, conn in enumerate(self._results)}
        sentinels = {p.sentinel: i for i, p in enumerate(self._procs)}
        while key not in self._done:
            left = deadline - time.monotonic()
            if left <= 0:
                raise MXNetError(
                    f"DataLoader timed out after {timeout} s waiting for batch {key} from its "
                    "worker processes: a slow dataset or transform needs a larger `timeout`"
                )
            ready = _connection.wait(list(readers) + list(sentinels), left)
            for obj in ready:
                if obj in readers:
                    try:
                        self._receive(readers[obj])
                    except EOFError:
                        raise self._dead(readers[obj]) from None
            for obj in ready:
                if obj in sentinels and not self._results[sentinels[obj]].poll():
                    raise self._dead(sentinels[obj])
        worker, ok, payload = self._done.pop(key)
        if not ok:
            exc, cause = _rebuild_error(payload, worker, self._procs[worker].pid, key)
            raise exc from cause
        return _from_host(payload)

    def shutdown(self):
        """Stop every worker: ask, wait a moment, then terminate; close all pipes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _live_pools.discard(self)
        for conn in self._tasks:
            with contextlib.suppress(OSError):
                conn.send(None)
        self._close_parent_ends()
        deadline = time.monotonic() + _GRACE_S
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
                proc.join(_GRACE_S)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
            proc.close()
        self._done.clear()


class _ThreadPool:
    """``num_workers`` threads of this process sharing the dataset (``thread_pool=True``)."""

    def __init__(self, num_workers, dataset, batchify_fn):
        self._executor = ThreadPoolExecutor(num_workers, thread_name_prefix="mxrs-dataloader")
        self._dataset = dataset
        self._batchify_fn = batchify_fn
        self._futures = {}

    def submit(self, key, indices):
        """Queue batch number ``key`` (a list of sample indices)."""
        self._futures[key] = self._executor.submit(_load, self._dataset, self._batchify_fn, indices)

    def get(self, key, timeout):
        """Return batch ``key``, waiting at most ``timeout`` seconds; re-raise its error."""
        try:
            return self._futures.pop(key).result(timeout)
        except _FutureTimeout:
            raise MXNetError(
                f"DataLoader timed out after {timeout} s waiting for batch {key} "
                "from its worker threads: a slow dataset or transform needs a "
                "larger `timeout`"
            ) from None

    def shutdown(self):
        """Cancel queued batches and let the threads finish. Idempotent."""
        self._futures.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
