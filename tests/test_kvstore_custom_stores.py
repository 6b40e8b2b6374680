"""Stores written on ``mx.kv.KVStoreBase``: MXNet 1.9.1's abstract interface, its registry
(``KVStoreBase.register`` makes ``mx.kv.create(name)`` build a user's store), the Python
``teststore``, ``broadcast`` on mxrs's own stores, and a Gluon Trainer driving a store that has
only ``broadcast`` and ``pushpull``."""

import warnings

import mxrs as mx
import numpy as np
import pytest
from mxrs.base import KVStoreError
from mxrs.kvstore import base

SHAPE = (2, 3)


@pytest.fixture
def registry():
    """Put the store registry back as it was after the test."""
    before = dict(base._REGISTRY)
    yield base._REGISTRY
    base._REGISTRY.clear()
    base._REGISTRY.update(before)


def test_the_interface_leaves_every_method_to_the_store():
    kv = mx.kv.KVStoreBase()
    x = mx.nd.ones(SHAPE)
    for call in (
        lambda: kv.broadcast(0, x, x),
        lambda: kv.pushpull(0, x),
        lambda: kv.set_optimizer(mx.optimizer.SGD()),
        lambda: kv.is_capable("optimizer"),
        lambda: kv.save_optimizer_states("f"),
        lambda: kv.load_optimizer_states("f"),
        lambda: kv.type,
        lambda: kv.rank,
        lambda: kv.num_workers,
    ):
        with pytest.raises(NotImplementedError):
            call()
    assert mx.kv.KVStoreBase.OPTIMIZER == "optimizer"
    assert mx.kv.KVStoreBase.kv_registry["teststore"].__name__ == "TestStore"


def test_a_registered_store_is_created_by_its_lower_case_class_name(registry):
    made = []

    @mx.kv.KVStoreBase.register
    class EchoStore(mx.kv.KVStoreBase):
        def __init__(self):  # create() passes no arguments, as MXNet's does
            made.append(self)

        @property
        def type(self):
            return "echostore"

    kv = mx.kv.create("EchoStore")
    assert isinstance(kv, EchoStore) and made == [kv] and kv.type == "echostore"
    assert mx.kv.KVStoreBase.kv_registry["echostore"] is EchoStore
    assert mx.kv.create(kv) is kv  # a store passes through

    class EchoStore(mx.kv.KVStoreBase):  # noqa: F811  (a second class of that name)
        pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.kv.KVStoreBase.register(EchoStore)
    assert "is overriding existing" in str(caught[0].message)
    assert type(mx.kv.create("echostore")) is EchoStore
    with pytest.raises(TypeError, match="takes a class"):
        mx.kv.KVStoreBase.register("notaclass")


def test_create_refuses_what_is_not_a_name_and_unknown_names():
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    with pytest.raises(mx.MXNetError, match="unknown KVStore type 'nostore'"):
        mx.kv.create("nostore")


def test_mxrs_stores_are_kvstores_that_run_the_optimizer():
    for name in ("local", "device"):
        kv = mx.kv.create(name)
        assert isinstance(kv, mx.kv.KVStore) and isinstance(kv, mx.kv.KVStoreBase)
        assert kv.is_capable("optimizer") and kv.is_capable("OPTIMIZER")
        assert type(kv).is_capable(mx.kv.KVStoreBase.OPTIMIZER)
        with pytest.raises(ValueError, match="Unknown capability: sparse"):
            kv.is_capable("sparse")


@pytest.mark.parametrize("name", ["local", "device"])
def test_broadcast_fills_every_output_with_the_value(name):
    kv = mx.kv.create(name)
    value = mx.nd.array(np.arange(6).reshape(SHAPE))
    outs = [mx.nd.zeros(SHAPE, ctx=mx.cpu(i)) for i in range(3)]
    kv.broadcast("w", value, outs)
    for i, o in enumerate(outs):
        assert o.context == mx.cpu(i)
        np.testing.assert_array_equal(o.asnumpy(), np.arange(6).reshape(SHAPE))
    # the key now holds the value: a pushpull sums into it as for any initialised key
    out = mx.nd.zeros(SHAPE)
    kv.pushpull("w", [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) for i in range(2)], out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 2.0))
    with pytest.raises(KVStoreError, match="already initialised"):
        kv.broadcast("w", value, outs)


def test_broadcast_of_a_list_of_keys():
    kv = mx.kv.create("device")
    values = [mx.nd.full(SHAPE, k) for k in (1, 2)]
    outs = [[mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE, ctx=mx.cpu(1))], [mx.nd.zeros(SHAPE)]]
    kv.broadcast([5, 9], values, outs)
    assert [o.asnumpy()[0, 0] for o in outs[0] + outs[1]] == [1.0, 1.0, 2.0]


def test_the_teststore_copies_and_sums_without_keeping_anything():
    kv = mx.kv.create("teststore")
    assert (kv.type, kv.rank, kv.num_workers) == ("teststore", 0, 1)
    outs = [mx.nd.zeros(SHAPE, ctx=mx.cpu(i)) for i in range(2)]
    kv.broadcast(3, mx.nd.full(SHAPE, 7), outs)
    assert [o.asnumpy()[1, 2] for o in outs] == [7.0, 7.0]
    kv.broadcast(3, mx.nd.full(SHAPE, 8), outs[0])  # the same key again: fine, nothing is kept
    assert outs[0].asnumpy()[0, 0] == 8.0
    # values on four devices are summed on the first one's, into out or into the values
    values = [mx.nd.full(SHAPE, i + 1, ctx=mx.cpu(i)) for i in range(4)]
    out = [mx.nd.zeros(SHAPE, ctx=mx.cpu(i)) for i in range(4)]
    kv.pushpull("k", values, out=out)
    assert [o.asnumpy()[0, 0] for o in out] == [10.0] * 4
    assert [v.asnumpy()[0, 0] for v in values] == [1.0, 2.0, 3.0, 4.0]
    kv.pushpull("k", values)
    assert [(v.asnumpy()[0, 0], v.context) for v in values] == [(10.0, mx.cpu(i)) for i in range(4)]
    single = mx.nd.full(SHAPE, 3)
    kv.pushpull("k", single, out=out[1])  # one value is copied as it is
    assert out[1].asnumpy()[0, 0] == 3.0


def test_the_teststore_runs_no_optimizer():
    kv = mx.kv.create("teststore")
    assert type(kv).is_capable("optimizer") is False
    with pytest.raises(ValueError, match="Unknown capability"):
        kv.is_capable("gradient_compression")
    with pytest.raises(NotImplementedError):
        kv.set_optimizer(mx.optimizer.SGD())
    with pytest.raises(NotImplementedError):
        kv.save_optimizer_states("states")
    with pytest.raises(NotImplementedError):
        kv.load_optimizer_states("states")


class _Recording(mx.kv.KVStoreBase):
    """A store with MXNet's interface only, summing like the teststore and noting its calls."""

    def __init__(self):
        self.calls = []

    def broadcast(self, key, value, out, priority=0):
        self.calls.append(("broadcast", key))
        for o in out if isinstance(out, list) else [out]:
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        self.calls.append(("pushpull", key))
        total = sum(v.as_in_context(value[0].context) for v in value[1:]) + value[0]
        for o in value if out is None else out:
            o[:] = total

    @staticmethod
    def is_capable(capability):
        return False

    @property
    def type(self):
        return "recording"


def test_a_trainer_drives_a_store_of_the_interface_alone():
    net = mx.gluon.nn.Dense(2, in_units=3, use_bias=False)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net.initialize(mx.init.One(), ctx=ctxs)
    net.weight.data(mx.cpu(1))[:] = 5  # the store's broadcast starts every copy from the first
    kv = _Recording()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5}, kvstore=kv)
    with mx.autograd.record():
        losses = [net(mx.nd.ones((1, 3), ctx=c)).sum() for c in ctxs]
    mx.autograd.backward(losses)
    trainer.step(1)
    assert trainer._update_on_kvstore is False  # it cannot run the optimizer: workers update
    assert kv.calls == [("broadcast", 0), ("pushpull", 0)]
    # each copy: 1 - 0.5 * (1 + 1) (both devices' gradients of ones, summed)
    for c in ctxs:
        np.testing.assert_array_equal(net.weight.data(c).asnumpy(), np.zeros((2, 3)))
    bad = mx.gluon.Trainer(net.collect_params(), "sgd", kvstore=_Recording(),
                           update_on_kvstore=True)  # fmt: skip
    with pytest.raises(ValueError, match="cannot run the optimizer"):
        bad._init_kvstore()


def test_a_trainer_refuses_sparse_gradients_on_a_store_of_the_interface_alone():
    emb = mx.gluon.nn.Embedding(4, 2, sparse_grad=True)
    emb.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = mx.gluon.Trainer(emb.collect_params(), "sgd", kvstore=_Recording())
    with pytest.raises(ValueError, match="multi-device training with sparse gradients"):
        trainer._init_kvstore()
