"""The samplers of mx.random / mx.nd.random beyond uniform and normal: moments of seeded draws
against the distributions' known values, per-element parameters, and bad parameters refused."""

import mxrs as mx
import numpy as np
import pytest

N = 40000


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(7)


def _moments(x):
    v = x.asnumpy().astype(np.float64)
    return v.mean(), v.var()


def test_poisson_exponential_gamma_negative_binomial_moments():
    mean, var = _moments(mx.random.poisson(4.0, shape=(N,)))
    assert abs(mean - 4) < 0.05 and abs(var - 4) < 0.15
    mean, var = _moments(mx.nd.random.exponential(2.0, shape=(N,)))
    assert abs(mean - 2) < 0.05 and abs(var - 4) < 0.25
    mean, var = _moments(mx.nd.random.gamma(2.0, 3.0, shape=(N,)))  # shape 2, scale 3
    assert abs(mean - 6) < 0.1 and abs(var - 18) < 1.0
    mean, _ = _moments(mx.nd.random.negative_binomial(3, 0.4, shape=(N,)))  # k (1-p) / p
    assert abs(mean - 4.5) < 0.1
    mean, var = _moments(mx.nd.random.generalized_negative_binomial(2.0, 0.5, shape=(N,)))
    assert abs(mean - 2) < 0.05 and abs(var - 4) < 0.25  # mu + alpha mu^2
    mean, var = _moments(mx.nd.random.generalized_negative_binomial(2.0, 0.0, shape=(N,)))
    assert abs(var - 2) < 0.1  # alpha 0: Poisson
    assert mx.random.poisson(1.0, shape=(2, 3)).dtype == np.float32
    assert mx.random.poisson(1.0, shape=(2,), dtype="int32").dtype == np.int32


def test_ndarray_parameters_give_each_element_its_own_distribution():
    lam = mx.nd.array([1.0, 20.0])
    draws = mx.nd.random.poisson(lam, shape=(N // 4,))
    assert draws.shape == (2, N // 4)
    means = draws.asnumpy().mean(axis=1)
    assert abs(means[0] - 1) < 0.1 and abs(means[1] - 20) < 0.3
    with pytest.raises(ValueError, match="parameter shapes differ"):
        mx.nd.random.gamma(mx.nd.ones(2), mx.nd.ones(3))
    with pytest.raises(ValueError, match="give every parameter as an NDArray"):
        mx.nd.random.gamma(mx.nd.ones(2), 1.0)


def test_multinomial_draws_by_the_probabilities_and_their_log_probabilities():
    probs = mx.nd.array([[0.2, 0.8, 0.0], [0.0, 0.0, 1.0]])
    draws, logp = mx.nd.random.multinomial(probs, shape=N // 4, get_prob=True)
    d = draws.asnumpy()
    assert d.shape == (2, N // 4) and d.dtype == np.int32
    assert abs((d[0] == 1).mean() - 0.8) < 0.02 and not (d[0] == 2).any()
    assert (d[1] == 2).all()
    np.testing.assert_allclose(logp.asnumpy()[1], 0.0)
    np.testing.assert_allclose(np.exp(logp.asnumpy()[0]), np.where(d[0] == 1, 0.8, 0.2), rtol=1e-6)
    one = mx.nd.random.multinomial(mx.nd.array([0.5, 0.5]))
    assert one.shape == () or one.shape == (1,)


def test_seeded_draws_repeat_and_bad_parameters_are_refused():
    mx.random.seed(3)
    a = mx.random.poisson(2.0, shape=(5,)).asnumpy()
    mx.random.seed(3)
    assert (mx.random.poisson(2.0, shape=(5,)).asnumpy() == a).all()
    for call, said in (
        (lambda: mx.random.poisson(-1.0), "lam must be 0 or more"),
        (lambda: mx.nd.random.exponential(0.0), "scale must be positive"),
        (lambda: mx.nd.random.gamma(-1.0, 1.0), "alpha must be positive"),
        (lambda: mx.nd.random.negative_binomial(2, 1.5), r"p must be in \(0, 1\]"),
        (lambda: mx.nd.random.multinomial(mx.nd.array([-0.1, 1.1])), "non-negative"),
    ):
        with pytest.raises(ValueError, match=said):
            call().wait_to_read()  # a bad value raises where the draws are read


def test_legacy_names():
    assert mx.nd.uniform(shape=(4, 5)).shape == (4, 5)
    assert mx.nd.normal(shape=(3,)).shape == (3,)
    assert mx.nd.random_poisson(lam=2.0, shape=(2,)).shape == (2,)
