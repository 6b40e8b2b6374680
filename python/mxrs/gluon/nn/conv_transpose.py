"""Transposed convolution layers (``Conv1DTranspose``, ``Conv2DTranspose``, ``Conv3DTranspose``).

They run ``nd.Deconvolution``; the weight is ``(in_channels, channels // groups, *kernel_size)``
and ``output_padding`` is the operator's ``adj``. Output size per spatial axis:
``(size - 1)*strides - 2*padding + dilation*(kernel_size - 1) + 1 + output_padding``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .conv_layers import _Conv, _tuple

if TYPE_CHECKING:
    from ..parameter import InitLike

__all__ = ["Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"]


class _ConvTranspose(_Conv):
    """N-D transposed convolution (the base of Conv1D/2D/3DTranspose)."""

    _op_name = "Deconvolution"
    _weight_in = True
    _dims = 0
    _layout = ""

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        output_padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        layout: str | None = None,
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        n = self._dims
        super().__init__(
            channels,
            _tuple(kernel_size, n, "kernel_size"),
            _tuple(strides, n, "strides"),
            _tuple(padding, n, "padding"),
            _tuple(dilation, n, "dilation"),
            groups,
            layout or self._layout,
            in_channels,
            activation,
            use_bias,
            weight_initializer,
            bias_initializer,
            **kwargs,
        )
        self._kwargs["adj"] = _tuple(output_padding, n, "output_padding")

    def _alias(self) -> str:
        return "conv"


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution over ``(N, C, W)`` data (layout ``'NCW'`` only).

    Parameters
    ----------
    channels : int
        Number of output channels.
    kernel_size : int or tuple of 1 int
    strides, padding, output_padding, dilation : int or tuple of 1 int, defaults 1, 0, 0, 1
        ``output_padding`` must be smaller than ``strides``.
    groups : int, default 1
    layout : str, default 'NCW'
    activation : str, optional
    use_bias : bool, default True
    weight_initializer : Initializer or str, optional
    bias_initializer : Initializer or str, default 'zeros'
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.
    """

    _dims = 1
    _layout = "NCW"


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution over ``(N, C, H, W)`` data; parameters as
    :class:`Conv1DTranspose`, with two-element sizes and layout ``'NCHW'`` only."""

    _dims = 2
    _layout = "NCHW"


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution over ``(N, C, D, H, W)`` data; parameters as
    :class:`Conv1DTranspose`, with three-element sizes and layout ``'NCDHW'`` only."""

    _dims = 3
    _layout = "NCDHW"
