"""Convolution and pooling layers (1-, 2- and 3-D).

A convolution's weight is ``(channels, in_channels // groups, *kernel_size)``; with
``in_channels=0`` the input channels are inferred from the first batch. Pooling strides default
to the window size, as in MXNet's Gluon layers. Pooling layers take channel-last layouts
(``NWC``, ``NHWC``, ``NDHWC``) too; convolution layers refuse them, as MXNet's CPU convolution
cannot run them.
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

__all__ = [
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "MaxPool1D",
    "MaxPool2D",
    "AvgPool1D",
    "AvgPool2D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
]


def _tuple(value: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise MXNetError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


#: Layouts the layers accept, by number of spatial dimensions (channels-first one first).
_CONV_LAYOUTS = {1: ("NCW",), 2: ("NCHW",), 3: ("NCDHW",)}
_POOL_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _check_layout(block: str, layout: str, allowed: tuple[str, ...]) -> None:
    if layout not in allowed:
        why = ""
        if layout in ("NHWC", "NDHWC") and "NHWC" not in allowed and "NDHWC" not in allowed:
            why = " (channel-last convolution runs only on GPU in MXNet 1.9.1)"
        names = " and ".join(allowed)
        raise MXNetError(f"{block} supports layout {names}, not {layout!r}{why}")


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
        k = self._kwargs
        n = len(k["kernel"])
        shape = self.weight.shape
        assert shape is not None  # layers always give their weight a shape (0: not known yet)
        s = (
            f"{type(self).__name__}({shape[1] if shape[1] else None} -> "
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
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        return s + ")"


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


class _Pooling(HybridBlock):
    """Pooling over channels-first data (the base of the pooling layers)."""

    def __init__(
        self,
        pool_size: tuple[int, ...],
        strides: int | Sequence[int] | None,
        padding: int | Sequence[int],
        ceil_mode: bool,
        global_pool: bool,
        pool_type: str,
        layout: str,
        count_include_pad: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        n = len(pool_size)
        _check_layout(type(self).__name__, layout, _POOL_LAYOUTS[n])
        if strides is None:
            strides = pool_size
        self._kwargs: dict[str, Any] = {
            "kernel": pool_size,
            "stride": _tuple(strides, n, "strides"),
            "pad": _tuple(padding, n, "padding"),
            "global_pool": global_pool,
            "pool_type": pool_type,
            "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid",
        }
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Pool ``x``."""
        return F.Pooling(x, **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return (
            f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, "
            f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
            f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
            f"layout={k['layout']})"
        )


class MaxPool1D(_Pooling):
    """1-D max pooling over ``(N, C, W)`` data; parameters as :class:`MaxPool2D`."""

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCW",
        ceil_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 1, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "max",
            layout,
            **kwargs,
        )


class MaxPool2D(_Pooling):
    """2-D max pooling over ``(N, C, H, W)`` data.

    Parameters
    ----------
    pool_size : int or tuple of 2 ints, default (2, 2)
    strides : int or tuple of 2 ints, optional
        Defaults to ``pool_size``.
    padding : int or tuple of 2 ints, default 0
    layout : str, default 'NCHW'
    ceil_mode : bool, default False
        Round the output size up ('full' convention) instead of down.
    """

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCHW",
        ceil_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 2, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "max",
            layout,
            **kwargs,
        )


class AvgPool1D(_Pooling):
    """1-D average pooling over ``(N, C, W)`` data; parameters as :class:`AvgPool2D`."""

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCW",
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 1, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "avg",
            layout,
            count_include_pad,
            **kwargs,
        )


class AvgPool2D(_Pooling):
    """2-D average pooling over ``(N, C, H, W)`` data.

    Parameters as :class:`MaxPool2D`, plus ``count_include_pad`` (default True): whether padded
    positions count in each window's divisor.
    """

    def __init__(
        self,
        pool_size: int | Sequence[int] = (2, 2),
        strides: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        layout: str = "NCHW",
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            _tuple(pool_size, 2, "pool_size"),
            strides,
            padding,
            ceil_mode,
            False,
            "avg",
            layout,
            count_include_pad,
            **kwargs,
        )


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        super().__init__((1,), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over each whole feature map: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        super().__init__((1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: ``(N, C, W)`` -> ``(N, C, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any) -> None:
        super().__init__((1,), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over each whole feature map: ``(N, C, H, W)`` -> ``(N, C, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any) -> None:
        super().__init__((1, 1), None, 0, True, True, "avg", layout, **kwargs)
