"""The helpers of ``mxrs.test_utils`` that MXNet's random tests use: ``retry``, the chi-square,
mean and variance checks of generators, and the symbolic ``check_symbolic_forward`` and
``check_numeric_gradient``."""

import mxrs as mx
import numpy as np
import pytest
import scipy.stats as ss
from mxrs import test_utils as tu


def test_retry_reruns_a_failing_test_and_gives_up_after_n_tries():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def broken():
        calls.append(1)
        raise AssertionError("always")

    with pytest.raises(AssertionError, match="always"):
        broken()
    assert len(calls) == 4
    with pytest.raises(ValueError, match="positive"):
        tu.retry(0)


def test_buckets_of_equal_probability_from_a_quantile_function():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.norm.ppf(q, 0, 1), 4)
    assert probs == [0.25] * 4
    assert buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    np.testing.assert_allclose([b[1] for b in buckets[:3]], [-0.6744898, 0.0, 0.6744898], rtol=1e-6)


def test_chi_square_and_verify_generator_tell_right_from_wrong_distributions():
    rng = np.random.default_rng(0)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.expon.ppf(q, scale=2.0), 5)
    p, obs, expected = tu.chi_square_check(lambda n: rng.exponential(2.0, n), buckets, probs, 50000)
    assert p > 1e-3 and obs.sum() == 50000 and list(expected) == [10000] * 5
    p_wrong, _, _ = tu.chi_square_check(lambda n: rng.exponential(2.5, n), buckets, probs, 50000)
    assert p_wrong < 1e-6
    p_discrete, obs, _ = tu.chi_square_check(
        lambda n: rng.choice(3, n, p=[0.2, 0.3, 0.5]), [0, 1, 2], [0.2, 0.3, 0.5], 20000
    )
    assert p_discrete > 1e-3 and obs.sum() == 20000
    pvalues = tu.verify_generator(
        lambda n: rng.exponential(2.0, n), buckets, probs, nsamples=20000, nrepeat=3
    )
    assert len(pvalues) == 3
    with pytest.raises(AssertionError, match="generator test fails"):
        tu.verify_generator(lambda n: rng.exponential(3.0, n), buckets, probs, 20000, nrepeat=3)


def test_mean_and_variance_checks():
    rng = np.random.default_rng(1)
    assert tu.mean_check(lambda n: rng.normal(1.0, 2.0, n), 1.0, 2.0, 100000)
    assert not tu.mean_check(lambda n: rng.normal(1.1, 2.0, n), 1.0, 2.0, 100000)
    assert tu.var_check(lambda n: rng.normal(0.0, 2.0, n), 2.0, 100000)
    assert not tu.var_check(lambda n: rng.normal(0.0, 2.2, n), 2.0, 100000)


def test_check_symbolic_forward_compares_each_output():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    x, y = np.array([[1.0, 2.0]]), np.array([[3.0, 5.0]])
    outs = tu.check_symbolic_forward(a * b, [x, y], [x * y])
    assert outs[0].dtype == np.float32
    total = mx.sym.elemwise_add(a, b, name="total")
    tu.check_symbolic_forward(total, {"b": y, "a": x}, {"total_output": x + y}, dtype="asnumpy")
    with pytest.raises(AssertionError, match="EXPECTED_"):
        tu.check_symbolic_forward(a * b, [x, y], [x + y])
    with pytest.raises(ValueError, match="differ"):
        tu.check_symbolic_forward(a * b, {"a": x}, [x])


def test_check_numeric_gradient_of_symbols_finds_a_wrong_gradient():
    v0, v1 = mx.sym.Variable("v0"), mx.sym.Variable("v1")
    sample = np.random.default_rng(2).uniform(0.5, 3.0, (2, 5))
    tu.check_numeric_gradient(
        mx.sym.random_pdf_exponential(v0, v1), [sample, np.array([0.7, 1.5])], dtype=np.float64
    )
    tu.check_numeric_gradient(
        mx.sym.random_pdf_exponential(v0, v1, is_log=True), [sample, np.array([0.7, 1.5])],
        grad_nodes=["v1"], numeric_eps=1e-5, rtol=1e-4, atol=1e-6, dtype=np.float64,
    )  # fmt: skip
    blocked = mx.sym.BlockGrad(v0) * v1  # backward says 0 for v0, the differences do not
    with pytest.raises(AssertionError, match="NUMERICAL_v0"):
        tu.check_numeric_gradient(blocked, [sample, sample], dtype=np.float64)
    tu.check_numeric_gradient(blocked, [sample, sample], grad_nodes=["v1"], dtype=np.float64)
    # a callable still goes to the autograd form
    tu.check_numeric_gradient(lambda x: x * x, [np.array([1.0, 2.0])])
