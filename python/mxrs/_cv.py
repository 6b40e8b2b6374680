"""OpenCV on NumPy images: decoding, resizing and border padding with MXNet 1.9.1's numbers.

MXNet 1.9.1 builds OpenCV 3.4.2 in; these functions call the installed OpenCV (``cv2``) and give
the same pixels. Where the two OpenCV versions round differently, the computation is done here
as OpenCV 3.4.2 does it: bicubic resizing of ``uint8`` images (whose vertical pass OpenCV 3.4.2
computes in float32 eight values at a time and in fixed point for the rest of a row), and
bilinear and bicubic resizing of float images (positions and weights in float32).

Every function takes and returns NumPy arrays in MXNet's image layout, height x width x channels,
and raises :class:`~mxrs.base.MXNetError` for input MXNet refuses. OpenCV is imported when a
function first needs it, so ``import mxrs`` does not load it. ``mx.image``, ``mx.nd.image`` and
``mx.recordio`` share these functions (this module sits below all three).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .base import MXNetError

__all__ = ["decode", "read", "resize", "make_border"]


def _cv2() -> Any:
    import cv2

    return cv2


#: OpenCV's interpolation codes that ``cv::resize`` of OpenCV 3.4.2 knows: nearest, bilinear,
#: bicubic, area, Lanczos-4 and bit-exact bilinear.
_RESIZE_INTERPS = (0, 1, 2, 3, 4, 5)
#: OpenCV's border types: constant, reflect, reflect-101, replicate, wrap (16: "isolated", which
#: a whole image pads as the type in its low bits).
_BORDER_TYPES = (0, 1, 2, 3, 4)
_BORDER_ISOLATED = 16

# Fixed-point scale of OpenCV's resize coefficients (INTER_RESIZE_COEF_BITS = 11).
_COEF_SCALE = 2048
# Values OpenCV 3.4.2's SSE2 vertical bicubic pass handles at once; the rest of a row (width x
# channels modulo 8) goes through its fixed-point pass.
_VEC_WIDTH = 8


def _check_mat_dtype(img: np.ndarray, what: str) -> None:
    if img.dtype == np.float16:
        raise MXNetError(f"{what}: OpenCV image mats do not support float16 images")


def _as_hwc(img: np.ndarray, channels: int) -> np.ndarray:
    """OpenCV drops the channel axis of one-channel images; give it back."""
    return img.reshape(img.shape[0], img.shape[1], channels) if img.ndim == 2 else img


def decode(buf: np.ndarray, flag: int = 1, to_rgb: bool = True) -> np.ndarray:
    """Decode the encoded image in the ``uint8`` buffer ``buf``.

    Parameters
    ----------
    buf : numpy.ndarray of uint8
        The bytes of a JPEG, PNG, ... file.
    flag : int
        0: one-channel grayscale; 1: three-channel color (other positive values are OpenCV's
        ``IMREAD_*`` flags, which must still give a three-channel 8-bit image).
    to_rgb : bool
        Color images in RGB order rather than OpenCV's BGR.

    Returns
    -------
    numpy.ndarray
        ``uint8`` image of shape ``(height, width, 1 or 3)``.
    """
    if isinstance(flag, bool) or int(flag) != flag or flag < 0:
        raise MXNetError(f"imdecode: flag must be 0 (grayscale) or 1 (color), got {flag!r}")
    flag = int(flag)
    if buf.size == 0:
        raise MXNetError("imdecode: input cannot be an empty buffer")
    if buf.dtype != np.uint8:
        raise MXNetError(f"imdecode: input needs to be a uint8 buffer, got {buf.dtype}")
    cv2 = _cv2()
    try:
        img = cv2.imdecode(np.ascontiguousarray(buf.reshape(-1)), flag)
    except cv2.error as e:
        raise MXNetError(f"imdecode: decoding failed, invalid image file ({e})") from None
    if img is None or img.size == 0:
        raise MXNetError(
            f"imdecode: decoding failed, invalid image file ({buf.size} bytes that no "
            "OpenCV decoder reads as an image)"
        )
    channels = 1 if flag == 0 else 3
    img = _as_hwc(img, 1)
    if img.shape[2] != channels or img.dtype != np.uint8:
        raise MXNetError(
            f"imdecode: flag={flag} decoded a {img.shape[2]}-channel {img.dtype} image; "
            f"MXNet decodes {channels}-channel uint8 images only (use flag 0 or 1)"
        )
    if to_rgb and channels == 3:
        img = np.ascontiguousarray(img[:, :, ::-1])
    return img


def read(filename: str, flag: int = 1, to_rgb: bool = True) -> np.ndarray:
    """Read and decode the image file ``filename`` (see :func:`decode`)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MXNetError(
            f"imread: '{filename}' couldn't open file: {os.strerror(e.errno) if e.errno else e}"
        ) from None
    return decode(np.frombuffer(data, dtype=np.uint8), flag, to_rgb)


def _check_image(img: np.ndarray, what: str) -> None:
    if img.ndim != 3:
        raise MXNetError(
            f"{what}: the image must have 3 dimensions (height, width, channels), "
            f"got shape {img.shape}"
        )
    _check_mat_dtype(img, what)


def resize(img: np.ndarray, w: int, h: int, interp: int = 1) -> np.ndarray:
    """Resize ``img`` (height x width x channels) to ``h`` x ``w`` as OpenCV 3.4.2's
    ``cv::resize`` does with interpolation code ``interp`` (0-5)."""
    _check_image(img, "imresize")
    for name, v in (("w", w), ("h", h)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise MXNetError(
                f"imresize: value {v!r} for parameter {name} should be an integer greater "
                "equal to 1"
            )
    if interp not in _RESIZE_INTERPS:
        raise MXNetError(
            f"imresize: unknown interpolation method {interp!r} (OpenCV's resize takes 0-4: "
            "nearest, bilinear, bicubic, area, Lanczos, or 5: bit-exact bilinear)"
        )
    w, h, interp = int(w), int(h), int(interp)
    channels = img.shape[2]
    if img.shape[0] == 0 or img.shape[1] == 0:
        raise MXNetError(f"imresize: cannot resize an empty image of shape {img.shape}")
    if (h, w) != img.shape[:2]:
        if interp == 2 and img.dtype == np.uint8:
            return _resize_cubic_u8(img, w, h)
        if interp in (1, 2, 5) and img.dtype in (np.float32, np.float64):
            return _resize_float(img, w, h, 2 if interp == 2 else 1)
    cv2 = _cv2()
    try:
        out = cv2.resize(np.ascontiguousarray(img), (w, h), interpolation=interp)
    except cv2.error as e:
        raise MXNetError(
            f"imresize: OpenCV cannot resize a {img.dtype} image with interpolation {interp} "
            f"({str(e).strip().splitlines()[-1]})"
        ) from None
    return _as_hwc(out, channels)


def _positions(src_len: int, dst_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Source positions of the destination pixels' centres along one axis, as OpenCV computes
    them (in float32 from a double scale): the integer parts and the float32 fractions."""
    scale = 1.0 / (dst_len / src_len)
    f = ((np.arange(dst_len, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    start = np.floor(f)
    return start.astype(np.int64), (f - start).astype(np.float32)


def _cubic_table(src_len: int, dst_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Source indices (dst_len, 4), clamped to the image, and float32 bicubic weights
    (dst_len, 4) of one axis (OpenCV's A = -0.75 kernel, in OpenCV's order of operations)."""
    start, x = _positions(src_len, dst_len)
    a = np.float32(-0.75)
    one = np.float32(1)
    x1 = x + one
    c0 = ((a * x1 - np.float32(5) * a) * x1 + np.float32(8) * a) * x1 - np.float32(4) * a
    c1 = ((a + np.float32(2)) * x - (a + np.float32(3))) * x * x + one
    y = one - x
    c2 = ((a + np.float32(2)) * y - (a + np.float32(3))) * y * y + one
    c3 = one - c0 - c1 - c2
    idx = start[:, None] - 1 + np.arange(4)[None, :]
    return np.clip(idx, 0, src_len - 1), np.stack([c0, c1, c2, c3], axis=1).astype(np.float32)


def _linear_table(src_len: int, dst_len: int, clamp: bool) -> tuple[np.ndarray, np.ndarray]:
    """Source indices (dst_len, 2) and float32 bilinear weights (dst_len, 2) of one axis; with
    ``clamp`` (OpenCV's horizontal axis) positions outside the image snap to its edge pixel."""
    start, x = _positions(src_len, dst_len)
    if clamp:
        low, high = start < 0, start >= src_len - 1
        x[low | high] = 0
        start[low] = 0
        start[high] = src_len - 1
    idx = start[:, None] + np.arange(2)[None, :]
    coef = np.stack([np.float32(1) - x, x], axis=1).astype(np.float32)
    return np.clip(idx, 0, src_len - 1), coef


def _resize_float(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    """OpenCV 3.4.2's bilinear or bicubic resize of a float32/float64 image: a horizontal then
    a vertical pass, float32 weights, sums in the image's precision in OpenCV's order."""
    src_h, src_w, _ = img.shape
    if interp == 2:
        xi, xc = _cubic_table(src_w, w)
        yi, yc = _cubic_table(src_h, h)
    else:
        xi, xc = _linear_table(src_w, w, clamp=True)
        yi, yc = _linear_table(src_h, h, clamp=False)
    wt = img.dtype
    xc, yc = xc.astype(wt), yc.astype(wt)
    rows = img[:, xi[:, 0], :] * xc[None, :, 0, None]
    for k in range(1, xi.shape[1]):
        rows = rows + img[:, xi[:, k], :] * xc[None, :, k, None]
    out = rows[yi[:, 0]] * yc[:, 0, None, None]
    for k in range(1, yi.shape[1]):
        out = out + rows[yi[:, k]] * yc[:, k, None, None]
    return out.astype(wt)


def _resize_cubic_u8(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """OpenCV 3.4.2's bicubic resize of a ``uint8`` image: a fixed-point horizontal pass, then a
    vertical pass in float32 (round half to even) on the first multiple of 8 values of each row
    and in fixed point (round half up) on the rest."""
    src_h, src_w, channels = img.shape
    xi, xcf = _cubic_table(src_w, w)
    yi, ycf = _cubic_table(src_h, h)
    # |weights| sum to under 1.2 x 2048, so the horizontal sums fit in int32 as in OpenCV
    xc = np.rint(xcf * np.float32(_COEF_SCALE)).astype(np.int32)
    yc = np.rint(ycf * np.float32(_COEF_SCALE)).astype(np.int64)
    s = img.astype(np.int32)
    rows = np.zeros((src_h, w, channels), dtype=np.int32)
    for k in range(4):
        rows += s[:, xi[:, k], :] * xc[None, :, k, None]
    beta = yc.astype(np.float32) * np.float32(1.0 / (_COEF_SCALE * _COEF_SCALE))
    fr = rows.astype(np.float32)
    acc = fr[yi[:, 0]] * beta[:, 0, None, None] + fr[yi[:, 1]] * beta[:, 1, None, None]
    acc = acc + fr[yi[:, 2]] * beta[:, 2, None, None]
    acc = acc + fr[yi[:, 3]] * beta[:, 3, None, None]
    out = np.clip(np.clip(np.rint(acc), -32768, 32767), 0, 255).reshape(h, w * channels)
    tail = (w * channels) // _VEC_WIDTH * _VEC_WIDTH
    if tail < w * channels:
        rest = rows.reshape(src_h, w * channels)[:, tail:].astype(np.int64)
        iacc = np.zeros((h, w * channels - tail), dtype=np.int64)
        for k in range(4):
            iacc += rest[yi[:, k]] * yc[:, k, None]
        out[:, tail:] = np.clip((iacc + (1 << 21)) >> 22, 0, 255)
    return out.reshape(h, w, channels).astype(np.uint8)


def _border_value(value: float, values: Any) -> tuple[float, ...]:
    """OpenCV's four-channel fill value: ``values`` per channel (missing channels 0) when
    given, else ``value`` in every channel."""
    if values is None or (isinstance(values, (tuple, list)) and len(values) == 0):
        return (float(value),) * 4
    if not isinstance(values, (tuple, list)):
        values = (values,)
    if len(values) > 4:
        raise MXNetError(
            f"copyMakeBorder: values holds at most 4 channels' fill values, got {len(values)}"
        )
    return tuple(float(v) for v in values) + (0.0,) * (4 - len(values))


def make_border(
    img: np.ndarray,
    top: int,
    bot: int,
    left: int,
    right: int,
    border_type: int = 0,
    value: float = 0.0,
    values: Any = None,
) -> np.ndarray:
    """Pad ``img`` (height x width x channels) by the given margins as ``cv::copyMakeBorder``
    does with border type ``border_type`` (0-4, optionally or-ed with 16)."""
    _check_image(img, "copyMakeBorder")
    margins = {"top": top, "bot": bot, "left": left, "right": right}
    for name, v in margins.items():
        if isinstance(v, bool) or int(v) != v or v < 0:
            raise MXNetError(f"copyMakeBorder: {name} must be a non-negative integer, got {v!r}")
    if border_type & ~_BORDER_ISOLATED not in _BORDER_TYPES:
        raise MXNetError(
            f"copyMakeBorder: unknown or unsupported border type {border_type!r} (0: constant, "
            "1: reflect, 2: reflect-101, 3: replicate, 4: wrap)"
        )
    fill = _border_value(value, values)
    channels = img.shape[2]
    cv2 = _cv2()
    try:
        out = cv2.copyMakeBorder(
            np.ascontiguousarray(img),
            int(top),
            int(bot),
            int(left),
            int(right),
            borderType=int(border_type),
            value=fill,
        )
    except cv2.error as e:
        raise MXNetError(
            f"copyMakeBorder: OpenCV cannot pad this {img.dtype} image "
            f"({str(e).strip().splitlines()[-1]})"
        ) from None
    return _as_hwc(out, channels)
