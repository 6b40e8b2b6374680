"""MXNet's other names of the local stores, its optimizer-less 'teststore', and updater states
restored as NDArrays."""

import mxrs as mx
import numpy as np
import pytest


def test_local_store_aliases_and_the_teststore():
    for name in ("local_update_cpu", "local_allreduce_cpu", "local_allreduce_device"):
        kv = mx.kv.create(name)
        assert kv.type == name
        kv.init(3, mx.nd.ones((2,), ctx=mx.cpu(1)))
        out = mx.nd.zeros((2,), ctx=mx.cpu(1))
        kv.pushpull(3, [mx.nd.ones((2,), ctx=mx.cpu(1)), mx.nd.ones((2,), ctx=mx.cpu(1))], out=out)
        assert out.asnumpy().tolist() == [2.0, 2.0], name
    # The teststore runs no optimizer: a Trainer updates on the workers, or refuses.
    x = mx.gluon.Parameter("x", shape=(4,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    kv = mx.kv.create("teststore")
    assert not kv.is_capable("optimizer")
    trainer = mx.gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    with mx.autograd.record():
        ys = [w + 1 for w in x.list_data()]
    mx.autograd.backward(ys)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    assert (x.data(mx.cpu(1)).asnumpy() == -2).all()  # both devices' gradients summed
    bad = mx.gluon.Trainer([x], "sgd", kvstore=kv, update_on_kvstore=True)
    with pytest.raises(ValueError, match="'teststore' KVStore cannot run the optimizer"):
        bad._init_kvstore()


def test_restored_updater_states_are_ndarrays():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((3,))
    updater(0, mx.nd.ones((3,)), w)
    blob = updater.get_states()
    again = mx.optimizer.get_updater(opt)
    again.set_states(blob)
    assert isinstance(again.states[0], mx.nd.NDArray)
    np.testing.assert_allclose(again.states[0].asnumpy(), updater.states[0].asnumpy())


def test_trainer_update_with_the_optimizer_on_the_store_is_refused_as_mxnet_does():
    x = mx.gluon.Parameter("x", shape=(2,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = mx.gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, update_on_kvstore=True)
    with mx.autograd.record():
        ys = [w + 1 for w in x.list_data()]
    mx.autograd.backward(ys)
    trainer.step(1)
    for call in (lambda: trainer.update(1), trainer.allreduce_grads):
        with pytest.raises(mx.base.InvalidUsageError, match="needs update_on_kvstore=False"):
            call()
        with pytest.raises(AssertionError):  # what MXNet 1.x raises
            call()
