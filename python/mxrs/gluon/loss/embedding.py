"""Embedding and count losses of ``gluon.loss``: triplet, cosine-embedding, SDML and Poisson NLL.

They are built from ordinary NDArray ops, so autograd differentiates them.

Examples
--------
>>> loss = gluon.loss.TripletLoss(margin=1)
>>> loss(mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3)), mx.nd.ones((2, 3))).asnumpy()
array([0., 0.], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

from ...base import MXNetError
from ...ndarray import NDArray
from .core import KLDivLoss, Loss, _apply_weighting, _reshape_like

__all__ = ["TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss", "SDMLLoss"]


class TripletLoss(Loss):
    r"""Triplet loss ``max(0, sum(|pred - positive|^2) - sum(|pred - negative|^2) + margin)``,
    the sums running over every axis but ``batch_axis``.

    Parameters
    ----------
    margin : float, default 1
        Required gap between the negative and the positive squared distances.
    weight : float, optional
    batch_axis : int, default 0

    Notes
    -----
    Inputs: ``pred``, ``positive``, ``negative`` (reshaped to ``pred``'s shape),
    ``sample_weight`` (optional). Output: one value per sample.
    """

    def __init__(
        self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(
        self,
        F: Any,
        pred: NDArray,
        positive: NDArray,
        negative: NDArray,
        sample_weight: NDArray | None = None,
    ) -> NDArray:
        """Return the per-sample loss."""
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(
            F.square(positive - pred) - F.square(negative - pred),
            axis=self._batch_axis,
            exclude=True,
        )
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    r"""Negative log-likelihood of ``target`` under a Poisson distribution of mean ``pred``.

    ``exp(pred) - target * pred`` with ``from_logits`` (``pred`` is the log of the mean), else
    ``pred - target * log(pred + epsilon)``. With ``compute_full`` the Stirling approximation of
    ``log(target!)``, ``target*log(target) - target + 0.5*log(2*pi*target)``, is added where
    ``target > 1`` (it is zero elsewhere). The result is the mean over all elements.

    Parameters
    ----------
    weight : float, optional
    from_logits : bool, default True
    batch_axis : int, default 0
    compute_full : bool, default False
    """

    def __init__(
        self,
        weight: float | None = None,
        from_logits: bool = True,
        batch_axis: int = 0,
        compute_full: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(
        self,
        F: Any,
        pred: NDArray,
        target: NDArray,
        sample_weight: NDArray | None = None,
        epsilon: float = 1e-08,
    ) -> NDArray:
        """Return the mean loss over all elements (shape ``(1,)``)."""
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            above = target > 1
            # log is taken of 1 where the term is masked out, so zero targets give no NaN
            safe = F.where(above, target, F.ones_like(target))
            stirling = safe * F.log(safe) - safe + 0.5 * F.log(2 * math.pi * safe)
            loss = loss + stirling * above
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    r"""Cosine-embedding loss of two batches of vectors with labels in {-1, 1}:
    ``1 - cos(input1, input2)`` where the label is 1, ``max(0, cos(input1, input2) - margin)``
    where it is -1 (0 for other labels). The cosine is taken along the last axis, its
    denominator clipped below at 1e-12.

    Parameters
    ----------
    weight : float, optional
    batch_axis : int, default 0
    margin : float, default 0

    Notes
    -----
    Inputs: ``input1``, ``input2`` (same shape), ``label`` (one value per sample),
    ``sample_weight`` (optional). Output: shape ``(N, 1)``.
    """

    def __init__(
        self, weight: float | None = None, batch_axis: int = 0, margin: float = 0, **kwargs: Any
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(
        self,
        F: Any,
        input1: NDArray,
        input2: NDArray,
        label: NDArray,
        sample_weight: NDArray | None = None,
    ) -> NDArray:
        """Return the per-sample loss, shape ``(N, 1)``."""
        if input1.size != input2.size:
            raise MXNetError(
                f"CosineEmbeddingLoss: input1 {input1.shape} and input2 {input2.shape} differ"
            )
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        if label.shape[0] != cos_sim.shape[0]:
            raise MXNetError(
                f"CosineEmbeddingLoss: {label.shape[0]} labels for {cos_sim.shape[0]} samples"
            )
        similar = label == 1
        dissimilar = label == -1
        loss = (1 - cos_sim) * similar + F.relu(dissimilar * (cos_sim - self._margin))
        return _apply_weighting(F, loss, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F: Any, x: NDArray, y: NDArray, axis: int = -1) -> NDArray:
        """Cosine of ``x`` and ``y`` along ``axis``, one value per row, shape ``(-1, 1)``."""
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(Loss):
    r"""Smoothed Deep Metric Learning loss for a batch of aligned pairs ``(x1[i], x2[i])``.

    The rows of ``-||x1[i] - x2[j]||^2`` go through ``log_softmax``; the loss is the KL
    divergence from the smoothed targets (``1 - smoothing_parameter`` on the diagonal,
    ``smoothing_parameter / (N - 1)`` elsewhere), summed over each row. The other samples of
    the batch act as negatives, so the batch needs at least two samples.

    Parameters
    ----------
    smoothing_parameter : float, default 0.3
        Probability mass spread over the negatives.
    weight : float, default 1.0
        Kept for MXNet's signature; the loss does not use it.
    batch_axis : int, default 0

    Notes
    -----
    Inputs: ``x1``, ``x2`` of shape ``(N, D)``. Output: shape ``(N,)``.
    """

    def __init__(
        self,
        smoothing_parameter: float = 0.3,
        weight: float = 1.0,
        batch_axis: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, F: Any, x1: NDArray, x2: NDArray) -> NDArray:
        """Squared Euclidean distance of every row of ``x1`` to every row of ``x2``."""
        n, dim = x1.shape[0], x1.shape[1]
        x1_ = F.broadcast_to(F.expand_dims(x1, axis=1), (n, n, dim))
        x2_ = F.broadcast_to(F.expand_dims(x2, axis=0), (n, n, dim))
        return F.sum(F.square(x1_ - x2_), axis=2)

    def _compute_labels(self, F: Any, batch_size: int, like: NDArray) -> NDArray:
        """Smoothed one-hot targets, on ``like``'s context and dtype."""
        gold = F.eye(batch_size, ctx=like.context, dtype=like.dtype)
        off = self.smoothing_parameter / (batch_size - 1)
        return gold * (1 - self.smoothing_parameter) + (1 - gold) * off

    def hybrid_forward(self, F: Any, x1: NDArray, x2: NDArray) -> NDArray:
        """Return the per-sample loss, shape ``(N,)``."""
        if x1.ndim != 2 or x1.shape != x2.shape:
            raise MXNetError(
                f"SDMLLoss: x1 and x2 must be 2-D of one shape, got {x1.shape} and {x2.shape}"
            )
        batch_size = x1.shape[0]
        if batch_size < 2:
            raise MXNetError("SDMLLoss needs a batch of at least 2 pairs")
        labels = self._compute_labels(F, batch_size, x1)
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels)  # the sum over each row
