"""MobileNet (Howard et al., 2017) and MobileNetV2 (Sandler et al., 2018) with width
multipliers 1.0, 0.75, 0.5 and 0.25, as MXNet 1.9.1's zoo builds them.

Every convolution is bias-free and followed by a BatchNorm (and ReLU, or ReLU6 in V2);
depthwise convolutions are grouped convolutions with one group per channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....context import Context, cpu
from ... import nn
from ...block import HybridBlock
from ..model_store import get_model_file

if TYPE_CHECKING:
    from ....ndarray import NDArray

__all__ = [
    "MobileNet",
    "MobileNetV2",
    "get_mobilenet",
    "get_mobilenet_v2",
    "mobilenet1_0",
    "mobilenet0_75",
    "mobilenet0_5",
    "mobilenet0_25",
    "mobilenet_v2_1_0",
    "mobilenet_v2_0_75",
    "mobilenet_v2_0_5",
    "mobilenet_v2_0_25",
]

_CPU = cpu()


class RELU6(HybridBlock):
    """ReLU6: ``min(max(x, 0), 6)``, the activation of MobileNetV2."""

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Clip ``x`` to ``[0, 6]``."""
        return F.clip(x, 0, 6)


def _add_conv(
    out: nn.HybridSequential,
    channels: int = 1,
    kernel: int = 1,
    stride: int = 1,
    pad: int = 0,
    num_group: int = 1,
    active: bool = True,
    relu6: bool = False,
) -> None:
    """Append a bias-free convolution, a BatchNorm and (when ``active``) ReLU or ReLU6."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(
    out: nn.HybridSequential, dw_channels: int, channels: int, stride: int, relu6: bool = False
) -> None:
    """Append a depthwise-separable unit: a 3x3 depthwise convolution, then a 1x1 one."""
    _add_conv(
        out,
        channels=dw_channels,
        kernel=3,
        stride=stride,
        pad=1,
        num_group=dw_channels,
        relu6=relu6,
    )
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """The inverted residual unit of MobileNetV2: a 1x1 expansion by ``t``, a 3x3 depthwise
    convolution and a linear 1x1 projection, plus the input when the shape is kept.

    Parameters
    ----------
    in_channels : int
        Input channels.
    channels : int
        Output channels.
    t : int
        Expansion factor.
    stride : int
        Stride of the depthwise convolution.
    """

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            wide = in_channels * t
            _add_conv(self.out, wide, relu6=True)
            _add_conv(self.out, wide, kernel=3, stride=stride, pad=1, num_group=wide, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Run the unit (and add ``x`` when the shape is kept)."""
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


class MobileNet(HybridBlock):
    """MobileNet: a strided 3x3 convolution, 13 depthwise-separable units, global average
    pooling and a Dense output layer.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier: every layer has ``int(channels * multiplier)`` channels.
    classes : int, default 1000
        Outputs of the final Dense layer.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dw_channels = [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]
        channels = [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
                for dwc, c, s in zip(dw_channels, channels, strides, strict=True):
                    _add_conv_dw(
                        self.features,
                        dw_channels=int(dwc * multiplier),
                        channels=int(c * multiplier),
                        stride=s,
                    )
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a strided 3x3 convolution, 17 :class:`LinearBottleneck` units, a 1x1
    convolution to 1280 channels, global average pooling and a 1x1 convolution as the output
    layer (``output_pred_weight``).

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier: every layer has ``int(channels * multiplier)`` channels, except the
        last 1x1 convolution's 1280, which only grows (for multipliers above 1).
    classes : int, default 1000
        Output channels of the final convolution.
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        in_group = [32, 16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3
        out_group = [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320]
        ts = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(
                    self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True
                )
                for in_c, c, t, s in zip(in_group, out_group, ts, strides, strict=True):
                    self.features.add(
                        LinearBottleneck(
                            in_channels=int(in_c * multiplier),
                            channels=int(c * multiplier),
                            t=t,
                            stride=s,
                        )
                    )
                last = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


def _suffix(multiplier: float) -> str:
    """The weights' file suffix MXNet's zoo uses: '1.0', '0.75', '0.5', '0.25'."""
    s = f"{multiplier:.2f}"
    return s[:-1] if s in ("1.00", "0.50") else s


def get_mobilenet(
    multiplier: float,
    pretrained: bool = False,
    ctx: Context = _CPU,
    root: str | None = None,
    **kwargs: Any,
) -> MobileNet:
    """Build MobileNet with width ``multiplier``.

    Parameters
    ----------
    multiplier : float
        Width multiplier (1.0, 0.75, 0.5 and 0.25 in the zoo).
    pretrained : bool, default False
        mxrs has no pretrained weights: True raises :class:`~mxrs.base.MXNetError`.
    ctx : Context, default cpu()
        Kept for MXNet's signature.
    root : str, optional
        Kept for MXNet's signature.
    **kwargs
        ``classes``, ``prefix``, ``params``: passed to :class:`MobileNet`.
    """
    if pretrained:
        get_model_file(f"mobilenet{_suffix(multiplier)}", root=root)
    return MobileNet(multiplier, **kwargs)


def get_mobilenet_v2(
    multiplier: float,
    pretrained: bool = False,
    ctx: Context = _CPU,
    root: str | None = None,
    **kwargs: Any,
) -> MobileNetV2:
    """Build MobileNetV2 with width ``multiplier``; parameters as :func:`get_mobilenet`."""
    if pretrained:
        get_model_file(f"mobilenetv2_{_suffix(multiplier)}", root=root)
    return MobileNetV2(multiplier, **kwargs)


def mobilenet1_0(**kwargs: Any) -> MobileNet:
    """MobileNet, width 1.0; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet(1.0, **kwargs)


def mobilenet0_75(**kwargs: Any) -> MobileNet:
    """MobileNet, width 0.75; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.75, **kwargs)


def mobilenet0_5(**kwargs: Any) -> MobileNet:
    """MobileNet, width 0.5; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.5, **kwargs)


def mobilenet0_25(**kwargs: Any) -> MobileNet:
    """MobileNet, width 0.25; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_1_0(**kwargs: Any) -> MobileNetV2:
    """MobileNetV2, width 1.0; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet_v2_0_75(**kwargs: Any) -> MobileNetV2:
    """MobileNetV2, width 0.75; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet_v2_0_5(**kwargs: Any) -> MobileNetV2:
    """MobileNetV2, width 0.5; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet_v2_0_25(**kwargs: Any) -> MobileNetV2:
    """MobileNetV2, width 0.25; keyword arguments as :func:`get_mobilenet`."""
    return get_mobilenet_v2(0.25, **kwargs)
