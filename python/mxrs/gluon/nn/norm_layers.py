"""Per-sample normalisation and padding layers: InstanceNorm, GroupNorm, ReflectionPad2D.

InstanceNorm's parameters have one value per channel and, without ``in_channels``, get their
shape from the first batch; GroupNorm's have one value per group, so their shape is known when
the layer is made.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...base import MXNetError
from ..block import HybridBlock

if TYPE_CHECKING:
    from ...ndarray import NDArray
    from ..parameter import InitLike
    from ..parameter_dict import ParameterDict

__all__ = ["InstanceNorm", "GroupNorm", "ReflectionPad2D"]


def _kwargs_repr(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al., 2016): every channel of every sample is
    normalized over the spatial axes, ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Parameters
    ----------
    axis : int, default 1
        The channel axis.
    epsilon : float, default 1e-5
    center : bool, default True
        Learn the offset ``beta`` (otherwise it stays at its initial value).
    scale : bool, default False
        Learn the scale ``gamma`` (otherwise it stays at its initial value).
    beta_initializer, gamma_initializer : default 'zeros', 'ones'
    in_channels : int, default 0
        Number of channels; 0 infers it from the first input.

    Examples
    --------
    >>> layer = mx.gluon.nn.InstanceNorm()
    >>> layer.initialize()
    >>> layer(mx.nd.array([[[1, 2, 3]], [[4, 6, 8]]])).asnumpy().round(3)
    array([[[-1.225,  0.   ,  1.225]],
    <BLANKLINE>
           [[-1.225,  0.   ,  1.225]]], dtype=float32)
    """

    def __init__(
        self,
        axis: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = False,
        beta_initializer: InitLike = "zeros",
        gamma_initializer: InitLike = "ones",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma = self.params.get(
            "gamma",
            grad_req="write" if scale else "null",
            shape=(in_channels,),
            init=gamma_initializer,
            allow_deferred_init=True,
        )
        self.beta = self.params.get(
            "beta",
            grad_req="write" if center else "null",
            shape=(in_channels,),
            init=beta_initializer,
            allow_deferred_init=True,
        )

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set the number of channels from ``x.shape[axis]``."""
        for p in (self.gamma, self.beta):
            p.shape = (x.shape[self._axis],)

    def hybrid_forward(self, F: Any, x: NDArray, gamma: NDArray, beta: NDArray) -> NDArray:
        """Normalize every channel of every sample of ``x``."""
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, eps=self._epsilon)
        y = F.InstanceNorm(x.swapaxes(1, self._axis), gamma, beta, eps=self._epsilon)
        return y.swapaxes(1, self._axis)

    def __repr__(self) -> str:
        assert self.gamma.shape is not None  # given by the layer
        return (
            f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, "
            f"in_channels={self.gamma.shape[0]})"
        )


class GroupNorm(HybridBlock):
    """Group normalization (Wu and He, 2018): the channels of each sample are split into
    ``num_groups`` groups, each normalized over its channels and spatial axes.

    ``gamma`` and ``beta`` hold one value per group (shape ``(num_groups,)``, as in MXNet
    1.9.1).

    Parameters
    ----------
    num_groups : int, default 1
        Must divide the number of channels (axis 1) of the input.
    epsilon : float, default 1e-5
    center : bool, default True
        Learn the offset ``beta``.
    scale : bool, default True
        Learn the scale ``gamma``.
    beta_initializer, gamma_initializer : default 'zeros', 'ones'
    prefix : str, optional
    params : ParameterDict, optional
    """

    def __init__(
        self,
        num_groups: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        beta_initializer: InitLike = "zeros",
        gamma_initializer: InitLike = "ones",
        prefix: str | None = None,
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {
            "eps": epsilon,
            "num_groups": num_groups,
            "center": center,
            "scale": scale,
        }
        self._num_groups = num_groups
        self._epsilon = epsilon
        self.gamma = self.params.get(
            "gamma",
            grad_req="write" if scale else "null",
            shape=(num_groups,),
            init=gamma_initializer,
            allow_deferred_init=True,
        )
        self.beta = self.params.get(
            "beta",
            grad_req="write" if center else "null",
            shape=(num_groups,),
            init=beta_initializer,
            allow_deferred_init=True,
        )

    def hybrid_forward(self, F: Any, x: NDArray, gamma: NDArray, beta: NDArray) -> NDArray:
        """Normalize every group of channels of every sample of ``x``."""
        return F.GroupNorm(x, gamma, beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)})"


class ReflectionPad2D(HybridBlock):
    """Pad the two spatial axes of ``(N, C, H, W)`` input with its reflection about the border
    (the border value is not repeated).

    Parameters
    ----------
    padding : int or sequence of 8 ints, default 0
        An int pads every side of H and W by that much; a sequence is the ``pad_width`` of
        :func:`mxrs.nd.pad` (``(0, 0, 0, 0, top, bottom, left, right)``).

    Raises
    ------
    MXNetError
        When ``padding`` is a sequence whose length is not 8.
    """

    def __init__(self, padding: int | Sequence[int] = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        widths: tuple[int, ...]
        if isinstance(padding, numbers.Integral):
            p = int(padding)
            widths = (0, 0, 0, 0, p, p, p, p)
        else:
            widths = tuple(int(w) for w in padding)  # type: ignore[union-attr]
        if len(widths) != 8:
            raise MXNetError(
                f"ReflectionPad2D: padding must be an int or 8 values (before/after of each of "
                f"the 4 axes), got {len(widths)} values"
            )
        self._padding = widths

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Pad ``x`` by reflection."""
        return F.pad(x, mode="reflect", pad_width=self._padding)
