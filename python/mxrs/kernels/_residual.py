"""A residual unit's end, ``relu(batch_norm(x) + residual)``, from a provider's batch norm and
its ReLU of a sum: what a provider computes where it has no single kernel for it (another
layout, another device). The numbers are those of the two operators one after the other.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._types import ActKernels, Grad, NormKernels

__all__ = ["composed"]


class _Parts(NormKernels, ActKernels, Protocol):
    """A provider of the two kernels the composition calls."""


def composed(
    k: _Parts,
    x: Any,
    gamma: Any,
    beta: Any,
    residual: Any,
    stats: tuple[Any, Any] | None,
    eps: float,
    train: bool,
) -> tuple[Any, Any, Any, Grad]:
    """``relu(batch_norm(x) + residual)`` by ``k``'s batch norm over axis 1 and then its
    ``add_relu``; see ``NormKernels.batch_norm_add_relu``."""
    z, mean, var, norm_grad = k.batch_norm(x, gamma, beta, stats, eps, 1, train)
    y, relu_grad = k.add_relu(z, residual, train)
    if not train:
        return y, mean, var, norm_grad

    def grad(g: Any, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        gz, gr = relu_grad(g, (True, True))
        gx, ggamma, gbeta = norm_grad(gz, needs[:3])
        return gx, ggamma, gbeta, gr

    return y, mean, var, grad
