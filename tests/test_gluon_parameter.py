"""Parameter, Constant and ParameterDict: copies per context, deferred init, save and load."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon
from mxrs.base import MXNetError
from mxrs.gluon import Constant, DeferredInitializationError, Parameter, ParameterDict

CTXS = [mx.cpu(0), mx.cpu(1)]


def test_copies_on_every_context_are_identical():
    p = Parameter("fc_weight", shape=(4, 3), init=mx.init.Xavier())
    p.initialize(ctx=CTXS)
    assert p.list_ctx() == CTXS
    a, b = p.list_data()
    assert (a.context, b.context) == (mx.cpu(0), mx.cpu(1))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert p.data(mx.cpu(1)) is b
    with mx.cpu(1):
        assert p.data() is b
    assert p.data() is a  # current context is cpu(0)
    assert [g.context for g in p.list_grad()] == CTXS
    np.testing.assert_array_equal(p.grad(mx.cpu(1)).asnumpy(), np.zeros((4, 3)))


def test_data_is_the_same_object_on_every_call():
    p = Parameter("w", shape=(2,))
    p.initialize(ctx=mx.cpu(0))
    assert p.data() is p.data(mx.cpu(0)) is p.list_data()[0]
    assert p.grad() is p.list_grad()[0] is p.data().grad


def test_single_copy_data_and_wrong_context():
    p = Parameter("w", shape=(2, 2))
    p.initialize(ctx=mx.cpu(1))
    assert p.data().context == mx.cpu(1)
    with pytest.raises(
        MXNetError,
        match=r"'w' was not initialized on context cpu\(3\). It was "
        r"only initialized on \[cpu\(1\)\]",
    ):
        p.data(mx.cpu(3))


def test_uninitialized_parameter_errors():
    p = Parameter("lonely", shape=(2,))
    with pytest.raises(MXNetError, match="Parameter 'lonely' has not been initialized"):
        p.data()
    with pytest.raises(MXNetError, match="has not been initialized"):
        p.list_ctx()
    assert not p._is_initialized() and not p._is_deferred()


def test_unknown_shape_without_deferral_is_an_error():
    p = Parameter("w", shape=(3, 0))
    with pytest.raises(
        MXNetError,
        match=r"Cannot initialize Parameter 'w' because it has "
        r"invalid shape: \(3, 0\)",
    ):
        p.initialize()


def test_deferred_initialization_waits_for_the_shape():
    p = Parameter("dense0_weight", shape=(3, None), allow_deferred_init=True)
    assert p.shape == (3, 0)
    p.initialize(init=mx.init.One(), ctx=CTXS)
    assert p._is_deferred() and not p._is_initialized()
    assert p.list_ctx() == CTXS
    with pytest.raises(DeferredInitializationError, match="initialization was deferred"):
        p.data()
    p.shape = (3, 5)
    with pytest.raises(MXNetError, match="incompatible"):
        p.shape = (4, 5)
    p._finish_deferred_init()
    assert p._is_initialized() and not p._is_deferred()
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), np.ones((3, 5)))


def test_deferred_set_data_is_used_at_finish():
    p = Parameter("w", shape=(0,), allow_deferred_init=True)
    p.initialize(ctx=CTXS)
    p.set_data(mx.nd.array([1.0, 2.0]))
    p._finish_deferred_init()
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), [1, 2])


def test_initialize_twice_warns_and_force_reinit_keeps_the_arrays():
    p = Parameter("w", shape=(2, 2), init=mx.init.Zero())
    p.initialize(ctx=CTXS)
    arrays, grads = p.list_data(), p.list_grad()
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize(ctx=CTXS)
    p.initialize(init=mx.init.One(), ctx=CTXS, force_reinit=True)
    assert all(a is b for a, b in zip(p.list_data(), arrays, strict=True))
    assert all(a is b for a, b in zip(p.list_grad(), grads, strict=True))
    np.testing.assert_array_equal(arrays[1].asnumpy(), np.ones((2, 2)))


def test_default_init_and_own_init():
    p = Parameter("w", shape=(50,), init="ones")
    p.initialize(default_init=mx.init.Zero())
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones(50))
    q = Parameter("q_weight", shape=(50,))
    q.initialize()
    assert 0 < np.abs(q.data().asnumpy()).max() <= 0.07  # Uniform(0.07) by default


def test_set_data_writes_every_copy_in_place():
    p = Parameter("w", shape=(2,))
    p.initialize(ctx=CTXS)
    arrays = p.list_data()
    p.set_data(mx.nd.array([5.0, 6.0]))
    p.set_data(np.array([7.0, 8.0]))
    for a, b in zip(p.list_data(), arrays, strict=True):
        assert a is b
        np.testing.assert_array_equal(a.asnumpy(), [7, 8])


def test_gradients_flow_into_each_copy_and_zero_grad():
    p = Parameter("w", shape=(3,), init=mx.init.One())
    p.initialize(ctx=CTXS)
    for i, ctx in enumerate(CTXS):
        with autograd.record():
            y = (p.data(ctx) * (i + 2)).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad(mx.cpu(0)).asnumpy(), [2, 2, 2])
    np.testing.assert_array_equal(p.grad(mx.cpu(1)).asnumpy(), [3, 3, 3])
    assert all(a._fresh_grad for a in p.list_data())
    grads = p.list_grad()
    p.zero_grad()
    assert p.list_grad()[0] is grads[0]
    np.testing.assert_array_equal(grads[1].asnumpy(), np.zeros(3))


def test_grad_req_add_accumulates_and_null_drops_gradients():
    p = Parameter("w", shape=(2,), init=mx.init.One(), grad_req="add")
    p.initialize()
    for _ in range(2):
        with autograd.record():
            y = (p.data() * 3).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [6, 6])
    grad = p.grad()
    p.grad_req = "write"  # keeps the buffer
    assert p.grad() is grad and p.data().grad_req == "write"
    data = p.data()
    p.grad_req = "null"
    assert p.data() is data and data.grad is None
    with pytest.raises(MXNetError, match="because grad_req='null'"):
        p.grad()
    with pytest.raises(MXNetError, match="because grad_req='null'"):
        p.list_grad()
    p.grad_req = "write"
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0])
    with pytest.raises(MXNetError, match="grad_req must be one of"):
        p.grad_req = "sometimes"


def test_non_differentiable_parameter_has_no_gradient():
    p = Parameter("running_mean", shape=(2,), grad_req="write", differentiable=False)
    assert p.grad_req == "null"
    p.initialize()
    assert p.data().grad is None


def test_trainer_helpers():
    p = Parameter("w", shape=(2,))
    assert p.name == "w" and p.lr_mult == 1.0 and p.wd_mult == 1.0
    p.lr_mult, p.wd_mult = 2.0, 0.0
    assert (p.lr_mult, p.wd_mult) == (2.0, 0.0)
    first, second = object(), object()
    p._set_trainer(first)
    assert p._trainer is first
    p._set_trainer(second)  # a dense parameter may move to another trainer, as in MXNet
    assert p._trainer is second


def test_cast_keeps_the_same_arrays():
    p = Parameter("w", shape=(2,), init=mx.init.One())
    p.initialize(ctx=CTXS)
    data, grads = p.list_data(), p.list_grad()
    p.cast("float64")
    assert p.dtype == "float64"
    assert all(a is b and a.dtype == np.float64 for a, b in zip(p.list_data(), data, strict=True))
    assert all(g is h and g.dtype == np.float64 for g, h in zip(p.list_grad(), grads, strict=True))
    with autograd.record():
        y = (p.data(mx.cpu(1)) * 2).sum()
    y.backward()
    np.testing.assert_array_equal(grads[1].asnumpy(), [2, 2])


def test_reset_ctx_moves_the_value():
    p = Parameter("w", shape=(2,), init=mx.init.Constant(3.0))
    p.initialize(ctx=mx.cpu(0))
    p.reset_ctx(CTXS)
    assert p.list_ctx() == CTXS
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), [3, 3])
    q = Parameter("q", shape=(0,), allow_deferred_init=True)
    q.initialize(ctx=mx.cpu(0))
    q.reset_ctx(CTXS)
    assert q.list_ctx() == CTXS
    with pytest.raises(MXNetError, match="Cannot reset context"):
        Parameter("r", shape=(1,)).reset_ctx(CTXS)


def test_constant():
    c = Constant("const", [[1, 2], [3, 4]])
    assert c.grad_req == "null" and c.shape == (2, 2)
    c.initialize(ctx=CTXS)
    np.testing.assert_array_equal(c.data(mx.cpu(1)).asnumpy(), [[1, 2], [3, 4]])
    with pytest.warns(UserWarning, match="does not support grad_req"):
        c.grad_req = "write"
    assert c.grad_req == "null"
    assert repr(c) == "Constant const (shape=(2, 2), dtype=<class 'numpy.float32'>)"


def test_parameter_dict_get_creates_with_prefix_and_returns_existing():
    params = ParameterDict("net_")
    w = params.get("weight", shape=(2, 0), init="zeros")
    assert list(params.keys()) == ["net_weight"] and w.name == "net_weight"
    assert params.get("weight", shape=(2, 5)) is w
    assert w.shape == (2, 5)
    with pytest.raises(MXNetError, match="desired attribute does not match"):
        params.get("weight", shape=(3, 5))
    with pytest.raises(MXNetError, match="attribute 'lr_mult'"):
        params.get("weight", lr_mult=3.0)
    assert len(params) == 1 and "net_weight" in params and list(params) == ["net_weight"]
    assert params["net_weight"] is w
    assert params.prefix == "net_"
    assert repr(params) == (
        "net_ (\n  Parameter net_weight (shape=(2, 5), dtype=<class 'numpy.float32'>)\n)"
    )


def test_parameter_dict_shared_and_update():
    base = ParameterDict("a_")
    w = base.get("w", shape=(1,))
    shared = ParameterDict("a_", shared=base)
    assert shared.get("w") is w
    other = ParameterDict("b_")
    other.get("w", shape=(1,))
    merged = ParameterDict()
    merged.update(base)
    merged.update(other)
    assert list(merged.keys()) == ["a_w", "b_w"]
    clash = ParameterDict("a_")
    clash.get("w", shape=(1,))
    with pytest.raises(MXNetError, match="different Parameters with the same name 'a_w'"):
        merged.update(clash)
    const = base.get_constant("c", [1.0, 2.0])
    assert base.get_constant("c") is const
    with pytest.raises(KeyError, match="No constant named 'a_d'"):
        base.get_constant("d")


def test_parameter_dict_bulk_operations():
    params = ParameterDict("m_")
    params.get("weight", shape=(2, 2))
    params.get("bias", shape=(2,))
    params.initialize(init=mx.init.One(), ctx=CTXS)
    # The dict's init is only a default: biases named *_bias still use it via _init_weight.
    np.testing.assert_array_equal(params["m_bias"].data(mx.cpu(1)).asnumpy(), [1, 1])
    assert params.list_ctx() == CTXS
    params.setattr("grad_req", "null")
    assert all(p.grad_req == "null" for p in params.values())
    params.setattr("lr_mult", 0.5)
    assert params["m_weight"].lr_mult == 0.5
    params.zero_grad()
    params.reset_ctx(mx.cpu(2))
    assert params["m_weight"].list_ctx() == [mx.cpu(2)]


def test_parameter_dict_save_and_load(tmp_path):
    params = ParameterDict("model_")
    params.get("weight", shape=(2, 3), init=mx.init.Xavier())
    params.get("bias", shape=(2,), init=mx.init.Constant(0.5))
    params.initialize(ctx=CTXS)
    fname = str(tmp_path / "p.params")
    params.save(fname, strip_prefix="model_")
    assert sorted(mx.nd.load(fname)) == ["bias", "weight"]
    with pytest.raises(MXNetError, match="Prefix 'other_' is to be striped"):
        params.save(fname + "x", strip_prefix="other_")

    fresh = ParameterDict("model_")
    fresh.get("weight", shape=(2, 3))
    fresh.get("bias", shape=(2,))
    fresh.load(fname, ctx=CTXS, restore_prefix="model_")
    for name in ("model_weight", "model_bias"):
        for ctx in CTXS:
            np.testing.assert_array_equal(
                fresh[name].data(ctx).asnumpy(), params[name].data(ctx).asnumpy()
            )

    extra = ParameterDict("model_")
    extra.get("weight", shape=(2, 3))
    with pytest.raises(MXNetError, match="Parameter 'bias' loaded from file .* is not present"):
        extra.load(fname, restore_prefix="model_")
    extra.load(fname, restore_prefix="model_", ignore_extra=True)

    missing = ParameterDict("model_")
    missing.get("weight", shape=(2, 3))
    missing.get("scale", shape=(1,))
    with pytest.raises(MXNetError, match="Parameter 'scale' is missing in file"):
        missing.load(fname, restore_prefix="model_", ignore_extra=True)
    missing.load(fname, restore_prefix="model_", ignore_extra=True, allow_missing=True)
    assert not missing["model_scale"]._is_initialized()

    wrong = ParameterDict("model_")
    wrong.get("weight", shape=(3, 3))
    with pytest.raises(MXNetError, match="shape incompatible"):
        wrong.load(fname, restore_prefix="model_", ignore_extra=True)

    typed = ParameterDict("model_")
    typed.get("weight", shape=(2, 3), dtype="float64")
    with pytest.raises(MXNetError, match="dtype incompatible"):
        typed.load(fname, restore_prefix="model_", ignore_extra=True)
    typed.load(fname, restore_prefix="model_", ignore_extra=True, cast_dtype=True)
    assert typed["model_weight"].data().dtype == np.float64


def test_gluon_exports():
    for name in (
        "Parameter",
        "ParameterDict",
        "Constant",
        "Block",
        "HybridBlock",
        "nn",
        "loss",
        "utils",
        "data",
    ):
        assert hasattr(gluon, name)
