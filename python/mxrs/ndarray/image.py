"""Image operators (``mx.nd.image``), as MXNet 1.9.1 defines them.

Images are ``(H, W, C)`` arrays, batches ``(N, H, W, C)``; tensors (what :func:`to_tensor`
makes) are ``(C, H, W)`` or ``(N, C, H, W)``.

Layout conversion and normalisation
    ``to_tensor`` (HWC 0-255 to CHW float32 0-1) and ``normalize`` (per-channel mean and
    standard deviation); both have their gradient.
Geometry
    ``resize`` (OpenCV's ``cv2.resize``, any of its interpolations), ``crop`` (with its
    gradient), ``flip_left_right``, ``flip_top_bottom`` (and their random forms, which flip
    with probability one half), ``random_crop`` and ``random_resized_crop`` (a random window,
    resized to a fixed size; the same window for every image of a batch).
Colour
    ``random_brightness``, ``random_contrast``, ``random_saturation``, ``random_hue``,
    ``random_color_jitter`` (the four in random order), ``adjust_lighting`` and
    ``random_lighting`` (AlexNet's PCA lighting noise), on one ``(H, W, C)`` image of 1 or 3
    channels. The arithmetic is float32 and the results are cast back to the input's type
    (uint8 results saturate at 0 and 255), exactly as MXNet 1.9.1 computes them, including its
    quirks: saturation blends each pixel with 0.114 times its blue value, and hue adds
    ``factor * 360`` degrees to the hue. Their gradient passes the output gradient through
    unchanged, as MXNet's does.

The random operators draw from the random generator of the input's context, so
``mx.random.seed`` makes them reproducible.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError
from .core import rng as _rng
from .core.array import ArrayT
from .core.op import Op, apply, with_out

__all__ = [
    "to_tensor",
    "normalize",
    "resize",
    "crop",
    "random_crop",
    "random_resized_crop",
    "flip_left_right",
    "flip_top_bottom",
    "random_flip_left_right",
    "random_flip_top_bottom",
    "random_brightness",
    "random_contrast",
    "random_saturation",
    "random_hue",
    "random_color_jitter",
    "adjust_lighting",
    "random_lighting",
]

_F32 = np.float32
#: ITU-R 601 luma weights of red, green and blue
_LUMA = (_F32(0.299), _F32(0.587), _F32(0.114))
#: AlexNet's PCA eigenvectors of the RGB pixel covariance, scaled by their eigenvalues
_EIG = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ]
).astype(_F32)
#: OpenCV's interpolation codes: nearest, bilinear, bicubic, area, Lanczos, exact bilinear
_INTERPS = (0, 1, 2, 3, 4, 5)
_RESIZABLE = (np.uint8, np.int32, np.float32, np.float64)
_NUMERIC = (np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64)


# ------------------------------------------------------------------ checks and helpers
def _shape(data: Any) -> tuple[int, ...]:
    return tuple(data.shape)


def _check_numeric(what: str, data: ArrayT) -> None:
    dt = np.dtype(data.dtype)
    if dt.type not in _NUMERIC:
        raise MXNetError(f"image.{what}: does not take {dt.name} images")


def _check_image(what: str, data: ArrayT, batch: bool = False) -> None:
    """An ``(H, W, C)`` image (or, with ``batch``, an ``(N, H, W, C)`` batch) of 1 or 3
    channels."""
    shape = _shape(data)
    ndims = (3, 4) if batch else (3,)
    if len(shape) not in ndims:
        layout = "(height, width, channels)" + (" or (N, height, width, channels)" if batch else "")
        raise MXNetError(f"image.{what}: the input image must have shape {layout}, got {shape}")
    if shape[-1] not in (1, 3):
        raise MXNetError(
            f"image.{what}: the last axis must be the channel axis, with 1 or 3 channels; "
            f"got shape {shape}"
        )
    _check_numeric(what, data)


def _factors(what: str, min_factor: float, max_factor: float) -> tuple[float, float]:
    lo, hi = float(min_factor), float(max_factor)
    if lo < 0 or hi < 0:
        raise MXNetError(
            f"image.{what}: min_factor and max_factor must be at least 0, got {lo} and {hi}"
        )
    if lo > hi:
        raise MXNetError(f"image.{what}: min_factor {lo} is greater than max_factor {hi}")
    return lo, hi


def _floats(what: str, name: str, values: Any) -> tuple[float, ...]:
    """``values`` (one number or a sequence) as a tuple of float32 values."""
    if isinstance(values, (int, float)):
        return (float(_F32(values)),)
    flat = np.atleast_1d(np.asarray(values, dtype=np.float64)).ravel()
    if flat.size == 0:
        raise MXNetError(f"image.{what}: {name} must hold at least one value")
    return tuple(float(v) for v in flat.astype(_F32))


def _on_host(op: Op, x: Any) -> np.ndarray:
    return np.asarray(op.be.to_host(x))


def _on_device(op: Op, arr: np.ndarray) -> Any:
    if op.xp is np:
        return arr
    return op.be.asarray(arr, arr.dtype, op.ctx.device_id)


def _uniform(op: Op, low: float, high: float, n: int = 1) -> np.ndarray:
    """``n`` float32 draws from U[low, high) of the context's generator."""
    out = op.be.uniform(_rng.generator(op.ctx), float(low), float(high), (n,), "float32")
    return np.asarray(op.be.to_host(out), dtype=_F32)


def _normal(op: Op, scale: float, n: int) -> np.ndarray:
    out = op.be.normal(_rng.generator(op.ctx), 0.0, float(scale), (n,), "float32")
    return np.asarray(op.be.to_host(out), dtype=_F32)


def _store(val: np.ndarray, dtype: Any) -> np.ndarray:
    """float32 results written into an image of ``dtype``: uint8 saturates at 0 and 255,
    other integers truncate, floating types round."""
    dt = np.dtype(dtype)
    if dt == np.uint8:
        return np.clip(val, 0, 255).astype(np.uint8)
    if dt.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(val).astype(dt)
    return val.astype(dt)


def _wrap_int(val: np.ndarray, dtype: Any) -> np.ndarray:
    """Values converted to an integer type the way a C cast does on x86: truncated toward zero
    to a 64-bit integer, then wrapped into the type's range."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.trunc(val).astype(np.int64).astype(dtype)


def _times(x: np.ndarray, c: Any) -> np.ndarray:
    """``x * c`` for an image ``x`` and a float ``c``, in the type C++ computes it in: float64
    for float64 images, half (rounded) for float16 ones, float32 for the others."""
    if x.dtype == np.float64:
        return x * np.float64(c)
    if x.dtype == np.float16:
        return (x.astype(_F32) * _F32(c)).astype(np.float16)
    return x.astype(_F32) * _F32(c)


def _plus(a: np.ndarray, c: Any) -> np.ndarray:
    """``a + c`` for a product ``a`` of :func:`_times` and a float ``c``, in ``a``'s type."""
    if a.dtype == np.float64:
        return a + np.float64(c)
    if a.dtype == np.float16:
        return (a.astype(_F32) + np.asarray(c, _F32)).astype(np.float16)
    return a + np.asarray(c, _F32)


# ------------------------------------------------------------------ to_tensor, normalize
class _ToTensor(Op):
    def forward(self, x):
        xp = self.xp
        self.dtype = x.dtype
        axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
        if x.dtype == np.float64:
            y = (x / 255.0).astype(_F32)
        elif x.dtype == np.float16:  # half arithmetic rounds its quotient to half
            y = (x.astype(_F32) / _F32(255)).astype(np.float16).astype(_F32)
        else:
            y = x.astype(_F32) / _F32(255)
        return xp.ascontiguousarray(xp.transpose(y, axes))

    def backward(self, g):
        axes = (1, 2, 0) if g.ndim == 3 else (0, 2, 3, 1)
        return (self.xp.transpose(g, axes) / _F32(255)).astype(self.dtype)


def to_tensor(data: ArrayT) -> ArrayT:
    """Turn an ``(H, W, C)`` image with values 0-255 into a float32 ``(C, H, W)`` tensor with
    values 0-1; an ``(N, H, W, C)`` batch becomes ``(N, C, H, W)``.

    The values are divided by 255 in float32 (float64 images in float64, then rounded).

    Raises
    ------
    MXNetError
        For inputs that are neither 3-d nor 4-d.

    Examples
    --------
    >>> img = mx.nd.array([[[0, 51, 255]]], dtype='uint8')
    >>> mx.nd.image.to_tensor(img).asnumpy().ravel()
    array([0. , 0.2, 1. ], dtype=float32)
    """
    shape = _shape(data)
    if len(shape) not in (3, 4):
        raise MXNetError(
            "image.to_tensor: the input image must have shape (height, width, channels) or "
            f"(N, height, width, channels), got {shape}"
        )
    _check_numeric("to_tensor", data)
    return apply(_ToTensor, (data,))


@functools.lru_cache(maxsize=64)
def _channel_constants(values: tuple[float, ...], c: int) -> np.ndarray:
    """float32 ``values`` (one, or one per channel) shaped ``(c, 1, 1)``."""
    out = np.empty((c, 1, 1), _F32)
    out[:, 0, 0] = values
    out.flags.writeable = False
    return out


class _Normalize(Op):
    def forward(self, x, mean, std):
        xp = self.xp
        c = x.shape[-3]
        m32 = _channel_constants(mean, c)
        s32 = self.std = _channel_constants(std, c)
        dt = x.dtype
        with np.errstate(divide="ignore", invalid="ignore"):
            if dt == np.float64:
                return (x - xp.asarray(m32, np.float64)) / xp.asarray(s32, np.float64)
            if dt == np.float16:  # half arithmetic rounds after each operation
                diff = (x.astype(_F32) - xp.asarray(m32)).astype(np.float16)
                return (diff.astype(_F32) / xp.asarray(s32)).astype(np.float16)
            val = (x.astype(_F32) - xp.asarray(m32)) / xp.asarray(s32)
            if dt == _F32:
                return val
            return _on_device(self, _wrap_int(_on_host(self, val), dt))

    def backward(self, g):
        inv = self.xp.asarray(1.0 / self.std.astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g.astype(np.float64) * inv).astype(g.dtype)


def normalize(data: ArrayT, mean: Any = 0.0, std: Any = 1.0) -> ArrayT:
    """Normalise a ``(C, H, W)`` tensor, or an ``(N, C, H, W)`` batch, channel by channel:
    ``out[c] = (data[c] - mean[c]) / std[c]``.

    Parameters
    ----------
    data : NDArray
        1 or 3 channels; any numeric type (the result has the input's type).
    mean : float or sequence of float, default 0
        One value for every channel, or one per channel (float32 values).
    std : float or sequence of float, default 1
        One value for every channel, or one per channel.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d, a channel axis of other than 1 or 3 elements, or
        a number of means or standard deviations that is neither 1 nor the number of channels.

    Examples
    --------
    >>> x = mx.nd.ones((3, 1, 1))
    >>> mx.nd.image.normalize(x, mean=(0, 1, 2), std=(2, 1, 0.5)).asnumpy().ravel()
    array([ 0.5,  0. , -2. ], dtype=float32)
    """
    shape = _shape(data)
    if len(shape) not in (3, 4):
        raise MXNetError(
            "image.normalize: the input tensor must have shape (channels, height, width) or "
            f"(N, channels, height, width), got {shape}"
        )
    c = shape[-3]
    if c not in (1, 3):
        raise MXNetError(
            f"image.normalize: the channel axis (axis {len(shape) - 3}) must have 1 or 3 "
            f"elements, got shape {shape}"
        )
    _check_numeric("normalize", data)
    m = _floats("normalize", "mean", mean)
    s = _floats("normalize", "std", std)
    for values, name in ((m, "mean"), (s, "std")):
        if len(values) not in (1, c):
            raise MXNetError(
                f"image.normalize: got {len(values)} {name} values for {c} channels; give one "
                "value, or one per channel"
            )
    return apply(_Normalize, (data,), mean=m, std=s)


# ------------------------------------------------------------------ resize
def _cv_resize(img: np.ndarray, width: int, height: int, interp: int) -> np.ndarray:
    """One ``(H, W, C)`` image resized to ``(height, width, C)`` with MXNet 1.9.1's pixels
    (:mod:`mxrs._cv`, shared with ``mx.image.imresize``)."""
    from .. import _cv

    return _cv.resize(np.ascontiguousarray(img), width, height, interp).reshape(
        height, width, img.shape[2]
    )


def _resize_host(img: np.ndarray, width: int, height: int, interp: int) -> np.ndarray:
    if img.ndim == 3:
        return _cv_resize(img, width, height, interp)
    out = np.empty((img.shape[0], height, width, img.shape[3]), img.dtype)
    for i in range(img.shape[0]):
        out[i] = _cv_resize(img[i], width, height, interp)
    return out


class _Resize(Op):
    def forward(self, x, width, height, interp):
        return _on_device(self, _resize_host(_on_host(self, x), width, height, interp))

    def backward(self, g):
        raise MXNetError("image.resize has no gradient")


def _check_resizable(what: str, data: ArrayT) -> None:
    dt = np.dtype(data.dtype)
    if dt == np.float16:
        raise MXNetError(f"image.{what}: OpenCV does not resize float16 images")
    if dt.type not in _RESIZABLE:
        raise MXNetError(
            f"image.{what}: resizes uint8, int32, float32 and float64 images, got {dt.name}"
        )


def _check_interp(what: str, interp: Any) -> int:
    code = int(interp)
    if code not in _INTERPS:
        raise MXNetError(
            f"image.{what}: interp={interp} is not an interpolation method; use 0 (nearest), "
            "1 (bilinear), 2 (bicubic), 3 (area), 4 (Lanczos) or 5 (exact bilinear)"
        )
    return code


def _target_size(size: Any, keep_ratio: bool, h: int, w: int) -> tuple[int, int]:
    """``(width, height)`` of a resized ``h`` x ``w`` image."""
    dims = tuple(int(s) for s in np.atleast_1d(np.asarray(size, dtype=np.int64)).ravel())
    if len(dims) not in (1, 2):
        raise MXNetError(
            f"image.resize: size must hold 1 or 2 values, (size,) or (width, height), "
            f"got {len(dims)}: {dims}"
        )
    if len(dims) == 2:
        if dims[0] <= 0 or dims[1] <= 0:
            raise MXNetError(
                f"image.resize: the width and height must be greater than 0, got {dims}"
            )
        return dims[0], dims[1]
    s = dims[0]
    if s <= 0:
        raise MXNetError(f"image.resize: the size must be greater than 0, got {s}")
    if not keep_ratio:
        return s, s
    if h > w:
        return s, h * s // w
    return w * s // h, s


def resize(data: ArrayT, size: Any = (), keep_ratio: bool = False, interp: int = 1) -> ArrayT:
    """Resize an ``(H, W, C)`` image, or each image of an ``(N, H, W, C)`` batch, with
    OpenCV's ``cv2.resize``.

    Parameters
    ----------
    data : NDArray
        uint8, int32 (nearest neighbour only), float32 or float64 values.
    size : int or (int, int)
        ``(width, height)`` of the result, or one number: both sides, or with ``keep_ratio``
        the shorter side (the longer one keeps the aspect ratio, rounded down).
    keep_ratio : bool, default False
        With one ``size``, resize the shorter side to it instead of both sides.
    interp : int, default 1
        OpenCV's interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 5 exact
        bilinear.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d, a ``size`` of other than 1 or 2 positive values,
        an unknown ``interp``, or a type OpenCV cannot resize (float16, int64...).

    Examples
    --------
    >>> img = mx.nd.zeros((4, 6, 3), dtype='uint8')
    >>> mx.nd.image.resize(img, (3, 2)).shape
    (2, 3, 3)
    >>> mx.nd.image.resize(img, 2, keep_ratio=True).shape
    (2, 3, 3)
    """
    shape = _shape(data)
    if len(shape) not in (3, 4):
        raise MXNetError(
            f"image.resize: the input image must be 3-d (height, width, channels) or 4-d "
            f"(N, height, width, channels), got {len(shape)}-d {shape}"
        )
    h, w = shape[-3], shape[-2]
    width, height = _target_size(size, keep_ratio, h, w)
    code = _check_interp("resize", interp)
    _check_resizable("resize", data)
    return apply(_Resize, (data,), width=width, height=height, interp=code)


# ------------------------------------------------------------------ crops
class _Crop(Op):
    def forward(self, x, x0, y0, width, height):
        self.shape, self.box = x.shape, (x0, y0, width, height)
        win = (slice(y0, y0 + height), slice(x0, x0 + width))
        return self.xp.ascontiguousarray(x[win] if x.ndim == 3 else x[(slice(None),) + win])

    def backward(self, g):
        x0, y0, width, height = self.box
        grad = self.xp.zeros(self.shape, dtype=g.dtype)
        win = (slice(y0, y0 + height), slice(x0, x0 + width))
        grad[win if g.ndim == 3 else (slice(None),) + win] = g
        return grad


def _check_crop_input(what: str, data: ArrayT) -> tuple[int, ...]:
    shape = _shape(data)
    if len(shape) not in (3, 4):
        raise MXNetError(
            f"image.{what}: expects a 3-d (h, w, c) or 4-d (n, h, w, c) image, got "
            f"{len(shape)}-d {shape}"
        )
    if shape[-1] not in (1, 3):
        raise MXNetError(
            f"image.{what}: the input image must have 1 or 3 channels, got shape {shape}"
        )
    _check_numeric(what, data)
    return shape


def crop(data: ArrayT, x: int, y: int, width: int, height: int) -> ArrayT:
    """Cut the ``width`` x ``height`` window whose top-left pixel is column ``x``, row ``y``
    out of an ``(H, W, C)`` image, or out of each image of an ``(N, H, W, C)`` batch.

    The gradient is the output gradient inside the window and zero outside it.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d or have other than 1 or 3 channels, a non-positive
        ``width`` or ``height``, a negative ``x`` or ``y``, or a window reaching past the image.

    Examples
    --------
    >>> img = mx.nd.arange(24).reshape((2, 4, 3))
    >>> mx.nd.image.crop(img, 1, 0, 2, 1).asnumpy()[..., 0]
    array([[3., 6.]], dtype=float32)
    """
    shape = _check_crop_input("crop", data)
    x0, y0, cw, ch = int(x), int(y), int(width), int(height)
    if cw <= 0 or ch <= 0:
        raise MXNetError(
            f"image.crop: the height and width must be greater than 0, got {ch} and {cw}"
        )
    if x0 < 0 or y0 < 0:
        raise MXNetError(f"image.crop: x and y must not be negative, got {x0} and {y0}")
    if x0 + cw > shape[-2]:
        raise MXNetError(
            f"image.crop: x + width ({x0} + {cw}) should not be greater than the input width "
            f"{shape[-2]}"
        )
    if y0 + ch > shape[-3]:
        raise MXNetError(
            f"image.crop: y + height ({y0} + {ch}) should not be greater than the input height "
            f"{shape[-3]}"
        )
    return apply(_Crop, (data,), x0=x0, y0=y0, width=cw, height=ch)


def _scale_down(src_w: int, src_h: int, w: int, h: int) -> tuple[int, int]:
    """The largest ``(w, h)`` of the aspect ratio of ``w`` x ``h`` that fits the source."""
    fw, fh = float(w), float(h)
    if src_h < fh:
        fw, fh = fw * src_h / fh, float(src_h)
    if src_w < fw:
        fw, fh = float(src_w), fh * src_w / fw
    return int(fw), int(fh)


def _crop_resize(img: np.ndarray, box: tuple[int, int, int, int], size, interp) -> np.ndarray:
    x0, y0, cw, ch = box
    win = (slice(y0, y0 + ch), slice(x0, x0 + cw))
    out = img[win] if img.ndim == 3 else img[(slice(None),) + win]
    if (cw, ch) != size:
        return _resize_host(out, size[0], size[1], interp)
    return np.ascontiguousarray(out)


class _RandomCrop(Op):
    def forward(self, x, xrange, yrange, width, height, interp):
        img = _on_host(self, x)
        src_h, src_w = img.shape[-3], img.shape[-2]
        cw, ch = _scale_down(src_w, src_h, width, height)
        u = _uniform(self, 0.0, 1.0, 2)
        x0 = int((xrange[0] + (xrange[1] - xrange[0]) * float(u[0])) * (src_w - cw))
        y0 = int((yrange[0] + (yrange[1] - yrange[0]) * float(u[1])) * (src_h - ch))
        return _on_device(self, _crop_resize(img, (x0, y0, cw, ch), (width, height), interp))

    def backward(self, g):
        raise MXNetError("image.random_crop has no gradient")


def _unit_range(what: str, name: str, values: Any) -> tuple[float, float]:
    pair = tuple(float(v) for v in values)
    if len(pair) != 2 or not 0.0 <= pair[0] <= pair[1] <= 1.0:
        raise MXNetError(
            f"image.{what}: {name} must be two values lo <= hi within [0, 1], got {values}"
        )
    return pair[0], pair[1]


def _out_size(what: str, width: Any, height: Any) -> tuple[int, int]:
    if width is None or height is None:
        raise MXNetError(f"image.{what}: width and height are required")
    w, h = int(width), int(height)
    if w <= 0 or h <= 0:
        raise MXNetError(
            f"image.{what}: the height and width must be greater than 0, got {h} and {w}"
        )
    return w, h


def random_crop(
    data: ArrayT,
    xrange: Sequence[float] = (0.0, 1.0),
    yrange: Sequence[float] = (0.0, 1.0),
    width: int | None = None,
    height: int | None = None,
    interp: int = 1,
) -> ArrayT:
    """Cut a random window out of an ``(H, W, C)`` image (the same window out of each image of
    an ``(N, H, W, C)`` batch) and resize it to ``width`` x ``height``.

    The window is the largest one of the output's aspect ratio that fits the image (the
    output size itself when it fits); its left edge lies at a fraction drawn from ``xrange`` of
    the free width, its top edge at a fraction drawn from ``yrange`` of the free height.

    Parameters
    ----------
    data : NDArray
        1 or 3 channels.
    xrange, yrange : (float, float), default (0, 1)
        Ranges within [0, 1] of the window's position.
    width, height : int
        The output size (required).
    interp : int, default 1
        OpenCV's interpolation for the resize (see :func:`resize`).

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d or have other than 1 or 3 channels, a missing or
        non-positive size, or ranges outside [0, 1].
    """
    _check_crop_input("random_crop", data)
    w, h = _out_size("random_crop", width, height)
    xr = _unit_range("random_crop", "xrange", xrange)
    yr = _unit_range("random_crop", "yrange", yrange)
    code = _check_interp("random_crop", interp)
    _check_resizable("random_crop", data)
    return apply(_RandomCrop, (data,), xrange=xr, yrange=yr, width=w, height=h, interp=code)


class _RandomResizedCrop(Op):
    def forward(self, x, width, height, area, ratio, interp, max_trial):
        img = _on_host(self, x)
        src_h, src_w = img.shape[-3], img.shape[-2]
        src_area = src_h * src_w
        log_lo, log_hi = float(np.log(ratio[0])), float(np.log(ratio[1]))
        for _ in range(max_trial):
            target = float(_uniform(self, area[0], area[1])[0]) * src_area
            new_ratio = float(np.exp(_uniform(self, log_lo, log_hi)[0]))
            cw = int(round(np.sqrt(target * new_ratio)))
            ch = int(round(np.sqrt(target / new_ratio)))
            if 0 < cw <= src_w and 0 < ch <= src_h:
                u = _uniform(self, 0.0, 1.0, 2)
                x0, y0 = int(float(u[0]) * (src_w - cw)), int(float(u[1]) * (src_h - ch))
                box = (x0, y0, cw, ch)
                break
        else:  # the centre window of the output's aspect ratio
            cw, ch = _scale_down(src_w, src_h, width, height)
            box = ((src_w - cw) // 2, (src_h - ch) // 2, cw, ch)
        return _on_device(self, _crop_resize(img, box, (width, height), interp))

    def backward(self, g):
        raise MXNetError("image.random_resized_crop has no gradient")


def random_resized_crop(
    data: ArrayT,
    width: int,
    height: int,
    area: Any = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    interp: int = 1,
    max_trial: int = 10,
) -> ArrayT:
    """Cut a window of random area and aspect ratio out of an ``(H, W, C)`` image (the same
    window out of each image of an ``(N, H, W, C)`` batch) and resize it to ``width`` x
    ``height``.

    Each trial draws an area (a fraction of the image's, from ``area``) and an aspect ratio
    (log-uniformly from ``ratio``); the first window that fits is placed at random. When none
    of ``max_trial`` trials fits, the centre window of the output's aspect ratio is used.

    Parameters
    ----------
    data : NDArray
        1 or 3 channels.
    width, height : int
        The output size.
    area : float or (float, float), default (0.08, 1.0)
        The range of the window's area as a fraction of the image's; one number is the lower
        end, with 1 the upper.
    ratio : (float, float), default (3/4, 4/3)
        The range of the window's aspect ratio (width / height).
    interp : int, default 1
        OpenCV's interpolation for the resize (see :func:`resize`).
    max_trial : int, default 10
        Trials before falling back to the centre window.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d or have other than 1 or 3 channels, a non-positive
        size, or ranges that are not two positive increasing values.
    """
    _check_crop_input("random_resized_crop", data)
    w, h = _out_size("random_resized_crop", width, height)
    if np.ndim(area) == 0:
        area = (float(area), 1.0)
    a = tuple(float(v) for v in area)
    r = tuple(float(v) for v in ratio)
    if len(a) != 2 or not 0.0 < a[0] <= a[1]:
        raise MXNetError(
            f"image.random_resized_crop: area must be two values 0 < lo <= hi, got {area}"
        )
    if len(r) != 2 or not 0.0 < r[0] <= r[1]:
        raise MXNetError(
            f"image.random_resized_crop: ratio must be two values 0 < lo <= hi, got {ratio}"
        )
    code = _check_interp("random_resized_crop", interp)
    _check_resizable("random_resized_crop", data)
    return apply(
        _RandomResizedCrop, (data,), width=w, height=h, area=a, ratio=r, interp=code,
        max_trial=int(max_trial),
    )  # fmt: skip


# ------------------------------------------------------------------ flips
class _Flip(Op):
    def forward(self, x, axis, random):
        self.axis = x.ndim + axis
        self.flipped = not random or bool(_uniform(self, 0.0, 1.0)[0] < 0.5)
        if not self.flipped:
            return x.copy()
        return self.xp.ascontiguousarray(self.xp.flip(x, axis=self.axis))

    def backward(self, g):
        return self.xp.flip(g, axis=self.axis) if self.flipped else g


def _flip(what: str, data: ArrayT, axis: int, random: bool) -> ArrayT:
    _check_image(what, data, batch=True)
    return apply(_Flip, (data,), axis=axis, random=random)


def flip_left_right(data: ArrayT) -> ArrayT:
    """Mirror an ``(H, W, C)`` image (or each image of an ``(N, H, W, C)`` batch) left to
    right.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d or have other than 1 or 3 channels.
    """
    return _flip("flip_left_right", data, -2, False)


def flip_top_bottom(data: ArrayT) -> ArrayT:
    """Mirror an ``(H, W, C)`` image (or each image of an ``(N, H, W, C)`` batch) top to
    bottom.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or 4-d or have other than 1 or 3 channels.
    """
    return _flip("flip_top_bottom", data, -3, False)


def random_flip_left_right(data: ArrayT) -> ArrayT:
    """:func:`flip_left_right` with probability one half (one draw for a whole batch),
    else a copy of ``data``."""
    return _flip("random_flip_left_right", data, -2, True)


def random_flip_top_bottom(data: ArrayT) -> ArrayT:
    """:func:`flip_top_bottom` with probability one half (one draw for a whole batch), else
    a copy of ``data``."""
    return _flip("random_flip_top_bottom", data, -3, True)


# ------------------------------------------------------------------ colour
def _brightness(img: np.ndarray, alpha: float) -> np.ndarray:
    return _store(img.astype(_F32) * _F32(alpha), img.dtype)


def _contrast(img: np.ndarray, alpha: float) -> np.ndarray:
    a = _F32(alpha)
    length = img.shape[0] * img.shape[1]
    if img.shape[2] > 1:
        terms = np.stack([_times(img[..., c], _LUMA[c]) for c in range(3)], axis=-1).ravel()
    else:
        terms = img.ravel()
    # summed one pixel after the other in float32, as MXNet does
    total = np.cumsum(terms.astype(_F32), dtype=_F32)[-1] if terms.size else _F32(0)
    gray_mean = _F32(total) / _F32(length)
    beta = (_F32(1) - a) * gray_mean
    return _store(_plus(_times(img, a), beta).astype(_F32), img.dtype)


def _saturation(img: np.ndarray, alpha: float) -> np.ndarray:
    if img.shape[2] == 1:
        return img.copy()
    a = _F32(alpha)
    gray = _times(img[..., 2:3], _LUMA[2]).astype(_F32) * (_F32(1) - a)
    return _store(_plus(_times(img, a), gray).astype(_F32), img.dtype)


def _rgb_to_hls(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue (degrees), lightness and saturation of float32 RGB values 0-255."""
    f = _F32
    r, g, b = (rgb[..., i] / f(255) for i in range(3))
    vmax = np.fmax(np.fmax(r, g), b)
    vmin = np.fmin(np.fmin(r, g), b)
    diff = vmax - vmin
    light = (vmax + vmin) * f(0.5)
    colour = diff > np.finfo(f).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(light < f(0.5), diff / (vmax + vmin), diff / (f(2) - vmax - vmin))
        step = f(60) / diff
        hue = np.where(
            vmax == r,
            (g - b) * step,
            np.where(vmax == g, (b - r) * step + f(120), (r - g) * step + f(240)),
        )
    hue = np.where(hue < 0, hue + f(360), hue)
    zero = f(0)
    return np.where(colour, hue, zero), light, np.where(colour, sat, zero)


#: for each sector of the hue circle, which of (p2, p1, rising, falling) blue, green and red are
_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _hls_to_rgb(hue: np.ndarray, light: np.ndarray, sat: np.ndarray) -> np.ndarray:
    f = _F32
    p2 = np.where(light <= f(0.5), light * (f(1) + sat), light + sat - light * sat)
    p1 = f(2) * light - p2
    h = hue * (f(1) / f(60))
    while True:
        low = h < 0
        if not low.any():
            break
        h = np.where(low, h + f(6), h)
    while True:
        high = h >= 6
        if not high.any():
            break
        h = np.where(high, h - f(6), h)
    sector = h.astype(np.int64)
    h = h - sector.astype(f)
    tab = np.stack([p2, p1, p1 + (p2 - p1) * (f(1) - h), p1 + (p2 - p1) * h], axis=-1)
    pick = _SECTORS[np.clip(sector, 0, 5)]  # (..., 3): the columns of blue, green, red
    bgr = np.take_along_axis(tab, pick, axis=-1)
    rgb = bgr[..., ::-1]
    grey = sat == 0
    rgb = np.where(grey[..., None], light[..., None], rgb)
    return rgb * f(255)


def _hue(img: np.ndarray, alpha: float) -> np.ndarray:
    if img.shape[2] == 1:
        return img.copy()
    hue, light, sat = _rgb_to_hls(img.astype(_F32))
    hue = hue + _F32(alpha) * _F32(360)
    return _store(_hls_to_rgb(hue, light, sat), img.dtype)


def _lighting(img: np.ndarray, alpha: Any) -> np.ndarray:
    if img.shape[2] == 1:
        return img.copy()
    a = np.asarray(alpha, _F32)
    pca = (_EIG[:, 0] * a[0] + _EIG[:, 1] * a[1]) + _EIG[:, 2] * a[2]
    return _store(img.astype(_F32) + pca, img.dtype)


_JITTER = ("brightness", "contrast", "saturation", "hue")
_ADJUST = {
    "brightness": _brightness,
    "contrast": _contrast,
    "saturation": _saturation,
    "hue": _hue,
}


class _Color(Op):
    """A colour change of one image; the gradient passes through unchanged."""

    keeps_inputs = False

    def forward(self, x, how, args):
        img = _on_host(self, x)
        if how == "lighting":
            out = _lighting(img, args)
        elif how == "random_lighting":
            out = _lighting(img, _normal(self, args[0], 3))
        elif how == "jitter":
            out = img
            for i in self.be.to_host(self.be.permutation(_rng.generator(self.ctx), 4)):
                name, s = _JITTER[int(i)], args[int(i)]
                if s > 0:
                    draw = float(_uniform(self, -s, s)[0])
                    out = _ADJUST[name](out, draw if name == "hue" else 1.0 + draw)
            if out is img:
                out = img.copy()
        else:
            out = _ADJUST[how](img, float(_uniform(self, args[0], args[1])[0]))
        return _on_device(self, out)

    def backward(self, g):
        return g


def _random_enhance(how: str, data: ArrayT, min_factor: float, max_factor: float) -> ArrayT:
    _check_image(f"random_{how}", data)
    lo, hi = _factors(f"random_{how}", min_factor, max_factor)
    return apply(_Color, (data,), how=how, args=(lo, hi))


def random_brightness(data: ArrayT, min_factor: float, max_factor: float) -> ArrayT:
    """Multiply an ``(H, W, C)`` image by a factor drawn from ``[min_factor, max_factor]``.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels, and negative or
        decreasing factors.
    """
    return _random_enhance("brightness", data, min_factor, max_factor)


def random_contrast(data: ArrayT, min_factor: float, max_factor: float) -> ArrayT:
    """Blend an ``(H, W, C)`` image with its mean grey level: ``x * a + (1 - a) * mean``, the
    factor ``a`` drawn from ``[min_factor, max_factor]`` (the grey level of a pixel is
    ``0.299 R + 0.587 G + 0.114 B``).

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels, and negative or
        decreasing factors.
    """
    return _random_enhance("contrast", data, min_factor, max_factor)


def random_saturation(data: ArrayT, min_factor: float, max_factor: float) -> ArrayT:
    """Blend each pixel of an RGB ``(H, W, 3)`` image with ``0.114`` times its blue value:
    ``x * a + (1 - a) * 0.114 * B``, the factor ``a`` drawn from ``[min_factor, max_factor]``
    (a one-channel image is returned unchanged).

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels, and negative or
        decreasing factors.
    """
    return _random_enhance("saturation", data, min_factor, max_factor)


def random_hue(data: ArrayT, min_factor: float, max_factor: float) -> ArrayT:
    """Rotate the hue of an RGB ``(H, W, 3)`` image by ``a * 360`` degrees (in HLS space), the
    factor ``a`` drawn from ``[min_factor, max_factor]`` (a one-channel image is returned
    unchanged).

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels, and negative or
        decreasing factors.
    """
    return _random_enhance("hue", data, min_factor, max_factor)


def random_color_jitter(
    data: ArrayT, brightness: float, contrast: float, saturation: float, hue: float
) -> ArrayT:
    """Change the brightness, contrast, saturation and hue of an ``(H, W, C)`` image, in a
    random order, each one whose strength is positive: brightness, contrast and saturation by
    a factor ``1 + d``, hue by ``d`` (see :func:`random_hue`), ``d`` drawn from
    ``[-strength, strength]``.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels.
    """
    _check_image("random_color_jitter", data)
    args = (float(brightness), float(contrast), float(saturation), float(hue))
    return apply(_Color, (data,), how="jitter", args=args)


def adjust_lighting(data: ArrayT, alpha: Sequence[float]) -> ArrayT:
    """Add AlexNet's PCA lighting change to an RGB ``(H, W, 3)`` image: ``alpha`` weighs the
    three principal components of the pixel colours (a one-channel image is returned
    unchanged).

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels, and an ``alpha`` of
        other than 3 values.
    """
    _check_image("adjust_lighting", data)
    a = _floats("adjust_lighting", "alpha", alpha)
    if len(a) != 3:
        raise MXNetError(f"image.adjust_lighting: alpha must hold 3 values (R, G, B), got {len(a)}")
    return apply(_Color, (data,), how="lighting", args=a)


def random_lighting(data: ArrayT, alpha_std: float = 0.05) -> ArrayT:
    """:func:`adjust_lighting` with the three weights drawn from ``N(0, alpha_std**2)``.

    Raises
    ------
    MXNetError
        For inputs that are not 3-d or have other than 1 or 3 channels.
    """
    _check_image("random_lighting", data)
    return apply(_Color, (data,), how="random_lighting", args=(float(alpha_std),))


def _with_out() -> None:
    """Let every operator here take MXNet's ``out=`` and ``name=`` keywords."""
    space = globals()
    for name in __all__:
        space[name] = with_out(space[name])


_with_out()
