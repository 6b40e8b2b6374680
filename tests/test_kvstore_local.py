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


def test_mxrs_kvstore_replaces_one_process_stores_in_trainers_and_modules(monkeypatch):
    from mxrs.gluon._trainer_kv import choose_store
    from mxrs.module.kvstore_update import create_kvstore

    mine = mx.kv.create("local")
    assert mx.kv.chosen("device") == "device"
    monkeypatch.setenv("MXRS_KVSTORE", "dist_sync")
    assert [mx.kv.chosen(n) for n in ("device", "LOCAL", "dist_async")] == [
        "dist_sync",
        "dist_sync",
        "dist_async",
    ]
    assert mx.kv.chosen(mine) is mine and mx.kv.chosen(None) is None
    made = []

    def create(name):
        made.append(name)
        return mine

    monkeypatch.setattr(mx.kvstore, "create", create)
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    # one context and 'device': no store at all, unless the override names a dist one
    kv, _ = choose_store(list(net.collect_params().values()), 1, "device", None)
    assert kv is mine
    kv, _ = create_kvstore("local", 1, {"w": mx.nd.ones((2,))})
    assert kv is mine and made == ["dist_sync", "dist_sync"]
    monkeypatch.setenv("MXRS_KVSTORE", "nccl2")
    with pytest.raises(mx.MXNetError, match="MXRS_KVSTORE='nccl2' is not a KVStore type"):
        mx.kv.chosen("device")


def test_registering_a_taken_name_warns_and_takes_it_over():
    from mxrs.kvstore import base

    before = dict(base._REGISTRY)
    mine = type("Mine", (base.KVStoreBase,), {})
    try:
        with pytest.warns(
            UserWarning,
            match=r"KVStore 'local': new .*Mine is overriding "
            r"existing mxrs.kvstore.local.LocalKVStore",
        ):
            base.register("LOCAL")(mine)
        assert base._REGISTRY["local"] is mine
        base.register("local", "mine")(mine)  # the same class again, a new name: no warning
    finally:
        base._REGISTRY.clear()
        base._REGISTRY.update(before)
    assert type(mx.kv.create("local")).__name__ == "LocalKVStore"


def test_set_optimizer_params_changes_the_stores_optimizer_and_refuses_other_names():
    kv = mx.kv.create("local")
    with pytest.raises(KVStoreError, match="no optimizer is set"):
        kv.set_optimizer_params(learning_rate=0.5)
    opt = mx.optimizer.SGD(learning_rate=0.1)
    kv.set_optimizer(opt)
    kv.set_optimizer_params(learning_rate=0.5, rescale_grad=0.25)
    assert opt.learning_rate == 0.5 and opt.rescale_grad == 0.25
    kv.init(3, mx.nd.ones((2,)))
    kv.push(3, mx.nd.ones((2,)))  # w - lr * rescale * g = 1 - 0.5 * 0.25
    out = mx.nd.zeros((2,))
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.875, 0.875])
    with pytest.raises(
        mx.MXNetError, match="cannot change momentum; only learning_rate and rescale_grad"
    ):
        kv.set_optimizer_params(momentum=0.9)
    assert opt.momentum == 0.0
