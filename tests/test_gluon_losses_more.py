"""Tests of gluon.loss's CTC, triplet, cosine-embedding, SDML and Poisson NLL losses."""

from __future__ import annotations

import itertools
import math

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon
from mxrs.base import MXNetError
from mxrs.test_utils import check_numeric_gradient


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ctc_brute(acts: np.ndarray, label: list[int]) -> float:
    """-log of the summed probability of every path of ``acts`` (T, C) collapsing to ``label``;
    the blank is the last class."""
    steps, ncls = acts.shape
    blank = ncls - 1
    prob = _softmax(acts.astype(np.float64))
    total = 0.0
    for path in itertools.product(range(ncls), repeat=steps):
        collapsed = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in collapsed if k != blank] == label:
            total += float(np.prod([prob[t, k] for t, k in enumerate(path)]))
    return -math.log(total)


# ---------------------------------------------------------------- CTC


def test_ctc_uniform_known_values() -> None:
    loss = gluon.loss.CTCLoss()
    out = loss(mx.nd.ones((2, 20, 4)), mx.nd.array([[1, 0, -1, -1], [2, 1, 1, -1]]))
    assert out.shape == (2,)
    np.testing.assert_allclose(out.asnumpy(), [18.82820702, 16.50581741], rtol=1e-5)


def test_ctc_single_label_by_hand() -> None:
    # T=2, C=2 (class 0 and blank), label [0]: paths 00, 0b, b0 -> probability 3/4
    out = gluon.loss.CTCLoss()(mx.nd.zeros((1, 2, 2)), mx.nd.array([[0]]))
    np.testing.assert_allclose(out.asnumpy(), [-math.log(0.75)], rtol=1e-6)


@pytest.mark.parametrize("steps", [3, 4])
def test_ctc_matches_brute_force(steps: int) -> None:
    rng = np.random.default_rng(steps)
    labels = [[0, 1], [1, 1], [0], []]
    acts = rng.normal(size=(len(labels), steps, 3)).astype(np.float32)
    padded = np.full((len(labels), 2), -1.0)
    for i, lab in enumerate(labels):
        padded[i, : len(lab)] = lab
    out = gluon.loss.CTCLoss()(mx.nd.array(acts), mx.nd.array(padded)).asnumpy()
    ref = [_ctc_brute(acts[i], lab) for i, lab in enumerate(labels)]
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_ctc_lengths_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    acts = rng.normal(size=(2, 5, 3)).astype(np.float32)
    label = np.array([[1, 0, 2], [0, 0, 0]], dtype=np.float32)  # used: [1], [0, 0]
    loss = gluon.loss.CTCLoss()
    out = loss(
        mx.nd.array(acts), mx.nd.array(label), mx.nd.array([3, 5]), mx.nd.array([1, 2])
    ).asnumpy()
    ref = [_ctc_brute(acts[0, :3], [1]), _ctc_brute(acts[1], [0, 0])]
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_ctc_layouts_agree() -> None:
    rng = np.random.default_rng(0)
    acts = rng.normal(size=(3, 6, 5)).astype(np.float32)
    label = np.array([[0, 1, 2], [3, -1, -1], [2, 2, -1]], dtype=np.float32)
    ntc = gluon.loss.CTCLoss()(mx.nd.array(acts), mx.nd.array(label)).asnumpy()
    tnc = gluon.loss.CTCLoss(layout="TNC")(
        mx.nd.array(acts.transpose(1, 0, 2)), mx.nd.array(label)
    ).asnumpy()
    tn = gluon.loss.CTCLoss(layout="TNC", label_layout="TN")(
        mx.nd.array(acts.transpose(1, 0, 2)), mx.nd.array(label.T)
    ).asnumpy()
    np.testing.assert_allclose(tnc, ntc, rtol=1e-6)
    np.testing.assert_allclose(tn, ntc, rtol=1e-6)


def test_ctc_weighting() -> None:
    acts, label = mx.nd.ones((2, 6, 3)), mx.nd.array([[0, 1], [1, -1]])
    base = gluon.loss.CTCLoss()(acts, label).asnumpy()
    out = gluon.loss.CTCLoss(weight=0.5)(acts, label, None, None, mx.nd.array([1.0, 2.0]))
    np.testing.assert_allclose(out.asnumpy(), base * [0.5, 1.0], rtol=1e-6)


def test_ctc_gradient_numeric() -> None:
    rng = np.random.default_rng(3)
    acts = rng.normal(size=(3, 4, 4))
    label = mx.nd.array([[0, 1], [2, 2], [1, -1]], dtype=np.float64)
    loss = gluon.loss.CTCLoss()
    check_numeric_gradient(lambda x: loss(x, label), [acts], numeric_eps=1e-5, rtol=1e-4)


def test_ctc_gradient_with_lengths_numeric() -> None:
    rng = np.random.default_rng(4)
    acts = rng.normal(size=(5, 2, 3))  # TNC
    label = mx.nd.array([[0, 1], [1, 0]], dtype=np.float64)
    p_len = mx.nd.array([3, 5], dtype=np.float64)
    l_len = mx.nd.array([2, 1], dtype=np.float64)
    loss = gluon.loss.CTCLoss(layout="TNC")
    check_numeric_gradient(
        lambda x: loss(x, label, p_len, l_len), [acts], numeric_eps=1e-5, rtol=1e-4
    )
    x = mx.nd.array(acts)
    x.attach_grad()
    with autograd.record():
        out = loss(x, label, p_len, l_len)
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy()[3:, 0], 0.0)  # steps past pred_lengths


def test_ctc_gradient_is_softmax_minus_occupancy() -> None:
    # the gradient of each time step sums to zero over the classes
    x = mx.nd.array(np.random.default_rng(5).normal(size=(2, 7, 4)))
    x.attach_grad()
    with autograd.record():
        out = gluon.loss.CTCLoss()(x, mx.nd.array([[0, 1, 2], [2, -1, -1]]))
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy().sum(axis=-1), 0.0, atol=1e-6)


def test_ctc_infeasible_is_inf() -> None:
    # three distinct labels cannot fit in two steps
    out = gluon.loss.CTCLoss()(mx.nd.ones((1, 2, 4)), mx.nd.array([[0, 1, 2]]))
    assert np.isinf(out.asnumpy()[0])


def test_ctc_errors() -> None:
    with pytest.raises(MXNetError, match="layouts for pred"):
        gluon.loss.CTCLoss(layout="NCT")
    with pytest.raises(MXNetError, match="layouts for label"):
        gluon.loss.CTCLoss(label_layout="TT")
    loss = gluon.loss.CTCLoss()
    with pytest.raises(MXNetError, match="samples"):
        loss(mx.nd.ones((2, 5, 3)), mx.nd.array([[0, 1], [1, 0], [0, 0]]))
    with pytest.raises(MXNetError, match="3-D"):
        loss(mx.nd.ones((5, 3)), mx.nd.array([[0, 1]]))
    with pytest.raises(MXNetError, match="class indices"):
        loss(mx.nd.ones((1, 5, 3)), mx.nd.array([[0, 7]]))
    with pytest.raises(MXNetError, match="pred_lengths"):
        loss(mx.nd.ones((1, 5, 3)), mx.nd.array([[0, 1]]), mx.nd.array([9]))
    with pytest.raises(MXNetError, match="label_lengths"):
        loss(mx.nd.ones((1, 5, 3)), mx.nd.array([[0, 1]]), None, mx.nd.array([3]))


# ---------------------------------------------------------------- triplet


def test_triplet_known_values() -> None:
    pred = mx.nd.array([[0.0, 0.0], [1.0, 1.0]])
    pos = mx.nd.array([[1.0, 0.0], [1.0, 1.0]])
    neg = mx.nd.array([[0.0, 2.0], [1.0, 1.5]])
    # sample 0: 1 - 4 + 1 = -2 -> 0; sample 1: 0 - 0.25 + 1 = 0.75
    out = gluon.loss.TripletLoss()(pred, pos, neg)
    np.testing.assert_allclose(out.asnumpy(), [0.0, 0.75])
    out = gluon.loss.TripletLoss(margin=4, weight=2)(pred, pos, neg, mx.nd.array([1.0, 0.5]))
    np.testing.assert_allclose(out.asnumpy(), [2.0, 3.75])


def test_triplet_gradient() -> None:
    rng = np.random.default_rng(1)
    pts = [rng.normal(size=(4, 3)) for _ in range(3)]
    loss = gluon.loss.TripletLoss(margin=2)
    check_numeric_gradient(lambda a, p, n: loss(a, p, n), pts, numeric_eps=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- cosine


def test_cosine_known_values() -> None:
    a = mx.nd.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0], [3.0, 4.0]])
    b = mx.nd.array([[0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [3.0, 4.0]])
    label = mx.nd.array([1, -1, -1, 1])
    out = gluon.loss.CosineEmbeddingLoss()(a, b, label)
    assert out.shape == (4, 1)
    np.testing.assert_allclose(out.asnumpy()[:, 0], [1.0, 1 / math.sqrt(2), 1.0, 0.0], atol=1e-6)
    out = gluon.loss.CosineEmbeddingLoss(margin=0.8)(a, b, label)
    np.testing.assert_allclose(out.asnumpy()[:, 0], [1.0, 0.0, 0.2, 0.0], atol=1e-6)


def test_cosine_zero_vector_is_finite() -> None:
    out = gluon.loss.CosineEmbeddingLoss()(
        mx.nd.zeros((1, 3)), mx.nd.ones((1, 3)), mx.nd.array([1])
    )
    np.testing.assert_allclose(out.asnumpy(), [[1.0]])


def test_cosine_gradient_and_errors() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    label = mx.nd.array([1, -1, 1], dtype=np.float64)
    loss = gluon.loss.CosineEmbeddingLoss(margin=-1.0)  # keeps every hinge active
    check_numeric_gradient(lambda x, y: loss(x, y, label), [a, b], numeric_eps=1e-5, rtol=1e-4)
    with pytest.raises(MXNetError, match="differ"):
        loss(mx.nd.ones((3, 4)), mx.nd.ones((3, 5)), label)
    with pytest.raises(MXNetError, match="labels"):
        loss(mx.nd.ones((3, 4)), mx.nd.ones((3, 4)), mx.nd.array([1, 1]))


# ---------------------------------------------------------------- Poisson NLL


def test_poisson_from_logits() -> None:
    pred = np.array([[0.0, 1.0], [-1.0, 2.0]])
    target = np.array([[1.0, 0.0], [3.0, 2.0]])
    out = gluon.loss.PoissonNLLLoss()(mx.nd.array(pred), mx.nd.array(target))
    np.testing.assert_allclose(out.asscalar(), np.mean(np.exp(pred) - target * pred), rtol=1e-6)


def test_poisson_rates_and_compute_full() -> None:
    pred = np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 1.5]])
    target = np.array([[0.0, 1.0, 2.0], [3.0, 0.5, 4.0]])
    base = pred - target * np.log(pred + 1e-8)
    out = gluon.loss.PoissonNLLLoss(from_logits=False)(mx.nd.array(pred), mx.nd.array(target))
    np.testing.assert_allclose(out.asscalar(), base.mean(), rtol=1e-6)
    big = target > 1
    safe = np.where(big, target, 1.0)
    stirling = (safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe)) * big
    full = gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True)
    out = full(mx.nd.array(pred), mx.nd.array(target))
    assert np.isfinite(out.asscalar())  # the zero target gives no NaN
    np.testing.assert_allclose(out.asscalar(), (base + stirling).mean(), rtol=1e-6)
    out = gluon.loss.PoissonNLLLoss(weight=2.0, from_logits=False)(
        mx.nd.array(pred), mx.nd.array(target), mx.nd.array([[1.0], [0.0]])
    )
    np.testing.assert_allclose(out.asscalar(), (2 * base[0]).sum() / 6, rtol=1e-6)


def test_poisson_gradient() -> None:
    rng = np.random.default_rng(6)
    pred, target = rng.uniform(0.5, 2, size=(3, 4)), rng.uniform(0, 4, size=(3, 4))
    for loss in (
        gluon.loss.PoissonNLLLoss(),
        gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True),
    ):
        tgt = mx.nd.array(target, dtype=np.float64)
        check_numeric_gradient(
            lambda p, lo=loss, t=tgt: lo(p, t), [pred], numeric_eps=1e-6, rtol=1e-4
        )


# ---------------------------------------------------------------- SDML


def _sdml_reference(x1: np.ndarray, x2: np.ndarray, smoothing: float) -> np.ndarray:
    n = x1.shape[0]
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(axis=2)
    z = -dist - (-dist).max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    lab = np.where(np.eye(n) > 0, 1 - smoothing, smoothing / (n - 1))
    return (lab * (np.log(lab + 1e-12) - logp)).sum(axis=1)


def test_sdml_matches_reference() -> None:
    rng = np.random.default_rng(8)
    x1, x2 = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    for smoothing in (0.3, 0.1):
        out = gluon.loss.SDMLLoss(smoothing_parameter=smoothing)(mx.nd.array(x1), mx.nd.array(x2))
        assert out.shape == (4,)
        np.testing.assert_allclose(out.asnumpy(), _sdml_reference(x1, x2, smoothing), rtol=1e-5)


def test_sdml_gradient_and_errors() -> None:
    rng = np.random.default_rng(9)
    x1, x2 = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    loss = gluon.loss.SDMLLoss()
    check_numeric_gradient(lambda a, b: loss(a, b), [x1, x2], numeric_eps=1e-5, rtol=1e-4)
    with pytest.raises(MXNetError, match="one shape"):
        loss(mx.nd.ones((3, 2)), mx.nd.ones((3, 4)))
    with pytest.raises(MXNetError, match="at least 2"):
        loss(mx.nd.ones((1, 2)), mx.nd.ones((1, 2)))


def test_sdml_trains() -> None:
    mx.random.seed(0)
    data = mx.nd.random.uniform(-1, 1, shape=(5, 10))
    pos = data + mx.nd.random.uniform(-0.1, 0.1, shape=(5, 10))
    model = gluon.nn.Dense(10, activation="tanh")
    model.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SDMLLoss()
    for _ in range(20):
        with autograd.record():
            loss = loss_fn(model(data), model(pos))
        loss.backward()
        trainer.step(1)
    assert float(loss.mean().asscalar()) < 0.05


def test_new_losses_exported() -> None:
    for name in ("CTCLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss", "SDMLLoss"):
        assert name in gluon.loss.__all__
        assert issubclass(getattr(gluon.loss, name), gluon.loss.Loss)
