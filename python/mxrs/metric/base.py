"""The metric base class, the registry behind ``create``, and shared label/prediction checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

import numpy

from ..base import MXNetError
from ..ndarray import NDArray

__all__ = [
    "EvalMetric",
    "CompositeEvalMetric",
    "CustomMetric",
    "check_label_shapes",
    "create",
    "register",
    "alias",
]

_REGISTRY: dict[str, type[EvalMetric]] = {}
_M = TypeVar("_M", bound="type[EvalMetric]")
#: What ``get()`` returns: a name and a value, or (composite metrics) a list of each.
NameValue: TypeAlias = "tuple[str | list[str], float | list[float]]"


def register(klass: _M) -> _M:
    """Register metric class ``klass`` under its lower-case class name (a class decorator)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise MXNetError(f"register expects an EvalMetric subclass, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases: str) -> Callable[[_M], _M]:
    """Return a class decorator registering the class under each of ``aliases`` too.

    Examples
    --------
    >>> @mx.metric.register
    ... @mx.metric.alias('my_acc')
    ... class MyAccuracy(mx.metric.Accuracy):
    ...     pass
    """

    def reg(klass: _M) -> _M:
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass

    return reg


def create(
    metric: str | Callable[..., Any] | EvalMetric | list[Any] | dict[str, Any],
    *args: Any,
    **kwargs: Any,
) -> EvalMetric:
    """Create a metric from a name, a config, a function, a metric instance or a list of those.

    Parameters
    ----------
    metric : str, dict, callable, EvalMetric or list
        A registered name (case-insensitive); a config dict as :meth:`EvalMetric.get_config`
        returns (``'metric'`` names the class, the other keys are constructor arguments) or
        its JSON text; a function ``feval(label, pred)`` of NumPy arrays, wrapped as
        :class:`CustomMetric`; a metric, returned as is; or a list, combined into a
        :class:`CompositeEvalMetric`.
    *args, **kwargs
        Passed to the metric's constructor (for a config, they override its entries).

    Raises
    ------
    MXNetError
        For a name no metric is registered under, or a config that is not valid JSON or
        lacks ``'metric'``.

    Examples
    --------
    >>> mx.metric.create(['acc', 'ce']).get()
    (['accuracy', 'cross-entropy'], [nan, nan])
    >>> m = mx.metric.create('f1', average='micro')
    >>> mx.metric.create(json.dumps(m.get_config())).get_config() == m.get_config()
    True
    """
    if isinstance(metric, str) and metric.lstrip()[:1] in ("{", "["):
        metric = _parse_config(metric)
    if isinstance(metric, dict):
        config = dict(metric)
        if "metric" not in config:
            raise MXNetError(
                f"a metric config needs a 'metric' entry naming the metric class, got keys "
                f"{sorted(config)}"
            )
        name = config.pop("metric")
        config.update(kwargs)
        return create(name, *args, **config)
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise MXNetError(f"create got arguments for an existing metric {metric.name!r}")
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if not isinstance(metric, str):
        raise MXNetError(
            f"metric must be a name, a function, an EvalMetric or a list, got "
            f"{type(metric).__name__}"
        )
    klass = _REGISTRY.get(metric.lower())
    if klass is None:
        raise MXNetError(
            f"metric {metric!r} is not registered; registered metrics: "
            f"{', '.join(sorted(_REGISTRY))}"
        )
    return klass(*args, **kwargs)


def _parse_config(text: str) -> dict[str, Any] | list[Any]:
    """The JSON config (or list of configs) in ``text``, for :func:`create`."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise MXNetError(f"metric config {text!r} is not valid JSON: {err}") from None
    if not isinstance(config, (dict, list)):
        raise MXNetError(f"metric config {text!r} is not a JSON object or list")
    return config


# ----------------------------------------------------------------- inputs
def _host(x: Any) -> numpy.ndarray:
    """``x`` (NDArray, NumPy or CuPy array, or array-like) as a NumPy array."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, numpy.ndarray):
        return x
    get = getattr(x, "get", None)  # CuPy
    if callable(get) and not isinstance(x, dict):
        return get()
    return numpy.asarray(x)


def _is_array(x: object) -> bool:
    return isinstance(x, (NDArray, numpy.ndarray))


def check_label_shapes(
    labels: Any, preds: Any, wrap: bool = False, shape: bool = False
) -> tuple[Any, Any]:
    """Check that ``labels`` and ``preds`` agree in length (or, with ``shape``, in shape).

    Parameters
    ----------
    labels, preds : list of arrays, or arrays
    wrap : bool, default False
        Wrap a single array (NDArray or NumPy) of either argument in a list.
    shape : bool, default False
        Compare ``.shape`` instead of ``len()``.

    Returns
    -------
    tuple
        ``(labels, preds)``, wrapped when ``wrap`` is set.

    Raises
    ------
    MXNetError
        Naming both lengths (or shapes) when they differ.
    """
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise MXNetError(
            f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}"
        )
    if wrap:
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
    return labels, preds


# ----------------------------------------------------------------- base classes
class EvalMetric:
    """The base class of evaluation metrics.

    Parameters
    ----------
    name : str
        The metric's display name.
    output_names : list of str, optional
        Which predictions :meth:`update_dict` uses (all, in order, when None).
    label_names : list of str, optional
        Which labels :meth:`update_dict` uses (all, in order, when None).
    **kwargs
        Recorded for :meth:`get_config`.
    """

    def __init__(
        self,
        name: str,
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict[str, Any]:
        """Return a dict that :func:`create` accepts as keyword arguments to rebuild the metric."""
        config = self._kwargs.copy()
        config.update(
            {
                "metric": type(self).__name__,
                "name": self.name,
                "output_names": self.output_names,
                "label_names": self.label_names,
            }
        )
        return config

    def update_dict(self, label: dict[str, Any], pred: dict[str, Any]) -> None:
        """Update from dicts of name to array, picking ``label_names``/``output_names``."""
        if self.output_names is not None:
            preds = [pred[name] for name in self.output_names]
        else:
            preds = list(pred.values())
        if self.label_names is not None:
            labels = [label[name] for name in self.label_names]
        else:
            labels = list(label.values())
        self.update(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate the metric over a batch of ``labels`` and predictions ``preds``."""
        raise NotImplementedError()

    def _add(self, value: float, count: int) -> None:
        """Add ``value`` over ``count`` instances to the local and global sums."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear the local and global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local sums only; :meth:`get_global` keeps counting."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> NameValue:
        """Return ``(name, value)`` over the updates since the last reset (NaN if none)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self) -> NameValue:
        """Return ``(name, value)`` over the updates since the last :meth:`reset`."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    def get_name_value(self) -> list[tuple[str, float]]:
        """Return ``[(name, value), ...]`` of :meth:`get`."""
        return _pairs(self.get())

    def get_global_name_value(self) -> list[tuple[str, float]]:
        """Return ``[(name, value), ...]`` of :meth:`get_global`."""
        return _pairs(self.get_global())


def _pairs(result: NameValue) -> list[tuple[str, float]]:
    name, value = result
    if not isinstance(name, list):
        name = [name]
    if not isinstance(value, list):
        value = [value]
    return list(zip(name, value, strict=True))


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values.

    Parameters
    ----------
    metrics : list, optional
        Metrics or anything :func:`create` accepts.
    name : str, default 'composite'
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        metrics: list[Any] | None = None,
        name: str = "composite",
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        super().__init__(
            name, output_names=output_names, label_names=label_names, has_global_stats=True
        )
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric: Any) -> None:
        """Add a child metric (or anything :func:`create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """Return child metric number ``index``.

        Raises
        ------
        MXNetError
            When ``index`` is out of range.
        """
        try:
            return self.metrics[index]
        except IndexError:
            raise MXNetError(
                f"Metric index {index} is out of range 0 and {len(self.metrics)}"
            ) from None

    def update_dict(self, labels: dict[str, Any], preds: dict[str, Any]) -> None:
        """Update every child from dicts, restricted to this metric's names when set."""
        if self.label_names is not None:
            labels = {k: v for k, v in labels.items() if k in self.label_names}
        if self.output_names is not None:
            preds = {k: v for k, v in preds.items() if k in self.output_names}
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        """Update every child metric."""
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        """Reset every child metric."""
        for metric in getattr(self, "metrics", ()):
            metric.reset()

    def reset_local(self) -> None:
        """Reset every child metric's local sums."""
        for metric in self.metrics:
            metric.reset_local()

    def get(self) -> NameValue:
        """Return ``([names], [values])`` of the children, flattened."""
        return self._collect(lambda m: m.get())

    def get_global(self) -> NameValue:
        """Return ``([names], [values])`` of the children's global values, flattened."""
        return self._collect(lambda m: m.get_global())

    def _collect(self, fn: Callable[[EvalMetric], NameValue]) -> tuple[list[str], list[float]]:
        names, values = [], []
        for metric in self.metrics:
            name, value = fn(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get_config(self) -> dict[str, Any]:
        """As :meth:`EvalMetric.get_config`, with the children's configs."""
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


# ----------------------------------------------------------------- what create makes of a function
@register
class CustomMetric(EvalMetric):
    """A metric computed by ``feval(label, pred)`` on NumPy arrays.

    ``feval`` returns a value (one instance) or ``(sum_metric, num_inst)``.

    Parameters
    ----------
    feval : callable
    name : str, optional
        Defaults to ``feval.__name__`` (``'custom(<lambda>)'`` for lambdas).
    allow_extra_outputs : bool, default False
        Skip the check that labels and predictions have the same length.
    output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(
        self,
        feval: Callable[..., Any],
        name: str | None = None,
        allow_extra_outputs: bool = False,
        output_names: list[str] | None = None,
        label_names: list[str] | None = None,
    ) -> None:
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(
            name,
            feval=feval,
            allow_extra_outputs=allow_extra_outputs,
            output_names=output_names,
            label_names=label_names,
            has_global_stats=True,
        )
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Any, preds: Any) -> None:
        """Add ``feval``'s result for each (label, prediction) pair."""
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        else:
            labels = [labels] if _is_array(labels) else labels
            preds = [preds] if _is_array(preds) else preds
        for pred, label in zip(preds, labels, strict=False):
            reval = self._feval(_host(label), _host(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)
