"""The single-process KVStores 'local' and 'device'."""

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import KVStoreError, ShapeMismatchError


@pytest.mark.parametrize("name", ["local", "device"])
def test_push_sums_device_values_and_pull_copies_to_every_device(name):
    kv = mx.kv.create(name)
    assert (kv.type, kv.rank, kv.num_workers) == (name, 0, 1)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    kv.init(3, mx.nd.zeros((2, 3)))
    kv.push(3, [mx.nd.ones((2, 3), ctx=c) * (i + 1) for i, c in enumerate(ctxs)])
    outs = [mx.nd.zeros((2, 3), ctx=c) for c in ctxs]
    kv.pull(3, out=outs)
    for o, c in zip(outs, ctxs, strict=True):
        assert o.context == c
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 3.0))


def test_device_store_keeps_the_key_on_the_init_device():
    kv = mx.kv.create("device")
    kv.init("w", mx.nd.ones((2,), ctx=mx.cpu(1)))
    assert kv._store["w"].context == mx.cpu(1)
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2,), ctx=mx.cpu(1)))
    assert kv._store["w"].context == mx.cpu(0)


def test_lists_of_keys_and_str_keys():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [mx.nd.ones((2,)), mx.nd.ones((3,)) * 2])
    a, b = mx.nd.zeros((2,)), mx.nd.zeros((3,))
    kv.pull(["a", "b"], out=[a, b])
    np.testing.assert_array_equal(a.asnumpy(), [1, 1])
    np.testing.assert_array_equal(b.asnumpy(), [2, 2, 2])
    kv.pushpull("a", mx.nd.array([5.0, 6.0]), out=a)
    np.testing.assert_array_equal(a.asnumpy(), [5, 6])


def test_updater_sees_the_summed_push():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.ones((2,)) * 10)
    seen = []

    def updater(key, grad, weight):
        seen.append(key)
        weight[:] = weight - 0.5 * grad

    kv._set_updater(updater)
    kv.push(0, [mx.nd.ones((2,), ctx=mx.cpu(0)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    assert seen == [0]
    np.testing.assert_array_equal(out.asnumpy(), [9, 9])


def test_bad_input_is_refused_and_changes_nothing():
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((2, 2)))
    with pytest.raises(KVStoreError, match="already initialised"):
        kv.init(1, mx.nd.ones((2, 2)))
    with pytest.raises(ShapeMismatchError, match=r"key 1 holds shape \(2, 2\).*\(3,\)"):
        kv.push(1, mx.nd.ones((3,)))
    with pytest.raises(KVStoreError, match="never initialised"):
        kv.push(9, mx.nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="int or a str"):
        kv.push(1.5, mx.nd.ones((2, 2)))
    with pytest.raises(mx.MXNetError, match="2 keys but 1 values"):
        kv.push([1, 2], [mx.nd.ones((2, 2))])
    out = mx.nd.zeros((2, 2))
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones((2, 2)))


def test_create_names():
    assert mx.kvstore.create("local").type == "local"
    with pytest.raises(mx.MXNetError, match="unknown KVStore type 'nccl2'"):
        mx.kv.create("nccl2")


class _FakeTicket:
    def __init__(self):
        self.waits = 0

    def wait(self):
        self.waits += 1


def test_pending_array_waits_before_its_data_is_used():
    from mxrs.ndarray import _pending

    a = mx.nd.zeros((3,))
    t = _FakeTicket()
    _pending.mark(a, t, finalize=lambda raw: raw.__setitem__(..., 7.0))
    assert _pending.is_pending(a) and isinstance(a, mx.nd.NDArray)
    b = a + 1  # the op reads a's data: the ticket is waited for and the finalizer runs first
    assert t.waits == 1 and not _pending.is_pending(a) and type(a) is mx.nd.NDArray
    np.testing.assert_array_equal(b.asnumpy(), [8, 8, 8])
    c = mx.nd.zeros((2,))
    _pending.mark(c, t)
    mx.nd.waitall()
    assert t.waits == 2 and not _pending.is_pending(c)


class _FailingTicket(_FakeTicket):
    def wait(self):
        super().wait()
        raise mx.base.NodeLostError("server 0 was lost")


def test_waitall_waits_once_per_request_and_settles_every_array_despite_errors():
    from mxrs.ndarray import _pending

    shared, failing = _FakeTicket(), _FailingTicket()
    many = [mx.nd.zeros((2,)) for _ in range(50)]
    _pending.mark_all(many, shared)  # one request covering fifty arrays
    copied = mx.nd.zeros((2,))
    _pending.mark(copied, shared, finalize=lambda raw: raw.__setitem__(..., 5.0))
    lost = mx.nd.zeros((2,))
    _pending.mark(lost, failing)
    with pytest.raises(mx.base.NodeLostError, match="server 0 was lost"):
        mx.nd.waitall()
    assert (shared.waits, failing.waits) == (1, 1)
    assert not any(_pending.is_pending(a) for a in [*many, copied, lost])
    np.testing.assert_array_equal(copied.asnumpy(), [5, 5])
    mx.nd.waitall()  # nothing is left to wait for
