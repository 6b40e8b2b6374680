"""Classification metrics from confusion counts (F1, MCC, PCC) and perplexity."""

from __future__ import annotations

import warnings
from typing import Any

import numpy

from ..base import MXNetError
from .base import EvalMetric, NameValue, _host, alias, check_label_shapes, register

__all__ = ["F1", "MCC", "Perplexity", "PCC"]

_AVERAGES = ("macro", "micro")


def _check_average(metric: str, average: str) -> str:
    """``average`` if it is ``'macro'`` or ``'micro'``; an error naming ``metric`` otherwise."""
    if average not in _AVERAGES:
        raise MXNetError(f"{metric}: average must be 'macro' or 'micro', got {average!r}")
    return average


def _class_ids(metric: str, label: Any, pred: Any) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Flat int64 label ids and predicted class ids of one (label, prediction) pair.

    Predictions with as many elements as the labels are class ids; ``(n, classes)``
    predictions are scores whose argmax over axis 1 is the class.
    """
    label_host, pred_host = _host(label), _host(pred)
    labels = label_host.ravel()
    n = labels.shape[0]
    if pred_host.size == n:
        preds = pred_host.ravel()
    elif pred_host.ndim == 2 and pred_host.shape[0] == n:
        preds = numpy.argmax(pred_host, axis=1)
    else:
        raise MXNetError(
            f"{metric}: predictions of shape {pred_host.shape} do not match labels of shape "
            f"{label_host.shape} (expected class ids of the labels' size or (batch, classes) "
            f"scores)"
        )
    label_ids, pred_ids = labels.astype(numpy.int64), preds.astype(numpy.int64)
    if (label_ids < 0).any() or (pred_ids < 0).any():
        raise MXNetError(f"{metric}: class ids must not be negative")
    return label_ids, pred_ids


# ----------------------------------------------------------------- binary F1 and MCC
class _BinaryCounts:
    """True/false positive/negative counts of a binary classifier (class 1 is positive)."""

    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0

    def add(self, other: _BinaryCounts) -> None:
        """Add ``other``'s counts to these."""
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.tn += other.tn

    @property
    def total(self) -> int:
        """The number of examples counted."""
        return self.tp + self.fp + self.fn + self.tn

    def f1(self) -> float:
        """The F1 score; precision or recall with a zero denominator counts as 0."""
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    def mcc(self) -> float:
        """Matthews correlation coefficient; 0 when a row or column of the matrix is empty."""
        tp, fp, fn, tn = (float(c) for c in (self.tp, self.fp, self.fn, self.tn))
        denom = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
        if denom == 0:
            return 0.0
        return float((tp * tn - fp * fn) / numpy.sqrt(denom))


class _BinaryMetric(EvalMetric):
    """A binary classification metric computed from :class:`_BinaryCounts`.

    With ``average='macro'`` each ``update`` call adds its batch's score as one instance;
    with ``'micro'`` the counts are pooled and ``num_inst`` is the number of examples.
    """

    def __init__(
        self,
        name: str,
        average: str,
        output_names: list[str] | None,
        label_names: list[str] | None,
    ) -> None:
        self.average = _check_average(type(self).__name__, average)
        self._local = _BinaryCounts()
        self._global = _BinaryCounts()
        super().__init__(
            name,
            average=average,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )

    def _score(self, counts: _BinaryCounts) -> float:
        """The metric's value for ``counts`` (subclasses implement this)."""
        raise NotImplementedError

    def _counts(self, label: Any, pred: Any) -> _BinaryCounts:
        """The counts of one (label, prediction) pair, checking both are binary."""
        metric = type(self).__name__
        labels, preds = _class_ids(metric, label, pred)
        if (labels > 1).any() or (preds > 1).any():
            found = sorted(set(numpy.unique(labels).tolist()) | set(numpy.unique(preds).tolist()))
            raise MXNetError(
                f"{metric} supports binary classification only (classes 0 and 1), "
                f"got classes {found}"
            )
        counts = _BinaryCounts()
        pos, true_pos = preds == 1, labels == 1
        counts.tp = int((pos & true_pos).sum())
        counts.fp = int((pos & ~true_pos).sum())
        counts.fn = int((~pos & true_pos).sum())
        counts.tn = int((~pos & ~true_pos).sum())
        return counts

    def update(self, labels: Any, preds: Any) -> None:
        """Count every (label, prediction) pair of this call, then fold the batch in."""
        labels, preds = check_label_shapes(labels, preds, True)
        batch = _BinaryCounts()
        for label, pred in zip(labels, preds, strict=True):
            batch.add(self._counts(label, pred))
        if self.average == "macro":
            self._add(self._score(batch), 1)
            return
        self._local.add(batch)
        self._global.add(batch)
        self.sum_metric = self._score(self._local) * self._local.total
        self.num_inst = self._local.total
        self.global_sum_metric = self._score(self._global) * self._global.total
        self.global_num_inst = self._global.total

    def reset(self) -> None:
        """Clear the local and global sums and counts."""
        super().reset()
        self._local = _BinaryCounts()
        self._global = _BinaryCounts()

    def reset_local(self) -> None:
        """Clear the local sums and counts; the global ones keep counting."""
        super().reset_local()
        self._local = _BinaryCounts()


@register
@alias("f1")
class F1(_BinaryMetric):
    """The F1 score ``2 * precision * recall / (precision + recall)`` of a binary classifier.

    Labels are 0 or 1 (1 is the positive class); predictions are ``(batch, 2)`` scores (the
    class is their argmax) or class ids shaped like the labels.

    Parameters
    ----------
    name : str, default 'f1'
    output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        ``'macro'``: the mean of the F1 of each ``update`` call; ``'micro'``: the F1 of the
        counts pooled over all calls.

    Examples
    --------
    >>> f1 = mx.metric.F1()
    >>> f1.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> f1.get()
    ('f1', 0.8)
    """

    def __init__(
        self,
        name: str = "f1",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        super().__init__(name, average, output_names, label_names)

    def _score(self, counts: _BinaryCounts) -> float:
        return counts.f1()


@register
@alias("mcc")
class MCC(_BinaryMetric):
    """The Matthews correlation coefficient of a binary classifier.

    ``(tp * tn - fp * fn) / sqrt((tp + fp) (tp + fn) (tn + fp) (tn + fn))``, taken as 0 when a
    factor of the denominator is 0. Inputs are as for :class:`F1`.

    Parameters
    ----------
    name : str, default 'mcc'
    output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        ``'macro'``: the mean of the MCC of each ``update`` call; ``'micro'``: the MCC of the
        counts pooled over all calls.
    """

    def __init__(
        self,
        name: str = "mcc",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        super().__init__(name, average, output_names, label_names)

    def _score(self, counts: _BinaryCounts) -> float:
        return counts.mcc()


# ----------------------------------------------------------------- perplexity
@register
@alias("perplexity")
class Perplexity(EvalMetric):
    """Perplexity ``exp(mean(-log p[label]))`` of predicted class probabilities.

    The log-probabilities are summed, and the mean's exponential taken, in the predictions'
    floating-point precision; probabilities are floored at 1e-10.

    Parameters
    ----------
    ignore_label : int or None
        Labels equal to it are left out (of the sum and the count). Other labels outside
        ``[0, classes)`` count as the nearest class, as in MXNet 1.9.1, with a warning.
    axis : int, default -1
        The class axis of the predictions.
    name : str, default 'perplexity'
    output_names, label_names
        As :class:`EvalMetric`.

    Examples
    --------
    >>> ppl = mx.metric.create('perplexity', -1)
    >>> ppl.update([mx.nd.array([0, 1])], [mx.nd.array([[0.5, 0.5], [0.5, 0.5]])])
    >>> ppl.get()
    ('perplexity', 2.0)
    """

    def __init__(
        self,
        ignore_label: int | None,
        axis: int = -1,
        name: str = "perplexity",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        self._dtype: numpy.dtype = numpy.dtype(numpy.float32)
        super().__init__(
            name,
            ignore_label=ignore_label,
            axis=axis,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self.ignore_label = ignore_label
        self.axis = axis

    def _loss(self, label: Any, pred: Any) -> tuple[Any, int]:
        """The summed ``-log p[label]`` of one pair and how many labels it counts."""
        label_host, probs = _host(label), _host(pred)
        if not numpy.issubdtype(probs.dtype, numpy.floating):
            probs = probs.astype(numpy.float32)
        self._dtype = numpy.result_type(self._dtype, probs.dtype)
        if probs.ndim == 0 or label_host.size * probs.shape[self.axis] != probs.size:
            raise MXNetError(
                f"{self.name}: labels of shape {label_host.shape} do not match predictions of "
                f"shape {probs.shape} with classes on axis {self.axis}"
            )
        classes = probs.shape[self.axis]
        rows = numpy.moveaxis(probs, self.axis, -1).reshape(-1, classes)
        targets = label_host.ravel().astype(numpy.int64)
        ignore = (
            numpy.zeros(targets.shape, dtype=bool)
            if self.ignore_label is None
            else label_host.ravel() == self.ignore_label
        )
        bad = ~ignore & ((targets < 0) | (targets >= classes))
        if bad.any():
            warnings.warn(
                f"{self.name}: label {targets[bad][0]} is out of range for {classes} classes; "
                "out-of-range labels count as the nearest class, as MXNet's pick clips them",
                UserWarning,
                stacklevel=3,
            )
            targets = numpy.clip(targets, 0, classes - 1)
        picked = rows[numpy.arange(targets.shape[0]), numpy.where(ignore, 0, targets)]
        picked = numpy.where(ignore, picked.dtype.type(1), picked)
        floor = picked.dtype.type(1e-10)
        loss = -numpy.log(numpy.maximum(floor, picked)).sum()
        return loss, int(targets.shape[0] - ignore.sum())

    def update(self, labels: Any, preds: Any) -> None:
        """Add ``-log p[label]`` of every label that is not ``ignore_label``."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            loss, count = self._loss(label, pred)
            self._add(float(loss), count)

    def _perplexity(self, total: float, count: int) -> NameValue:
        if count == 0:
            return (self.name, float("nan"))
        mean = numpy.asarray(total / count, dtype=self._dtype)
        return (self.name, float(numpy.exp(mean)))

    def get(self) -> NameValue:
        """Return ``(name, perplexity)`` over the updates since the last reset (NaN if none)."""
        return self._perplexity(self.sum_metric, self.num_inst)

    def get_global(self) -> NameValue:
        """Return ``(name, perplexity)`` over the updates since the last :meth:`reset`."""
        return self._perplexity(self.global_sum_metric, self.global_num_inst)


# ----------------------------------------------------------------- multi-class PCC
@register
@alias("pcc")
class PCC(EvalMetric):
    """The multi-class Matthews correlation coefficient, from a confusion matrix.

    ``(c * s - sum_k t_k p_k) / sqrt((s^2 - sum_k p_k^2) (s^2 - sum_k t_k^2))`` with ``s``
    samples, ``c`` of them correct, ``t_k`` labels and ``p_k`` predictions of class ``k``.
    The matrix grows with the largest class id seen, so the value does not depend on batch
    size, order or update frequency; for two classes it equals :class:`MCC`. It is NaN when
    all labels or all predictions are one class.

    Labels are class ids; predictions are class ids shaped like the labels or
    ``(batch, classes)`` scores (the class is their argmax).

    Parameters
    ----------
    name : str, default 'pcc'
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        name: str = "pcc",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        self.k = 2
        self.lcm: numpy.ndarray = numpy.zeros((2, 2), dtype=numpy.int64)
        self.gcm: numpy.ndarray = numpy.zeros((2, 2), dtype=numpy.int64)
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )

    def _grow(self, k: int) -> None:
        """Pad both confusion matrices to ``k`` classes."""
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm = numpy.pad(self.lcm, pad)
        self.gcm = numpy.pad(self.gcm, pad)
        self.k = k

    @staticmethod
    def _mcc(cm: numpy.ndarray) -> float:
        """The multi-class MCC of confusion matrix ``cm`` (rows: labels, columns: predictions)."""
        cm = cm.astype(numpy.float64)
        samples = cm.sum()
        truth, predicted = cm.sum(axis=1), cm.sum(axis=0)
        var_true = samples * samples - (truth * truth).sum()
        var_pred = samples * samples - (predicted * predicted).sum()
        if var_true == 0 or var_pred == 0:
            return float("nan")
        cov = numpy.trace(cm) * samples - (truth * predicted).sum()
        return float(cov / numpy.sqrt(var_true * var_pred))

    def update(self, labels: Any, preds: Any) -> None:
        """Add every (label, prediction) pair to the confusion matrices (one instance a call)."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_ids, pred_ids = _class_ids("PCC", label, pred)
            if label_ids.size:
                top = int(max(label_ids.max(), pred_ids.max())) + 1
                if top > self.k:
                    self._grow(top)
            flat = label_ids * self.k + pred_ids
            batch = numpy.bincount(flat, minlength=self.k * self.k).reshape(self.k, self.k)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1
        self.sum_metric = self._mcc(self.lcm) * self.num_inst
        self.global_sum_metric = self._mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        """Clear both confusion matrices."""
        super().reset()
        self.gcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)
        self.lcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)

    def reset_local(self) -> None:
        """Clear the local confusion matrix; the global one keeps counting."""
        super().reset_local()
        self.lcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)

    def get(self) -> NameValue:
        """Return ``(name, pcc)`` of the local confusion matrix (NaN before any update)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self._mcc(self.lcm))

    def get_global(self) -> NameValue:
        """Return ``(name, pcc)`` of the global confusion matrix (NaN before any update)."""
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self._mcc(self.gcm))
