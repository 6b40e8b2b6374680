"""2-D deformable convolution layers, as MXNet 1.9.1 defines them.

Each layer is two convolutions of its input ``(N, C, H, W)``:

- an ordinary ``Convolution`` with the layer's window and groups (parameters ``offset_weight``
  and ``offset_bias``, zeros by default, so a new layer starts as a plain convolution) gives
  the offsets: ``2 * kh * kw * num_deformable_group`` channels; the modulated layer asks for
  ``kh * kw * num_deformable_group`` more, its mask logits, and uses ``2 * sigmoid(logits)``
  as the mask;
- ``contrib.DeformableConvolution`` (or ``contrib.ModulatedDeformableConvolution``) of the input
  at those offsets with ``deformable_conv_weight`` ``(channels, C / groups, kh, kw)`` and
  ``deformable_conv_bias``; then the activation, if any.

With ``in_channels=0`` the input channels are inferred from the first batch (deferred
initialization). The layers hybridize.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....base import MXNetError
from ...block import HybridBlock
from ...nn import Activation
from ...nn._geometry import _check_layout, _tuple
from ...nn.conv_layers import _conv_repr

if TYPE_CHECKING:
    from ....ndarray import NDArray
    from ...parameter import InitLike, Parameter

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


class _Deformable(HybridBlock):
    """What the two layers share; ``_masked`` makes the modulated one."""

    _masked = False

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int],
        padding: int | Sequence[int],
        dilation: int | Sequence[int],
        groups: int,
        num_deformable_group: int,
        layout: str,
        use_bias: bool,
        in_channels: int,
        activation: str | None,
        weight_initializer: InitLike | None,
        bias_initializer: InitLike,
        offset_weight_initializer: InitLike,
        offset_bias_initializer: InitLike,
        offset_use_bias: bool,
        op_name: str,
        adj: Any,
        prefix: str | None,
        params: Any,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        name = type(self).__name__
        _check_layout(name, layout, ("NCHW",))
        if adj:
            raise MXNetError(
                f"{name}: adj (output padding) belongs to transposed convolutions; a "
                "deformable convolution takes none"
            )
        kernel = _tuple(kernel_size, 2, "kernel_size")
        window = {
            "kernel": kernel,
            "stride": _tuple(strides, 2, "strides"),
            "dilate": _tuple(dilation, 2, "dilation"),
            "pad": _tuple(padding, 2, "padding"),
        }
        taps = kernel[0] * kernel[1] * int(num_deformable_group)
        self._channels, self._in_channels, self._op_name = channels, in_channels, op_name
        self._split = 2 * taps  # offsets first, then (modulated) the mask logits
        offset_channels = (3 if self._masked else 2) * taps
        self._kwargs_offset: dict[str, Any] = dict(
            window, num_filter=offset_channels, num_group=groups,
            no_bias=not offset_use_bias, layout=layout,
        )  # fmt: skip
        self._kwargs_deformable_conv: dict[str, Any] = dict(
            window, num_filter=channels, num_group=groups,
            num_deformable_group=num_deformable_group, no_bias=not use_bias, layout=layout,
        )  # fmt: skip
        inputs = in_channels // groups
        with self.name_scope():
            if self._masked:  # MXNet registers the modulated layer's parameters in this order
                self._conv_params(channels, inputs, kernel, use_bias, weight_initializer,
                                  bias_initializer)  # fmt: skip
            self.offset_weight = self.params.get(
                "offset_weight",
                shape=(offset_channels, inputs) + kernel,
                init=offset_weight_initializer,
                allow_deferred_init=True,
            )
            self.offset_bias: Parameter | None = None
            if offset_use_bias:
                self.offset_bias = self.params.get(
                    "offset_bias",
                    shape=(offset_channels,),
                    init=offset_bias_initializer,
                    allow_deferred_init=True,
                )
            if not self._masked:
                self._conv_params(channels, inputs, kernel, use_bias, weight_initializer,
                                  bias_initializer)  # fmt: skip
            self.act: Activation | None = None
            if activation:
                self.act = Activation(activation, prefix=activation + "_")

    def _conv_params(
        self,
        channels: int,
        inputs: int,
        kernel: tuple[int, ...],
        use_bias: bool,
        weight_initializer: InitLike | None,
        bias_initializer: InitLike,
    ) -> None:
        """Register ``deformable_conv_weight`` and ``deformable_conv_bias``."""
        self.deformable_conv_weight = self.params.get(
            "deformable_conv_weight",
            shape=(channels, inputs) + kernel,
            init=weight_initializer,
            allow_deferred_init=True,
        )
        self.deformable_conv_bias: Parameter | None = None
        if use_bias:
            self.deformable_conv_bias = self.params.get(
                "deformable_conv_bias",
                shape=(channels,),
                init=bias_initializer,
                allow_deferred_init=True,
            )

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set both weights' input channels from the input's."""
        name, groups = type(self).__name__, self._kwargs_offset["num_group"]
        if x.ndim != 4:
            raise MXNetError(f"{name} expects 4-D input (N, C, H, W), got shape {x.shape}")
        c = x.shape[1]
        if c % groups:
            raise MXNetError(f"{name}: {c} input channels are not divisible by groups={groups}")
        kernel = self._kwargs_offset["kernel"]
        self.offset_weight.shape = (self._kwargs_offset["num_filter"], c // groups) + kernel
        self.deformable_conv_weight.shape = (self._channels, c // groups) + kernel

    def hybrid_forward(
        self,
        F: Any,
        x: Any,
        offset_weight: Any,
        deformable_conv_weight: Any,
        offset_bias: Any = None,
        deformable_conv_bias: Any = None,
    ) -> Any:
        """The offsets (and mask) from the offset convolution, then the deformable one."""
        conv = [x, offset_weight] + ([] if offset_bias is None else [offset_bias])
        offset = F.Convolution(*conv, cudnn_off=True, **self._kwargs_offset)
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        if self._masked:
            # the end given (not None): MXNet reads a graph's slice_axis only with one
            end = self._kwargs_offset["num_filter"]
            mask = F.slice_axis(offset, axis=1, begin=self._split, end=end)
            offset = F.slice_axis(offset, axis=1, begin=0, end=self._split)
            out = F.contrib.ModulatedDeformableConvolution(
                data=x, offset=offset, mask=F.sigmoid(mask) * 2, weight=deformable_conv_weight,
                name="fwd", **extra, **self._kwargs_deformable_conv,
            )  # fmt: skip
        else:
            out = F.contrib.DeformableConvolution(
                data=x, offset=offset, weight=deformable_conv_weight, name="fwd", **extra,
                **self._kwargs_deformable_conv,
            )  # fmt: skip
        return out if self.act is None else self.act(out)


class DeformableConvolution(_Deformable):
    """2-D deformable convolution v1 (Dai et al., 2017): the taps of the convolution read the
    input at offsets from their regular grid, which a second convolution of the input learns.

    Parameters
    ----------
    channels : int
        The output channels.
    kernel_size : int or (int, int), default (1, 1)
    strides : int or (int, int), default (1, 1)
    padding : int or (int, int), default (0, 0)
        Zeros added on both sides of each spatial axis.
    dilation : int or (int, int), default (1, 1)
    groups : int, default 1
        Groups of channels convolved separately (both convolutions).
    num_deformable_group : int, default 1
        Groups of input channels that each get their own offsets.
    layout : str, default 'NCHW'
        The only layout the operator runs.
    use_bias : bool, default True
        Whether the output convolution has ``deformable_conv_bias``.
    in_channels : int, default 0
        The input channels; 0 infers them from the first batch.
    activation : str, optional
        Applied to the output (see :class:`~mxrs.gluon.nn.Activation`).
    weight_initializer, bias_initializer : Initializer or str
        Of ``deformable_conv_weight`` (the global one by default) and ``deformable_conv_bias``
        (zeros).
    offset_weight_initializer, offset_bias_initializer : Initializer or str, default 'zeros'
        Of the offset convolution's ``offset_weight`` and ``offset_bias``.
    offset_use_bias : bool, default True
        Whether the offset convolution has ``offset_bias``.
    op_name : str
        Kept for compatibility.
    adj : None
        Refused when given: only transposed convolutions take it.

    Inputs: ``(N, in_channels, H, W)``. Output: ``(N, channels, out_h, out_w)``, with
    ``out = (size + 2*padding - dilation*(kernel_size - 1) - 1) // strides + 1`` per axis.
    """

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        num_deformable_group: int = 1,
        layout: str = "NCHW",
        use_bias: bool = True,
        in_channels: int = 0,
        activation: str | None = None,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        offset_weight_initializer: InitLike = "zeros",
        offset_bias_initializer: InitLike = "zeros",
        offset_use_bias: bool = True,
        op_name: str = "DeformableConvolution",
        adj: Any = None,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, num_deformable_group,
            layout, use_bias, in_channels, activation, weight_initializer, bias_initializer,
            offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj,
            prefix, params,
        )  # fmt: skip

    def _alias(self) -> str:
        return "deformable_conv"

    def __repr__(self) -> str:
        shape = self.deformable_conv_weight.shape or (0, 0)
        return _conv_repr(
            self, shape, self._kwargs_deformable_conv, self.deformable_conv_bias is None, self.act
        )


class ModulatedDeformableConvolution(_Deformable):
    """2-D modulated deformable convolution v2 (Zhu et al., 2018): as
    :class:`DeformableConvolution`, each tap's read also scaled by a learned mask in ``(0, 2)``
    (``2 * sigmoid`` of ``kh * kw * num_deformable_group`` more channels of the offset
    convolution, whose zero initialization starts every mask at 1).

    The parameters are :class:`DeformableConvolution`'s.
    """

    _masked = True

    def __init__(
        self,
        channels: int,
        kernel_size: int | Sequence[int] = (1, 1),
        strides: int | Sequence[int] = (1, 1),
        padding: int | Sequence[int] = (0, 0),
        dilation: int | Sequence[int] = (1, 1),
        groups: int = 1,
        num_deformable_group: int = 1,
        layout: str = "NCHW",
        use_bias: bool = True,
        in_channels: int = 0,
        activation: str | None = None,
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        offset_weight_initializer: InitLike = "zeros",
        offset_bias_initializer: InitLike = "zeros",
        offset_use_bias: bool = True,
        op_name: str = "ModulatedDeformableConvolution",
        adj: Any = None,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(
            channels, kernel_size, strides, padding, dilation, groups, num_deformable_group,
            layout, use_bias, in_channels, activation, weight_initializer, bias_initializer,
            offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj,
            prefix, params,
        )  # fmt: skip

    def _alias(self) -> str:
        return "modulated_deformable_conv"
