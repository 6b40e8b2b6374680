"""Learning-rate schedules (``mx.lr_scheduler``), with MXNet 1.x's semantics.

A scheduler is called with ``num_update``, the largest number of updates any parameter has had,
and returns the learning rate. Every schedule can start with a warmup of ``warmup_steps``
updates, rising linearly from ``warmup_begin_lr`` to ``base_lr`` (or holding
``warmup_begin_lr`` in ``'constant'`` mode).

As in MXNet, :class:`FactorScheduler` and :class:`MultiFactorScheduler` are stateful: they
decay ``base_lr`` in place as ``num_update`` passes each step and never go back, so calling
them with a smaller ``num_update`` later returns the already-decayed rate.

Examples
--------
>>> sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
>>> [sched(n) for n in range(1, 7)]
[1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
"""

from __future__ import annotations

import logging
from math import cos, pi

from .base import MXNetError

__all__ = [
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
]

_log = logging.getLogger(__name__)


class LRScheduler:
    """The base class of learning-rate schedulers.

    Parameters
    ----------
    base_lr : float, default 0.01
        The learning rate after warmup.
    warmup_steps : int, default 0
        Number of updates the warmup lasts.
    warmup_begin_lr : float, default 0
        The learning rate the warmup starts from.
    warmup_mode : {'linear', 'constant'}, default 'linear'
        ``'linear'`` rises in equal increments to ``base_lr``; ``'constant'`` holds
        ``warmup_begin_lr`` throughout the warmup.
    """

    def __init__(
        self,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise MXNetError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise MXNetError(
                f"Base lr ({base_lr}) has to be higher than warmup_begin_lr ({warmup_begin_lr})"
            )
        if self.warmup_steps < 0:
            raise MXNetError(f"Warmup steps has to be positive or 0, got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise MXNetError(
                f"Supports only linear and constant modes of warmup, got {warmup_mode!r}"
            )
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate at update ``num_update`` of the warmup (``< warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise MXNetError(f"update {num_update} is past the warmup of {self.warmup_steps} steps")
        if self.warmup_mode == "linear":
            increase = (
                (self.warmup_final_lr - self.warmup_begin_lr)
                * float(num_update)
                / float(self.warmup_steps)
            )
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        """Return the learning rate for ``num_update``, the most updates any weight has had."""
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates.

    The rate is ``base_lr * factor ** floor((num_update - 1) / step)``, never below
    ``stop_factor_lr``: the first decay applies at update ``step + 1``.

    Parameters
    ----------
    step : int
        Updates between decays (at least 1).
    factor : float, default 1
        The decay factor (at most 1).
    stop_factor_lr : float, default 1e-8
        The rate stops decaying at this value.
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(
        self,
        step: int,
        factor: float = 1,
        stop_factor_lr: float = 1e-8,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise MXNetError(f"Schedule step must be greater or equal than 1 round, got {step}")
        if factor > 1.0:
            raise MXNetError(f"Factor must be no more than 1 to make lr reduce, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # A loop rather than one power, so resuming at a large num_update catches up.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _log.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` each time ``num_update`` passes a step.

    With ``step[k] < num_update <= step[k+1]`` the rate is ``base_lr * factor ** (k + 1)``.

    Parameters
    ----------
    step : list of int
        Strictly increasing update counts, each at least 1.
    factor : float, default 1
        The decay factor (at most 1).
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(
        self,
        step: list[int],
        factor: float = 1,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise MXNetError(f"step must be a non-empty list of ints, got {step!r}")
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise MXNetError(f"Schedule step must be an increasing integer list, got {step}")
            if s < 1:
                raise MXNetError(f"Schedule step must be greater or equal than 1 round, got {s}")
        if factor > 1.0:
            raise MXNetError(f"Factor must be no more than 1 to make lr reduce, got {factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayToFinal(LRScheduler):
    """After warmup, ``final_lr + (base_lr - final_lr) * shape(n / max_steps)`` with
    ``n = num_update - warmup_steps`` and ``max_steps = max_update - warmup_steps``, ``shape``
    going from 1 to 0; past ``max_update`` the last value is kept."""

    def __init__(
        self,
        max_update: int,
        base_lr: float,
        final_lr: float,
        warmup_steps: int,
        warmup_begin_lr: float,
        warmup_mode: str,
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise MXNetError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise MXNetError(
                f"maximum number of updates must be strictly positive, got {max_update}"
            )
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _shape(self, frac: float) -> float:
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._shape(frac)
        return self.base_lr


class PolyScheduler(_DecayToFinal):
    """Decay the learning rate along a polynomial to ``final_lr`` at ``max_update``.

    After warmup: ``final_lr + (base_lr - final_lr) * (1 - n / max_steps) ** pwr`` with
    ``n = num_update - warmup_steps`` and ``max_steps = max_update - warmup_steps``; past
    ``max_update`` the last value is kept.

    Parameters
    ----------
    max_update : int
        The update at which the rate reaches ``final_lr`` (at least 1).
    base_lr : float, default 0.01
    pwr : float, default 2
        The polynomial's power.
    final_lr : float, default 0
    warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        pwr: float = 2,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        self.power = pwr
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _shape(self, frac: float) -> float:
        return pow(1 - frac, self.power)


class CosineScheduler(_DecayToFinal):
    """Decay the learning rate along half a cosine to ``final_lr`` at ``max_update``.

    After warmup: ``final_lr + (base_lr - final_lr) * (1 + cos(pi * n / max_steps)) / 2`` with
    ``n`` and ``max_steps`` as in :class:`PolyScheduler`; past ``max_update`` the last value
    is kept.

    Parameters
    ----------
    max_update : int
        The update at which the rate reaches ``final_lr`` (at least 1).
    base_lr : float, default 0.01
    final_lr : float, default 0
    warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _shape(self, frac: float) -> float:
        return (1 + cos(pi * frac)) / 2
