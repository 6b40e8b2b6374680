"""``UpSampling`` of ``(N, C, H, W)`` images: nearest neighbour or bilinear.

Nearest upsampling repeats every pixel ``scale`` times along H and W. Several inputs are
upsampled to the first one's size times ``scale`` (each by its own whole factor) and then
concatenated along the channels or summed. Bilinear upsampling is MXNet's: a grouped transposed
convolution by the given weight (one ``(1, k, k)`` filter per channel, ``k = 2 scale - scale %
2``, stride ``scale``, padding ``ceil((scale - 1) / 2)``).
"""

from __future__ import annotations

import math
from typing import Any

from ..base import MXNetError
from . import shape
from .core.array import ArrayT
from .deconv import Deconvolution
from .elementwise import add_n

__all__ = ["UpSampling"]


def _nearest(x: ArrayT, out_hw: tuple[int, int], i: int) -> ArrayT:
    h, w = x.shape[2], x.shape[3]
    if out_hw[0] % h or out_hw[1] % w:
        raise MXNetError(
            f"UpSampling: input {i} of size {h}x{w} does not divide the output size "
            f"{out_hw[0]}x{out_hw[1]}"
        )
    sh, sw = out_hw[0] // h, out_hw[1] // w
    if sh > 1:
        x = shape.repeat(x, sh, axis=2)
    if sw > 1:
        x = shape.repeat(x, sw, axis=3)
    return x


def UpSampling(
    *data: ArrayT,
    scale: int,
    sample_type: str,
    num_filter: int = 0,
    multi_input_mode: str = "concat",
    num_args: int | None = None,
    workspace: int = 512,
    **kwargs: Any,
) -> ArrayT:
    """Upsample 4-d ``(N, C, H, W)`` arrays by the whole factor ``scale``.

    Parameters
    ----------
    *data : NDArray
        The images; for ``sample_type='bilinear'``, one image and its weight of shape
        ``(num_filter, 1, k, k)``.
    scale : int
    sample_type : {'nearest', 'bilinear'}
    num_filter : int, default 0
        The number of channels, for 'bilinear'.
    multi_input_mode : {'concat', 'sum'}, default 'concat'
        How several nearest-upsampled inputs are joined.
    num_args : int, optional
        The number of inputs, checked against ``data`` when given.

    Examples
    --------
    >>> mx.nd.UpSampling(mx.nd.ones((1, 1, 2, 2)), scale=2, sample_type='nearest').shape
    (1, 1, 4, 4)
    """
    if not data:
        raise MXNetError("UpSampling needs at least one input")
    if num_args is not None and int(num_args) != len(data):
        raise MXNetError(f"UpSampling: num_args={num_args} but {len(data)} inputs were given")
    s = int(scale)
    if s < 1:
        raise MXNetError(f"UpSampling: scale must be a positive integer, not {scale!r}")
    if sample_type == "bilinear":
        if len(data) != 2:
            raise MXNetError("UpSampling: 'bilinear' takes the data and a weight, two inputs")
        x, weight = data
        k, p = 2 * s - s % 2, int(math.ceil((s - 1) / 2.0))
        nf = int(num_filter) or x.shape[1]
        return Deconvolution(
            x,
            weight,
            kernel=(k, k),
            stride=(s, s),
            pad=(p, p),
            num_filter=nf,
            num_group=nf,
            no_bias=True,
        )
    if sample_type != "nearest":
        raise MXNetError(
            f"UpSampling: unknown sample_type {sample_type!r}; expected 'nearest' or 'bilinear'"
        )
    if multi_input_mode not in ("concat", "sum"):
        raise MXNetError(f"UpSampling: unknown multi_input_mode {multi_input_mode!r}")
    for i, x in enumerate(data):
        if x.ndim != 4:
            raise MXNetError(f"UpSampling: input {i} must be 4-d (N, C, H, W), not {x.ndim}-d")
    out_hw = (data[0].shape[2] * s, data[0].shape[3] * s)
    ups = [_nearest(x, out_hw, i) for i, x in enumerate(data)]
    if len(ups) == 1:
        return ups[0]
    if multi_input_mode == "sum":
        return add_n(*ups)
    return shape.concat(*ups, dim=1)
