"""Deformable convolutions of NCHW images in ``mx.nd.contrib``, as MXNet 1.9.1 computes them:
``DeformableConvolution`` (v1, Dai et al. 2017) and ``ModulatedDeformableConvolution`` (v2, Zhu
et al. 2018).

Both read every kernel tap at a learned fractional offset from its place on the regular grid
(v2 also scales each read by a learned mask), then convolve what they read: a deformable
im2col followed by one matrix product per group, as MXNet's CPU operator.

im2col
    Tap ``k = i * kw + j`` of output pixel ``(y, x)`` reads channel ``c`` of the data at
    ``h = y * stride_h - pad_h + i * dilate_h + offset[g, 2k, y, x]`` and
    ``w = x * stride_w - pad_w + j * dilate_w + offset[g, 2k + 1, y, x]`` by bilinear
    interpolation, ``g`` being the deformable group of ``c`` (``c // (C / num_deformable_group)``).
    One kernel position is read for the whole batch and every channel at once: four gathers
    (the corners around each point) and their weights.
columns times weight
    The columns ``(N, C * kh * kw, out_h * out_w)`` of each of the ``num_group`` groups times
    that group's rows of the weight ``(num_filter, C / num_group, kh, kw)``; plus the bias.

The two read the image's border differently, each as MXNet does:

- ``DeformableConvolution`` reads 0 unless ``0 <= h < H`` and ``0 <= w < W``; a point on or
  past the last row (column) reads that row (column) without interpolating along it.
- ``ModulatedDeformableConvolution`` reads points with ``-1 < h < H`` and ``-1 < w < W``,
  taking the corners outside the image as 0, and multiplies each read by its mask
  ``mask[g, k, y, x]``.

The gradients are the exact derivatives of these reads: the data gets the column gradient back
by the same bilinear weights (one ``bincount`` per kernel position), the offsets the
derivative of each read along ``h`` and ``w``, the mask the unmasked read, the weight the column
gradient's product with the columns, the bias the output gradient's sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ...base import MXNetError
from ..core.array import ArrayT
from ..core.op import Op, apply

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


class _Geometry(NamedTuple):
    """The window of a deformable convolution: per spatial axis the kernel, stride, dilation
    and padding, then the groups of the product and of the offsets."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilate: tuple[int, int]
    pad: tuple[int, int]
    groups: int
    dgroups: int


class _Reads(NamedTuple):
    """The bilinear reads of one kernel position, each array ``(N, dg, 1, P)``: the four
    corners' pixel indices in the flattened image and, per corner, its weight in the read and in
    the read's derivatives along ``h`` and ``w`` (zero for a corner that is not read)."""

    pixels: list[Any]
    value: list[Any]
    d_h: list[Any]
    d_w: list[Any]


def _reads(xp: Any, h: Any, w: Any, height: int, width: int, modulated: bool) -> _Reads:
    """The reads at fractional rows ``h`` and columns ``w`` of a ``height`` x ``width`` image,
    with the border rule of the module docstring for ``modulated`` or not."""
    dtype = h.dtype
    if modulated:
        inside = (h > -1) & (w > -1) & (h < height) & (w < width)
    else:
        inside = (h >= 0) & (w >= 0) & (h < height) & (w < width)
    zero = dtype.type(0)
    h = xp.where(inside, h, zero)  # no floor of a point far outside (or of NaN)
    w = xp.where(inside, w, zero)
    h_low, w_low = xp.floor(h), xp.floor(w)
    lh, lw = h - h_low, w - w_low
    h0, w0 = h_low.astype(np.int64), w_low.astype(np.int64)
    h1, w1 = h0 + 1, w0 + 1
    if modulated:  # corners outside the image read 0
        ok_h0, ok_h1 = h0 >= 0, h1 <= height - 1
        ok_w0, ok_w1 = w0 >= 0, w1 <= width - 1
    else:  # on the last row (column): that row (column), not interpolated
        last_h, last_w = h0 >= height - 1, w0 >= width - 1
        h1 = xp.where(last_h, height - 1, h1)
        w1 = xp.where(last_w, width - 1, w1)
        lh = xp.where(last_h, zero, lh)
        lw = xp.where(last_w, zero, lw)
        ok_h0 = ok_h1 = ok_w0 = ok_w1 = inside
    one = dtype.type(1)
    hh, hw = one - lh, one - lw
    corners = [
        (h0, w0, ok_h0 & ok_w0),
        (h0, w1, ok_h0 & ok_w1),
        (h1, w0, ok_h1 & ok_w0),
        (h1, w1, ok_h1 & ok_w1),
    ]
    oks = [(ok & inside).astype(dtype) for _, _, ok in corners]
    pixels = [
        xp.where(ok > 0, r * width + c, 0) for (r, c, _), ok in zip(corners, oks, strict=True)
    ]
    value = [hh * hw * oks[0], hh * lw * oks[1], lh * hw * oks[2], lh * lw * oks[3]]
    d_h = [-hw * oks[0], -lw * oks[1], hw * oks[2], lw * oks[3]]
    d_w = [-hh * oks[0], hh * oks[1], -lh * oks[2], lh * oks[3]]
    return _Reads(pixels, value, d_h, d_w)


class _DeformableConv(Op):
    """Inputs ``data, offset, [mask,] weight, [bias]``; see the module docstring."""

    def forward(self, x, offset, *rest, geom, modulated):
        xp = self.xp
        work = np.float32 if x.dtype == np.float16 else x.dtype
        mask = rest[0].astype(work, copy=False) if modulated else None
        w, b = rest[int(modulated)], rest[int(modulated) + 1 :]
        n, c, height, width = x.shape
        kh, kw = geom.kernel
        oh, ow = offset.shape[2:]
        self.saved = (x.astype(work, copy=False), offset.astype(work, copy=False), mask)
        self.dims = (n, c, height, width, oh, ow)
        self.geom, self.modulated = geom, modulated
        cols = xp.empty((n, c, kh * kw, oh * ow), dtype=work)
        for k, (sample, _, m) in enumerate(self._taps()):
            cols[:, :, k] = (sample if m is None else sample * m).reshape(n, c, oh * ow)
        g = geom.groups
        wg = w.astype(work, copy=False).reshape(g, w.shape[0] // g, -1)
        colg = cols.reshape(n, g, -1, oh * ow)
        out = xp.matmul(wg[None], colg).reshape(n, w.shape[0], oh, ow)
        if b:
            out = out + b[0].astype(work, copy=False).reshape(1, -1, 1, 1)
        self.wg = wg
        self.cols = colg if self.needs[2 + int(modulated)] else None
        return out.astype(x.dtype, copy=False)

    def _taps(self):
        """For each kernel position: its unmasked reads ``(N, dg, C / dg, P)``, the
        :class:`_Reads` they came from with the gathered corners, and the mask
        ``(N, dg, 1, P)`` (None without one)."""
        xp = self.xp
        x, offset, mask = self.saved
        n, c, height, width, oh, ow = self.dims
        geom = self.geom
        kh, kw = geom.kernel
        dg = geom.dgroups
        image = x.reshape(n, dg, c // dg, height * width)
        offs = offset.reshape(n, dg, kh * kw, 2, oh * ow)
        masks = None if mask is None else mask.reshape(n, dg, kh * kw, 1, oh * ow)
        rows = xp.arange(oh, dtype=np.int64) * geom.stride[0] - geom.pad[0]
        cols = xp.arange(ow, dtype=np.int64) * geom.stride[1] - geom.pad[1]
        at = (
            xp.arange(n)[:, None, None, None],
            xp.arange(dg)[None, :, None, None],
            xp.arange(c // dg)[None, None, :, None],
        )
        for i in range(kh):
            for j in range(kw):
                k = i * kw + j
                base_h = xp.repeat(rows + i * geom.dilate[0], ow).astype(x.dtype)
                base_w = xp.tile(cols + j * geom.dilate[1], oh).astype(x.dtype)
                h = base_h + offs[:, :, k, 0]
                w = base_w + offs[:, :, k, 1]
                reads = _reads(xp, h[:, :, None], w[:, :, None], height, width, self.modulated)
                corners = [image[at + (idx,)] for idx in reads.pixels]
                sample = reads.value[0] * corners[0]
                for weight, v in zip(reads.value[1:], corners[1:], strict=True):
                    sample = sample + weight * v
                m = None if masks is None else masks[:, :, k]
                yield sample, (reads, corners), m

    def backward(self, g):
        xp = self.xp
        x, offset, mask = self.saved
        n, c, height, width, oh, ow = self.dims
        geom, modulated = self.geom, self.modulated
        kh, kw = geom.kernel
        dg, groups = geom.dgroups, geom.groups
        needs = self.needs
        i_w = 2 + int(modulated)
        need_x, need_off = needs[0], needs[1]
        need_mask = modulated and needs[2]
        work = x.dtype
        gg = g.astype(work, copy=False).reshape(n, groups, -1, oh * ow)
        grads: list[Any] = [None] * len(needs)
        if needs[i_w]:
            assert self.cols is not None  # kept by forward when the weight needs a gradient
            gw = xp.matmul(gg, self.cols.transpose(0, 1, 3, 2)).sum(axis=0)
            grads[i_w] = gw.reshape(-1, c // groups, kh, kw).astype(g.dtype, copy=False)
        if len(needs) > i_w + 1 and needs[i_w + 1]:
            grads[i_w + 1] = g.sum(axis=(0, 2, 3))
        if need_x or need_off or need_mask:
            gcols = xp.matmul(self.wg.transpose(0, 2, 1)[None], gg)
            gcols = gcols.reshape(n, dg, c // dg, kh * kw, oh * ow)
            gx = xp.zeros(n * c * height * width, dtype=np.float64) if need_x else None
            goff = xp.zeros((n, dg, kh * kw, 2, oh * ow), dtype=work) if need_off else None
            gmask = xp.zeros((n, dg, kh * kw, 1, oh * ow), dtype=work) if need_mask else None
            plane = xp.arange(n * c, dtype=np.int64).reshape(n, dg, c // dg, 1) * (height * width)
            for k, (sample, (reads, corners), m) in enumerate(self._taps()):
                gc = gcols[:, :, :, k]  # (N, dg, C / dg, P)
                if gmask is not None:
                    gmask[:, :, k, 0] = (gc * sample).sum(axis=2)
                if m is not None:
                    gc = gc * m
                if goff is not None:
                    for axis, d in enumerate((reads.d_h, reads.d_w)):
                        slope = d[0] * corners[0]
                        for weight, v in zip(d[1:], corners[1:], strict=True):
                            slope = slope + weight * v
                        goff[:, :, k, axis] = (gc * slope).sum(axis=2)
                if gx is not None:
                    where = xp.concatenate([(plane + idx).reshape(-1) for idx in reads.pixels])
                    amount = xp.concatenate([(gc * wt).reshape(-1) for wt in reads.value])
                    gx += xp.bincount(where, weights=amount, minlength=gx.size)
            if gx is not None:
                grads[0] = gx.reshape(n, c, height, width).astype(g.dtype)
            if goff is not None:
                grads[1] = goff.reshape(offset.shape).astype(g.dtype, copy=False)
            if gmask is not None and mask is not None:
                grads[2] = gmask.reshape(mask.shape).astype(g.dtype, copy=False)
        return tuple(grads)


def _pair(op: str, name: str, value: Any, default: int) -> tuple[int, int]:
    """``value`` as two ints (one int, or None / () for ``default``), else a clear error."""
    if value is None or value == ():
        return (default, default)
    if isinstance(value, int | np.integer):
        return (int(value), int(value))
    try:
        pair = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise MXNetError(f"{op}: {name} must be two ints, got {value!r}") from None
    if len(pair) != 2:
        raise MXNetError(f"{op}: {name} must be two ints (2-D only, as in MXNet), got {value}")
    return pair[0], pair[1]


def _deformable(
    op: str,
    data: ArrayT,
    offset: ArrayT,
    mask: ArrayT | None,
    weight: ArrayT,
    bias: ArrayT | None,
    kernel: Any,
    stride: Any,
    dilate: Any,
    pad: Any,
    num_filter: Any,
    num_group: int,
    num_deformable_group: int,
    no_bias: bool,
    layout: str | None,
) -> ArrayT:
    """Check the shapes and attributes as MXNet does, then run the operator."""
    if layout not in (None, "NCHW"):
        raise MXNetError(f"{op}: layout {layout!r} is not supported; it runs on NCHW data only")
    if data.ndim != 4:
        raise MXNetError(
            f"{op}: data must be 4-D (batch, channel, height, width), got {data.shape}"
        )
    if weight.ndim != 4:
        raise MXNetError(
            f"{op}: weight must be 4-D (num_filter, channel, kh, kw), got {weight.shape}"
        )
    ks = _pair(op, "kernel", weight.shape[2:] if kernel is None else kernel, 1)
    st, dl = _pair(op, "stride", stride, 1), _pair(op, "dilate", dilate, 1)
    pd = _pair(op, "pad", pad, 0)
    if min(ks + st + dl) <= 0 or min(pd) < 0:
        raise MXNetError(
            f"{op}: kernel {ks}, stride {st} and dilate {dl} must be positive and pad {pd} "
            "not negative"
        )
    groups, dg = int(num_group), int(num_deformable_group)
    if groups <= 0 or dg <= 0:
        raise MXNetError(f"{op}: num_group and num_deformable_group must be positive")
    n, c, height, width = data.shape
    nf = weight.shape[0] if num_filter is None else int(num_filter)
    if c % groups or c % dg:
        raise MXNetError(
            f"{op}: the {c} input channels must be divisible by num_group={groups} and "
            f"num_deformable_group={dg}"
        )
    if nf % groups:
        raise MXNetError(f"{op}: num_filter={nf} must be divisible by num_group={groups}")
    if mask is not None and nf % dg:  # MXNet asks this of the modulated operator only
        raise MXNetError(f"{op}: num_filter={nf} must be divisible by num_deformable_group={dg}")
    want_w = (nf, c // groups) + ks
    if tuple(weight.shape) != want_w:
        raise MXNetError(
            f"{op}: weight must be (num_filter, channels / num_group, kh, kw) = {want_w}, "
            f"got {weight.shape}"
        )
    out = tuple(
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, d, p in zip((height, width), ks, st, dl, pd, strict=True)
    )
    if min(out) <= 0:
        raise MXNetError(f"{op}: kernel {ks} exceeds the padded input {data.shape[2:]} (pad {pd})")
    taps = ks[0] * ks[1]
    want_off = (n, 2 * taps * dg) + out
    if tuple(offset.shape) != want_off:
        raise MXNetError(
            f"{op}: offset must be (batch, 2 * kh * kw * num_deformable_group, out_h, out_w) = "
            f"{want_off} for kernel {ks} and num_deformable_group={dg}, got {offset.shape}"
        )
    arrays = [data, offset]
    if mask is not None:
        want_mask = (n, taps * dg) + out
        if tuple(mask.shape) != want_mask:
            raise MXNetError(
                f"{op}: mask must be (batch, kh * kw * num_deformable_group, out_h, out_w) = "
                f"{want_mask}, got {mask.shape}"
            )
        arrays.append(mask)
    arrays.append(weight)
    if bias is not None and not no_bias:
        if tuple(bias.shape) != (nf,):
            raise MXNetError(f"{op}: bias must be (num_filter,) = ({nf},), got {bias.shape}")
        arrays.append(bias)
    geom = _Geometry(ks, st, dl, pd, groups, dg)
    return apply(_DeformableConv, arrays, geom=geom, modulated=mask is not None)


def DeformableConvolution(
    data: ArrayT,
    offset: ArrayT,
    weight: ArrayT,
    bias: ArrayT | None = None,
    kernel: int | Sequence[int] | None = None,
    stride: int | Sequence[int] | None = None,
    dilate: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    num_filter: int | None = None,
    num_group: int = 1,
    num_deformable_group: int = 1,
    workspace: int = 1024,
    no_bias: bool = False,
    layout: str | None = None,
) -> ArrayT:
    """2-D deformable convolution (v1) of ``data`` ``(N, C, H, W)``: each kernel tap reads the
    data at its grid position plus its ``offset``, by bilinear interpolation (0 outside the
    image); see the module docstring.

    Parameters
    ----------
    data : NDArray
        ``(N, C, H, W)``.
    offset : NDArray
        ``(N, 2 * kh * kw * num_deformable_group, out_h, out_w)``: for deformable group ``g``
        and tap ``k = i * kw + j``, channel ``g * 2 * kh * kw + 2 * k`` moves the tap along
        the height and the next one along the width.
    weight : NDArray
        ``(num_filter, C / num_group, kh, kw)``.
    bias : NDArray, optional
        ``(num_filter,)``; ignored with ``no_bias``.
    kernel : (int, int)
        Must match the weight (taken from it when omitted).
    stride, dilate, pad : (int, int), optional
        Defaults 1, 1 and 0. ``out = (size + 2 * pad - dilate * (kernel - 1) - 1) // stride
        + 1`` per axis.
    num_filter : int
        The output channels (taken from the weight when omitted).
    num_group : int, default 1
        Groups of channels convolved separately.
    num_deformable_group : int, default 1
        Groups of input channels that each have their own offsets.
    workspace : int
        Accepted for compatibility; unused.
    no_bias : bool, default False
    layout : {None, 'NCHW'}

    Returns
    -------
    NDArray
        ``(N, num_filter, out_h, out_w)``.

    Raises
    ------
    MXNetError
        For shapes that do not fit each other: the offset's must be
        ``(N, 2 * kh * kw * num_deformable_group, out_h, out_w)``, channels and filters must be
        divisible by the groups, the weight ``(num_filter, C / num_group, kh, kw)``; for
        another layout.
    """
    return _deformable(
        "DeformableConvolution", data, offset, None, weight, bias, kernel, stride, dilate, pad,
        num_filter, num_group, num_deformable_group, no_bias, layout,
    )  # fmt: skip


def ModulatedDeformableConvolution(
    data: ArrayT,
    offset: ArrayT,
    mask: ArrayT,
    weight: ArrayT,
    bias: ArrayT | None = None,
    kernel: int | Sequence[int] | None = None,
    stride: int | Sequence[int] | None = None,
    dilate: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    num_filter: int | None = None,
    num_group: int = 1,
    num_deformable_group: int = 1,
    workspace: int = 1024,
    no_bias: bool = False,
    im2col_step: int = 64,
    layout: str | None = None,
) -> ArrayT:
    """2-D modulated deformable convolution (v2) of ``data`` ``(N, C, H, W)``: as
    :func:`DeformableConvolution`, each tap's read also multiplied by ``mask``
    ``(N, kh * kw * num_deformable_group, out_h, out_w)`` (channel ``g * kh * kw + k`` for
    deformable group ``g`` and tap ``k``); points within one pixel outside the image read
    their inside corners. See the module docstring.

    ``im2col_step`` (images per column buffer in MXNet) changes nothing in the result; as in
    MXNet, a batch larger than it must be a multiple of it.

    Raises
    ------
    MXNetError
        As :func:`DeformableConvolution`, and for a mask of another shape, a ``num_filter``
        that ``num_deformable_group`` does not divide (MXNet's check) or a batch that is
        larger than ``im2col_step`` and not a multiple of it.
    """
    step = int(im2col_step)
    if step <= 0:
        raise MXNetError(
            f"ModulatedDeformableConvolution: im2col_step must be positive, got {step}"
        )
    if data.ndim >= 1 and data.shape[0] > step and data.shape[0] % step:
        raise MXNetError(
            f"ModulatedDeformableConvolution: the batch of {data.shape[0]} is larger than "
            f"im2col_step={step} and not a multiple of it"
        )
    return _deformable(
        "ModulatedDeformableConvolution", data, offset, mask, weight, bias, kernel, stride,
        dilate, pad, num_filter, num_group, num_deformable_group, no_bias, layout,
    )  # fmt: skip
