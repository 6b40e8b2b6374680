"""MXNet 1.9.1's sampling and density operators: the ``random_pdf_*`` densities and every
gradient against MXNet itself, the ``sample_*`` operators (per-element parameters) by their
moments and shapes, ``sample_multinomial``'s log-probability gradient, the unique Zipfian
sampler, the ``*_like`` samplers, ``mx.sym.random`` and the errors for bad input."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.test_utils import verify_generator

N = 40000

#: Computes every density, log density and gradient of the cases under ``lib`` (mxrs or
#: MXNet): run here and, as the reference, under MXNet 1.9.1.
_PDF_SCRIPT = """
def compute(lib, inputs):
    cases = [
        ("uniform", ["xu", "lo", "hi"]),
        ("normal", ["xn", "mu", "sigma"]),
        ("gamma", ["xg", "alpha", "beta"]),
        ("exponential", ["xg", "lam"]),
        ("poisson", ["xc", "lam"]),
        ("negative_binomial", ["xc", "k", "p"]),
        ("generalized_negative_binomial", ["xc", "mu_pos", "alpha"]),
        ("dirichlet", ["xd", "conc"]),
        ("normal", ["xsame", "mu", "sigma"]),
    ]
    out = {}
    for i, (dist, names) in enumerate(cases):
        for is_log in (False, True):
            xs = [lib.nd.array(inputs[n], dtype="float64") for n in names]
            for a in xs:
                a.attach_grad()
            with lib.autograd.record():
                y = getattr(lib.nd, "random_pdf_" + dist)(*xs, is_log=is_log)
            head = np.cos(np.arange(y.size) + i).reshape(y.shape)
            y.backward(lib.nd.array(head, dtype="float64"))
            key = "%d.%s.%d" % (i, dist, is_log)
            out[key + ".y"] = y.asnumpy()
            for j, a in enumerate(xs):
                out[key + ".g%d" % j] = a.grad.asnumpy()
    return out
"""


def _pdf_inputs():
    rng = np.random.default_rng(5)
    s = (2, 3)
    return {
        "xu": rng.uniform(-1.0, 3.0, s + (4,)),  # some outside [lo, hi): MXNet does not check
        "lo": rng.uniform(-1.0, 0.0, s),
        "hi": rng.uniform(1.0, 2.0, s),
        "xn": rng.normal(0.0, 2.0, s + (4,)),
        "mu": rng.normal(0.0, 1.0, s),
        "sigma": rng.uniform(0.5, 2.0, s),
        "xg": rng.uniform(0.1, 4.0, s + (4,)),
        "alpha": rng.uniform(0.5, 3.0, s),
        "beta": rng.uniform(0.5, 2.0, s),
        "lam": rng.uniform(0.5, 5.0, s),
        "xc": np.array([0.0, 1, 2, 3, 5, 8, 0, 4] * 3).reshape(s + (4,)),
        "k": rng.uniform(0.5, 4.0, s),
        "p": rng.uniform(0.1, 0.9, s),
        "mu_pos": rng.uniform(0.5, 4.0, s),
        "xd": rng.dirichlet([1.0, 2.0, 3.0], size=s[:1] + (5,)),
        "conc": rng.uniform(0.5, 3.0, (2, 3)),
        "xsame": rng.normal(0.0, 1.0, s),
    }


def test_densities_and_all_their_gradients_match_mxnet(tmp_path):
    inputs = _pdf_inputs()
    space = {"np": np}
    exec(_PDF_SCRIPT, space)
    got = space["compute"](mx, inputs)
    script = "import mxnet as mx\n" + _PDF_SCRIPT + "\narrays.update(compute(mx, inputs))\n"
    _, want = mxnet_ref.run(tmp_path, script, **inputs)
    assert sorted(got) == sorted(want) and len(got) == 2 * (9 + 24)
    for key in sorted(got):
        assert got[key].shape == want[key].shape, key
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-9, err_msg=key)
    # the discrete distributions give the counts no gradient, as MXNet
    assert not got["4.poisson.1.g0"].any() and got["5.negative_binomial.0.g1"].any()


def test_density_values_dtypes_and_shapes():
    sample = mx.nd.array([[1, 2, 3, 4, 5]], dtype="float32")
    dens = mx.nd.random_pdf_gamma(sample, mx.nd.array([5.0]), mx.nd.array([1.0]))
    assert dens.dtype == np.float32 and dens.shape == (1, 5)
    np.testing.assert_allclose(
        dens.asnumpy(), [[0.01532831, 0.09022352, 0.16803136, 0.19536681, 0.17546739]], rtol=1e-5
    )
    d = mx.nd.random.pdf_dirichlet(mx.nd.array([[1, 2], [2, 3], [3, 4]]), mx.nd.array([2.5, 2.5]))
    np.testing.assert_allclose(d.asnumpy(), [38.413498, 199.60245, 564.56085], rtol=1e-5)
    log = mx.nd.random.pdf_normal(
        mx.nd.zeros((2, 3), dtype="float16"), mx.nd.zeros(2, dtype="float16"),
        mx.nd.ones(2, dtype="float16"), is_log=True,
    )  # fmt: skip
    assert log.dtype == np.float16
    np.testing.assert_allclose(log.asnumpy(), np.full((2, 3), -0.5 * np.log(2 * np.pi)), rtol=1e-3)
    out = mx.nd.zeros((1, 5))
    assert mx.nd.random_pdf_poisson(sample, mx.nd.array([2.0]), out=out) is out
    assert out.asnumpy()[0, 1] == pytest.approx(2 * np.exp(-2), rel=1e-6)


def test_densities_refuse_shapes_that_do_not_line_up():
    one = mx.nd.ones(3)
    for call, said in (
        (lambda: mx.nd.random_pdf_normal(mx.nd.ones((3, 2)), one, mx.nd.ones(2)), "parameters"),
        (lambda: mx.nd.random_pdf_normal(mx.nd.ones((2, 3)), one, one), r"\(3,\) must lead"),
        (lambda: mx.nd.random_pdf_dirichlet(mx.nd.ones((4, 2)), one), "last axis"),
        (lambda: mx.nd.random_pdf_poisson(mx.nd.ones(3), 2.0), "lam must be an NDArray"),
    ):
        with pytest.raises(MXNetError, match=said):
            call()


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(11)


def _stats(x):
    v = x.asnumpy().astype(np.float64)
    return v.mean(axis=-1), v.var(axis=-1)


@pytest.mark.parametrize(
    "op, params, mean, var",
    [
        ("sample_uniform", ([0.0, 2.0], [1.0, 6.0]), [0.5, 4.0], [1 / 12, 16 / 12]),
        ("sample_normal", ([0.0, -3.0], [1.0, 0.5]), [0.0, -3.0], [1.0, 0.25]),
        ("sample_gamma", ([2.0, 0.5], [3.0, 1.0]), [6.0, 0.5], [18.0, 0.5]),  # scale beta
        ("sample_exponential", ([2.0, 0.25],), [0.5, 4.0], [0.25, 16.0]),  # rate lam
        ("sample_poisson", ([1.0, 7.0],), [1.0, 7.0], [1.0, 7.0]),
        ("sample_negative_binomial", ([3.0, 1.0], [0.4, 0.8]), [4.5, 0.25], [11.25, 0.3125]),
        ("sample_generalized_negative_binomial", ([2.0, 3.0], [0.5, 0.0]), [2.0, 3.0], [4.0, 3.0]),
    ],
)
def test_sample_operators_draw_per_element_with_the_right_moments(op, params, mean, var):
    arrays = [mx.nd.array(p) for p in params]
    draws = getattr(mx.nd, op)(*arrays, shape=N)
    assert draws.shape == (2, N) and draws.dtype == np.float32
    m, v = _stats(draws)
    np.testing.assert_allclose(m, mean, rtol=0.05, atol=0.02)
    np.testing.assert_allclose(v, var, rtol=0.1, atol=0.01)
    grid = getattr(mx.nd, op)(*[a.reshape((2, 1)) for a in arrays], shape=(3, 4), dtype="float64")
    assert grid.shape == (2, 1, 3, 4) and grid.dtype == np.float64
    assert getattr(mx.nd, op)(*arrays).shape == (2,)


def test_sample_operators_repeat_with_the_seed_and_write_out():
    lo, hi = mx.nd.array([0.0, 5.0]), mx.nd.array([1.0, 6.0])
    mx.random.seed(3)
    a = mx.nd.sample_uniform(lo, hi, shape=5).asnumpy()
    mx.random.seed(3)
    out = mx.nd.zeros((2, 5), dtype="float64")
    assert mx.nd.sample_uniform(lo, hi, shape=5, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), a, rtol=1e-6)
    assert out.dtype == np.float64 and (a[1] >= 5).all() and (a[0] < 1).all()


def test_sample_operators_refuse_bad_parameters_shapes_and_dtypes():
    one, two = mx.nd.ones(2), mx.nd.ones(3)
    for call, said in (
        (lambda: mx.nd.sample_normal(one, mx.nd.array([1.0, -1.0])), "sigma must be non-negative"),
        (lambda: mx.nd.sample_gamma(mx.nd.array([-1.0, 1.0]), one), "alpha must be non-negative"),
        (lambda: mx.nd.sample_exponential(-one), "lam must be non-negative"),
        (lambda: mx.nd.sample_negative_binomial(one, one * 1.5), r"p must be in \(0, 1\]"),
        (lambda: mx.nd.sample_generalized_negative_binomial(one, -one), "alpha must be non-neg"),
        (lambda: mx.nd.sample_uniform(one, two), "parameter shapes differ"),
        (lambda: mx.nd.sample_uniform(one, one, dtype="int32"), "dtype must be one of"),
        (lambda: mx.nd.sample_poisson(one, shape=2, out=mx.nd.zeros(2)), "out has shape"),
        (lambda: mx.nd.random.normal(one, 1.0), "give every parameter as an NDArray"),
    ):
        with pytest.raises(MXNetError, match=said):
            call().wait_to_read()  # a bad value raises where the draws are read


def test_nd_random_functions_dispatch_array_parameters_to_the_sample_operators():
    low, high = mx.nd.array([[1.0, 2.0, 3.0]]), mx.nd.array([[2.0, 3.0, 4.0]])
    u = mx.nd.random.uniform(low=low, high=high, shape=(N,)).asnumpy()
    assert u.shape == (1, 3, N)
    assert (u.min(axis=-1) >= [[1, 2, 3]]).all() and (u.max(axis=-1) < [[2, 3, 4]]).all()
    # exponential takes the scale, the operator the rate: scale arrays are inverted
    m, _ = _stats(mx.nd.random.exponential(mx.nd.array([2.0, 0.5]), shape=N))
    np.testing.assert_allclose(m, [2.0, 0.5], rtol=0.05)
    m, _ = _stats(mx.nd.random_exponential(lam=4.0, shape=N).reshape((1, N)))
    np.testing.assert_allclose(m, [0.25], rtol=0.05)
    assert mx.nd.random.gamma(mx.nd.ones((2, 2)), mx.nd.ones((2, 2))).shape == (2, 2)


def test_like_samplers_take_the_shape_dtype_and_context_of_data():
    data = mx.nd.ones((N,), dtype="float64", ctx=mx.cpu(1))
    n = mx.nd.random.normal_like(data, loc=3.0, scale=2.0)
    assert n.shape == (N,) and n.dtype == np.float64 and n.context == mx.cpu(1)
    for fn, kw, mean in (
        (mx.nd.random.normal_like, {"loc": 3.0, "scale": 2.0}, 3.0),
        (mx.nd.random.uniform_like, {"low": 1.0, "high": 2.0}, 1.5),
        (mx.nd.random.exponential_like, {"lam": 4.0}, 0.25),  # the rate, as MXNet's operator
        (mx.nd.random.gamma_like, {"alpha": 2.0, "beta": 3.0}, 6.0),
        (mx.nd.random.poisson_like, {"lam": 5.0}, 5.0),
        (mx.nd.random.negative_binomial_like, {"k": 3, "p": 0.4}, 4.5),
        (mx.nd.random.generalized_negative_binomial_like, {"mu": 2.0, "alpha": 0.5}, 2.0),
    ):
        got = fn(data, **kw).asnumpy().mean()
        assert got == pytest.approx(mean, rel=0.05), fn.__name__


def test_multinomial_log_probabilities_and_their_gradient():
    probs = mx.nd.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], dtype="float64")
    probs.attach_grad()
    with mx.autograd.record():
        draws, logp = mx.nd.random.multinomial(probs, shape=N // 4, get_prob=True, dtype="uint8")
    head = np.cos(np.arange(logp.size)).reshape(logp.shape)
    logp.backward(mx.nd.array(head, dtype="float64"))
    d, p = draws.asnumpy().astype(int), probs.asnumpy()
    assert draws.dtype == np.uint8 and logp.dtype == np.float64 and d.shape == (2, N // 4)
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(p, d, axis=1)))
    want = np.zeros_like(p)
    for row in range(2):
        np.add.at(want[row], d[row], head[row] / p[row, d[row]])
    np.testing.assert_allclose(probs.grad.asnumpy(), want, rtol=1e-10)
    verify_generator(
        lambda n: mx.nd.random.multinomial(mx.nd.array([0.1, 0.2, 0.3, 0.4]), shape=n).asnumpy(),
        buckets=[0, 1, 2, 3], probs=[0.1, 0.2, 0.3, 0.4], nsamples=100000, nrepeat=3,
    )  # fmt: skip
    assert mx.nd.random.multinomial(mx.nd.array([0.5, 0.5])).shape == (1,)
    assert isinstance(mx.nd.sample_multinomial(probs, get_prob=True), list)


def test_multinomial_refuses_what_it_cannot_draw():
    for call, said in (
        (lambda: mx.nd.random.multinomial(mx.nd.ones(300) / 300, dtype="uint8"), "300 categories"),
        (lambda: mx.nd.random.multinomial(mx.nd.array([0.5, 0.5]), dtype="int8"), "dtype"),
        (lambda: mx.nd.random.multinomial(mx.nd.array([-0.1, 1.1])), "non-negative"),
    ):
        with pytest.raises(MXNetError, match=said):
            call().wait_to_read()  # a bad value raises where the draws are read


def test_unique_zipfian_draws_distinct_classes_and_counts_its_trials():
    classes, trials = mx.nd._internal._sample_unique_zipfian(793472, shape=(3, 8192))
    assert classes.shape == (3, 8192) and trials.shape == (3,) and classes.dtype == np.int64
    for row, n in zip(classes.asnumpy(), trials.asnumpy(), strict=True):
        assert np.unique(row).size == 8192 and 0 <= row.min() and row.max() < 793472
        assert 14500 < n < 17000  # the expected number of draws for this range and count
    small, _ = mx.nd._internal._sample_unique_zipfian(50, shape=(1, 5000 // 100))
    assert sorted(small.asnumpy()[0]) == list(range(50))
    with pytest.raises(MXNetError, match="cannot draw 60 distinct classes"):
        mx.nd._internal._sample_unique_zipfian(50, shape=(1, 60))
    with pytest.raises(MXNetError, match="batch_size, num_sampled"):
        mx.nd._internal._sample_unique_zipfian(50, shape=(5,))


def test_symbolic_samplers_and_densities():
    v1, v2 = mx.sym.Variable("v1"), mx.sym.Variable("v2")
    loc, scale = mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 2.0])
    y = mx.sym.random.normal(v1, v2, shape=N, dtype="float64")
    assert y.get_internals().list_outputs()[-1].startswith("sample_normal")
    out = y.bind(mx.cpu(), {"v1": loc, "v2": scale}).forward()[0]
    m, v = _stats(out)
    assert out.dtype == np.float64
    np.testing.assert_allclose(m, [0.0, 10.0], atol=0.1)
    np.testing.assert_allclose(v, [1.0, 4.0], rtol=0.1)
    e = mx.sym.random.exponential(v1, shape=N).eval(v1=mx.nd.array([0.5]))[0]
    assert e.asnumpy().mean() == pytest.approx(0.5, rel=0.05)
    mx.random.seed(4)
    a = mx.sym.random.uniform(2.0, 3.0, shape=(3, 4)).eval()[0].asnumpy()
    mx.random.seed(4)
    np.testing.assert_array_equal(mx.nd.random.uniform(2.0, 3.0, shape=(3, 4)).asnumpy(), a)
    like = mx.sym.random.poisson_like(mx.sym.ones((2, 5)), lam=3.0).eval()[0]
    assert like.shape == (2, 5)
    x = mx.nd.array([[0.5, 1.5], [2.0, 1.0]])
    for sym in (mx.sym.random.pdf_gamma, mx.sym.random_pdf_gamma):
        dens = sym(v1, v2, mx.sym.Variable("v3"), is_log=True)
        got = dens.eval(v1=x, v2=mx.nd.array([2.0, 3.0]), v3=mx.nd.array([1.0, 2.0]))[0]
        want = mx.nd.random_pdf_gamma(x, mx.nd.array([2.0, 3.0]), mx.nd.array([1.0, 2.0]), True)
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy())
    for name in ("sample_uniform", "sample_multinomial", "random_pdf_dirichlet"):
        assert callable(getattr(mx.sym, name))
    with pytest.raises(MXNetError, match="get_prob"):
        mx.sym.random.multinomial(v1, get_prob=True)
    with pytest.raises(MXNetError, match="every parameter as a Symbol"):
        mx.sym.random.gamma(v1, 1.0)
