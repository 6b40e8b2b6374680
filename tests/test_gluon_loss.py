"""gluon.loss against MXNet's formulas computed in NumPy, with weights and sample weights."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd
from mxrs.base import MXNetError
from mxrs.gluon import loss as gloss

RNG = np.random.default_rng(3)


def _log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _nd(x):
    return mx.nd.array(x)


def test_l2_loss_is_half_squared_error_mean_per_sample():
    pred = RNG.standard_normal((4, 3)).astype(np.float32)
    label = RNG.standard_normal((4, 3)).astype(np.float32)
    out = gloss.L2Loss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, (0.5 * (pred - label) ** 2).mean(axis=1), rtol=1e-5)
    out = gloss.L2Loss(weight=3.0)(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, (1.5 * (pred - label) ** 2).mean(axis=1), rtol=1e-5)
    sw = np.array([[1.0], [0.0], [2.0], [0.5]], dtype=np.float32)
    out = gloss.L2Loss()(_nd(pred), _nd(label), _nd(sw)).asnumpy()
    np.testing.assert_allclose(out, (0.5 * sw * (pred - label) ** 2).mean(axis=1), rtol=1e-5)
    # label reshaped like pred
    out = gloss.L2Loss()(_nd(pred[:, :1]), _nd(label[:, 0])).asnumpy()
    np.testing.assert_allclose(out, 0.5 * (pred[:, 0] - label[:, 0]) ** 2, rtol=1e-5)


def test_l2_loss_gradient():
    pred = _nd([[1.0, 2.0], [3.0, 5.0]])
    pred.attach_grad()
    with autograd.record():
        out = gloss.L2Loss()(pred, _nd([[0.0, 0.0], [1.0, 1.0]]))
    out.backward()
    np.testing.assert_allclose(pred.grad.asnumpy(), [[0.5, 1.0], [1.0, 2.0]])


def test_l1_loss_and_batch_axis():
    pred = RNG.standard_normal((3, 5)).astype(np.float32)
    label = RNG.standard_normal((3, 5)).astype(np.float32)
    out = gloss.L1Loss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, np.abs(pred - label).mean(axis=1), rtol=1e-5)
    out = gloss.L1Loss(weight=2.0, batch_axis=1)(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, 2 * np.abs(pred - label).mean(axis=0), rtol=1e-5)


def test_softmax_cross_entropy_sparse_labels():
    pred = RNG.standard_normal((5, 4)).astype(np.float32)
    label = np.array([0, 3, 1, 1, 2], dtype=np.float32)
    ref = -_log_softmax(pred)[np.arange(5), label.astype(int)]
    out = gloss.SoftmaxCrossEntropyLoss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    assert out.shape == (5,)
    sw = np.array([1, 0, 2, 1, 1], dtype=np.float32).reshape(5, 1)
    out = gloss.SoftmaxCELoss(weight=0.5)(_nd(pred), _nd(label), _nd(sw)).asnumpy()
    np.testing.assert_allclose(out, 0.5 * sw[:, 0] * ref, rtol=1e-5)
    x = mx.nd.array([[1, 2, 3], [11, 7, 5]])
    np.testing.assert_allclose(
        gloss.SoftmaxCrossEntropyLoss()(x, _nd([2, 0])).asnumpy().sum(), 0.42818713, rtol=1e-6
    )


def test_softmax_cross_entropy_dense_labels_axis_and_logits():
    pred = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    label = RNG.uniform(size=(3, 4, 2)).astype(np.float32)
    label /= label.sum(axis=1, keepdims=True)
    ref = -(_log_softmax(pred, axis=1) * label).sum(axis=1).mean(axis=1)
    out = gloss.SoftmaxCrossEntropyLoss(axis=1, sparse_label=False)(_nd(pred), _nd(label))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)
    logp = _log_softmax(pred[:, :, 0])
    idx = np.array([1, 0, 3])
    out = gloss.SoftmaxCrossEntropyLoss(from_logits=True)(_nd(logp), _nd(idx))
    np.testing.assert_allclose(out.asnumpy(), -logp[np.arange(3), idx], rtol=1e-5)


def test_softmax_cross_entropy_gradient_is_softmax_minus_onehot():
    pred_np = RNG.standard_normal((2, 3)).astype(np.float32)
    pred = _nd(pred_np)
    pred.attach_grad()
    with autograd.record():
        out = gloss.SoftmaxCrossEntropyLoss()(pred, _nd([2, 0]))
    out.backward()
    p = np.exp(_log_softmax(pred_np))
    p[[0, 1], [2, 0]] -= 1
    np.testing.assert_allclose(pred.grad.asnumpy(), p, rtol=1e-5, atol=1e-6)


def test_sigmoid_binary_cross_entropy():
    pred = RNG.standard_normal((4, 3)).astype(np.float32) * 3
    label = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
    prob = 1 / (1 + np.exp(-pred))
    ref = -(label * np.log(prob) + (1 - label) * np.log(1 - prob))
    out = gloss.SigmoidBinaryCrossEntropyLoss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, ref.mean(axis=1), rtol=1e-5)
    out = gloss.SigmoidBCELoss(from_sigmoid=True)(_nd(prob), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, ref.mean(axis=1), rtol=1e-4)
    pos_weight = np.array([2.0, 1.0, 0.5], dtype=np.float32)
    ref_pw = -(pos_weight * label * np.log(prob) + (1 - label) * np.log(1 - prob))
    out = gloss.SigmoidBCELoss()(_nd(pred), _nd(label), None, _nd(pos_weight)).asnumpy()
    np.testing.assert_allclose(out, ref_pw.mean(axis=1), rtol=1e-5)
    out = gloss.SigmoidBCELoss(from_sigmoid=True)(
        _nd(prob), _nd(label), None, _nd(pos_weight)
    ).asnumpy()
    np.testing.assert_allclose(out, ref_pw.mean(axis=1), rtol=1e-4)
    sw = np.array([[0.0], [1.0], [2.0], [1.0]], dtype=np.float32)
    out = gloss.SigmoidBCELoss(weight=2.0)(_nd(pred), _nd(label), _nd(sw)).asnumpy()
    np.testing.assert_allclose(out, 2 * (sw * ref).mean(axis=1), rtol=1e-5)


def test_sigmoid_bce_is_stable_for_large_logits():
    out = gloss.SigmoidBCELoss()(_nd([[100.0, -100.0]]), _nd([[0.0, 1.0]])).asnumpy()
    np.testing.assert_allclose(out, [100.0], rtol=1e-6)


def test_other_losses():
    pred = RNG.standard_normal((3, 4)).astype(np.float32)
    label = np.sign(RNG.standard_normal((3, 4))).astype(np.float32)
    out = gloss.HingeLoss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, np.maximum(0, 1 - pred * label).mean(1), rtol=1e-5)
    out = gloss.SquaredHingeLoss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, (np.maximum(0, 1 - pred * label) ** 2).mean(1), rtol=1e-5)
    out = gloss.LogisticLoss()(_nd(pred), _nd(label)).asnumpy()
    np.testing.assert_allclose(out, np.log1p(np.exp(-pred * label)).mean(1), rtol=1e-5)
    diff = np.abs(pred - label)
    out = gloss.HuberLoss(rho=1)(_nd(pred), _nd(label)).asnumpy()
    ref = np.where(diff > 1, diff - 0.5, 0.5 * diff**2).mean(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    target = np.exp(_log_softmax(RNG.standard_normal((3, 4)).astype(np.float32)))
    out = gloss.KLDivLoss(from_logits=False)(_nd(pred), _nd(target)).asnumpy()
    ref = (target * (np.log(target + 1e-12) - _log_softmax(pred))).sum(1)  # MXNet 1.9.1 sums
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError, match="label_format"):
        gloss.LogisticLoss(label_format="other")


def test_loss_repr_and_weight_check():
    assert repr(gloss.L2Loss()) == "L2Loss(batch_axis=0, w=1.0)"
    with pytest.raises(MXNetError, match="weight must be a number"):
        gloss.L1Loss(weight="heavy")(_nd([1.0]), _nd([0.0]))
