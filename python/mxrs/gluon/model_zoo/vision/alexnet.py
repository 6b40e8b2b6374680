"""AlexNet ("One weird trick for parallelizing convolutional neural networks", Krizhevsky,
2014), as MXNet 1.9.1's zoo builds it: parameters ``alexnet0_conv0_weight`` ...
``alexnet0_dense2_bias``.

Its three max pools and 11x11/4 stem need inputs of at least 63x63 pixels (224 in ImageNet use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....context import Context, cpu
from ... import nn
from ...block import HybridBlock
from ..model_store import get_model_file

if TYPE_CHECKING:
    from ....ndarray import NDArray

__all__ = ["AlexNet", "alexnet"]

_CPU = cpu()


class AlexNet(HybridBlock):
    """AlexNet: five convolutions (three max pools between them), two Dense(4096) layers with
    dropout 0.5, and the output layer.

    Parameters
    ----------
    classes : int, default 1000
        Outputs of the final Dense layer.
    """

    def __init__(self, classes: int = 1000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(
                    nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"),
                    nn.MaxPool2D(pool_size=3, strides=2),
                    nn.Flatten(),
                    nn.Dense(4096, activation="relu"),
                    nn.Dropout(0.5),
                    nn.Dense(4096, activation="relu"),
                    nn.Dropout(0.5),
                )
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Return the class scores of ``x``."""
        return self.output(self.features(x))


def alexnet(
    pretrained: bool = False, ctx: Context = _CPU, root: str | None = None, **kwargs: Any
) -> AlexNet:
    """Build AlexNet.

    Parameters
    ----------
    pretrained : bool, default False
        mxrs has no pretrained weights: True raises :class:`~mxrs.base.MXNetError`.
    ctx : Context, default cpu()
        Kept for MXNet's signature.
    root : str, optional
        Kept for MXNet's signature.
    **kwargs
        ``classes``, ``prefix``, ``params``: passed to :class:`AlexNet`.
    """
    if pretrained:
        get_model_file("alexnet", root=root)
    return AlexNet(**kwargs)
