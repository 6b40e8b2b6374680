"""gluon.data.DataLoader: argument rules, batching, worker processes and threads, shutdown."""

import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from collections import namedtuple

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon import data
from mxrs.gluon.data import _workers


def _dataset(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return data.ArrayDataset(x, np.arange(n, dtype=np.int32))


def _gone(pid):
    """True once ``pid`` has exited (a zombie left to an init that never reaps counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pids, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if not _gone(p)]


class _Pids(data.Dataset):
    """Each sample is the id of the process that read it."""

    def __len__(self):
        return 8

    def __getitem__(self, idx):
        return np.int64(os.getpid())


class _FailsAt(data.Dataset):
    def __init__(self, bad, exc=ValueError):
        self._bad, self._exc = bad, exc

    def __len__(self):
        return 12

    def __getitem__(self, idx):
        if idx == self._bad:
            raise self._exc(f"bad sample {idx}")
        return np.float32(idx)


class _Unpicklable(Exception):
    def __init__(self, code, detail):
        super().__init__(f"code {code}: {detail}")


# ----------------------------------------------------------------- arguments
def test_argument_rules_follow_mxnet():
    ds = _dataset()
    with pytest.raises(ValueError, match="batch_size must be specified"):
        data.DataLoader(ds)
    bs = data.BatchSampler(data.SequentialSampler(10), 2)
    for kwargs in (
        {"batch_size": 2},
        {"shuffle": True},
        {"last_batch": "keep"},
        {"sampler": data.SequentialSampler(10)},
    ):
        with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
            data.DataLoader(ds, batch_sampler=bs, **kwargs)
    with pytest.raises(ValueError, match="shuffle must not be specified if sampler"):
        data.DataLoader(ds, batch_size=2, shuffle=True, sampler=data.SequentialSampler(10))
    with pytest.raises(ValueError, match="last_batch must be one of"):
        data.DataLoader(ds, batch_size=2, last_batch="partial")
    with pytest.raises(ValueError, match="timeout must be positive"):
        data.DataLoader(ds, batch_size=2, timeout=0)


# ----------------------------------------------------------------- batching
def test_batches_shapes_dtypes_and_order():
    loader = data.DataLoader(_dataset(), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    x, y = batches[1]
    assert isinstance(batches[1], list)
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert y.asnumpy().tolist() == [4, 5, 6, 7]
    assert x.asnumpy()[0].tolist() == [12.0, 13.0, 14.0]
    assert x.context == mx.cpu(0)


def test_default_batchify_numbers_and_ndarrays():
    assert data.default_batchify_fn([1, 2, 3]).dtype == np.int64
    assert data.default_batchify_fn([0.5, 1.5]).dtype == np.float64
    stacked = data.default_batchify_fn([mx.nd.ones((2, 2)), mx.nd.zeros((2, 2))])
    assert stacked.shape == (2, 2, 2) and stacked.dtype == np.float32
    nested = data.default_batchify_fn([(mx.nd.ones(3), (1, 2.0)), (mx.nd.zeros(3), (3, 4.0))])
    assert nested[0].shape == (2, 3)
    assert nested[1][0].asnumpy().tolist() == [1, 3]
    assert nested[1][1].asnumpy().tolist() == [2.0, 4.0]


def test_last_batch_modes_and_shuffle():
    ds = _dataset()
    assert [b[0].shape[0] for b in data.DataLoader(ds, 4, last_batch="discard")] == [4, 4]
    roll = data.DataLoader(ds, 4, last_batch="rollover")
    first = [b[1].asnumpy().tolist() for b in roll]
    second = [b[1].asnumpy().tolist() for b in roll]
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert second == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    np.random.seed(3)
    shuffled = np.concatenate([b[1].asnumpy() for b in data.DataLoader(ds, 3, shuffle=True)])
    assert sorted(shuffled.tolist()) == list(range(10)) and shuffled.tolist() != list(range(10))


# ----------------------------------------------------------------- workers
@pytest.mark.parametrize("thread_pool", [False, True])
def test_workers_return_the_same_batches_in_order(thread_pool):
    ds = _dataset(37).transform_first(lambda x: x * 2)
    plain = list(data.DataLoader(ds, batch_size=5))
    loader = data.DataLoader(ds, batch_size=5, num_workers=2, thread_pool=thread_pool)
    for _ in range(2):
        got = list(loader)
        assert len(got) == len(plain) == 8
        for (gx, gy), (px, py) in zip(got, plain, strict=True):
            assert isinstance(gx, mx.nd.NDArray) and gx.context == mx.cpu(0)
            assert gx.dtype == px.dtype and gy.dtype == py.dtype
            np.testing.assert_array_equal(gx.asnumpy(), px.asnumpy())
            np.testing.assert_array_equal(gy.asnumpy(), py.asnumpy())


Pair = namedtuple("Pair", "nd np")


def test_prefetch_zero_and_a_custom_batchify_keep_their_structure():
    def batchify(samples):
        xs = np.stack([s[0] for s in samples])
        return Pair(mx.nd.array(xs), {"labels": np.array([s[1] for s in samples])})

    loader = data.DataLoader(
        _dataset(), batch_size=4, batchify_fn=batchify, num_workers=2, prefetch=0
    )
    batches = list(loader)
    assert [type(b) for b in batches] == [Pair] * 3
    assert isinstance(batches[0].nd, mx.nd.NDArray)
    assert isinstance(batches[0].np["labels"], np.ndarray)
    assert batches[2].np["labels"].tolist() == [8, 9]


def test_samples_are_read_in_worker_processes_with_their_own_random_streams():
    class Draws(data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, idx):
            return np.float64(np.random.random_sample())

    batches = [b.asnumpy().tolist() for b in data.DataLoader(Draws(), 4, num_workers=2)]
    assert batches[0] != batches[1]  # workers 0 and 1 did not inherit one stream
    pids = {int(p) for b in data.DataLoader(_Pids(), 2, num_workers=2) for p in b.asnumpy()}
    assert os.getpid() not in pids and len(pids) == 2


def test_no_worker_outlives_its_epoch_or_a_dropped_iterator():
    loader = data.DataLoader(_Pids(), batch_size=2, num_workers=2)
    pids = {int(p) for b in loader for p in b.asnumpy()}
    assert not _wait_gone(pids, 0.0)
    assert multiprocessing.active_children() == []
    it = iter(loader)
    pids = {int(p) for p in next(it).asnumpy()}
    assert not any(_gone(p) for p in pids)
    del it
    assert not _wait_gone(pids, 0.0)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("thread_pool", [False, True])
def test_a_worker_exception_surfaces_in_the_parent(thread_pool):
    loader = data.DataLoader(_FailsAt(7), batch_size=2, num_workers=2, thread_pool=thread_pool)
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="bad sample 7") as info:
        list(it)
    if not thread_pool:
        cause = str(info.value.__cause__)
        assert "DataLoader worker 1" in cause and "batch 3" in cause
        assert "ValueError: bad sample 7" in cause and "__getitem__" in cause
        assert multiprocessing.active_children() == []
    assert list(it) == []


def test_an_exception_that_cannot_travel_becomes_an_mxnet_error_naming_it():
    loader = data.DataLoader(_FailsAt(0, lambda msg: _Unpicklable(3, msg)), 4, num_workers=1)
    with pytest.raises(MXNetError, match=r"worker 0 .* raised _Unpicklable: code 3: bad sample 0"):
        list(loader)
    assert multiprocessing.active_children() == []


def test_arrays_on_a_gpu_never_reach_a_worker_process():
    from mxrs.ndarray.ndarray import _wrap

    labelled_gpu = _wrap(np.ones(2, np.float32), mx.gpu(0))  # host data, GPU label: no CUDA
    ds = data.SimpleDataset([(labelled_gpu, 1)] * 4)
    with pytest.raises(MXNetError, match=r"got an array on gpu\(0\); workers run on the CPU"):
        list(data.DataLoader(ds, batch_size=2, num_workers=1))
    assert multiprocessing.active_children() == []


def test_a_dying_worker_is_reported():
    class Exits(data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, idx):
            os._exit(3)

    with pytest.raises(MXNetError, match="exited unexpectedly with exit code 3"):
        list(data.DataLoader(Exits(), 2, num_workers=1))
    assert multiprocessing.active_children() == []


def test_a_slow_worker_times_out_and_is_stopped(monkeypatch):
    monkeypatch.setattr(_workers, "_GRACE_S", 0.2)

    class Slow(data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, idx):
            time.sleep(30)

    start = time.monotonic()
    with pytest.raises(MXNetError, match="timed out after 0.3 s"):
        list(data.DataLoader(Slow(), 2, num_workers=1, timeout=0.3))
    assert time.monotonic() - start < 5
    assert multiprocessing.active_children() == []


def test_workers_exit_with_their_parent():
    script = textwrap.dedent("""
        import os, signal, sys
        import numpy as np
        from mxrs.gluon import data

        class Pids(data.Dataset):
            def __len__(self):
                return 100
            def __getitem__(self, idx):
                return np.int64(os.getpid())

        it = iter(data.DataLoader(Pids(), batch_size=1, num_workers=2))
        pids = {int(next(it).asnumpy()[0]) for _ in range(4)}
        print(" ".join(map(str, sorted(pids))), flush=True)
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    for how in ("exit", "kill"):
        out = subprocess.run(
            [sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60
        )
        assert out.stderr == "" or how == "kill", out.stderr
        pids = [int(p) for p in out.stdout.split()]
        assert len(pids) == 2
        assert not _wait_gone(pids), f"workers left behind after parent {how}"


@pytest.mark.gpu
def test_workers_fork_safely_from_a_process_that_uses_the_gpu():
    pytest.importorskip("cupy", reason="GPU tests need CuPy and a CUDA GPU")
    if mx.context.num_gpus() == 0:
        pytest.skip("GPU tests need a CUDA GPU")
    gpu = mx.gpu(0)
    mx.random.seed(1)
    warm = mx.nd.random.uniform(shape=(64, 64), ctx=gpu)  # CUDA context, generator, memory pool
    ds = _dataset(40).transform_first(lambda x: x + 1)
    expect = [b[0].asnumpy() for b in data.DataLoader(ds, batch_size=8)]
    for _ in range(2):
        got = [x.as_in_context(gpu) for x, _ in data.DataLoader(ds, batch_size=8, num_workers=2)]
        assert [g.context for g in got] == [gpu] * 5
        for g, e in zip(got, expect, strict=True):
            np.testing.assert_array_equal(g.asnumpy(), e)
    assert float((warm * 0).sum().asscalar()) == 0.0  # the parent's GPU state still works
    assert multiprocessing.active_children() == []
    on_gpu = data.SimpleDataset([mx.nd.ones((2,), ctx=gpu)] * 4)
    with pytest.raises(MXNetError, match="workers run on the CPU only"):
        list(data.DataLoader(on_gpu, batch_size=2, num_workers=1))
