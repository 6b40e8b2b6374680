"""The initializers of every layer: constants, uniform and normal draws, orthogonal matrices,
Xavier and MSRA (PReLU) scaling, bilinear upsampling kernels."""

from __future__ import annotations

import math

import numpy as np

from .. import random
from ..base import MXNetError
from ..ndarray import NDArray
from .base import Initializer, alias, register

__all__ = [
    "Zero",
    "One",
    "Constant",
    "Uniform",
    "Normal",
    "Orthogonal",
    "Xavier",
    "MSRAPrelu",
    "Bilinear",
]


@register
@alias("zeros")
class Zero(Initializer):
    """Fill with zeros."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Fill with ones."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 1


@register
class Constant(Initializer):
    """Fill with ``value``: a scalar, or an array broadcastable to the parameter's shape.

    Parameters
    ----------
    value : float, array_like or NDArray
    """

    def __init__(self, value: float) -> None:
        super().__init__(
            value=value.tolist()
            if isinstance(value, np.ndarray)
            else value.asnumpy().tolist()
            if isinstance(value, NDArray)
            else value
        )
        self.value = value

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = self.value


@register
class Uniform(Initializer):
    """Draw uniformly from ``[-scale, scale]``.

    Parameters
    ----------
    scale : float, default 0.07
    """

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: str, arr: NDArray) -> None:
        random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Draw from the normal distribution with mean 0 and deviation ``sigma``.

    Parameters
    ----------
    sigma : float, default 0.01
    """

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: str, arr: NDArray) -> None:
        random.normal(0, self.sigma, out=arr)


@register
class Orthogonal(Initializer):
    """Fill with a scaled orthogonal matrix (Saxe et al., 2013) of a random draw's SVD.

    Parameters
    ----------
    scale : float, default 1.414
    rand_type : {'uniform', 'normal'}, default 'uniform'
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: str, arr: NDArray) -> None:
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise MXNetError(f"Orthogonal: unknown rand_type {self.rand_type!r}")
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res).reshape(arr.shape)


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization, scaled to keep activations' variance through layers.

    With ``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``,
    ``factor`` is their mean ('avg'), ``fan_in`` ('in') or ``fan_out`` ('out'), and
    ``scale = sqrt(magnitude / factor)``. 'uniform' draws from ``[-scale, scale]``, 'gaussian'
    from a normal distribution with deviation ``scale``.

    Parameters
    ----------
    rnd_type : {'uniform', 'gaussian'}, default 'uniform'
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    magnitude : float, default 3
    """

    def __init__(
        self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3
    ) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise MXNetError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D."
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise MXNetError(
                f"Incorrect factor type {self.factor_type!r}; expected 'avg', 'in' or 'out'"
            )
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            random.uniform(-scale, scale, out=arr)
        elif self.rnd_type == "gaussian":
            random.normal(0, scale, out=arr)
        else:
            raise MXNetError(
                f"Unknown random type {self.rnd_type!r}; expected 'uniform' or 'gaussian'"
            )


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for (P)ReLU networks: Gaussian Xavier with
    ``magnitude = 2 / (1 + slope**2)``.

    Parameters
    ----------
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    slope : float, default 0.25
        The initial negative slope of the PReLU units.
    """

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope**2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Fill an upsampling (deconvolution) kernel with bilinear interpolation weights: each
    ``(H, W)`` filter is the outer product of the 1-d tent ``1 - |i / f - c|`` over its rows and
    columns, with ``f = ceil(W / 2)`` and ``c = (2f - 1 - f % 2) / (2f)``."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise MXNetError(f"Bilinear: needs a kernel of at least 2 dimensions, got {shape}")
        h, w = shape[-2], shape[-1]
        f = math.ceil(w / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        cols = 1 - np.abs(np.arange(w) / f - c)
        rows = 1 - np.abs(np.arange(h) / f - c)
        arr[:] = np.broadcast_to(np.outer(rows, cols), shape).astype(arr.dtype)
