"""The event mixins an estimator handler inherits to be called at the matching points of training.

``Estimator.fit`` sorts the handlers by their ``priority`` (ascending, 0 when a handler has none)
and, at each event, calls those that inherit the matching mixin. ``batch_end`` and ``epoch_end``
return a truth value: training stops when any handler returns ``True``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BatchBegin", "BatchEnd", "EpochBegin", "EpochEnd", "TrainBegin", "TrainEnd"]


class EventHandler:
    """Base class of every estimator event handler (the mixins below derive from it)."""


def _check_event_handlers(handlers: Any) -> list[EventHandler]:
    """Return ``handlers`` as a new list, checking every entry is an :class:`EventHandler`."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    bad = [h for h in handlers if not isinstance(h, EventHandler)]
    if bad:
        raise ValueError(
            f"handlers must be an EventHandler or a list of EventHandler, got: {handlers}"
        )
    return handlers


class TrainBegin(EventHandler):
    """Mixin: ``train_begin(estimator)`` is called once, before the first epoch."""

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once before training starts; does nothing by default."""


class TrainEnd(EventHandler):
    """Mixin: ``train_end(estimator)`` is called once, after the last epoch."""

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once after training stops; does nothing by default."""


class EpochBegin(EventHandler):
    """Mixin: ``epoch_begin(estimator)`` is called before each pass over the data."""

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called at the start of every epoch; does nothing by default."""


class EpochEnd(EventHandler):
    """Mixin: ``epoch_end(estimator)`` is called after each pass; ``True`` stops training."""

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called at the end of every epoch; returns whether to stop (``False`` by default)."""
        return False


class BatchBegin(EventHandler):
    """Mixin: ``batch_begin(estimator, batch=...)`` is called before each batch is processed."""

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called before every batch; does nothing by default."""


class BatchEnd(EventHandler):
    """Mixin: ``batch_end(estimator, batch=, pred=, label=, loss=)`` after each batch.

    Returning ``True`` ends the current epoch early and, through the ``epoch_end`` handlers,
    usually training.
    """

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called after every batch; returns whether to stop (``False`` by default)."""
        return False
