"""``gluon.contrib.estimator``: a high-level training loop with event handlers.

Layout
------
estimator
    ``Estimator``: ``fit`` and ``evaluate`` over gluon DataLoaders.
event_handler
    The event mixins (``TrainBegin`` ... ``BatchEnd``) and the handlers: stopping, metrics,
    validation, logging, checkpoints (with resume), early stopping, gradient update.
batch_processor
    ``BatchProcessor``: the forward/backward of one batch, replaceable.
"""

from . import batch_processor, estimator, event_handler
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (
    BatchBegin,
    BatchEnd,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

__all__ = [
    "BatchBegin",
    "BatchEnd",
    "BatchProcessor",
    "CheckpointHandler",
    "EarlyStoppingHandler",
    "EpochBegin",
    "EpochEnd",
    "Estimator",
    "GradientUpdateHandler",
    "LoggingHandler",
    "MetricHandler",
    "StoppingHandler",
    "TrainBegin",
    "TrainEnd",
    "ValidationHandler",
    "batch_processor",
    "estimator",
    "event_handler",
]
