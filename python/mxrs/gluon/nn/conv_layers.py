"""Convolution layers (1-, 2- and 3-D) and their transposes.

A convolution's weight is ``(channels, in_channels // groups, *kernel_size)``; with
``in_channels=0`` the input channels are inferred from the first batch. Convolution layers refuse
channel-last layouts, as MXNet's CPU convolution cannot run them.

The transposed layers run ``nd.Deconvolution``; their weight is ``(in_channels, channels //
groups, *kernel_size)`` and ``output_padding`` is the operator's ``adj``. Output size per
spatial axis: ``(size - 1)*strides - 2*padding + dilation*(kernel_size - 1) + 1 +
output_padding``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...base import MXNetError
from ..block import HybridBlock
from ..parameter import Parameter
from .activations import Activation

if TYPE_CHECKING:
    from ...ndarray import NDArray
    from ..parameter import InitLike
from ._geometry import _CONV_LAYOUTS, _check_layout, _tuple

__all__ = [
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "Conv1DTranspose",
    "Conv2DTranspose",
    "Conv3DTranspose",
]


def _conv_repr(
    block: HybridBlock,
    shape: tuple[int, ...],
    k: dict[str, Any],
    no_bias: bool,
    act: Activation | None,
) -> str:
    """``Name(in -> out, kernel_size=..., stride=...)`` of a convolution layer: from its
    weight's ``shape`` (input channels 0: not known yet) and its operator arguments ``k``,
    the padding, dilation, output padding and groups where not the defaults."""
    n = len(k["kernel"])
    s = (
        f"{type(block).__name__}({shape[1] if shape[1] else None} -> "
        f"{shape[0]}, kernel_size={k['kernel']}, stride={k['stride']}"
    )
    if k["pad"] != (0,) * n:
        s += f", padding={k['pad']}"
    if k["dilate"] != (1,) * n:
        s += f", dilation={k['dilate']}"
    if k.get("adj", (0,) * n) != (0,) * n:
        s += f", output_padding={k['adj']}"
    if k["num_group"] != 1:
        s += f", groups={k['num_group']}"
    if no_bias:
        s += ", bias=False"
    if act:
        s += f", {act}"
    return s + ")"


class _Conv(HybridBlock):
    """N-D convolution (the base of Conv1D/2D/3D and, with ``op_name='Deconvolution'``, of
    the transposed convolutions). ``weight_in`` puts the input channels first in the weight."""

    _op_name = "Convolution"
    _weight_in = False

    def __init__(
        self,
        channels: int,
        kernel_size: tuple[int, ...],
        strides: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
        layout: str,
        in_channels: int = 0,
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_layout(type(self).__name__, layout, _CONV_LAYOUTS[len(kernel_size)])
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._kwargs: dict[str, Any] = {
                "kernel": kernel_size,
                "stride": strides,
                "dilate": dilation,
                "pad": padding,
                "num_filter": channels,
                "num_group": groups,
                "no_bias": not use_bias,
                "layout": layout,
            }
            self.weight = self.params.get(
                "weight",
                shape=self._wshape(in_channels),
                init=weight_initializer,
                allow_deferred_init=True,
            )
            self.bias: Parameter | None
            if use_bias:
                self.bias = self.params.get(
                    "bias", shape=(channels,), init=bias_initializer, allow_deferred_init=True
                )
            else:
                self.bias = None
            self.act: Activation | None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def _alias(self) -> str:
        return "conv"

    def _wshape(self, in_channels: int) -> tuple[int, ...]:
        """The weight's shape for ``in_channels`` inputs (0: not known yet), as MXNet's."""
        groups, kernel = self._kwargs["num_group"], self._kwargs["kernel"]
        if self._weight_in:
            dims = (in_channels, self._channels // groups)
        else:
            dims = (self._channels, in_channels // groups)
        return dims + kernel

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set the weight's input channels from the input's channel axis."""
        groups = self._kwargs["num_group"]
        if x.ndim != len(self._kwargs["kernel"]) + 2:
            raise MXNetError(
                f"{type(self).__name__} expects {len(self._kwargs['kernel']) + 2}-D "
                f"input, got shape {x.shape}"
            )
        c = x.shape[1]
        if c % groups:
            raise MXNetError(
                f"{type(self).__name__}: {c} input channels are not divisible by groups={groups}"
            )
        self.weight.shape = self._wshape(c)

    def hybrid_forward(
        self, F: Any, x: NDArray, weight: NDArray, bias: NDArray | None = None
    ) -> NDArray:
        """Convolve ``x`` with ``weight``, add ``bias``, apply the activation."""
        out = getattr(F, self._op_name)(x, weight, bias, **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self) -> str:
        shape = self.weight.shape
        assert shape is not None  # layers always give their weight a shape (0: not known yet)
        return _conv_repr(self, shape, self._kwargs, self.bias is None, self.act)


class Conv1D(_Conv):
    """1-D convolution over ``(N, C, W)`` data.

    Parameters as :class:`Conv2D`, with one-element sizes.
    """

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        layout: str = "NCW",
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            channels,
            _tuple(kernel_size, 1, "kernel_size"),
            _tuple(strides, 1, "strides"),
            _tuple(padding, 1, "padding"),
            _tuple(dilation, 1, "dilation"),
            groups,
            layout,
            in_channels,
            activation,
            use_bias,
            weight_initializer,
            bias_initializer,
            **kwargs,
        )


class Conv2D(_Conv):
    """2-D convolution over ``(N, C, H, W)`` data.

    Output size per spatial axis: ``(size + 2*padding - dilation*(kernel-1) - 1) // stride + 1``.

    Parameters
    ----------
    channels : int
        Number of output channels.
    kernel_size : int or tuple of 2 ints
    strides, padding, dilation : int or tuple of 2 ints, defaults 1, 0, 1
    groups : int, default 1
        Split input and output channels into groups convolved separately.
    layout : str, default 'NCHW'
    activation : str, optional
    use_bias : bool, default True
    weight_initializer : Initializer or str, optional
    bias_initializer : Initializer or str, default 'zeros'
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.
    """

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        layout: str = "NCHW",
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            channels,
            _tuple(kernel_size, 2, "kernel_size"),
            _tuple(strides, 2, "strides"),
            _tuple(padding, 2, "padding"),
            _tuple(dilation, 2, "dilation"),
            groups,
            layout,
            in_channels,
            activation,
            use_bias,
            weight_initializer,
            bias_initializer,
            **kwargs,
        )


class Conv3D(_Conv):
    """3-D convolution over ``(N, C, D, H, W)`` data; parameters as :class:`Conv2D`, with
    three-element sizes and layout ``'NCDHW'``."""

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = (1, 1, 1),
        padding: int | Sequence[int] = (0, 0, 0),
        dilation: int | Sequence[int] = (1, 1, 1),
        groups: int = 1,
        layout: str = "NCDHW",
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            channels,
            _tuple(kernel_size, 3, "kernel_size"),
            _tuple(strides, 3, "strides"),
            _tuple(padding, 3, "padding"),
            _tuple(dilation, 3, "dilation"),
            groups,
            layout,
            in_channels,
            activation,
            use_bias,
            weight_initializer,
            bias_initializer,
            **kwargs,
        )


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
