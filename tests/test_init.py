"""Initializers: MXNet's formulas, name-suffix dispatch, the registry, reproducible draws."""

import math

import mxrs as mx
import numpy as np
import pytest
from mxrs import init
from mxrs.base import MXNetError


def _filled(initializer, shape, name="fc_weight", attrs=None):
    arr = mx.nd.zeros(shape)
    initializer(init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


def test_init_and_initializer_are_one_module():
    assert mx.init is mx.initializer
    assert init.InitDesc("w") == "w"


def test_xavier_uniform_avg_has_exact_bounds_and_variance():
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    scale = math.sqrt(3.0 / ((fan_in + fan_out) / 2.0))
    w = _filled(init.Xavier(), shape)
    assert np.abs(w).max() <= scale
    assert np.abs(w).max() > 0.99 * scale
    assert w.var() == pytest.approx(scale**2 / 3, rel=0.03)
    assert abs(w.mean()) < 0.01 * scale


@pytest.mark.parametrize("factor_type", ["in", "out", "avg"])
def test_xavier_gaussian_deviation_follows_the_fan(factor_type):
    shape = (200, 100, 2, 2)
    fan_in, fan_out = 100 * 4, 200 * 4
    factor = {"in": fan_in, "out": fan_out, "avg": (fan_in + fan_out) / 2}[factor_type]
    w = _filled(init.Xavier("gaussian", factor_type, magnitude=2), shape)
    assert w.std() == pytest.approx(math.sqrt(2.0 / factor), rel=0.02)


def test_xavier_rejects_vectors_and_bad_options():
    with pytest.raises(MXNetError, match="cannot be applied to vector fc_weight"):
        _filled(init.Xavier(), (10,))
    with pytest.raises(MXNetError, match="factor type"):
        _filled(init.Xavier(factor_type="sideways"), (4, 4))
    with pytest.raises(MXNetError, match="random type"):
        _filled(init.Xavier(rnd_type="poisson"), (4, 4))


def test_msraprelu_is_gaussian_xavier_with_slope_magnitude():
    shape = (256, 128)
    w = _filled(init.MSRAPrelu(factor_type="in", slope=0.25), shape)
    assert w.std() == pytest.approx(math.sqrt(2.0 / (1 + 0.25**2) / 128), rel=0.02)
    assert init.MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'


def test_uniform_and_normal():
    w = _filled(init.Uniform(0.5), (300, 300))
    assert np.abs(w).max() <= 0.5 and np.abs(w).max() > 0.499
    assert w.var() == pytest.approx(0.25 / 3, rel=0.02)
    w = _filled(init.Normal(0.2), (300, 300))
    assert w.std() == pytest.approx(0.2, rel=0.02)
    assert abs(w.mean()) < 0.002
    w = _filled(init.Uniform(), (300, 300))
    assert np.abs(w).max() <= 0.07


def test_constants():
    np.testing.assert_array_equal(_filled(init.Zero(), (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(_filled(init.One(), (2, 3)), np.ones((2, 3)))
    np.testing.assert_array_equal(_filled(init.Constant(4.5), (2, 3)), np.full((2, 3), 4.5))
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_filled(init.Constant(value), (2, 3)), value)


def test_suffix_dispatch_without_an_explicit_init():
    uniform = init.Uniform(1.0)
    np.testing.assert_array_equal(_filled(uniform, (5,), "fc_bias"), np.zeros(5))
    np.testing.assert_array_equal(_filled(uniform, (5,), "bn_gamma"), np.ones(5))
    np.testing.assert_array_equal(_filled(uniform, (5,), "bn_beta"), np.zeros(5))
    np.testing.assert_array_equal(_filled(uniform, (5,), "bn_running_mean"), np.zeros(5))
    np.testing.assert_array_equal(_filled(uniform, (5,), "bn_running_var"), np.ones(5))
    np.testing.assert_array_equal(_filled(uniform, (5,), "bn_moving_var"), np.ones(5))
    assert np.abs(_filled(uniform, (50,), "fc_weight")).max() > 0.5
    with pytest.raises(MXNetError, match="Unknown initialization pattern for mystery"):
        _filled(uniform, (5,), "mystery")


def test_explicit_init_attribute_wins_over_the_suffix():
    # Gluon passes a parameter's own initializer as attrs['__init__']; it fills any name.
    out = _filled(init.Uniform(), (3,), "dense0_bias", {"__init__": "ones"})
    np.testing.assert_array_equal(out, np.ones(3))
    out = _filled(init.Zero(), (3, 3), "dense0_weight", {"__init__": init.Constant(2.0)})
    np.testing.assert_array_equal(out, np.full((3, 3), 2.0))
    # A global initializer's _init_weight fills a bias too when it is the parameter's init.
    out = _filled(init.Zero(), (400,), "dense0_bias", {"__init__": init.Uniform(1.0)})
    assert np.abs(out).max() > 0.5


def test_plain_string_names_are_accepted():
    arr = mx.nd.zeros((2,))
    init.Uniform()("conv_bias", arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.zeros(2))


def test_registry_create_by_name_alias_and_dump():
    assert isinstance(init.create("zeros"), init.Zero)
    assert isinstance(init.create("ones"), init.One)
    assert isinstance(init.create("Xavier"), init.Xavier)
    x = init.Xavier(rnd_type="gaussian", magnitude=2.34)
    again = init.create(x.dumps())
    assert isinstance(again, init.Xavier)
    assert (again.rnd_type, again.magnitude) == ("gaussian", 2.34)
    assert init.create(x) is x
    assert init.create("normal", sigma=0.5).sigma == 0.5
    with pytest.raises(MXNetError, match="nonexistent is not registered"):
        init.create("nonexistent")


def test_register_a_custom_initializer():
    @init.register
    @init.alias("quarter")
    class Quarters(init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.25

    np.testing.assert_array_equal(_filled(init.create("quarters"), (2,)), [0.25, 0.25])
    np.testing.assert_array_equal(_filled(init.create("quarter"), (2,)), [0.25, 0.25])


def test_seed_makes_random_initialization_reproducible():
    mx.random.seed(7)
    a = _filled(init.Xavier(), (20, 30))
    b = _filled(init.Xavier(), (20, 30))
    mx.random.seed(7)
    a2 = _filled(init.Xavier(), (20, 30))
    np.testing.assert_array_equal(a, a2)
    assert not np.array_equal(a, b)


def test_mixed_and_load():
    mixed = init.Mixed(["bias", ".*"], [init.Zero(), init.Constant(3.0)])
    arr = mx.nd.ones((2,))
    mixed("bias", arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0, 0])
    mixed("fc_weight", arr)
    np.testing.assert_array_equal(arr.asnumpy(), [3, 3])
    loader = init.Load({"arg:fc_weight": mx.nd.array([1.0, 2.0])}, default_init=init.One())
    loader("fc_weight", arr)
    np.testing.assert_array_equal(arr.asnumpy(), [1, 2])
    loader("fc_bias", arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0, 0])
    with pytest.raises(MXNetError, match="Shape mismatch"):
        loader("fc_weight", mx.nd.zeros((3,)))


def test_bilinear_initializer():
    w = mx.nd.zeros((1, 1, 4, 4))
    mx.init.Bilinear()(mx.init.InitDesc("up_weight"), w)
    tent = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(w.asnumpy()[0, 0], np.outer(tent, tent))
    with pytest.raises(mx.MXNetError, match="at least 2 dimensions"):
        mx.init.Bilinear()(mx.init.InitDesc("b_weight"), mx.nd.zeros((4,)))
