"""Vision models of MXNet 1.9.1's zoo, with its block structure and parameter names.

Build one by constructor (``resnet18_v1(classes=10)``) or by name (``get_model('resnet18_v1')``);
the weights are random until initialized. mxrs ships no pretrained weights: ``pretrained=True``
raises :class:`~mxrs.base.MXNetError`.

Layout
------
resnet
    ``ResNetV1``, ``ResNetV2``, their residual units and ``resnet{18,34,50,101,152}_v{1,2}``.
vgg
    ``VGG`` and ``vgg{11,13,16,19}`` with their ``_bn`` variants.
alexnet
    ``AlexNet`` and ``alexnet``.
mobilenet
    ``MobileNet``, ``MobileNetV2``, ``mobilenet{1_0,0_75,0_5,0_25}`` and ``mobilenet_v2_*``.

Not here (yet): DenseNet, SqueezeNet and Inception V3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....base import MXNetError
from ...block import HybridBlock
from .alexnet import *  # noqa: F403
from .alexnet import alexnet
from .mobilenet import *  # noqa: F403
from .mobilenet import (
    mobilenet0_5,
    mobilenet0_25,
    mobilenet0_75,
    mobilenet1_0,
    mobilenet_v2_0_5,
    mobilenet_v2_0_25,
    mobilenet_v2_0_75,
    mobilenet_v2_1_0,
)
from .resnet import *  # noqa: F403
from .resnet import (
    resnet18_v1,
    resnet18_v2,
    resnet34_v1,
    resnet34_v2,
    resnet50_v1,
    resnet50_v2,
    resnet101_v1,
    resnet101_v2,
    resnet152_v1,
    resnet152_v2,
)
from .vgg import *  # noqa: F403
from .vgg import vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn


class UnknownModelError(MXNetError, ValueError):
    """:func:`get_model` was given a name the zoo does not have (a ``ValueError`` too, as
    MXNet raises)."""


_MODELS: dict[str, Callable[..., HybridBlock]] = {
    "resnet18_v1": resnet18_v1,
    "resnet34_v1": resnet34_v1,
    "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1,
    "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2,
    "resnet34_v2": resnet34_v2,
    "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2,
    "resnet152_v2": resnet152_v2,
    "vgg11": vgg11,
    "vgg13": vgg13,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "vgg11_bn": vgg11_bn,
    "vgg13_bn": vgg13_bn,
    "vgg16_bn": vgg16_bn,
    "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "mobilenet1.0": mobilenet1_0,
    "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5,
    "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0,
    "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5,
    "mobilenetv2_0.25": mobilenet_v2_0_25,
}


def get_model(name: str, **kwargs: Any) -> HybridBlock:
    """Build a zoo model by name (case-insensitive), as MXNet 1.9.1's ``get_model``.

    Parameters
    ----------
    name : str
        E.g. ``'resnet18_v1'``, ``'vgg16_bn'``, ``'alexnet'``, ``'mobilenet0.25'``,
        ``'mobilenetv2_1.0'``.
    **kwargs
        Passed to the model's constructor: ``classes``, ``thumbnail`` (ResNets),
        ``pretrained`` (True raises: mxrs has no pretrained weights), ``ctx``, ``root``,
        ``prefix``, ...

    Raises
    ------
    UnknownModelError
        For a name the zoo does not have; the message lists the available ones.

    Examples
    --------
    >>> net = get_model('resnet18_v1', classes=10, thumbnail=True)
    >>> net.initialize()
    >>> net(mx.nd.zeros((1, 3, 32, 32))).shape
    (1, 10)
    """
    key = name.lower()
    if key not in _MODELS:
        options = "\n\t".join(sorted(_MODELS))
        raise UnknownModelError(
            f"Model {name} is not supported. Available options are\n\t{options}"
        )
    return _MODELS[key](**kwargs)
