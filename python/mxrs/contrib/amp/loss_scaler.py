"""Dynamic loss scaling: the scale AMP multiplies losses by, and how it moves.

Gradients of a float16 network that underflow to zero are saved by scaling the loss up before
``backward``; the optimizer divides the gradients back (``Trainer._scale``). When a scaled
gradient overflows (an inf or NaN appears), the step is skipped and the scale halves; after
``scale_seq_len`` steps in a row without overflow it doubles, up to ``2 ** 24`` (MXNet 1.9.1's
``LossScaler``, with its start at ``2 ** 16`` and its order of updates: a change decided at one
step's check takes effect at the next step's check).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ... import autograd
from ... import ndarray as nd

__all__ = ["LossScaler"]

#: How many gradients one ``multi_all_finite`` call checks.
_CHUNK = 200


class LossScaler:
    """The dynamic loss scale of one Trainer.

    Attributes
    ----------
    loss_scale : float
        The scale the next :func:`~mxrs.contrib.amp.scale_loss` multiplies the loss by.
    """

    def __init__(self) -> None:
        self._loss_scale = 2.0**16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0**24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        """float: the current loss scale."""
        return self._loss_scale

    def has_overflow(self, params: Sequence[Any]) -> bool:
        """Check the gradients of ``params`` (Gluon Parameters) for inf or NaN and move the
        scale: an overflow halves it (for the next step) and restarts the run of good steps;
        ``scale_seq_len`` good steps in a row double it.

        Returns
        -------
        bool
            True when some gradient is not finite: the caller skips this step.
        """
        by_ctx: dict[Any, list[Any]] = {}
        for p in params:
            if p.grad_req != "null":
                for g in p.list_grad():
                    by_ctx.setdefault(g.context, []).append(g)
        finite = all(_all_finite(grads) for grads in by_ctx.values())
        self._loss_scale = self._next_loss_scale
        if not finite:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return not finite


def _all_finite(grads: list[Any]) -> bool:
    """Whether every element of ``grads`` (arrays of one context) is finite."""
    with autograd.pause():
        flag = nd.ones((1,), ctx=grads[0].context)
        for i in range(0, len(grads), _CHUNK):
            chunk = grads[i : i + _CHUNK]
            nd.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False, out=flag)
        return bool(flag.asscalar())
