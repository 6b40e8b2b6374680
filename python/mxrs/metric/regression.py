"""Correlation metrics of regression outputs: Pearson's r."""

from __future__ import annotations

from typing import Any

import numpy

from ..base import MXNetError
from .base import EvalMetric, NameValue, _host, alias, check_label_shapes, register

__all__ = ["PearsonCorrelation"]


class _Moments:
    """Count, means and centred second moments of paired samples ``(x, y)``.

    Batches merge with the pairwise update of Chan et al., which stays accurate when the
    means are large compared with the spread.
    """

    def __init__(self) -> None:
        self.n = 0
        self.mean_x = self.mean_y = 0.0
        self.m2_x = self.m2_y = self.c_xy = 0.0

    @classmethod
    def of(cls, x: numpy.ndarray, y: numpy.ndarray) -> _Moments:
        """The moments of one batch of flat float64 samples ``x`` and ``y``."""
        moments = cls()
        moments.n = int(x.shape[0])
        if moments.n:
            moments.mean_x, moments.mean_y = float(x.mean()), float(y.mean())
            dx, dy = x - moments.mean_x, y - moments.mean_y
            moments.m2_x = float((dx * dx).sum())
            moments.m2_y = float((dy * dy).sum())
            moments.c_xy = float((dx * dy).sum())
        return moments

    def merge(self, other: _Moments) -> None:
        """Fold ``other``'s samples into these moments."""
        if other.n == 0:
            return
        n = self.n + other.n
        dx, dy = other.mean_x - self.mean_x, other.mean_y - self.mean_y
        weight = self.n * other.n / n
        self.m2_x += other.m2_x + dx * dx * weight
        self.m2_y += other.m2_y + dy * dy * weight
        self.c_xy += other.c_xy + dx * dy * weight
        self.mean_x += dx * other.n / n
        self.mean_y += dy * other.n / n
        self.n = n

    def pearson(self) -> float:
        """Pearson's r of the samples; NaN when either side has no spread."""
        denom = self.m2_x * self.m2_y
        if self.n == 0 or denom <= 0:
            return float("nan")
        return float(self.c_xy / numpy.sqrt(denom))


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson's correlation coefficient between predictions and labels.

    Each (label, prediction) pair, of equal shapes, is flattened and counts as one instance.

    Parameters
    ----------
    name : str, default 'pearsonr'
    output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        ``'macro'``: the mean of the coefficient of each pair; ``'micro'``: the coefficient of
        all samples pooled (as if every pair were concatenated).

    Examples
    --------
    >>> r = mx.metric.PearsonCorrelation()
    >>> r.update([mx.nd.array([1, 2, 3])], [mx.nd.array([2, 4, 7])])
    >>> round(r.get()[1], 4)
    0.9934
    """

    def __init__(
        self,
        name: str = "pearsonr",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        average: str = "macro",
    ) -> None:
        if average not in ("macro", "micro"):
            raise MXNetError(
                f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}"
            )
        self.average = average
        self._local = _Moments()
        self._global = _Moments()
        super().__init__(
            name,
            average=average,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )

    def update(self, labels: Any, preds: Any) -> None:
        """Add the correlation (macro) or the moments (micro) of each pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            label_host, pred_host = _host(label), _host(pred)
            check_label_shapes(label_host, pred_host, shape=True)
            moments = _Moments.of(
                pred_host.ravel().astype(numpy.float64), label_host.ravel().astype(numpy.float64)
            )
            if self.average == "macro":
                self._add(moments.pearson(), 1)
                continue
            self._local.merge(moments)
            self._global.merge(moments)
            self._add(0.0, 1)
        if self.average == "micro":
            self.sum_metric = self._local.pearson() * self.num_inst
            self.global_sum_metric = self._global.pearson() * self.global_num_inst

    def reset(self) -> None:
        """Clear the local and global sums and moments."""
        super().reset()
        self._local = _Moments()
        self._global = _Moments()

    def reset_local(self) -> None:
        """Clear the local sums and moments; the global ones keep counting."""
        super().reset_local()
        self._local = _Moments()

    def get(self) -> NameValue:
        """Return ``(name, r)`` over the updates since the last reset (NaN if none)."""
        if self.average == "macro" or self.num_inst == 0:
            return super().get()
        return (self.name, self._local.pearson())

    def get_global(self) -> NameValue:
        """Return ``(name, r)`` over the updates since the last :meth:`reset` (NaN if none)."""
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return (self.name, self._global.pearson())
