"""Automatic mixed precision (``mx.contrib.amp``), as in Apache MXNet 1.9.1.

Training: :func:`init` (before the model is made) makes the operators of the low-precision
list run in float16 or bfloat16, those of the float32 list in float32, and the rest in the type
their inputs have (see ``_wrap``). :func:`init_trainer` gives a Gluon Trainer a dynamic loss
scaler; inside :func:`scale_loss` the loss is multiplied by the loss scale and the Trainer
divides the gradients back; a step whose gradients overflow is skipped and the scale lowered
(:class:`~.loss_scaler.LossScaler`).

Inference: :func:`convert_symbol`, :func:`convert_model` and :func:`convert_hybrid_block` add
the casts to a float32 graph (see ``_convert``).

The op lists (``lists.symbol_fp16``, ``lists.symbol_bf16``) are MXNet's, restricted to the
operators mxrs has.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._bfloat16 import BFLOAT16
from ...base import InvalidUsageError, MXNetError
from ...gluon import trainer as _trainer
from ...optimizer import Optimizer
from . import _wrap, lists
from .conversion import convert_hybrid_block, convert_model, convert_symbol
from .loss_scaler import LossScaler

__all__ = [
    "init",
    "init_trainer",
    "scale_loss",
    "unscale",
    "convert_model",
    "convert_hybrid_block",
    "convert_symbol",
    "list_lp16_ops",
    "list_fp32_ops",
    "list_lp16_fp32_ops",
    "list_conditional_fp32_ops",
    "list_widest_type_cast",
    "list_loss_output_functions",
    "list_lp16_use_fp32_params",
    "list_fp16_ops",
    "list_bf16_ops",
    "LossScaler",
]

#: The bfloat16 dtype (``ml_dtypes``'s; MXNet's type flag 12).
bfloat16 = BFLOAT16

_state: dict[str, Any] = {"target": None, "scaler": None, "scaler_given": False}


class _NotATrainer(MXNetError, TypeError):
    """AMP was given something else than a Gluon Trainer (MXNet raises TypeError)."""


# ----------------------------------------------------------------- the op lists
def _list_module(target_dtype: Any) -> Any:
    """The op-list module of ``target_dtype``.

    Raises
    ------
    InvalidUsageError
        For a type other than float16 and bfloat16.
    """
    m = lists._by_type(_dtype_name(target_dtype))
    if m is not None:
        return m
    raise InvalidUsageError(
        f"AMP supports only float16 and bfloat16 as target_dtype, not {target_dtype!r}"
    )


def _dtype_name(dtype: Any) -> str | None:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def list_lp16_ops(target_dtype: Any) -> list[str]:
    """The operators AMP runs in ``target_dtype`` ('float16' or 'bfloat16')."""
    m = _list_module(target_dtype)
    return list(m.FP16_FUNCS if m is lists.symbol_fp16 else m.BF16_FUNCS)


def list_fp32_ops(target_dtype: Any) -> list[str]:
    """The operators AMP runs in float32 for ``target_dtype``."""
    return list(_list_module(target_dtype).FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype: Any) -> list[str]:
    """The operators that run in the type of their inputs (no cast added)."""
    m = _list_module(target_dtype)
    return list(m.FP16_FP32_FUNCS if m is lists.symbol_fp16 else m.BF16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype: Any) -> list[tuple[str, str, list[str]]]:
    """``(operator, parameter, values)``: operators run in float32 when the parameter has one
    of the values."""
    return list(_list_module(target_dtype).CONDITIONAL_FP32_FUNCS)


def list_widest_type_cast(target_dtype: Any) -> list[str]:
    """The operators whose inputs are cast to the widest type among them."""
    return list(_list_module(target_dtype).WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype: Any) -> list[str]:
    """The output layers whose ``grad_scale`` AMP multiplies by the loss scale."""
    return list(_list_module(target_dtype).LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype: Any) -> dict[str, list[str]] | None:
    """For bfloat16, the inputs (by position; empty names are cast) that stay float32 when
    the operator runs in bfloat16; None for float16."""
    m = _list_module(target_dtype)
    return None if m is lists.symbol_fp16 else dict(m.BF16_USE_FP32_PARAMS)


def list_fp16_ops() -> list[str]:
    """``list_lp16_ops('float16')`` (the name older MXNet versions used)."""
    return list_lp16_ops("float16")


def list_bf16_ops() -> list[str]:
    """``list_lp16_ops('bfloat16')``."""
    return list_lp16_ops("bfloat16")


# ----------------------------------------------------------------- training
def init(
    target_dtype: Any = "float16",
    target_precision_ops: list[str] | None = None,
    conditional_fp32_ops: list[tuple[str, str, list[str]]] | None = None,
    fp32_ops: list[str] | None = None,
    layout_optimization: bool = False,
) -> None:
    """Turn on AMP; call it before making the model.

    Parameters
    ----------
    target_dtype : {'float16', 'bfloat16'}
        The low-precision type: float16 for GPUs, bfloat16 for CPUs.
    target_precision_ops : list of str, optional
        The operators to run in ``target_dtype`` instead of :func:`list_lp16_ops`'s.
    conditional_fp32_ops : list of (str, str, list of str), optional
        ``(operator, parameter, values)`` instead of :func:`list_conditional_fp32_ops`'s.
    fp32_ops : list of str, optional
        The operators to run in float32 instead of :func:`list_fp32_ops`'s.
    layout_optimization : bool, default False
        Accepted for MXNet's API; mxrs changes no layouts.

    Raises
    ------
    InvalidUsageError
        For a ``target_dtype`` other than float16 and bfloat16, or a second call with another
        ``target_dtype`` (a second call with the same one does nothing, as in MXNet).
    """
    m = _list_module(target_dtype)
    target = np.dtype(_dtype_name(target_dtype))
    if _state["target"] is not None:
        if _state["target"] != target:
            raise InvalidUsageError(
                f"amp.init: AMP is already initialized for {_state['target'].name}; it cannot "
                f"switch to {target.name} in the same process"
            )
        return
    logging.info("Using AMP")
    scaler = LossScaler()
    _state.update(target=target, scaler=scaler, scaler_given=False)
    _wrap.wrap_all(
        target,
        list_lp16_ops(target) if target_precision_ops is None else target_precision_ops,
        m.FP32_FUNCS if fp32_ops is None else fp32_ops,
        m.CONDITIONAL_FP32_FUNCS if conditional_fp32_ops is None else conditional_fp32_ops,
        m.WIDEST_TYPE_CASTS,
        m.LOSS_OUTPUT_FUNCTIONS,
        list_lp16_use_fp32_params(target) or {},
        scaler,
    )


def _reset() -> None:
    """Turn AMP off again and put the original operator functions back (for tests: MXNet
    has no way back)."""
    _wrap.restore()
    _state.update(target=None, scaler=None, scaler_given=False)


def _check_trainer(optimizer_or_trainer: Any) -> Any:
    if isinstance(optimizer_or_trainer, _trainer.Trainer):
        return optimizer_or_trainer
    if isinstance(optimizer_or_trainer, Optimizer):
        raise _NotATrainer("AMP is currently only compatible with Gluon Trainer")
    raise _NotATrainer(
        "optimizer_or_trainer should be a Gluon Trainer or an optimizer, instead is "
        f"{type(optimizer_or_trainer)}"
    )


def init_trainer(optimizer_or_trainer: Any) -> None:
    """Give a Gluon Trainer dynamic loss scaling: the first Trainer gets the scaler the loss
    layers use, later ones a scaler of their own.

    Raises
    ------
    InvalidUsageError
        When :func:`init` was not called first.
    TypeError
        (an ``MXNetError`` too) for an Optimizer or anything else than a Trainer.
    """
    if _state["target"] is None:
        raise InvalidUsageError("AMP not initialized, did you forget to call amp.init()?")
    trainer = _check_trainer(optimizer_or_trainer)
    if not _state["scaler_given"]:
        _state["scaler_given"] = True
        scaler = _state["scaler"]
    else:
        scaler = LossScaler()
    trainer._amp_loss_scaler = scaler
    trainer._amp_original_scale = trainer._scale


def _scaler_of(trainer: Any) -> LossScaler:
    scaler = getattr(trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise InvalidUsageError(
            "Loss scaler is not initialized, did you forget to call amp.init_trainer()?"
        )
    return scaler


@contextlib.contextmanager
def scale_loss(loss: Any, optimizer_or_trainer: Any) -> Iterator[Any]:
    """Scale ``loss`` (an NDArray, or a list of them) by the Trainer's loss scale for
    ``backward``; the Trainer's next step divides the gradients back.

    Examples
    --------
    >>> with amp.scale_loss(loss, trainer) as scaled:
    ...     autograd.backward(scaled)

    Raises
    ------
    InvalidUsageError
        When the Trainer was not given to :func:`init_trainer`.
    """
    trainer = _check_trainer(optimizer_or_trainer)
    scale = _scaler_of(trainer).loss_scale
    trainer._scale = trainer._amp_original_scale / scale
    if isinstance(loss, list | tuple):
        yield [item * scale for item in loss]
    else:
        yield scale * loss


def unscale(optimizer_or_trainer: Any) -> None:
    """Divide the gradients by the loss scale now (for gradient clipping between
    ``backward`` and ``step``); the next step then scales them by 1.

    Raises
    ------
    TypeError
        (an ``MXNetError`` too) for an Optimizer or anything else than a Trainer.
    """
    trainer = _check_trainer(optimizer_or_trainer)
    for p in trainer._params:
        if p.grad_req == "null" or p._grad is None:
            continue
        for g in p.list_grad():
            g[:] *= trainer._scale
    trainer._scale = 1.0
