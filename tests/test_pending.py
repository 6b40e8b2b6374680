"""Pending arrays and the errors of KVStore requests, with stand-in tickets (no job needed).

What a user sees: an array waits for the requests on it before its data is used; the arrays of
a finished request are let go of at the next KVStore call; a failed request raises exactly once
at the first place the program looks (next KVStore call, ``waitall``, or a read of an array it
touched), and every array it was to write raises at its first read.
"""

import gc
import weakref

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import KVStoreError, NodeLostError
from mxrs.ndarray import _pending


class Ticket:
    """A request: ``ready`` says whether ``wait`` would return at once; a failure stays."""

    def __init__(self, error=None, ready=True, nbytes=0):
        self.error, self.ready, self.waits, self.nbytes = error, ready, 0, nbytes

    def wait(self):
        self.waits += 1
        self.ready = True
        if self.error is not None:
            raise self.error


@pytest.fixture(autouse=True)
def _clean():
    mx.nd.waitall() if not _pending._UNREPORTED else _pending.unreported()
    yield
    _pending.unreported()
    _pending.settle_all()


def test_an_array_waits_for_its_request_before_its_data_is_used():
    a = mx.nd.zeros((3,))
    t = Ticket(ready=False)
    _pending.track(t, writes=[(a, lambda raw: raw.__setitem__(..., 7.0))])
    assert _pending.is_pending(a) and isinstance(a, mx.nd.NDArray)
    b = a + 1  # the op reads a: the ticket is waited for and the finalizer runs first
    assert t.waits == 1 and not _pending.is_pending(a) and type(a) is mx.nd.NDArray
    np.testing.assert_array_equal(b.asnumpy(), [8, 8, 8])


def test_two_requests_on_one_array_finish_in_the_order_they_were_made():
    a = mx.nd.zeros((2,))
    first, second = Ticket(ready=False), Ticket()
    _pending.track(first, writes=[(a, lambda raw: raw.__setitem__(..., 1.0))])
    _pending.track(second, writes=[(a, lambda raw: raw.__setitem__(..., 2.0))])
    _pending.check()  # the second is done, but the first is not: nothing may run yet
    assert _pending.is_pending(a) and second.waits == 0
    first.ready = True
    _pending.check()
    assert not _pending.is_pending(a)
    np.testing.assert_array_equal(a.asnumpy(), [2, 2])


def test_a_kvstore_call_lets_go_of_the_arrays_of_finished_requests():
    refs = []
    for _ in range(300):
        grad = mx.nd.ones((1000,)) * 3  # a fresh array, pushed and never read again
        refs.append(weakref.ref(grad))
        _pending.track(Ticket(), reads=[grad])
        del grad
        _pending.check()  # what the next push does first
    gc.collect()
    assert sum(r() is not None for r in refs) <= 1
    assert len(_pending._INFLIGHT) <= 1 and len(_pending._PENDING) <= 1


def test_a_slow_request_does_not_hold_back_the_arrays_of_later_ones():
    slow = Ticket(ready=False)
    _pending.track(slow, writes=[(mx.nd.zeros((2,)), None)])
    refs = []
    for _ in range(2 * _pending._SCAN_FROM):
        grad = mx.nd.ones((10,))
        refs.append(weakref.ref(grad))
        _pending.track(Ticket(), reads=[grad])
        del grad
        _pending.check()
    gc.collect()
    assert sum(r() is not None for r in refs) <= _pending._SCAN_FROM
    assert slow.waits == 0


def test_a_failed_request_raises_once_at_the_next_kvstore_call():
    pushed = mx.nd.ones((2,))
    _pending.track(Ticket(KVStoreError("key 1: refused")), reads=[pushed])
    with pytest.raises(KVStoreError, match="key 1: refused"):
        _pending.check()
    _pending.check()  # reported: not again
    np.testing.assert_array_equal(pushed.asnumpy(), [1, 1])  # its data is intact
    mx.nd.waitall()


def test_waitall_waits_once_per_request_and_raises_the_first_failure_with_a_count():
    shared = Ticket()
    many = [mx.nd.zeros((2,)) for _ in range(50)]
    copied = mx.nd.zeros((2,))
    # One request covering fifty arrays it reads and one it writes through a copy.
    _pending.track(shared, reads=many, writes=[(copied, lambda raw: raw.__setitem__(..., 5.0))])
    _pending.track(Ticket(NodeLostError("server 0 was lost")), reads=[mx.nd.zeros((1,))])
    _pending.track(Ticket(KVStoreError("key 2: refused")), reads=[mx.nd.zeros((1,))])
    with pytest.raises(NodeLostError, match=r"server 0 was lost \(and 1 more"):
        mx.nd.waitall()
    assert shared.waits == 1
    assert not any(_pending.is_pending(a) for a in [*many, copied])
    np.testing.assert_array_equal(copied.asnumpy(), [5, 5])
    mx.nd.waitall()  # nothing is left, and nothing raises twice


def test_every_array_of_a_failed_pull_raises_at_its_first_read():
    a, b = mx.nd.full((2,), 9.0), mx.nd.full((2,), 9.0)
    failing = Ticket(NodeLostError("server 1 was lost"))
    _pending.track(failing, writes=[(a, None), (b, None)])
    with pytest.raises(NodeLostError, match="server 1 was lost"):
        _pending.check()  # reported here first
    # Neither array was written: each raises at its first read, then reads as it was.
    with pytest.raises(NodeLostError, match="server 1 was lost"):
        a.asnumpy()
    with pytest.raises(NodeLostError, match="server 1 was lost"):
        b + 1
    np.testing.assert_array_equal(a.asnumpy(), [9, 9])
    assert failing.waits == 1 and not _pending.is_pending(b)
    mx.nd.waitall()


def test_a_failed_destination_raises_once_then_can_be_written():
    a = mx.nd.zeros((2,))
    _pending.track(Ticket(KVStoreError("pull refused")), writes=[(a, None)])
    _pending.unreported()
    with pytest.raises(KVStoreError, match="pull refused"):
        a[:] = 4  # an in-place write touches it too
    a[:] = 4
    np.testing.assert_array_equal(a.asnumpy(), [4, 4])
    c = mx.nd.zeros((2,))
    _pending.track(Ticket(KVStoreError("pull refused")), writes=[(c, None)])
    _pending.sweep()
    _pending.unreported()
    c._data = np.full((2,), 6, np.float32)  # replaced whole: the failure no longer shows
    np.testing.assert_array_equal(c.asnumpy(), [6, 6])
    b = mx.nd.zeros((2,))
    _pending.track(Ticket(KVStoreError("pull refused")), writes=[(b, None)])
    _pending.track(Ticket(), writes=[(b, lambda raw: raw.__setitem__(..., 3.0))])
    _pending.sweep()
    assert _pending.unreported() == ["KVStoreError: pull refused"]
    np.testing.assert_array_equal(b.asnumpy(), [3, 3])  # a later pull wrote it


def test_a_failed_finalizer_is_a_failed_request():
    def broken(raw):
        raise KVStoreError("copy to the device failed")

    a = mx.nd.zeros((2,))
    _pending.track(Ticket(), writes=[(a, broken)])
    with pytest.raises(KVStoreError, match="copy to the device failed"):
        a.asnumpy()
    mx.nd.waitall()


def test_failures_nobody_saw_are_handed_over_once_and_bounded():
    for i in range(_pending.MAX_UNREPORTED + 5):
        _pending.track(Ticket(KVStoreError(f"refusal {i}")), reads=[mx.nd.zeros((1,))])
    _pending.sweep()
    lost = _pending.unreported()
    assert lost[0] == "KVStoreError: refusal 0"
    assert len(lost) == _pending.MAX_UNREPORTED + 1 and "5 more" in lost[-1]
    assert _pending.unreported() == []
    mx.nd.waitall()


def test_a_new_request_waits_for_the_oldest_while_too_much_is_in_flight(monkeypatch):
    monkeypatch.setattr(_pending, "MAX_INFLIGHT_BYTES", 4 << 20)
    tickets = []
    for _ in range(6):
        t = Ticket(ready=False, nbytes=1 << 20)
        _pending.track(t, reads=[mx.nd.zeros((1,))])
        tickets.append(t)
    # Four fit; each later one waited for the oldest still in flight.
    assert [t.waits for t in tickets] == [1, 1, 0, 0, 0, 0]
    assert _pending._inflight_bytes == 4 << 20
    big = Ticket(nbytes=12 << 20)  # more than the bound: everything before it is waited for
    _pending.track(big)
    assert all(t.waits == 1 for t in tickets) and _pending._inflight_bytes == 12 << 20
    mx.nd.waitall()
    assert _pending._inflight_bytes == 0
