"""Softmax family, fused cross-entropy, SoftmaxOutput, Dropout, BatchNorm and LayerNorm."""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import autograd, nd


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis,temperature", [(-1, None), (0, None), (1, 2.0)])
def test_softmax_and_log_softmax(axis, temperature):
    x = rand(3, 4, 2) * 3
    t = temperature or 1.0
    d = nd.array(x, dtype="float64")
    np.testing.assert_allclose(
        nd.softmax(d, axis=axis, temperature=temperature).asnumpy(),
        _softmax(x / t, axis),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        nd.log_softmax(d, axis=axis, temperature=temperature).asnumpy(),
        np.log(_softmax(x / t, axis)),
        rtol=1e-12,
    )
    check_grad(lambda a: nd.softmax(a, axis=axis, temperature=temperature), [x])
    check_grad(lambda a: nd.log_softmax(a, axis=axis, temperature=temperature), [x])


def test_softmax_mxnet_values_and_stability():
    got = nd.softmax(nd.array([[1, 2, 3]]), temperature=2.0).asnumpy()
    np.testing.assert_allclose(got, [[0.18632373, 0.3071959, 0.5064804]], rtol=1e-6)
    got = nd.log_softmax(nd.array([[1, 2, 3]]), axis=1).asnumpy()
    np.testing.assert_allclose(got, [[-2.4076037, -1.4076039, -0.40760383]], rtol=1e-5)
    big = nd.softmax(nd.array([[1000.0, 0.0]])).asnumpy()
    np.testing.assert_allclose(big, [[1, 0]])
    assert nd.array([[1.0, 2.0]]).softmax().shape == (1, 2)


def _masked_softmax_reference(x, length, axis, t, log):
    """Row by row: softmax (or its log) of the first ``length`` entries along ``axis``, zeros
    after them."""
    xm = np.moveaxis(x, axis, -1)
    out = np.zeros_like(xm)
    for idx in np.ndindex(*xm.shape[:-1]):
        n = int(length[idx])
        if n:
            z = xm[idx][:n] / t
            z = z - z.max()
            p = np.exp(z) / np.exp(z).sum()
            out[idx][:n] = np.log(p) if log else p
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis,temperature", [(-1, None), (1, 2.0), (0, 0.5)])
def test_softmax_with_length_masks_each_row(log, axis, temperature):
    x = rand(4, 5, 3, seed=3) * 3
    ax = axis % 3
    shape = x.shape[:ax] + x.shape[ax + 1 :]
    length = np.random.default_rng(1).integers(0, x.shape[ax] + 1, shape)
    length.flat[0] = 0  # a row with nothing: all zeros, no NaN
    length.flat[-1] = x.shape[ax]
    op = nd.log_softmax if log else nd.softmax
    y = op(
        nd.array(x, dtype=np.float64),
        length=nd.array(length, dtype="int32"),
        axis=axis,
        temperature=temperature,
        use_length=True,
    )
    want = _masked_softmax_reference(x, length, ax, temperature or 1.0, log)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12, atol=1e-12)
    check_grad(
        lambda a, n: op(a, length=n, axis=axis, temperature=temperature, use_length=True),
        [x, length.astype(np.int64)],
        nondiff=(1,),
    )


def test_softmax_with_length_as_mxnet_names_it():
    x = nd.array([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    length = nd.array([2, 3], dtype="int32")
    y = nd.softmax(x, length, use_length=True)  # MXNet's order: data, length, axis
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(y.asnumpy()[0], [*(e / e.sum()), 0, 0], rtol=1e-6)
    assert y.asnumpy()[1, 3] == 0
    # without use_length the length is ignored, as MXNet does
    np.testing.assert_allclose(nd.softmax(x, length).asnumpy(), nd.softmax(x).asnumpy())
    assert nd.softmax(x, dtype="float64").dtype == np.float64
    with pytest.raises(mx.MXNetError, match="use_length=True needs the length input"):
        nd.softmax(x, use_length=True)
    with pytest.raises(mx.MXNetError, match=r"length has shape \(3,\).*must be \(2,\)"):
        nd.softmax(x, nd.array([1, 2, 3]), use_length=True)


def test_symbolic_softmax_takes_the_length_input():
    data, length = mx.sym.var("data"), mx.sym.var("length")
    sym = mx.sym.softmax(data, length, use_length=True, axis=-1)
    assert sym.list_arguments() == ["data", "length"]
    assert mx.sym.softmax(data).list_arguments() == ["data"]
    x = np.array([[1.0, 2.0, 3.0]])
    ex = sym.bind(mx.cpu(), {"data": nd.array(x), "length": nd.array([2])})
    out = ex.forward()[0].asnumpy()
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(out[0], [*(e / e.sum()), 0], rtol=1e-6)


def test_softmax_cross_entropy_matches_mxnet():
    x = nd.array([[1, 2, 3], [11, 7, 5]])
    got = nd.softmax_cross_entropy(x, nd.array([2, 0]))
    assert got.shape == (1,)
    np.testing.assert_allclose(got.asnumpy(), [0.4281871], rtol=1e-6)
    check_grad(
        lambda a, lab: nd.softmax_cross_entropy(a, lab),
        [rand(3, 5) * 3, np.array([4, 0, 2])],
        nondiff=(1,),
    )


@pytest.mark.parametrize("axis", [-1, 1])
def test_fused_softmax_ce_loss(axis):
    x = rand(2, 4, 3) * 2
    moved = np.moveaxis(x, axis, -1)
    labels = (
        np.array([[1, 3, 0], [2, 2, 1]]) if axis == 1 else np.array([[0, 2, 1, 1], [2, 0, 0, 1]])
    )
    logp = np.log(_softmax(moved))
    want = -np.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    got = nd.softmax_ce_loss(
        nd.array(x, dtype="float64"), nd.array(labels), axis=axis, keepdims=False
    )
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    kept = nd.softmax_ce_loss(nd.array(x), nd.array(labels), axis=axis)
    assert kept.shape == tuple(1 if i == axis % 3 else s for i, s in enumerate(x.shape))
    check_grad(lambda a, lab: nd.softmax_ce_loss(a, lab, axis=axis), [x, labels], nondiff=(1,))
    check_grad(
        lambda a, lab: nd.softmax_ce_loss(a, lab, axis=axis, from_logits=True),
        [x, labels],
        nondiff=(1,),
    )


def test_fused_softmax_ce_loss_dense_labels():
    x = rand(3, 4) * 2
    lab = _softmax(rand(3, 4, seed=5))
    want = -(np.log(_softmax(x)) * lab).sum(axis=-1, keepdims=True)
    got = nd.softmax_ce_loss(
        nd.array(x, dtype="float64"), nd.array(lab, dtype="float64"), sparse_label=False
    )
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    check_grad(lambda a, b: nd.softmax_ce_loss(a, b, sparse_label=False), [x, lab])
    check_grad(
        lambda a, b: nd.softmax_ce_loss(a, b, sparse_label=False, from_logits=True), [x, lab]
    )


def test_softmax_output_gradient_is_cross_entropy():
    x, lab = rand(3, 4), np.array([1, 0, 3])
    d = nd.array(x)
    d.attach_grad()
    with autograd.record():
        y = nd.SoftmaxOutput(d, nd.array(lab), grad_scale=2.0)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), _softmax(x), rtol=1e-5)
    want = 2.0 * (_softmax(x) - np.eye(4)[lab])
    np.testing.assert_allclose(d.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)
    with autograd.record():
        y = nd.SoftmaxOutput(d, nd.array([1, -1, 3]), use_ignore=True, normalization="valid")
    y.backward()
    want = (_softmax(x) - np.eye(4)[[1, 0, 3]]) * np.array([[1], [0], [1]]) / 2
    np.testing.assert_allclose(d.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_dropout_modes_and_gradient():
    x = nd.ones((50, 40))
    y = nd.Dropout(x, p=0.5)  # inference: a copy
    assert y is not x and (y.asnumpy() == 1).all()
    y += 1
    assert (x.asnumpy() == 1).all()
    mx.random.seed(7)
    with autograd.train_mode():
        y = nd.Dropout(x, p=0.5).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    always = nd.Dropout(x, p=0.25, mode="always").asnumpy()
    np.testing.assert_allclose(np.unique(always), [0, 1 / 0.75], rtol=1e-6)
    shared = nd.Dropout(nd.ones((4, 30)), p=0.5, mode="always", axes=(0,)).asnumpy()
    assert (shared == shared[0]).all()
    d = nd.array(rand(6, 7))
    d.attach_grad()
    with autograd.record():
        out = nd.Dropout(d, p=0.3)
    out.backward()
    np.testing.assert_allclose(d.grad.asnumpy(), out.asnumpy() / d.asnumpy(), rtol=1e-5)


def _bn_inputs(c=3):
    return (
        nd.array(rand(c, seed=11) + 1.5),
        nd.array(rand(c, seed=12)),
        nd.zeros((c,)),
        nd.ones((c,)),
    )


def test_batchnorm_training_updates_running_stats_like_mxnet():
    x = np.arange(24.0).reshape(2, 3, 2, 2) / 10
    gamma, beta = nd.array([1.5, 0.5, 2.0]), nd.array([0.1, 0.2, 0.3])
    mm, mv = nd.zeros((3,)), nd.ones((3,))
    gamma.attach_grad()
    d = nd.array(x)
    with autograd.record():
        y = nd.BatchNorm(d, gamma, beta, mm, mv)
    y.backward(nd.ones_like(y))
    np.testing.assert_allclose(mm.asnumpy(), [0.075, 0.115, 0.155], rtol=1e-5)
    np.testing.assert_allclose(mv.asnumpy(), [0.93725] * 3, rtol=1e-5)
    np.testing.assert_array_equal(gamma.grad.asnumpy(), [0, 0, 0])  # fix_gamma default
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3)
    np.testing.assert_allclose(
        y.asnumpy(), want + np.array([0.1, 0.2, 0.3])[None, :, None, None], rtol=1e-5, atol=1e-6
    )


def test_batchnorm_inference_uses_running_stats():
    x = rand(4, 3, 2)
    gamma, beta, mm, mv = _bn_inputs()
    mm[:] = nd.array([0.1, -0.2, 0.3])
    mv[:] = nd.array([0.5, 2.0, 1.5])
    y = nd.BatchNorm(nd.array(x), gamma, beta, mm, mv, fix_gamma=False)
    g, b = gamma.asnumpy(), beta.asnumpy()
    shape = (1, 3, 1)
    want = (x - mm.asnumpy().reshape(shape)) / np.sqrt(
        mv.asnumpy().reshape(shape) + 1e-3
    ) * g.reshape(shape) + b.reshape(shape)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(mm.asnumpy(), [0.1, -0.2, 0.3], rtol=1e-6)  # unchanged


@pytest.mark.parametrize("axis", [1, -1])
def test_batchnorm_gradients(axis):
    x = rand(4, 3, 5) if axis == 1 else rand(4, 5, 3)
    gamma, beta = rand(3, seed=3) + 1.5, rand(3, seed=4)
    aux = [np.zeros(3), np.ones(3)]
    check_grad(
        lambda d, g, b, m, v: nd.BatchNorm(d, g, b, m, v, fix_gamma=False, axis=axis),
        [x, gamma, beta] + aux,
        nondiff=(3, 4),
        rtol=1e-4,
        atol=1e-6,
    )
    check_grad(
        lambda d, g, b, m, v: nd.BatchNorm(
            d, g, b, m, v, fix_gamma=False, use_global_stats=True, axis=axis
        ),
        [x, gamma, beta, rand(3, seed=5), rand(3, seed=6, low=0.5, high=1.5)],
        nondiff=(3, 4),
    )


def test_batchnorm_output_mean_var_and_context_check():
    gamma, beta, mm, mv = _bn_inputs()
    with autograd.train_mode():
        out, mean, var = nd.BatchNorm(
            nd.array(rand(4, 3)), gamma, beta, mm, mv, output_mean_var=True
        )
    np.testing.assert_allclose(mean.asnumpy(), rand(4, 3).mean(axis=0), rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="cpu\\(1\\)"):
        nd.BatchNorm(nd.ones((2, 3)), gamma, beta, nd.zeros((3,), ctx=mx.cpu(1)), mv)


def test_layernorm():
    x, g, b = rand(3, 5), rand(5, seed=1) + 1, rand(5, seed=2)
    got = nd.LayerNorm(
        nd.array(x, dtype="float64"), nd.array(g, dtype="float64"), nd.array(b, dtype="float64")
    ).asnumpy()
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(got, want, rtol=1e-10)
    check_grad(nd.LayerNorm, [x, g, b], rtol=1e-4)


def test_an_empty_batch_goes_through_flatten_dense_and_batchnorm():
    # A device's share of a short last batch may be empty (split_data gives 1, 0, 0 for 1 row
    # over 3 devices): forward and backward give empty results and change no running statistic.
    x = mx.nd.ones((0, 2, 3, 3))
    gamma, beta = mx.nd.ones((2,)), mx.nd.zeros((2,))
    mean, var = mx.nd.full((2,), 0.5), mx.nd.full((2,), 2.0)
    w, b = mx.nd.ones((4, 18)), mx.nd.zeros((4,))
    for p in (x, gamma, beta, w):
        p.attach_grad()
    with autograd.record():
        y = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False)
        z = mx.nd.FullyConnected(mx.nd.flatten(y), w, b, num_hidden=4)
    z.backward()
    assert y.shape == (0, 2, 3, 3) and z.shape == (0, 4)
    np.testing.assert_array_equal(mean.asnumpy(), [0.5, 0.5])
    np.testing.assert_array_equal(var.asnumpy(), [2.0, 2.0])
    assert x.grad.shape == (0, 2, 3, 3)
    np.testing.assert_array_equal(gamma.grad.asnumpy(), [0, 0])
    np.testing.assert_array_equal(w.grad.asnumpy(), np.zeros((4, 18)))
