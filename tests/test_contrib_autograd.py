"""mx.contrib.autograd (MXNet's first autograd API) against Apache MXNet 1.9.1: the gradients
grad_and_loss, grad and backward compute, the training-state scopes, and the errors bad
arguments raise."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd
from mxrs.base import MXNetError
from mxrs.contrib import autograd as cag

RNG = np.random.default_rng(11)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


_GRADS = """
ag = mx.contrib.autograd
nd = mx.nd
x, y, w = (nd.array(inputs[k]) for k in ("x", "y", "w"))

def f(x, y, w, scale):
    return nd.FullyConnected(nd.tanh(x * y), w, no_bias=True, num_hidden=3) * scale

grads, out = ag.grad_and_loss(f)(x, y, w, nd.array([2.0]))
arrays["out"] = out.asnumpy()
for i, g in enumerate(grads):
    arrays["g%d" % i] = g.asnumpy()
for i, g in enumerate(ag.grad(f, argnum=[0, 2])(x, y, w, nd.array([0.5]))):
    arrays["sel%d" % i] = g.asnumpy()
arrays["one"] = ag.grad(lambda a, b: nd.sum(nd.exp(a) * b), argnum=1)(x, y)[0].asnumpy()

# backward with output gradients, one of them None, into 'add' buffers
v = nd.array(inputs["x"])
dv = nd.ones_like(v)
ag.mark_variables([v], [dv], grad_reqs="add")
with ag.train_section():
    a = nd.sin(v)
    b = v * v
    ag.backward([a, b], [None, nd.array(inputs["y"])])
arrays["dv"] = dv.asnumpy()

# compute_gradient of a list of heads, 'write'
u = nd.array(inputs["y"])
du = nd.zeros_like(u)
ag.mark_variables([u], [du])
with ag.train_section():
    heads = [nd.sum(u * u), nd.log(nd.abs(u) + 1)]
ag.compute_gradient(heads)
arrays["du"] = du.asnumpy()
"""


def test_gradients_match_mxnet(tmp_path):
    inputs = {"x": _f32(4, 5), "y": _f32(4, 5), "w": _f32(3, 5)}
    mxnet_ref.check_body(tmp_path, _GRADS, inputs, rtol=1e-5, atol=1e-6)


def test_training_state_scopes():
    assert not autograd.is_recording() and not autograd.is_training()
    with cag.train_section():
        assert autograd.is_recording() and autograd.is_training()
        with cag.test_section():
            assert not autograd.is_recording() and not autograd.is_training()
        assert autograd.is_recording() and autograd.is_training()
    assert not autograd.is_recording() and not autograd.is_training()
    assert cag.set_is_training(True) is False
    assert cag.set_is_training(False) is True
    assert not autograd.is_training()


def test_retain_graph():
    x = mx.nd.ones((2, 2))
    dx = mx.nd.zeros((2, 2))
    cag.mark_variables([x], [dx], grad_reqs="add")
    with cag.train_section():
        y = x * 3
    cag.backward([y], retain_graph=True)
    cag.backward([y])
    np.testing.assert_array_equal(dx.asnumpy(), 6)
    with pytest.raises(MXNetError):
        cag.backward([y])


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda x: cag.backward(x), "list or tuple"),
        (lambda x: cag.backward([x], [None, None]), "same length"),
        (lambda x: cag.backward([x, 3]), "NDArrays"),
        (lambda x: cag.mark_variables([x], []), "lengths must agree"),
        (lambda x: cag.mark_variables([x], [x.zeros_like()], ["write", "add"]), "lengths"),
        (lambda x: cag.mark_variables([x], [x.zeros_like()], "sum"), "grad_req"),
        (lambda x: cag.grad(lambda a, b: a * b)(x, 2.0), "argument 1 must be an NDArray"),
        (lambda x: cag.grad(lambda a: a, argnum=3)(x), "argnum 3"),
    ],
)
def test_bad_arguments_raise(call, words):
    with pytest.raises(MXNetError, match=words):
        call(mx.nd.ones((2,)))
