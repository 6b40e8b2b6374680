"""Private: the comparison a handler uses to tell whether a monitored metric improved."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable

from ....metric import EvalMetric

__all__: list[str] = []


def _monitor_op(monitor: EvalMetric, mode: str, who: str) -> Callable[[float, float], bool]:
    """``operator.lt`` for ``mode='min'``, ``operator.gt`` for ``'max'``.

    ``'auto'`` picks ``gt`` for accuracy and F1 (names holding ``acc`` or ``f1``), ``lt``
    otherwise, and warns which it picked; an unknown mode warns and falls back to ``'auto'``.
    """
    if mode not in ("auto", "min", "max"):
        warnings.warn(
            f"{who} mode {mode} is unknown, fallback to auto mode. {who} will use max mode "
            "for f1 and accuracy metric comparison and use min mode otherwise",
            RuntimeWarning,
            stacklevel=3,
        )
        mode = "auto"
    if mode == "min":
        return operator.lt
    if mode == "max":
        return operator.gt
    name = monitor.get()[0]
    lowered = name.lower() if isinstance(name, str) else str(name).lower()
    if "acc" in lowered or "f1" in lowered:
        warnings.warn(
            f"`greater` operator will be used to determine if {name} has improved. "
            "Please specify `mode='min'` to use the `less` operator. "
            "Specify `mode='max'` to disable this warning.",
            stacklevel=3,
        )
        return operator.gt
    warnings.warn(
        f"`less` operator will be used to determine if {name} has improved. "
        "Please specify `mode='max'` to use the `greater` operator. "
        "Specify `mode='min'` to disable this warning.",
        stacklevel=3,
    )
    return operator.lt


def _worst(op: Callable[[float, float], bool]) -> float:
    """The starting 'best' value for ``op``: +inf when lower is better, -inf otherwise."""
    return float("inf") if op is operator.lt else float("-inf")


def _monitored(monitor: EvalMetric) -> tuple[str, float]:
    """``(name, value)`` of a single (non-composite) metric, the value as a float."""
    name, value = monitor.get()
    if isinstance(value, list):
        raise ValueError(f"the monitored metric must give one value, {name} gives {value}")
    return str(name), float(value)
