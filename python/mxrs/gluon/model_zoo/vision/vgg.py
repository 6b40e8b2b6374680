"""VGG-11/13/16/19 ("Very Deep Convolutional Networks for Large-Scale Image Recognition",
Simonyan and Zisserman, 2014), with or without BatchNorm, as MXNet 1.9.1's zoo builds them.

Each block of 3x3 convolutions (with BatchNorm in the ``_bn`` variants) and ReLU ends in a 2x2
max pool; two Dense(4096) layers with dropout 0.5 and the output layer follow. Convolutions are
initialized with ``Xavier(rnd_type='gaussian', factor_type='out', magnitude=2)`` and the Dense
layers with ``Normal()``, their biases with zeros, whatever ``initialize`` is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....base import MXNetError
from ....context import Context, cpu
from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ..model_store import get_model_file

if TYPE_CHECKING:
    from ....ndarray import NDArray

__all__ = [
    "VGG",
    "vgg11",
    "vgg13",
    "vgg16",
    "vgg19",
    "vgg11_bn",
    "vgg13_bn",
    "vgg16_bn",
    "vgg19_bn",
    "get_vgg",
]

_CPU = cpu()

#: depth -> (convolutions per block, filters per block)
_SPEC: dict[int, tuple[list[int], list[int]]] = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


def _dense(units: int, **kwargs: Any) -> nn.Dense:
    return nn.Dense(units, weight_initializer="normal", bias_initializer="zeros", **kwargs)


class VGG(HybridBlock):
    """A VGG network.

    Parameters
    ----------
    layers : list of int
        Convolutions in each block.
    filters : list of int
        Output channels of each block's convolutions; as long as ``layers``.
    classes : int, default 1000
        Outputs of the final Dense layer.
    batch_norm : bool, default False
        Put a BatchNorm after every convolution.
    """

    def __init__(
        self,
        layers: Sequence[int],
        filters: Sequence[int],
        classes: int = 1000,
        batch_norm: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise MXNetError(
                f"VGG needs one filter count per block: got {len(layers)} blocks "
                f"{list(layers)} and {len(filters)} filter counts {list(filters)}"
            )
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            for num, channels in zip(layers, filters, strict=True):
                for _ in range(num):
                    self.features.add(
                        nn.Conv2D(
                            channels,
                            kernel_size=3,
                            padding=1,
                            weight_initializer=Xavier(
                                rnd_type="gaussian", factor_type="out", magnitude=2
                            ),
                            bias_initializer="zeros",
                        )
                    )
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            self.features.add(
                _dense(4096, activation="relu"),
                nn.Dropout(rate=0.5),
                _dense(4096, activation="relu"),
                nn.Dropout(rate=0.5),
            )
            self.output = _dense(classes)

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


def get_vgg(
    num_layers: int,
    pretrained: bool = False,
    ctx: Context = _CPU,
    root: str | None = None,
    **kwargs: Any,
) -> VGG:
    """Build VGG with ``num_layers`` layers.

    Parameters
    ----------
    num_layers : {11, 13, 16, 19}
    pretrained : bool, default False
        mxrs has no pretrained weights: True raises :class:`~mxrs.base.MXNetError`.
    ctx : Context, default cpu()
        Kept for MXNet's signature.
    root : str, optional
        Kept for MXNet's signature.
    **kwargs
        ``classes``, ``batch_norm``, ``prefix``, ``params``: passed to :class:`VGG`.

    Raises
    ------
    MXNetError
        For an unknown depth and for ``pretrained=True``.
    """
    if num_layers not in _SPEC:
        raise MXNetError(f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}")
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        get_model_file(f"vgg{num_layers}{suffix}", root=root)
    layers, filters = _SPEC[num_layers]
    return VGG(layers, filters, **kwargs)


def vgg11(**kwargs: Any) -> VGG:
    """VGG-11; keyword arguments as :func:`get_vgg`."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs: Any) -> VGG:
    """VGG-13; keyword arguments as :func:`get_vgg`."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs: Any) -> VGG:
    """VGG-16; keyword arguments as :func:`get_vgg`."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs: Any) -> VGG:
    """VGG-19; keyword arguments as :func:`get_vgg`."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs: Any) -> VGG:
    """VGG-11 with BatchNorm; keyword arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(11, **kwargs)


def vgg13_bn(**kwargs: Any) -> VGG:
    """VGG-13 with BatchNorm; keyword arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(13, **kwargs)


def vgg16_bn(**kwargs: Any) -> VGG:
    """VGG-16 with BatchNorm; keyword arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(16, **kwargs)


def vgg19_bn(**kwargs: Any) -> VGG:
    """VGG-19 with BatchNorm; keyword arguments as :func:`get_vgg`."""
    kwargs["batch_norm"] = True
    return get_vgg(19, **kwargs)
