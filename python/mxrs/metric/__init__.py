"""Online evaluation metrics (``mx.metric``), with MXNet 1.x's semantics.

A metric accumulates ``sum_metric`` and ``num_inst`` over calls to ``update(labels, preds)``
and reports their ratio with ``get()``. ``reset_local()`` clears the running (local) sums only;
``get_global()`` reports the sums since the last ``reset()``. Labels and predictions are
NDArrays on any context, NumPy arrays, or lists of either (one entry per output).

Metrics are registered by lower-case class name and aliases (``'acc'``, ``'ce'``,
``'top_k_accuracy'``, ...) for :func:`create`.

Examples
--------
>>> acc = mx.metric.Accuracy()
>>> acc.update(mx.nd.array([0, 1, 1]), mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]]))
>>> acc.get()
('accuracy', 0.6666666666666666)


Layout
------
base
    ``EvalMetric``, ``CompositeEvalMetric``, the registry (``create``, ``register``, ``alias``)
    and ``CustomMetric`` (what ``create`` makes of a function).
metrics
    ``Accuracy``, ``TopKAccuracy``, ``CrossEntropy``, ``NegativeLogLikelihood``, ``MAE``,
    ``MSE``, ``RMSE``, ``Loss`` and ``np``.
classification
    ``F1``, ``MCC`` (binary, macro or micro averaged), ``PCC`` (multi-class MCC) and
    ``Perplexity``.
regression
    ``PearsonCorrelation``.

``create`` also rebuilds a metric from its ``get_config()`` dict or that dict's JSON text.
"""

from .base import (
    CompositeEvalMetric,
    CustomMetric,
    EvalMetric,
    alias,
    check_label_shapes,
    create,
    register,
)
from .classification import F1, MCC, PCC, Perplexity
from .metrics import (
    MAE,
    MSE,
    RMSE,
    Accuracy,
    CrossEntropy,
    Loss,
    NegativeLogLikelihood,
    TopKAccuracy,
    np,
)
from .regression import PearsonCorrelation

__all__ = [
    "EvalMetric",
    "CompositeEvalMetric",
    "Accuracy",
    "TopKAccuracy",
    "CrossEntropy",
    "NegativeLogLikelihood",
    "MAE",
    "MSE",
    "RMSE",
    "Loss",
    "F1",
    "MCC",
    "PCC",
    "Perplexity",
    "PearsonCorrelation",
    "CustomMetric",
    "check_label_shapes",
    "create",
    "register",
    "alias",
    "np",
]
