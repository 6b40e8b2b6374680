"""Optimizers (``mx.optimizer``): update rules against NumPy references, multipliers, counts,
the registry and the Updater's saved states (the servers' side: test_optimizer_server.py).

The references are written in the textbook form of each method (not the kernel's), in float64,
so they check the kernels' algebra as well as their arithmetic.
"""

import pickle

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, nd
from mxrs.base import ContextError, MXNetError

W0 = np.array([1.0, -2.0, 0.5, 3.0, -0.25, 0.75])
# Three steps; with rescale_grad 0.5 and clip_gradient 0.6 several entries clip.
GRADS = np.array(
    [
        [0.5, 0.25, -3.0, 1.5, 2.5, -0.7],
        [-0.4, 0.3, -2.0, 1.0, -2.2, 0.1],
        [0.2, -0.6, 2.8, 0.9, 0.05, -1.9],
    ]
)
FULL = dict(learning_rate=0.1, wd=0.05, rescale_grad=0.5, clip_gradient=0.6)


def run(opt, w0=W0, grads=GRADS, dtype=np.float64, index=0, ctx=None):
    """Update a weight from ``w0`` with each gradient in turn; return the weight (NumPy)."""
    w = nd.array(w0, ctx=ctx, dtype=dtype)
    state = opt.create_state(index, w)
    for g in grads:
        opt.update(index, w, nd.array(g, ctx=ctx, dtype=dtype), state)
    return w.asnumpy()


def check(opt_factory, reference, rtol=1e-12):
    """Compare ``opt_factory()`` with ``reference`` in float64 and float32."""
    want = reference()
    np.testing.assert_allclose(run(opt_factory()), want, rtol=rtol, atol=rtol)
    got32 = run(opt_factory(), dtype=np.float32)
    np.testing.assert_allclose(got32, want, rtol=2e-5, atol=2e-6)


def clipped(g, r, c):
    g = r * g
    return g if c is None else np.clip(g, -c, c)


# ----------------------------------------------------------------- references (textbook forms)
def ref_sgd(lr=0.01, wd=0.0, mu=0.0, r=1.0, c=None, lrs=None):
    w, v = W0.copy(), np.zeros_like(W0)
    for t, g in enumerate(GRADS):
        step_lr = lr if lrs is None else lrs[t]
        v = mu * v + step_lr * (clipped(g, r, c) + wd * w)
        w = w - v
    return w


def ref_nag(lr=0.01, wd=0.0, mu=0.0, r=1.0, c=None):
    # MXNet 1.9.1's NAG: the momentum takes its decay term from the weight just updated.
    w, m = W0.copy(), np.zeros_like(W0)
    for g in GRADS:
        ch = clipped(g, r, c)
        w_new = w + mu * mu * m - (1 + mu) * lr * (ch + wd * w)
        m = mu * m - lr * (ch + wd * w_new)
        w = w_new
    return w


def ref_adam(lr=0.001, wd=0.0, r=1.0, c=None, b1=0.9, b2=0.999, eps=1e-8, t0=0):
    w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for i, g in enumerate(GRADS):
        t = t0 + i + 1
        gh = r * g + wd * w
        if c is not None:
            gh = np.clip(gh, -c, c)
        m = b1 * m + (1 - b1) * gh
        v = b2 * v + (1 - b2) * gh**2
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        # MXNet keeps epsilon outside the bias correction: eps_hat = eps / sqrt(1 - b2^t).
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps / np.sqrt(1 - b2**t))
    return w


def ref_adagrad(lr=0.01, wd=0.0, r=1.0, c=None, eps=1e-7):
    w, h = W0.copy(), np.zeros_like(W0)
    for g in GRADS:
        gh = clipped(g, r, c)
        h = h + gh**2
        w = w - lr * gh / np.sqrt(h + eps) - lr * wd * w
    return w


def ref_rmsprop(lr=0.001, wd=0.0, r=1.0, c=None, g1=0.9, g2=0.9, eps=1e-8, centered=False, cw=None):
    w = W0.copy()
    sq, avg, step = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in GRADS:
        gh = r * g + wd * w
        if c is not None:
            gh = np.clip(gh, -c, c)
        sq = g1 * sq + (1 - g1) * gh**2
        if centered:
            avg = g1 * avg + (1 - g1) * gh
            step = g2 * step - lr * gh / np.sqrt(sq - avg**2 + eps)
            w = w + step
        else:
            w = w - lr * gh / np.sqrt(sq + eps)
        if cw is not None:
            w = np.clip(w, -cw, cw)
    return w


def ref_signum(lr=0.01, wd=0.0, mu=0.9, r=1.0, c=None, wd_lh=0.0):
    w, v = W0.copy(), np.zeros_like(W0)
    for g in GRADS:
        if mu == 0:
            w = w - lr * wd * w - lr * np.sign(g)
            continue
        v = mu * v + (1 - mu) * (clipped(g, r, c) + wd * w)
        w = w - lr * wd_lh * w - lr * np.sign(v)
    return w


def ref_ftrl(lr=0.1, wd=0.0, r=1.0, c=None, l1=0.01, beta=1.0):
    w, z, n = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for g in GRADS:
        gh = clipped(g, r, c)
        sigma = (np.sqrt(n + gh**2) - np.sqrt(n)) / lr
        z = z + gh - sigma * w
        n = n + gh**2
        w = np.where(np.abs(z) > l1, -(z - np.sign(z) * l1) / ((beta + np.sqrt(n)) / lr + wd), 0.0)
    return w


# ----------------------------------------------------------------- update rules
def test_sgd():
    check(lambda: mx.optimizer.SGD(), ref_sgd)
    check(lambda: mx.optimizer.SGD(momentum=0.9, **FULL), lambda: ref_sgd(0.1, 0.05, 0.9, 0.5, 0.6))
    check(lambda: mx.optimizer.SGD(**FULL), lambda: ref_sgd(0.1, 0.05, 0.0, 0.5, 0.6))


def test_sgd_momentum_known_numbers():
    # mom1 = -lr*wd*w - lr*g = [-0.051, -0.023], w1 = [0.949, -2.023]
    # mom2 = 0.9*mom1 - 0.001*w1 - 0.1*g = [-0.096849, -0.043677]
    opt = mx.optimizer.SGD(momentum=0.9, learning_rate=0.1, wd=0.01)
    w = run(opt, np.array([1.0, -2.0]), np.array([[0.5, 0.25], [0.5, 0.25]]))
    np.testing.assert_allclose(w, [0.852151, -2.066677], rtol=1e-12)


def test_nag():
    check(lambda: mx.optimizer.NAG(), ref_nag)
    check(lambda: mx.optimizer.NAG(momentum=0.8, **FULL), lambda: ref_nag(0.1, 0.05, 0.8, 0.5, 0.6))
    check(lambda: mx.optimizer.NAG(**FULL), lambda: ref_nag(0.1, 0.05, 0.0, 0.5, 0.6))
    # lr 0.1, mu 0.9, w 1, g 0.5: w1 = 0.905, w2 = 0.7695
    w = run(
        mx.optimizer.NAG(momentum=0.9, learning_rate=0.1), np.array([1.0]), np.array([[0.5], [0.5]])
    )
    np.testing.assert_allclose(w, [0.7695], rtol=1e-12)
    # With weight decay (lr 0.1, mu 0.9, wd 0.07): w1 = 0.8917, w2 = 0.739284451.
    w = run(
        mx.optimizer.NAG(momentum=0.9, learning_rate=0.1, wd=0.07),
        np.array([1.0]),
        np.array([[0.5], [0.5]]),
    )
    np.testing.assert_allclose(w, [0.739284451], rtol=1e-9)


def test_adam():
    check(lambda: mx.optimizer.Adam(), ref_adam)
    check(
        lambda: mx.optimizer.Adam(beta1=0.8, beta2=0.99, epsilon=1e-3, **FULL),
        lambda: ref_adam(0.1, 0.05, 0.5, 0.6, 0.8, 0.99, 1e-3),
    )


def test_adam_bias_correction():
    # t = 1: lr_t = 0.1*sqrt(0.001)/0.1, m = 0.05, v = 0.00025, so lr_t*m/sqrt(v) = 0.1 and
    # w = 1 - 0.1 / (1 + 1e-8/sqrt(v)).
    opt = mx.optimizer.Adam(learning_rate=0.1)
    w = nd.array([1.0], dtype=np.float64)
    mean, var = opt.create_state(0, w)
    opt.update(0, w, nd.array([0.5], dtype=np.float64), (mean, var))
    np.testing.assert_allclose(w.asnumpy(), [0.9000000632455132], rtol=1e-14)
    np.testing.assert_allclose(mean.asnumpy(), [0.05], rtol=1e-14)
    np.testing.assert_allclose(var.asnumpy(), [0.00025], rtol=1e-14)
    # The correction counts from begin_num_update.
    check(
        lambda: mx.optimizer.Adam(learning_rate=0.1, begin_num_update=1000),
        lambda: ref_adam(0.1, t0=1000),
    )


def test_adagrad():
    check(lambda: mx.optimizer.AdaGrad(), ref_adagrad)
    check(
        lambda: mx.optimizer.AdaGrad(eps=1e-3, **FULL),
        lambda: ref_adagrad(0.1, 0.05, 0.5, 0.6, 1e-3),
    )
    # MXNet's AdaGrad clips whenever clip_gradient is not None: 0 zeroes every gradient.
    check(
        lambda: mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.05, clip_gradient=0.0),
        lambda: ref_adagrad(0.1, 0.05, 1.0, 0.0),
    )


def test_rmsprop():
    check(lambda: mx.optimizer.RMSProp(), ref_rmsprop)
    check(lambda: mx.optimizer.RMSProp(centered=True), lambda: ref_rmsprop(centered=True))
    full = dict(gamma1=0.8, gamma2=0.7, epsilon=1e-3, clip_weights=2.05, **FULL)
    want = ref_rmsprop(0.1, 0.05, 0.5, 0.6, 0.8, 0.7, 1e-3, cw=2.05)
    # The weights that start at -2 and 3 pass the weight bound on the way.
    unclipped = ref_rmsprop(0.1, 0.05, 0.5, 0.6, 0.8, 0.7, 1e-3)
    assert list(np.nonzero(want != unclipped)[0]) == [1, 3]
    check(lambda: mx.optimizer.RMSProp(**full), lambda: want)
    check(
        lambda: mx.optimizer.RMSProp(centered=True, **full),
        lambda: ref_rmsprop(0.1, 0.05, 0.5, 0.6, 0.8, 0.7, 1e-3, True, 2.05),
    )


def test_signum():
    check(lambda: mx.optimizer.Signum(), ref_signum)
    check(
        lambda: mx.optimizer.Signum(momentum=0.5, wd_lh=0.02, **FULL),
        lambda: ref_signum(0.1, 0.05, 0.5, 0.5, 0.6, 0.02),
    )
    opt = mx.optimizer.Signum(learning_rate=0.1, momentum=0.0, wd=0.05, wd_lh=0.3)
    assert opt.create_state(0, nd.zeros((2,))) is None
    check(
        lambda: mx.optimizer.Signum(learning_rate=0.1, momentum=0.0, wd=0.05, wd_lh=0.3),
        lambda: ref_signum(0.1, 0.05, 0.0, 1.0, None, 0.3),
    )


def test_ftrl():
    check(lambda: mx.optimizer.FTRL(), ref_ftrl)
    check(
        lambda: mx.optimizer.FTRL(lamda1=0.05, beta=0.5, **FULL),
        lambda: ref_ftrl(0.1, 0.05, 0.5, 0.6, 0.05, 0.5),
    )
    assert mx.optimizer.Ftrl is mx.optimizer.FTRL


def test_lr_scheduler_drives_the_learning_rate():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.4)
    opt = mx.optimizer.SGD(momentum=0.9, lr_scheduler=sched, clip_gradient=0.6)
    assert opt.learning_rate == 0.4
    # num_update is 1, 2, 3 during the three updates: lr 0.4, 0.2, 0.1 (the factor applies
    # once num_update passes each step).
    check(
        lambda: mx.optimizer.SGD(
            momentum=0.9, lr_scheduler=mx.lr_scheduler.FactorScheduler(1, 0.5, base_lr=0.4)
        ),
        lambda: ref_sgd(mu=0.9, lrs=[0.4, 0.2, 0.1]),
    )
    run(opt)
    assert opt.num_update == 3 and opt.learning_rate == 0.1
    with pytest.raises(UserWarning, match="LRScheduler"):
        opt.set_learning_rate(0.1)


def test_learning_rate_defaults_and_scheduler_base_lr():
    assert mx.optimizer.SGD().learning_rate == 0.01
    assert mx.optimizer.Adam().learning_rate == 0.001
    assert mx.optimizer.RMSProp().learning_rate == 0.001
    assert mx.optimizer.FTRL().learning_rate == 0.1
    opt = mx.optimizer.SGD()
    opt.set_learning_rate(0.3)
    assert opt.learning_rate == 0.3
    # SGD takes the scheduler's base_lr; an explicit learning_rate (Adam's default included)
    # overwrites it, as in MXNet.
    sched = mx.lr_scheduler.FactorScheduler(10, base_lr=0.5)
    assert mx.optimizer.SGD(lr_scheduler=sched).learning_rate == 0.5
    mx.optimizer.Adam(lr_scheduler=sched)
    assert sched.base_lr == 0.001


# ----------------------------------------------------------------- multipliers and counts
class _Param:
    def __init__(self, lr_mult, wd_mult):
        self.lr_mult, self.wd_mult = lr_mult, wd_mult


def test_lr_and_wd_multipliers():
    opt = mx.optimizer.SGD(
        learning_rate=0.1, wd=0.01, param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
    )
    # Names that end neither in _weight nor in _gamma get no weight decay.
    assert [opt._get_wd_mult(i) for i in range(4)] == [1.0, 0.0, 1.0, 1.0]
    opt.set_lr_mult({"fc_weight": 2.0, 3: 0.5})
    opt.set_wd_mult({"fc_weight": 3.0})
    assert [opt._get_lr_mult(i) for i in range(4)] == [2.0, 1.0, 1.0, 0.5]
    assert opt._get_lr(0) == pytest.approx(0.2) and opt._get_wd(0) == pytest.approx(0.03)
    assert opt._get_wd(1) == 0.0
    # A param_dict (Gluon Parameters) takes precedence.
    opt.param_dict = {0: _Param(0.25, 4.0)}
    assert (opt._get_lr_mult(0), opt._get_wd_mult(0)) == (0.25, 4.0)
    check(
        lambda: mx.optimizer.SGD(momentum=0.9, param_dict={0: _Param(0.5, 2.0)}, **FULL),
        lambda: ref_sgd(0.05, 0.1, 0.9, 0.5, 0.6),
    )
    opt = mx.optimizer.Adam(**FULL)
    opt.set_lr_mult({0: 2.0})
    opt.set_wd_mult({0: 0.0})
    np.testing.assert_allclose(run(opt), ref_adam(0.2, 0.0, 0.5, 0.6), rtol=1e-12)


def test_update_counts():
    opt = mx.optimizer.SGD(begin_num_update=5)
    w = nd.ones((2,))
    for index in (0, 0, "b", 0):
        opt.update(index, w, nd.ones((2,)), None)
    assert opt._index_update_count == {0: 8, "b": 6}
    assert opt.num_update == 8
    opt._update_count([0, "b"])
    assert opt._index_update_count == {0: 9, "b": 7}


def test_each_device_counts_its_own_updates():
    # Two copies of one parameter on two devices: Adam's t advances once per step on each.
    opt = mx.optimizer.Adam(learning_rate=0.1)
    updaters = [mx.optimizer.get_updater(opt) for _ in range(2)]
    ctxs = [mx.cpu(0), mx.cpu(1)]
    ws = [nd.array(W0, ctx=c, dtype=np.float64) for c in ctxs]
    for g in GRADS:
        for upd, w, c in zip(updaters, ws, ctxs, strict=True):
            upd(0, nd.array(g, ctx=c, dtype=np.float64), w)
    for w in ws:
        np.testing.assert_allclose(w.asnumpy(), ref_adam(0.1), rtol=1e-12)
    assert opt.num_update == 3


def test_update_checks_and_leaves_the_gradient_alone():
    opt = mx.optimizer.Adam(**FULL)
    w = nd.array(W0, dtype=np.float64)
    g = nd.array(GRADS[0], dtype=np.float64)
    state = opt.create_state(0, w)
    with pytest.raises(ContextError, match=r"cpu\(0\).*cpu\(1\)"):
        opt.update(0, w, g.as_in_context(mx.cpu(1)), state)
    with pytest.raises(MXNetError, match=r"gradient shape \(2,\) does not match weight shape"):
        opt.update(0, w, nd.zeros((2,), dtype=np.float64), state)
    assert opt.num_update == 0
    w.attach_grad()
    with autograd.record():
        opt.update(0, w, g, state)
    assert w._node is None
    np.testing.assert_array_equal(g.asnumpy(), GRADS[0])


def test_states_live_with_the_weight():
    w = nd.zeros((3, 2), ctx=mx.cpu(1), dtype=np.float64)
    for name in ("sgd", "nag", "signum"):
        assert mx.optimizer.create(name, momentum=0.0).create_state(0, w) is None
    for opt in (
        mx.optimizer.SGD(momentum=0.9),
        mx.optimizer.Adam(),
        mx.optimizer.AdaGrad(),
        mx.optimizer.RMSProp(centered=True),
        mx.optimizer.Signum(),
        mx.optimizer.FTRL(),
    ):
        state = opt.create_state(0, w)
        for s in state if isinstance(state, tuple) else (state,):
            assert (s.shape, s.dtype, s.context) == ((3, 2), np.float64, mx.cpu(1))
    assert len(mx.optimizer.RMSProp().create_state(0, w)) == 1


# ----------------------------------------------------------------- registry
def test_create_is_case_insensitive_and_names_unknown_optimizers():
    for name, cls in [
        ("sgd", mx.optimizer.SGD),
        ("SGD", mx.optimizer.SGD),
        ("Nag", mx.optimizer.NAG),
        ("adam", mx.optimizer.Adam),
        ("AdaGrad", mx.optimizer.AdaGrad),
        ("rmsprop", mx.optimizer.RMSProp),
        ("signum", mx.optimizer.Signum),
        ("ftrl", mx.optimizer.FTRL),
    ]:
        assert type(mx.optimizer.create(name)) is cls
    opt = mx.optimizer.create("sgd", learning_rate=0.5, momentum=0.9)
    assert (opt.lr, opt.momentum) == (0.5, 0.9)
    assert mx.optimizer.Optimizer.create_optimizer is mx.optimizer.create
    with pytest.raises(MXNetError, match="Cannot find optimizer 'nosuch'.*adam"):
        mx.optimizer.create("nosuch")


def test_register_a_custom_optimizer():
    @mx.optimizer.register
    class HalfStep(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight - 0.5 * self._get_lr(index) * grad

    opt = mx.optimizer.create("halfstep", learning_rate=1.0)
    w = nd.ones((2,))
    mx.optimizer.get_updater(opt)(0, nd.ones((2,)), w)
    np.testing.assert_allclose(w.asnumpy(), [0.5, 0.5])
    with pytest.raises(MXNetError, match="HalfStep cannot run on the parameter servers"):
        opt.to_spec()
    with pytest.warns(UserWarning, match="overriding"):
        mx.optimizer.Optimizer.register(type("HalfStep", (mx.optimizer.Optimizer,), {}))
    del mx.optimizer.Optimizer.opt_registry["halfstep"]


# ----------------------------------------------------------------- Updater states
def _train(updater, weights, grads):
    for g in grads:
        for i, w in enumerate(weights):
            updater(i, nd.array(g * (i + 1), dtype=w.dtype), w)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("sgd", dict(momentum=0.9, learning_rate=0.1)),
        ("adam", dict(learning_rate=0.1)),
        ("rmsprop", dict(centered=True, learning_rate=0.05)),
        ("ftrl", {}),
    ],
)
def test_updater_states_round_trip(name, kwargs):
    weights = [nd.array(W0), nd.array(W0 * 2)]
    updater = mx.optimizer.get_updater(mx.optimizer.create(name, **kwargs))
    _train(updater, weights, GRADS[:2])
    saved = updater.get_states(dump_optimizer=True)
    saved_weights = [w.copy() for w in weights]
    _train(updater, weights, GRADS[2:])

    restored = mx.optimizer.Updater(mx.optimizer.create(name))
    restored.set_states(saved)
    assert type(restored.optimizer) is type(updater.optimizer)
    assert restored.optimizer._index_update_count == {0: 2, 1: 2}
    assert not any(restored.states_synced.values())
    _train(restored, saved_weights, GRADS[2:])
    for a, b in zip(weights, saved_weights, strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    state = restored.states[0]
    first = state[0] if isinstance(state, tuple) else state
    assert isinstance(first, nd.NDArray) and first.context == mx.cpu(0)


def test_updater_states_move_to_the_weights_context_and_keep_the_optimizer():
    opt = mx.optimizer.SGD(momentum=0.9, learning_rate=0.1)
    updater = mx.optimizer.get_updater(opt)
    w = nd.array(W0)
    _train(updater, [w], GRADS[:1])
    blob = updater.get_states()
    assert isinstance(pickle.loads(blob)[0], np.ndarray)  # plain NumPy inside
    other = mx.optimizer.get_updater(opt)
    other.set_states(blob)
    assert other.optimizer is opt
    w1 = nd.array(w, ctx=mx.cpu(1))
    other(0, nd.array(GRADS[1], ctx=mx.cpu(1)), w1)
    assert other.states[0].context == mx.cpu(1)
    updater(0, nd.array(GRADS[1]), w)
    np.testing.assert_array_equal(w1.asnumpy(), w.asnumpy())


def test_pickled_optimizer_drops_param_dict():
    opt = mx.optimizer.SGD(
        param_dict={0: _Param(0.5, 1.0)}, lr_scheduler=mx.lr_scheduler.FactorScheduler(2, 0.5)
    )
    opt._update_count(0)
    back = pickle.loads(pickle.dumps(opt))
    assert back.param_dict == {} and back._index_update_count == {0: 1}
    assert back._index_update_count is back._all_index_update_counts[0]
    assert isinstance(back.lr_scheduler, mx.lr_scheduler.FactorScheduler)


def test_updater_takes_lists():
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=1.0))
    ws = [nd.ones((2,)), nd.ones((3,))]
    updater([0, 1], [nd.ones((2,)), nd.ones((3,)) * 2], ws)
    assert ws[0].asnumpy().tolist() == [0, 0] and ws[1].asnumpy().tolist() == [-1, -1, -1]


def test_ftml_with_a_zero_learning_rate_changes_nothing():
    opt = mx.optimizer.FTML(learning_rate=0.1)
    opt.set_lr_mult({0: 0.0})
    w = nd.array([1.0, -2.0])
    state = opt.create_state(0, w)
    opt.update(0, w, nd.array([0.5, 0.5]), state)
    assert w.asnumpy().tolist() == [1.0, -2.0]
    assert all((s.asnumpy() == 0).all() for s in state)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("clip", [None, 0.3])
def test_sgd_one_pass_update_equals_the_array_operations(momentum, clip, monkeypatch):
    """Dense float32 weights update in one native pass, bit for bit what the NumPy
    operations give; float64 and non-contiguous weights take the NumPy path."""
    from mxrs import _native
    from mxrs.optimizer import sgd

    calls = []
    real = _native.sgd_update
    monkeypatch.setattr(sgd._native, "sgd_update", lambda *a: calls.append(a[0].shape) or real(*a))

    def run(one_pass, dtype="float32", strided=False):
        monkeypatch.setattr(sgd, "_native_sgd", native if one_pass else (lambda *a: False))
        o = mx.optimizer.SGD(
            learning_rate=0.1, momentum=momentum, wd=0.01, rescale_grad=0.5, clip_gradient=clip
        )
        rng = np.random.default_rng(1)
        base = rng.standard_normal((40, 50)).astype(dtype)
        w = nd.array(base, dtype=dtype)
        if strided:  # a weight array whose buffer is a column slice
            w._data = np.asarray(rng.standard_normal((40, 100)).astype(dtype))[:, ::2]
            w._data[...] = base
        state = o.create_state(0, w)
        for i in range(3):
            g = nd.array(np.random.default_rng(10 + i).standard_normal((40, 50)), dtype=dtype)
            o.update(0, w, g, state)
        return w.asnumpy()

    native = sgd._native_sgd
    fused, plain = run(True), run(False)
    assert calls == [(40, 50)] * 3
    np.testing.assert_array_equal(fused, plain)
    calls.clear()
    np.testing.assert_allclose(run(True, "float64"), plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(run(True, strided=True), plain)
    assert calls == []


def test_sgd_one_pass_update_checks_lengths():
    from mxrs import _native
    from mxrs.base import ShapeMismatchError

    w = np.ones(4, np.float32)
    with pytest.raises(ShapeMismatchError, match="4 weights with 3 gradients and 4 momenta"):
        _native.sgd_update(w, np.ones(3, np.float32), None, 0.1, 0.0, 0.0, 1.0)
    with pytest.raises(ShapeMismatchError, match="with 4 gradients and 2 momenta"):
        _native.sgd_update(w, np.ones(4, np.float32), np.ones(2, np.float32), 0.1, 0, 0.9, 1.0)
    with pytest.raises(ShapeMismatchError, match="the gradient must be a C-contiguous float32"):
        _native.sgd_update(w, np.ones(8, np.float32)[::2], None, 0.1, 0.0, 0.0, 1.0)
    assert (w == 1).all()  # nothing was written
    _native.sgd_update(w, np.full(4, 2, np.float32), None, 0.5, 0.0, 0.0, 1.0, None)
    np.testing.assert_array_equal(w, np.zeros(4, np.float32))
