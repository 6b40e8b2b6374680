"""Activation layers: Activation, LeakyReLU, PReLU, ELU, SELU, GELU, Swish."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import initializer
from ...base import MXNetError
from ..block import HybridBlock

if TYPE_CHECKING:
    from ...ndarray import NDArray
    from ..parameter import InitLike

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "GELU", "Swish"]

_ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")


class Activation(HybridBlock):
    """Apply an activation function elementwise.

    Parameters
    ----------
    activation : {'relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'}
        The block is named after it (``relu0_``).
    """

    def __init__(self, activation: str, **kwargs: Any) -> None:
        if activation not in _ACT_TYPES:
            raise MXNetError(
                f"unknown activation {activation!r}; expected one of {list(_ACT_TYPES)}"
            )
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply the activation."""
        return F.Activation(x, act_type=self._act_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """Leaky ReLU: ``x`` for positive inputs, ``alpha * x`` otherwise.

    Parameters
    ----------
    alpha : float
        Slope for negative inputs, at least 0.
    """

    def __init__(self, alpha: float, **kwargs: Any) -> None:
        if alpha < 0:
            raise MXNetError(f"Slope coefficient for LeakyReLU must be no less than 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply the leaky ReLU."""
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Parametric leaky ReLU with a learned slope ``alpha`` (one per channel, or one in all).

    Parameters
    ----------
    alpha_initializer : Initializer, default Constant(0.25)
    in_channels : int, default 1
    """

    def __init__(
        self, alpha_initializer: InitLike | None = None, in_channels: int = 1, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = initializer.Constant(0.25)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F: Any, x: NDArray, alpha: NDArray) -> NDArray:
        """Apply the parametric ReLU."""
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu")


class ELU(HybridBlock):
    """Exponential linear unit: ``x`` for positive inputs, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply the ELU."""
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit with the fixed SELU constants."""

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply the SELU."""
        return F.LeakyReLU(x, act_type="selu")


class GELU(HybridBlock):
    """Gaussian error linear unit: ``x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))``."""

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply the GELU."""
        return F.LeakyReLU(x, act_type="gelu")


class Swish(HybridBlock):
    """Swish: ``x * sigmoid(beta * x)``."""

    def __init__(self, beta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply swish."""
        return x * F.sigmoid(self._beta * x)
