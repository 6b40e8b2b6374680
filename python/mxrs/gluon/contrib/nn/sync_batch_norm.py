"""Synchronized batch normalization (Zhang et al., 2018): :class:`SyncBatchNorm`.

MXNet 1.9.1 normalizes each device's slice of a batch with the statistics of the whole batch,
gathering them from the ``num_devices`` copies of the layer that share a ``key``: its operator
waits, inside the engine, until every device has run its forward. mxrs runs the forward of each
device's copy one after the other in Python, so device 0's output cannot wait for device 1's
input: here every copy normalizes its own slice, as :class:`~mxrs.gluon.nn.BatchNorm` does.
On one device (``num_devices=1``, the common case on CPU) that is exactly MXNet's result,
running statistics included.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .... import context
from ....base import MXNetError
from ...nn import BatchNorm

if TYPE_CHECKING:
    from ...parameter import InitLike

__all__ = ["SyncBatchNorm"]


def _default_num_devices() -> int:
    warnings.warn(
        "Caution using SyncBatchNorm: if not using all the GPUs, please manually set num_devices",
        UserWarning,
        stacklevel=3,
    )
    return max(context.num_gpus(), 1)


class SyncBatchNorm(BatchNorm):
    """Batch normalization over the channel axis 1, synchronized across devices in MXNet.

    In training mode it normalizes with the batch's mean and (biased) variance and the
    backward pass updates ``running_mean``/``running_var`` with ``momentum``; in inference
    mode, or with ``use_global_stats``, it uses the running statistics. See the module
    docstring for what several devices in one process do.

    Parameters
    ----------
    in_channels : int, default 0
        Number of channels; 0 infers it from the first input.
    num_devices : int, optional
        The number of devices the batch is split over; defaults (with a warning, as MXNet)
        to the number of visible GPUs, at least 1.
    momentum : float, default 0.9
    epsilon : float, default 1e-5
    center : bool, default True
        Learn the offset ``beta``.
    scale : bool, default True
        Learn the scale ``gamma`` (otherwise it is fixed to 1).
    use_global_stats : bool, default False
    beta_initializer, gamma_initializer : default 'zeros', 'ones'
    running_mean_initializer, running_variance_initializer : default 'zeros', 'ones'
    key : str, optional
        The name the devices' copies synchronize under; the layer's prefix by default.
    """

    def __init__(
        self,
        in_channels: int = 0,
        num_devices: int | None = None,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        use_global_stats: bool = False,
        beta_initializer: InitLike = "zeros",
        gamma_initializer: InitLike = "ones",
        running_mean_initializer: InitLike = "zeros",
        running_variance_initializer: InitLike = "ones",
        key: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            axis=1,
            momentum=momentum,
            epsilon=epsilon,
            center=center,
            scale=scale,
            use_global_stats=use_global_stats,
            beta_initializer=beta_initializer,
            gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels,
            **kwargs,
        )
        if num_devices is None:
            num_devices = _default_num_devices()
        if isinstance(num_devices, bool) or not isinstance(num_devices, int) or num_devices < 1:
            raise MXNetError(
                f"SyncBatchNorm: num_devices must be a positive int, not {num_devices!r}"
            )
        self._ndev = num_devices
        self._key = self.prefix if key is None else str(key)

    @property
    def num_devices(self) -> int:
        """int: the number of devices the layer's batch is split over."""
        return self._ndev

    @property
    def key(self) -> str:
        """str: the name the devices' copies synchronize under."""
        return self._key

    def __repr__(self) -> str:
        assert self.gamma.shape is not None  # given by the layer
        shown = {k: v for k, v in self._kwargs.items() if k != "axis"}
        shown.update(ndev=self._ndev, key=self._key)
        content = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"{type(self).__name__}({content}, in_channels={self.gamma.shape[0] or None})"
