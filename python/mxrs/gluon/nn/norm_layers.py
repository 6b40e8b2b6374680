"""Normalisation and padding layers: BatchNorm (and BatchNormReLU), LayerNorm, InstanceNorm,
GroupNorm, ReflectionPad2D.

InstanceNorm's parameters have one value per channel and, without ``in_channels``, get their
shape from the first batch; GroupNorm's have one value per group, so their shape is known when
the layer is made.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from ..block import HybridBlock

if TYPE_CHECKING:
    from ..._typing import DTypeLike
    from ...ndarray import NDArray
    from ..parameter import InitLike, Parameter
    from ..parameter_dict import ParameterDict

__all__ = [
    "BatchNorm",
    "BatchNormReLU",
    "LayerNorm",
    "InstanceNorm",
    "GroupNorm",
    "ReflectionPad2D",
]


def _kwargs_repr(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _scale_and_shift(
    params: ParameterDict,
    size: int,
    center: bool,
    scale: bool,
    beta_initializer: InitLike,
    gamma_initializer: InitLike,
    fixed: bool = False,
) -> tuple[Parameter, Parameter]:
    """A normalization layer's learned scale ``gamma`` and shift ``beta`` of ``size`` entries
    (0: known at the first batch), trained only when ``scale`` / ``center``; with ``fixed`` (as
    MXNet's BatchNorm) an untrained one can never be made trainable."""

    def one(name: str, trained: bool, init: InitLike) -> Parameter:
        extra = {"differentiable": trained} if fixed else {}
        return params.get(
            name,
            grad_req="write" if trained else "null",
            shape=(size,),
            init=init,
            allow_deferred_init=True,
            **extra,
        )

    return one("gamma", scale, gamma_initializer), one("beta", center, beta_initializer)


class BatchNorm(HybridBlock):
    """Batch normalization (Ioffe and Szegedy, 2015) over every axis but ``axis``.

    In training mode (inside ``autograd.record()``) it normalizes with the batch statistics, and
    the backward pass updates ``running_mean``/``running_var`` as
    ``momentum * running + (1 - momentum) * batch``, as MXNet 1.9.1 does (a forward that is not
    differentiated leaves them as they are); in inference mode, or with ``use_global_stats``, it
    uses the running statistics. They have ``grad_req='null'``: a Trainer never updates them.

    Parameters
    ----------
    axis : int, default 1
        The channel axis.
    momentum : float, default 0.9
    epsilon : float, default 1e-5
    center : bool, default True
        Learn the offset ``beta`` (otherwise it stays 0).
    scale : bool, default True
        Learn the scale ``gamma`` (otherwise it is fixed to 1).
    use_global_stats : bool, default False
    beta_initializer, gamma_initializer : default 'zeros', 'ones'
    running_mean_initializer, running_variance_initializer : default 'zeros', 'ones'
    in_channels : int, default 0
        Number of channels; 0 infers it from the first input.
    """

    def __init__(
        self,
        axis: int = 1,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        use_global_stats: bool = False,
        beta_initializer: InitLike = "zeros",
        gamma_initializer: InitLike = "ones",
        running_mean_initializer: InitLike = "zeros",
        running_variance_initializer: InitLike = "ones",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs: dict[str, Any] = {
            "axis": axis,
            "eps": epsilon,
            "momentum": momentum,
            "fix_gamma": not scale,
            "use_global_stats": use_global_stats,
        }
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma, self.beta = _scale_and_shift(
            self.params, in_channels, center, scale, beta_initializer, gamma_initializer, fixed=True
        )
        self.running_mean = self.params.get(
            "running_mean",
            grad_req="null",
            shape=(in_channels,),
            init=running_mean_initializer,
            allow_deferred_init=True,
            differentiable=False,
        )
        self.running_var = self.params.get(
            "running_var",
            grad_req="null",
            shape=(in_channels,),
            init=running_variance_initializer,
            allow_deferred_init=True,
            differentiable=False,
        )

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set the number of channels from ``x.shape[axis]``."""
        channels = x.shape[self._kwargs["axis"]]
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p.shape = (channels,)

    def cast(self, dtype: DTypeLike) -> None:
        """Cast the parameters (float16 is kept as float32, as MXNet does)."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    #: whether a ReLU follows the normalization in this layer (BatchNormReLU)
    _fuse_relu = False

    def hybrid_forward(
        self,
        F: Any,
        x: NDArray,
        gamma: NDArray,
        beta: NDArray,
        running_mean: NDArray,
        running_var: NDArray,
        relu: bool = False,
        residual: NDArray | None = None,
    ) -> NDArray:
        """Normalize ``x`` (and update the running statistics in training mode); with ``relu``
        (a hybridized HybridSequential passes it when an ``Activation('relu')`` follows), or in
        a BatchNormReLU, apply a ReLU in the same operator; with ``residual`` (a hybridized
        residual unit of the model zoo passes it), ``relu(normalized + residual)`` in one
        operator where it can be (the residual of ``x``'s shape and dtype, axis 1)."""
        if residual is not None:
            fits = residual.shape == x.shape and residual.dtype == x.dtype
            if F is nd and fits and self._kwargs["axis"] == 1 and not self._fuse_relu:
                return nd.normalization._batch_norm_add_relu(
                    x, gamma, beta, running_mean, running_var, residual, **self._kwargs
                )
            y = F.BatchNorm(x, gamma, beta, running_mean, running_var, **self._kwargs)
            if self._fuse_relu:
                y = F.Activation(y, act_type="relu")
            return F.Activation(residual + y, act_type="relu")
        if not (relu or self._fuse_relu):
            return F.BatchNorm(x, gamma, beta, running_mean, running_var, **self._kwargs)
        if F is nd:
            return F.contrib.BatchNormWithReLU(
                x, gamma, beta, running_mean, running_var, **self._kwargs
            )
        # a graph keeps the two operators MXNet's own graphs are made of
        y = F.BatchNorm(x, gamma, beta, running_mean, running_var, **self._kwargs)
        return F.Activation(y, act_type="relu")

    def __repr__(self) -> str:
        assert self.gamma.shape is not None  # given by the layer
        in_channels = self.gamma.shape[0]
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({content}, in_channels={in_channels or None})"


class BatchNormReLU(BatchNorm):
    """Batch normalization followed by a ReLU, as one operator
    (``mx.nd.contrib.BatchNormWithReLU``); the parameters are :class:`BatchNorm`'s."""

    _fuse_relu = True


class LayerNorm(HybridBlock):
    """Layer normalization along ``axis``: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Parameters
    ----------
    axis : int, default -1
    epsilon : float, default 1e-5
    center, scale : bool, default True
        Learn ``beta`` / ``gamma``.
    beta_initializer, gamma_initializer : default 'zeros', 'ones'
    in_channels : int, default 0
        Size of ``axis``; 0 infers it from the first input.
    """

    def __init__(
        self,
        axis: int = -1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        beta_initializer: InitLike = "zeros",
        gamma_initializer: InitLike = "ones",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_and_shift(
            self.params, in_channels, center, scale, beta_initializer, gamma_initializer
        )

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set the normalized size from ``x.shape[axis]``."""
        for p in (self.gamma, self.beta):
            p.shape = (x.shape[self._axis],)

    def hybrid_forward(self, F: Any, x: NDArray, gamma: NDArray, beta: NDArray) -> NDArray:
        """Normalize ``x`` along the axis."""
        return F.LayerNorm(x, gamma, beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self) -> str:
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        assert self.gamma.shape is not None  # given by the layer
        return f"{type(self).__name__}({content}, in_channels={self.gamma.shape[0]})"


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
        self.gamma, self.beta = _scale_and_shift(
            self.params, in_channels, center, scale, beta_initializer, gamma_initializer
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
        self.gamma, self.beta = _scale_and_shift(
            self.params, num_groups, center, scale, beta_initializer, gamma_initializer
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
