"""ResNet V1 (He et al., 2015) and V2 (pre-activation, He et al., 2016), as MXNet 1.9.1's zoo.

The blocks, their order and their names are MXNet 1.9.1's, so parameters come out as
``resnetv10_conv0_weight``, ``resnetv10_stage1_batchnorm0_running_mean``, ... A residual unit
takes the prefix ``''`` and creates its layers in the scope of its stage, so all convolutions of
a stage share one counter (``stage1_conv0``, ``stage1_conv1``, ...). Quirks kept for the same
names and shapes: BottleneckV1's two 1x1 body convolutions have a bias, ResNetV1 has no Flatten
(its Dense flattens) and ResNetV2 starts with a BatchNorm that has neither scale nor offset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .... import ndarray as nd
from ....base import MXNetError
from ....context import Context, cpu
from ... import nn
from ...block import HybridBlock
from ...nn._fusion import residual_end
from ..model_store import get_model_file

if TYPE_CHECKING:
    from ....ndarray import NDArray

__all__ = [
    "ResNetV1",
    "ResNetV2",
    "BasicBlockV1",
    "BasicBlockV2",
    "BottleneckV1",
    "BottleneckV2",
    "resnet18_v1",
    "resnet34_v1",
    "resnet50_v1",
    "resnet101_v1",
    "resnet152_v1",
    "resnet18_v2",
    "resnet34_v2",
    "resnet50_v2",
    "resnet101_v2",
    "resnet152_v2",
    "get_resnet",
]

_CPU = cpu()


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    """A 3x3 convolution, padding 1, without bias."""
    return nn.Conv2D(
        channels, 3, strides=stride, padding=1, use_bias=False, in_channels=in_channels
    )


def _residual_relu(F: Any, a: Any, b: Any) -> Any:
    """``relu(a + b)``, the end of a V1 unit: on NDArrays one pass over the data (mxrs's fused
    operator, the same numbers); in a Symbol graph the two nodes MXNet's zoo writes, which an
    executor fuses in its turn (:mod:`mxrs.symbol.fusion`)."""
    if F is nd and a.shape == b.shape and a.dtype == b.dtype:
        return nd.unary._add_relu(a, b)
    return F.Activation(a + b, act_type="relu")


def _unit_end(
    unit: HybridBlock, F: Any, body: HybridBlock, x: Any, residual: Any, body_first: bool
) -> Any:
    """``relu(body(x) + residual)``, a V1 unit's end, the addends in MXNet's zoo's order
    (``body_first`` or not) in a graph; hybridized, on NDArrays, the sum and the ReLU run in the
    pass of the body's last BatchNorm (:func:`mxrs.gluon.nn._fusion.residual_end`, the same
    numbers)."""
    if unit._active and F is nd:
        y = residual_end(body, x, residual)
        if y is not None:
            return y
    y = body(x)
    return _residual_relu(F, y, residual) if body_first else _residual_relu(F, residual, y)


def _shortcut(channels: int, stride: int, in_channels: int, with_bn: bool) -> HybridBlock:
    """The projection of a unit whose shape changes: a strided 1x1 convolution (and BatchNorm)."""
    conv = nn.Conv2D(channels, 1, strides=stride, use_bias=False, in_channels=in_channels)
    if not with_bn:
        return conv
    seq = nn.HybridSequential(prefix="")
    seq.add(conv, nn.BatchNorm())
    return seq


class BasicBlockV1(HybridBlock):
    """The two-convolution residual unit of ResNet-18/34 V1:
    ``relu(x + bn(conv(relu(bn(conv(x))))))``.

    Parameters
    ----------
    channels : int
        Output channels.
    stride : int
        Stride of the first convolution (and of the shortcut's projection).
    downsample : bool, default False
        Project the shortcut with a 1x1 convolution and BatchNorm (when the shape changes).
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.
    """

    def __init__(
        self,
        channels: int,
        stride: int,
        downsample: bool = False,
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(
            _conv3x3(channels, stride, in_channels),
            nn.BatchNorm(),
            nn.Activation("relu"),
            _conv3x3(channels, 1, channels),
            nn.BatchNorm(),
        )
        self.downsample = (
            _shortcut(channels, stride, in_channels, with_bn=True) if downsample else None
        )

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Add the (projected) input to the body's output and apply ReLU."""
        residual = x if self.downsample is None else self.downsample(x)
        return _unit_end(self, F, self.body, x, residual, body_first=False)


class BottleneckV1(HybridBlock):
    """The 1x1-3x3-1x1 residual unit of ResNet-50/101/152 V1, ``channels // 4`` wide inside.

    Parameters as :class:`BasicBlockV1`; the stride is on the first 1x1 convolution.
    """

    def __init__(
        self,
        channels: int,
        stride: int,
        downsample: bool = False,
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        width = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(
            nn.Conv2D(width, 1, strides=stride),
            nn.BatchNorm(),
            nn.Activation("relu"),
            _conv3x3(width, 1, width),
            nn.BatchNorm(),
            nn.Activation("relu"),
            nn.Conv2D(channels, 1, strides=1),
            nn.BatchNorm(),
        )
        self.downsample = (
            _shortcut(channels, stride, in_channels, with_bn=True) if downsample else None
        )

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Add the (projected) input to the body's output and apply ReLU."""
        residual = x if self.downsample is None else self.downsample(x)
        return _unit_end(self, F, self.body, x, residual, body_first=True)


class BasicBlockV2(HybridBlock):
    """The pre-activation two-convolution unit of ResNet-18/34 V2:
    ``x + conv(relu(bn(conv(relu(bn(x))))))``, the projection taking ``relu(bn(x))``.

    Parameters as :class:`BasicBlockV1`; the projection is a 1x1 convolution alone.
    """

    def __init__(
        self,
        channels: int,
        stride: int,
        downsample: bool = False,
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = (
            _shortcut(channels, stride, in_channels, with_bn=False) if downsample else None
        )

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Pre-activate, convolve twice and add the (projected) input."""
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type="relu"))
        return x + residual


class BottleneckV2(HybridBlock):
    """The pre-activation 1x1-3x3-1x1 unit of ResNet-50/101/152 V2, ``channels // 4`` wide inside.

    Parameters as :class:`BasicBlockV1`; the stride is on the 3x3 convolution and the
    projection is a 1x1 convolution alone.
    """

    def __init__(
        self,
        channels: int,
        stride: int,
        downsample: bool = False,
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        width = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(width, 1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(width, stride, width)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, 1, strides=1, use_bias=False)
        self.downsample = (
            _shortcut(channels, stride, in_channels, with_bn=False) if downsample else None
        )

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Pre-activate, run the three convolutions and add the (projected) input."""
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type="relu"))
        x = self.conv3(F.Activation(self.bn3(x), act_type="relu"))
        return x + residual


_Unit = Callable[..., HybridBlock]


def _check_spec(layers: Sequence[int], channels: Sequence[int]) -> None:
    if len(layers) != len(channels) - 1:
        raise MXNetError(
            f"ResNet needs one more channel count than stages: got {len(layers)} stages "
            f"{list(layers)} and {len(channels)} channel counts {list(channels)}"
        )


def _stage(
    unit: _Unit, num_units: int, channels: int, stride: int, index: int, in_channels: int
) -> nn.HybridSequential:
    """Stage ``index`` (``stage<index>_``): one unit that may change the shape, then
    ``num_units - 1`` that keep it."""
    stage = nn.HybridSequential(prefix=f"stage{index}_")
    with stage.name_scope():
        stage.add(
            unit(channels, stride, channels != in_channels, in_channels=in_channels, prefix="")
        )
        for _ in range(num_units - 1):
            stage.add(unit(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _stem(features: nn.HybridSequential, channels: int, thumbnail: bool) -> None:
    """The input layers: a 3x3 convolution for small images (``thumbnail``), else a strided
    7x7 convolution, BatchNorm, ReLU and a 3x3 max pool of stride 2."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
        return
    features.add(
        nn.Conv2D(channels, 7, 2, 3, use_bias=False),
        nn.BatchNorm(),
        nn.Activation("relu"),
        nn.MaxPool2D(3, 2, 1),
    )


class ResNetV1(HybridBlock):
    """ResNet V1 from "Deep Residual Learning for Image Recognition" (He et al., 2015).

    Parameters
    ----------
    block : class
        The residual unit: :class:`BasicBlockV1` or :class:`BottleneckV1`.
    layers : list of int
        Units per stage.
    channels : list of int
        The stem's output channels, then each stage's; one more than ``layers``.
    classes : int, default 1000
        Outputs of the final Dense layer.
    thumbnail : bool, default False
        Replace the 7x7/2 convolution and max pool of the stem by one 3x3/1 convolution
        (for 32x32 images such as CIFAR-10).

    Examples
    --------
    >>> net = ResNetV1(BasicBlockV1, [2, 2, 2, 2], [64, 64, 128, 256, 512], classes=10)
    """

    def __init__(
        self,
        block: _Unit,
        layers: Sequence[int],
        channels: Sequence[int],
        classes: int = 1000,
        thumbnail: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, num_units in enumerate(layers):
                self.features.add(
                    _stage(
                        block, num_units, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]
                    )
                )
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2 from "Identity Mappings in Deep Residual Networks" (He et al., 2016).

    Parameters as :class:`ResNetV1`, with ``block`` :class:`BasicBlockV2` or
    :class:`BottleneckV2`. The input first goes through a BatchNorm without scale or offset;
    after the last stage come BatchNorm, ReLU, global average pooling and Flatten.
    """

    def __init__(
        self,
        block: _Unit,
        layers: Sequence[int],
        channels: Sequence[int],
        classes: int = 1000,
        thumbnail: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            for i, num_units in enumerate(layers):
                self.features.add(
                    _stage(
                        block, num_units, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]
                    )
                )
            self.features.add(
                nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten()
            )
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


#: depth -> (unit kind, units per stage, channels of the stem and of each stage)
_SPEC: dict[int, tuple[str, list[int], list[int]]] = {
    18: ("basic", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
    34: ("basic", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
    50: ("bottleneck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
    101: ("bottleneck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
    152: ("bottleneck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048]),
}
_NETS: dict[int, type[ResNetV1] | type[ResNetV2]] = {1: ResNetV1, 2: ResNetV2}
_UNITS: dict[tuple[int, str], _Unit] = {
    (1, "basic"): BasicBlockV1,
    (1, "bottleneck"): BottleneckV1,
    (2, "basic"): BasicBlockV2,
    (2, "bottleneck"): BottleneckV2,
}


def get_resnet(
    version: int,
    num_layers: int,
    pretrained: bool = False,
    ctx: Context = _CPU,
    root: str | None = None,
    **kwargs: Any,
) -> HybridBlock:
    """Build ResNet V``version`` with ``num_layers`` layers.

    Parameters
    ----------
    version : {1, 2}
        1: post-activation units (:class:`ResNetV1`); 2: pre-activation (:class:`ResNetV2`).
    num_layers : {18, 34, 50, 101, 152}
    pretrained : bool, default False
        mxrs has no pretrained weights: True raises :class:`~mxrs.base.MXNetError`.
    ctx : Context, default cpu()
        Where pretrained weights would be loaded (kept for MXNet's signature).
    root : str, optional
        Where pretrained weights would be looked for (kept for MXNet's signature).
    **kwargs
        ``classes``, ``thumbnail``, ``prefix``, ``params``: passed to the network.

    Raises
    ------
    MXNetError
        For an unknown version or depth, and for ``pretrained=True``.

    Examples
    --------
    >>> net = get_resnet(1, 18, classes=10, thumbnail=True)
    >>> net.initialize()
    >>> net(mx.nd.zeros((1, 3, 32, 32))).shape
    (1, 10)
    """
    if num_layers not in _SPEC:
        raise MXNetError(f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}")
    if version not in _NETS:
        raise MXNetError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    if pretrained:
        get_model_file(f"resnet{num_layers}_v{version}", root=root)
    kind, layers, channels = _SPEC[num_layers]
    return _NETS[version](_UNITS[version, kind], layers, channels, **kwargs)


def resnet18_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-18 V1; keyword arguments as :func:`get_resnet` (``pretrained``, ``ctx``, ``root``,
    ``classes``, ``thumbnail``)."""
    return get_resnet(1, 18, **kwargs)


def resnet34_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-34 V1; keyword arguments as :func:`get_resnet`."""
    return get_resnet(1, 34, **kwargs)


def resnet50_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-50 V1; keyword arguments as :func:`get_resnet`."""
    return get_resnet(1, 50, **kwargs)


def resnet101_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-101 V1; keyword arguments as :func:`get_resnet`."""
    return get_resnet(1, 101, **kwargs)


def resnet152_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-152 V1; keyword arguments as :func:`get_resnet`."""
    return get_resnet(1, 152, **kwargs)


def resnet18_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-18 V2; keyword arguments as :func:`get_resnet`."""
    return get_resnet(2, 18, **kwargs)


def resnet34_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-34 V2; keyword arguments as :func:`get_resnet`."""
    return get_resnet(2, 34, **kwargs)


def resnet50_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-50 V2; keyword arguments as :func:`get_resnet`."""
    return get_resnet(2, 50, **kwargs)


def resnet101_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-101 V2; keyword arguments as :func:`get_resnet`."""
    return get_resnet(2, 101, **kwargs)


def resnet152_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-152 V2; keyword arguments as :func:`get_resnet`."""
    return get_resnet(2, 152, **kwargs)
