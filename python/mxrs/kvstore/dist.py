"""The distributed stores ``dist_sync``, ``dist_device_sync`` and ``dist_async``.

Every process of a job is started with the ``DMLC_*`` environment; a worker's store joins the job
through the Rust parameter-server client (``mxrs._native.Worker``). Pushes and pulls return at
once: the arrays they read or write become pending and any use of them waits for the request
(``asnumpy``, ``wait_to_read``, ``nd.waitall``, or simply the next operation on them).

With gradient compression set (``set_gradient_compression``) each push is encoded by the Rust
client before it is sent, slice by slice, without the GIL; a worker's devices are summed first,
uncompressed, as MXNet 1.9.1 does. Pulls are plain float32.

A request that fails raises at the next KVStore call, ``nd.waitall`` or read of an array it
touched, whichever comes first (:mod:`..ndarray._pending`). One nobody saw by the time the
process exits is printed to stderr, and the process exits with status 1 so that its launcher
fails the job.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import numpy as np

from .. import _native
from .. import optimizer as opt
from ..base import KVStoreError, MXNetError, NodeLostError, ShapeMismatchError
from ..context import Context, cpu
from ..ndarray import _pending
from ..ndarray.ndarray import NDArray
from . import server_optimizer
from .base import (
    Key,
    Keys,
    KVStore,
    Values,
    _optimizer_params,
    check_shapes,
    key_value_pairs,
    register,
)
from .compression import compression_spec, pulls_weights
from .dist_rows import RowKeys
from .local import reduce_sum
from .wire import priority as _priority
from .wire import wire_key

#: A pulled array and what fills it once the pull is done (None: the pull writes it in place).
_Mark: TypeAlias = tuple[NDArray, Callable[[Any], None] | None]
# one parameter-server connection per process: (mode, _native.Worker)
_worker: tuple[str, _native.Worker] | None = None


def _connect(mode: str) -> _native.Worker:
    """Join the job once per process; every store of the process shares the connection."""
    global _worker
    if _worker is None:
        _worker = (mode, _native.Worker(mode))
        atexit.register(_finish)
    elif _worker[0] != mode:
        raise KVStoreError(
            f"this process already joined the job in {_worker[0]} mode; a store in "
            f"{mode} mode cannot be created beside it"
        )
    return _worker[1]


def _finish() -> None:
    """At exit: wait for outstanding requests, tell the scheduler this worker is done (unless an
    uncaught exception ended it in a job with restarts), and make sure no error is lost: print
    what was never reported and exit with status 1."""
    lost = []
    try:
        _pending.settle_all()
    except Exception as e:  # noqa: BLE001  (reported below with the others)
        lost.append(f"{type(e).__name__}: {e}")
    lost.extend(_pending.unreported())
    assert _worker is not None  # registered by _connect after it set _worker
    if getattr(sys, "last_value", None) is not None and _restarts():
        # An uncaught exception ended the program: it did not finish its work. The scheduler
        # then counts it as lost, and its restart may take its place.
        return
    try:
        _worker[1].finish()
    except NodeLostError as e:
        # The job has already failed (the scheduler is gone): nobody is left to tell, and
        # this worker's own requests all ended; say so without calling it this worker's error.
        print(f"mxrs: could not tell the scheduler this worker finished: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001
        lost.append(f"{type(e).__name__}: {e}")
    if lost:
        print(
            "mxrs: the distributed KVStore failed and the program did not see it:", file=sys.stderr
        )
        for line in lost:
            print(f"  {line}", file=sys.stderr)
        sys.stderr.flush()
        _native.exit_with_status(1)


def _restarts() -> bool:
    """Whether the launcher restarts failed workers in this job (``--max-restarts``)."""
    try:
        return int(os.environ.get("MXRS_MAX_RESTARTS", "0")) > 0
    except ValueError:
        return False


@register("dist_sync", "dist_device_sync", "dist_async")
class DistKVStore(RowKeys, KVStore):
    """A worker's store in a distributed job; keys live on the servers.

    In ``dist_sync`` mode the servers sum one push from every worker per round, apply the
    optimizer once and answer pulls with the round's result; ``dist_async`` applies each push as
    it arrives. ``dist_device_sync`` sums a worker's per-device values on the first device before
    one copy goes over the wire (``dist_sync`` sums them on CPU).

    Keys initialised with a row_sparse value take row_sparse pushes and ``row_sparse_pull``
    with only the rows present on the wire (:mod:`.dist_rows`).
    """

    def __init__(self, name: str = "dist_sync") -> None:
        super().__init__(name)
        self._mode = "async" if name == "dist_async" else "sync"
        self._on_device = name == "dist_device_sync"
        self._worker = _connect(self._mode)
        self._keys: dict[Key, tuple[int, tuple[int, ...], np.dtype]] = {}  # wire key, shape, dtype
        self._compression: tuple[str, float] | None = None  # (type, threshold) for the client
        self._row_keys: set[Key] = set()  # keys initialised row_sparse

    # ------------------------------------------------------------------ identity
    @property
    def rank(self) -> int:
        """int: this worker's rank, 0..num_workers-1."""
        return self._worker.rank

    @property
    def num_workers(self) -> int:
        """int: the number of workers in the job."""
        return self._worker.num_workers

    @property
    def num_servers(self) -> int:
        """int: the number of servers in the job."""
        return self._worker.num_servers

    @property
    def rejoined(self) -> bool:
        """bool: True in a worker restarted by ``mxrs-launch --max-restarts`` that took back the
        place of a lost one in a running job (mxrs)."""
        return self._worker.rejoined

    def rounds(self, key: Key) -> int:
        """How many ``dist_sync`` rounds of ``key`` this worker's rank has pushed (mxrs).

        A restarted worker counts those of the process it replaces: the servers say where each
        key stands when it initialises it, so this is the step it resumes at (its ``init`` does
        not overwrite the job's values, and a pull after it gets the current weights).
        """
        wire, _, _ = self._layout(key, "rounds")
        return self._worker.rounds(wire)

    def resume_at(self, step: int) -> None:
        """Make this worker's next push of every key join ``dist_sync`` round ``step`` (mxrs).

        A restarted worker resumes at the fewest :meth:`rounds` over its keys and pushes every
        key from there; the servers count once the pushes its predecessor had already made
        (they answer them, and the pulls after them, without summing them again), so every
        worker pushes each key the same number of times.
        """
        _pending.check()
        if step < 0:
            raise KVStoreError(f"KVStore.resume_at: step must be 0 or more, got {step}")
        self._worker.resume_at(step)

    # ------------------------------------------------------------------ helpers
    def _layout(self, k: Key, what: str) -> tuple[int, tuple[int, ...], np.dtype]:
        layout = self._keys.get(k)
        if layout is None:
            raise KVStoreError(f"KVStore.{what}: key {k!r} was never initialised (call init first)")
        return layout

    def _check(
        self, k: Key, arrays: list[NDArray], what: str, role: str, dtypes: bool = True
    ) -> None:
        _, shape, dtype = self._layout(k, what)
        check_shapes(what, k, shape, arrays, role)
        for a in arrays:
            if dtypes and not push_accepts(dtype, a.dtype):
                raise ShapeMismatchError(
                    f"KVStore.{what}: key {k!r} holds {dtype}, the {role} is {a.dtype} (keys "
                    "of float32, float16 and bfloat16 take pushes of any of the three)"
                )

    def _host_sum(self, vals: list[NDArray]) -> np.ndarray:
        """One host array holding the sum of ``vals`` (zero-copy for a single CPU array); a sum
        on a GPU crosses to the host once, into page-locked memory."""
        home = vals[0]._ctx if self._on_device else cpu(0)
        merged = reduce_sum(vals, home)
        host = merged if _on_host(home) else home.backend.to_host_pinned(merged)
        return np.ascontiguousarray(host)

    def _gather_pushes(
        self, pairs: list[tuple[Key, list[NDArray]]], what: str
    ) -> tuple[list[int], list[np.ndarray], list[NDArray]]:
        """Wire keys and host arrays for ``pairs``; every pair is checked before any is sent.

        A single contiguous CPU value is lent as it is (and returned in ``lent`` so it can be
        marked pending); several values are summed into a fresh array first.
        """
        keys, arrays, lent = [], [], []
        layouts = self._keys
        compressed = self._compression is not None
        for k, vals in pairs:
            layout = layouts.get(k)
            if layout is None:
                layout = self._layout(k, what)
            wire, shape, dtype = layout
            if compressed:
                self._check_compressible(k, dtype, vals, what)
            if len(vals) == 1:
                v = vals[0]
                data = v._data
                if data.shape != shape or data.dtype != dtype:
                    self._check(k, vals, what, "pushed value")  # raises unless it may go
                if type(data) is np.ndarray and data.flags.c_contiguous and not v._sparse:
                    keys.append(wire)
                    arrays.append(data)
                    lent.append(v)
                    continue
            else:
                self._check(k, vals, what, "pushed value")
            keys.append(wire)
            arrays.append(self._host_sum(vals))
        return keys, arrays, lent

    def _gather_pulls(
        self, pairs: list[tuple[Key, list[NDArray]]], what: str
    ) -> tuple[list[np.ndarray], list[_Mark]]:
        """Host buffers the pull writes into, and (array, finalizer) pairs to mark pending.

        A single contiguous CPU output of the key's dtype receives the value in place (once per
        request: an array that is the output of two keys gets the second by copy); other
        outputs get a copy from a host buffer when they are first used.
        """
        bufs: list[np.ndarray] = []
        marks: list[_Mark] = []
        in_place = set()
        layouts = self._keys
        for k, outs in pairs:
            layout = layouts.get(k)
            if layout is None:
                layout = self._layout(k, what)
            _, shape, dtype = layout
            if len(outs) == 1:
                o = outs[0]
                data = o._data
                if data.shape != shape:
                    self._check(k, outs, what, "output array", dtypes=False)
                if (
                    type(data) is np.ndarray
                    and data.dtype == dtype
                    and data.flags.c_contiguous
                    and id(data) not in in_place
                ):
                    in_place.add(id(data))
                    bufs.append(data)
                    marks.append((o, None))
                    continue
            else:
                self._check(k, outs, what, "output array", dtypes=False)
            buf = np.empty(shape, dtype)
            bufs.append(buf)
            marks.extend((o, _copy_from(buf, o._ctx)) for o in outs)
        return bufs, marks

    # ------------------------------------------------------------------ data
    def init(self, key: Keys, value: Values) -> None:
        """Initialise keys on the servers: rank 0's values win; returns once every key exists."""
        _pending.check()
        pairs = key_value_pairs(key, value, "init")
        for k, _ in pairs:
            if k in self._keys:
                raise KVStoreError(f"KVStore.init: key {k!r} is already initialised")
        row_pairs = [(k, v) for k, v in pairs if v[0].stype == "row_sparse"]
        if row_pairs:
            self._init_rows(row_pairs)
            pairs = [(k, v) for k, v in pairs if v[0].stype != "row_sparse"]
        keys, arrays = [], []
        for k, vals in pairs:
            host = self._host_sum(vals[:1])
            keys.append(wire_key(k))
            arrays.append(host)
        self._worker.init(keys, arrays).wait()
        for (k, _), wk, host in zip(pairs, keys, arrays, strict=True):
            self._keys[k] = (wk, host.shape, host.dtype)
        if self._optimizer is not None:
            self._send_key_mults([k for k, _ in pairs + row_pairs])

    def push(self, key: Keys, value: Values, priority: int = 0) -> None:
        """Send the sum of each key's values to the servers; returns before they answer."""
        _pending.check()
        pairs = self._split_row_pushes(key_value_pairs(key, value, "push"), "push")
        if not pairs:
            return
        keys, arrays, lent = self._gather_pushes(pairs, "push")
        ticket = self._worker.push(keys, arrays, self._compression, _priority(priority))
        ticket = self._meter.request(ticket, pairs, arrays)
        # A compressed push has read (encoded) its arrays before it returned.
        _pending.track(ticket, reads=[] if self._compression else lent)

    def pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, ignore_sparse: bool = True
    ) -> None:
        """Fetch each key's value into ``out``; the arrays are filled when first used.

        Sparse output arrays are skipped with ``ignore_sparse`` (MXNet's default), else filled
        with the whole value before this returns; use :meth:`row_sparse_pull` for some rows.
        """
        _pending.check()
        if out is None:
            raise KVStoreError("KVStore.pull: out is required")
        pairs = key_value_pairs(key, out, "pull")
        if any(o._sparse for _, outs in pairs for o in outs):
            sparse = [(k, [o for o in outs if o._sparse]) for k, outs in pairs]
            pairs = [(k, d) for k, outs in pairs if (d := [o for o in outs if not o._sparse])]
            if not ignore_sparse:
                self._pull_sparse_outs([(k, s) for k, s in sparse if s], priority)
            if not pairs:
                return
        bufs, marks = self._gather_pulls(pairs, "pull")
        wires = [self._keys[k][0] for k, _ in pairs]
        # fp16/bf16 compression: a sum of pushes (no optimizer on the servers) comes back in
        # that type too
        ticket = self._worker.pull(wires, bufs, _priority(priority), self._compression)
        _pending.track(self._meter.request(ticket, pulled=pairs, pull_arrays=bufs), writes=marks)

    def pushpull(
        self, key: Keys, value: Values, out: Values | None = None, priority: int = 0
    ) -> None:
        """Push and pull in one round trip per server (``out`` defaults to ``value``)."""
        _pending.check()
        pushes = key_value_pairs(key, value, "pushpull")
        pulls = pushes if out is None else key_value_pairs(key, out, "pushpull")
        if any(a._sparse for _, arrs in pushes + pulls for a in arrs):  # as push, then pull
            self.push(key, value, priority)
            self.pull(key, value if out is None else out, priority, ignore_sparse=False)
            return
        keys, arrays, lent = self._gather_pushes(pushes, "pushpull")
        bufs, marks = self._gather_pulls(pulls, "pushpull")
        ticket = self._worker.pushpull(keys, arrays, bufs, self._compression, _priority(priority))
        ticket = self._meter.request(ticket, pushes, arrays, pulls, bufs)
        _pending.track(ticket, reads=[] if self._compression else lent, writes=marks)

    def _check_compressible(self, k: Key, dtype: np.dtype, vals: list[NDArray], what: str) -> None:
        """Raise unless key ``k`` and its values are float32 (all that compression takes)."""
        pushed: list[Any] = [v.dtype for v in vals]
        for a in [dtype, *pushed]:
            if a != np.float32:
                assert self._compression is not None  # called only with compression set
                raise KVStoreError(
                    f"KVStore.{what}: gradient compression {self._compression[0]} applies to "
                    f"float32 values; key {k!r} holds {np.dtype(dtype).name}, the pushed value "
                    f"is {np.dtype(a).name}"
                )

    # ------------------------------------------------------------------ compression
    def set_gradient_compression(self, compression_params: dict[str, Any]) -> None:
        """Compress every push from now on, encoded on this worker (see
        :meth:`KVStore.set_gradient_compression`); the servers decode and sum in float32.
        Under ``fp16``/``bf16`` pulls of sums of pushes travel in 16 bits too, and weights
        with ``'pull_weights': True`` (:func:`~mxrs.kvstore.compression.pulls_weights`). It
        may be set after ``init``, and set again, as MXNet 1.9.1 allows (2bit residuals carry
        over); each worker sets its own (the servers need no setting: every compressed entry
        and pull request carries what it takes).
        """
        _pending.check()
        self._compression = compression_spec(compression_params)
        self._worker.set_pull_weights(pulls_weights(compression_params))

    def _server_stats(self) -> list[dict[str, int]]:
        """What each server (by rank) has received in push and pushpull frames, and sent in
        pull replies, since it started.

        Returns
        -------
        list of dict
            ``frames``, ``entries`` (one per key or slice of a key), ``payload_bytes`` (the pushed
            values as they crossed the wire, compressed or not) and ``frame_bytes`` (whole frames,
            headers included); ``pulled_bytes``, the values its pull and pushpull replies
            carried (float16 or bfloat16 sums under ``fp16``/``bf16`` compression). This
            worker's earlier requests are counted; other workers' are once a barrier has passed.
        """
        _pending.check()
        return self._worker.server_stats()

    # ------------------------------------------------------------------ optimizer
    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Run ``optimizer`` on the servers, then wait for every worker.

        An optimizer the servers run natively (:meth:`~mxrs.optimizer.Optimizer.to_spec`) is
        sent by rank 0 as its name and numbers. Any other (a registered custom optimizer,
        ``mx.optimizer.Test``...) is sent pickled, as MXNet 1.9.1 sends it, by every worker, so
        that each learns whether its servers run it: servers started from Python (what
        ``mxrs-launch`` starts) unpickle and run it (:mod:`.server_optimizer`); the
        ``ps-server`` binary refuses it.

        A restarted worker (:attr:`rejoined`) sends nothing and waits for nobody: the servers run
        the job's optimizer already, with its states, and the other workers are training.

        Raises
        ------
        KVStoreError
            When the optimizer cannot be pickled (or lives in ``__main__``), or the servers
            cannot run it (the ``ps-server`` binary, a job with backups, a class the servers
            cannot import): then train with ``update_on_kvstore=False``.
        """
        _pending.check()
        try:
            name, params = optimizer.to_spec()
            payload = None
        except MXNetError:
            name, payload = server_optimizer.pickled(optimizer)
            params = []
        self._optimizer = optimizer
        if self.rejoined:
            return
        if payload is not None or self.rank == 0:
            self._worker.set_optimizer(name, params, self._key_mults(self._keys), payload)
        self.barrier()

    def _key_mults(self, keys: Iterable[Key]) -> list[tuple[int, float, float]]:
        opt = self._optimizer
        assert opt is not None  # called only once set_optimizer has set it
        mults = []
        for k in keys:
            lr, wd = opt._get_lr_mult(k), opt._get_wd_mult(k)
            if lr != 1.0 or wd != 1.0:
                mults.append((self._keys[k][0], float(lr), float(wd)))
        return mults

    def _send_key_mults(self, keys: Iterable[Key]) -> None:
        mults = self._key_mults(keys)
        if mults and self.rank == 0 and not self.rejoined:
            self._worker.set_params([], mults)

    def set_optimizer_params(self, **values: float) -> None:
        """Change hyper-parameters of the servers' optimizer from now on (every server).

        Parameters and errors as :meth:`KVStore.set_optimizer_params`.
        """
        _pending.check()
        params = _optimizer_params(values)
        if self._optimizer is None:
            raise KVStoreError("set_optimizer_params: no optimizer is set on this KVStore")
        if params:
            self._worker.set_params(sorted(params.items()))

    def save_optimizer_states(
        self, fname: str | os.PathLike[str], dump_optimizer: bool = False
    ) -> None:
        """Write the servers' optimizer states to ``fname``."""
        _pending.settle_all()
        with open(fname, "wb") as f:
            f.write(self._worker.save_states())

    def load_optimizer_states(self, fname: str | os.PathLike[str]) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""
        _pending.check()
        with open(fname, "rb") as f:
            blob = f.read()
        self._worker.load_states(blob)

    # ------------------------------------------------------------------ sync
    def barrier(self) -> None:
        """Wait until every worker of the job reaches this point."""
        _pending.check()
        self._worker.barrier("workers")

    _barrier = barrier


_PUSH_FAMILY = frozenset(("float32", "float16", "bfloat16"))


def push_accepts(key_dtype: Any, dtype: Any) -> bool:
    """bool: whether a key of ``key_dtype`` takes a pushed array of ``dtype``: its own dtype, or
    any of float32, float16 and bfloat16 for a key of one of them (summed in float32 on the
    servers), the rule the parameter-server client applies too."""
    key_dtype, dtype = np.dtype(key_dtype), np.dtype(dtype)
    return dtype == key_dtype or (key_dtype.name in _PUSH_FAMILY and dtype.name in _PUSH_FAMILY)


def _copy_from(buf: np.ndarray, ctx: Context) -> Callable[[Any], None]:
    """A finalizer copying host buffer ``buf`` into a pulled array on ``ctx``."""
    if _on_host(ctx):
        return lambda raw: np.copyto(raw, buf)

    def to_device(raw: Any) -> None:
        with ctx.backend.guard(ctx.device_id):
            raw[...] = ctx.backend.xp.asarray(buf)

    return to_device


def _on_host(ctx: Context) -> bool:
    """bool: whether arrays of ``ctx`` are NumPy arrays in host memory."""
    return ctx.backend.xp is np
