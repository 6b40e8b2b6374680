"""Reading, resizing, cropping and augmenting images, and ``ImageIter`` (``mx.image``).

Images are NDArrays in MXNet's layout, height x width x channels, ``uint8`` as decoded (RGB by
default). The OpenCV operations (:func:`imdecode`, :func:`imread`, :func:`imresize`,
:func:`copyMakeBorder`) give MXNet 1.9.1's pixels (see :mod:`mxrs._cv`); the crops,
augmenters and the iterator draw their random numbers from Python's :mod:`random` (and
:mod:`numpy.random` for the PCA lighting noise and random rotations) in MXNet 1.9.1's order, so
seeding those generators reproduces MXNet's augmentations.
"""

from __future__ import annotations

import json
import logging
import os
import random
import warnings
from collections.abc import Sequence
from numbers import Number
from typing import Any

import numpy as np

from .. import _cv, io, recordio
from .. import ndarray as nd
from ..base import InvalidUsageError, MXNetError
from ..ndarray import NDArray

__all__ = [
    "imread",
    "imdecode",
    "imresize",
    "scale_down",
    "copyMakeBorder",
    "resize_short",
    "fixed_crop",
    "random_crop",
    "center_crop",
    "color_normalize",
    "random_size_crop",
    "imrotate",
    "random_rotate",
    "Augmenter",
    "SequentialAug",
    "ResizeAug",
    "ForceResizeAug",
    "RandomCropAug",
    "RandomSizedCropAug",
    "CenterCropAug",
    "RandomOrderAug",
    "BrightnessJitterAug",
    "ContrastJitterAug",
    "SaturationJitterAug",
    "HueJitterAug",
    "ColorJitterAug",
    "LightingAug",
    "ColorNormalizeAug",
    "RandomGrayAug",
    "HorizontalFlipAug",
    "CastAug",
    "CreateAugmenter",
    "ImageIter",
]

_numeric_types = (float, int, np.generic)


# --------------------------------------------------------------------------------- OpenCV ops
def _raw(src: Any, what: str) -> np.ndarray:
    if isinstance(src, NDArray):
        return src.asnumpy()
    if isinstance(src, np.ndarray):
        return src
    raise TypeError(f"{what}: src must be an NDArray, got {type(src).__name__}")


def _deliver(result: np.ndarray, out: NDArray | None, ctx: Any, what: str) -> NDArray:
    """``result`` as an NDArray on ``ctx``, or written into ``out`` (and ``out`` returned)."""
    if out is None:
        return nd.array(result, ctx=ctx, dtype=result.dtype)
    if not isinstance(out, NDArray):
        raise TypeError(f"{what}: out must be an NDArray, got {type(out).__name__}")
    if tuple(out.shape) != result.shape:
        raise MXNetError(
            f"{what}: out has shape {tuple(out.shape)}, the result has shape {result.shape}"
        )
    out[:] = nd.array(result, ctx=out.context, dtype=out.dtype)
    return out


def _context_of(src: Any) -> Any:
    return src.context if isinstance(src, NDArray) else None


def imread(
    filename: str, flag: int = 1, to_rgb: bool = True, out: NDArray | None = None
) -> NDArray:
    """Read and decode an image file to an NDArray.

    Parameters
    ----------
    filename : str
        Name of the image file to be loaded.
    flag : {0, 1}, default 1
        1 for three channel color output. 0 for grayscale output.
    to_rgb : bool, default True
        True for RGB formatted output (MXNet default). False for BGR formatted output (OpenCV
        default).
    out : NDArray, optional
        Output buffer. Use ``None`` for automatic allocation.

    Returns
    -------
    NDArray
        ``uint8`` image of shape (height, width, 3) (or (height, width, 1) for ``flag=0``).

    Raises
    ------
    MXNetError
        When the file cannot be opened or decoded.

    Examples
    --------
    >>> mx.img.imread("flower.jpg")
    <NDArray 224x224x3 @cpu(0)>
    >>> mx.img.imread("flower.jpg", flag=0)
    <NDArray 224x224x1 @cpu(0)>
    """
    return _deliver(_cv.read(filename, flag, bool(to_rgb)), out, None, "imread")


def imresize(src: NDArray, w: int, h: int, interp: int = 1, out: NDArray | None = None) -> NDArray:
    r"""Resize an image with OpenCV.

    Parameters
    ----------
    src : NDArray
        Source image, (height, width, channels).
    w : int, required
        Width of resized image.
    h : int, required
        Height of resized image.
    interp : int, optional, default=1
        Interpolation method (default=cv2.INTER_LINEAR). 0: nearest neighbours; 1: bilinear;
        2: bicubic over a 4x4 pixel neighbourhood; 3: area-based (resampling using pixel area
        relation); 4: Lanczos over an 8x8 pixel neighbourhood (5: OpenCV's bit-exact bilinear).
        The automatic choices 9 and 10 are those of :func:`resize_short` and the augmenters,
        not of this function.
    out : NDArray, optional
        The output NDArray to hold the result.

    Returns
    -------
    NDArray
        The resized image, of ``src``'s dtype.

    Raises
    ------
    MXNetError
        For a size below 1, an unknown interpolation, an image that is not 3-dimensional, or a
        dtype OpenCV cannot resize with that interpolation (float16 with any).

    Examples
    --------
    >>> image = mx.img.imdecode(str_image)
    >>> image
    <NDArray 2321x3482x3 @cpu(0)>
    >>> mx.img.imresize(image, 240, 360)
    <NDArray 360x240x3 @cpu(0)>
    """
    result = _cv.resize(_raw(src, "imresize"), w, h, interp)
    return _deliver(result, out, _context_of(src), "imresize")


def imdecode(buf: Any, flag: int = 1, to_rgb: bool = True, out: NDArray | None = None) -> NDArray:
    """Decode an image to an NDArray.

    Parameters
    ----------
    buf : bytes, bytearray, numpy.ndarray or NDArray
        Binary image data (an NDArray must be ``uint8``).
    flag : int, optional, default=1
        1 for three channel color output. 0 for grayscale output.
    to_rgb : int, optional, default=1
        1 for RGB formatted output (MXNet default). 0 for BGR formatted output (OpenCV default).
    out : NDArray, optional
        Output buffer. Use ``None`` for automatic allocation.

    Returns
    -------
    NDArray
        ``uint8`` image of shape (height, width, 3) (or (height, width, 1) for ``flag=0``).

    Raises
    ------
    ValueError
        When ``buf`` is of another type (a ``str``, say).
    MXNetError
        For an empty buffer or one that no decoder reads as an image.

    Examples
    --------
    >>> with open("flower.jpg", 'rb') as fp:
    ...     str_image = fp.read()
    >>> mx.img.imdecode(str_image)
    <NDArray 224x224x3 @cpu(0)>
    >>> mx.img.imdecode(str_image, flag=0)
    <NDArray 224x224x1 @cpu(0)>
    """
    if isinstance(buf, NDArray):
        if np.dtype(buf.dtype) != np.uint8:
            raise MXNetError(
                f"imdecode: input needs to be a uint8 buffer, got an NDArray of "
                f"{np.dtype(buf.dtype).name}"
            )
        raw = buf.asnumpy().reshape(-1)
        ctx = buf.context
    elif isinstance(buf, (bytes, bytearray, np.ndarray)):
        raw = np.frombuffer(buf, dtype=np.uint8)
        ctx = None
    else:
        raise ValueError(
            "buf must be of type bytes, bytearray or numpy.ndarray, "
            "if you would like to input type str, please convert to bytes"
        )
    return _deliver(_cv.decode(raw, flag, bool(to_rgb)), out, ctx, "imdecode")


def scale_down(src_size: Sequence[float], size: Sequence[float]) -> tuple[int, int]:
    """Scale down the crop size ``size`` if it is larger than the image size ``src_size``.

    Both are (width, height); the aspect ratio of the crop is kept.

    Examples
    --------
    >>> mx.img.scale_down((640, 480), (720, 120))
    (640, 106)
    """
    w: float
    h: float
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(
    src: NDArray,
    top: int,
    bot: int,
    left: int,
    right: int,
    type: int = 0,
    value: float = 0.0,
    values: Any = (),
    out: NDArray | None = None,
) -> NDArray:
    """Pad an image's border with OpenCV.

    Parameters
    ----------
    src : NDArray
        Source image, (height, width, channels).
    top, bot, left, right : int, required
        Margins.
    type : int, optional, default=0
        Filling type: 0 constant (``cv2.BORDER_CONSTANT``), 1 reflect (``fedcba|abcdefgh|
        hgfedcb``), 2 reflect-101 (``gfedcb|abcdefgh|gfedcba``), 3 replicate (``aaaaaa|
        abcdefgh|hhhhhhh``), 4 wrap (``cdefgh|abcdefgh|abcdefg``).
    value : float, optional, default=0
        (Deprecated, use ``values``.) Fill every channel with this value.
    values : tuple of float, optional, default=()
        Fill value per channel (RGB[A] or gray), up to 4 channels; channels left out get 0.
    out : NDArray, optional
        The output NDArray to hold the result.

    Returns
    -------
    NDArray
        The padded image.

    Examples
    --------
    >>> mx.image.copyMakeBorder(image, 1, 2, 3, 4, type=0)
    <NDArray 2324x3489x3 @cpu(0)>
    """
    result = _cv.make_border(
        _raw(src, "copyMakeBorder"), top, bot, left, right, type, value, values
    )
    return _deliver(result, out, _context_of(src), "copyMakeBorder")


def _get_interp_method(interp: int, sizes: tuple[int, ...] = ()) -> int:
    """The OpenCV interpolation (0-4) for ``interp``: 0-4 as they are; 9 picks bicubic to
    enlarge, area to shrink and bilinear otherwise (bicubic without ``sizes``, which is
    (old_height, old_width, new_height, new_width)); 10 picks one of 0-4 at random."""
    if interp == 9:
        if sizes:
            if len(sizes) != 4:
                raise InvalidUsageError(
                    f"sizes must be (old_height, old_width, new_height, new_width), got {sizes}"
                )
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}")
    return interp


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """Resize the shorter edge of ``src`` to ``size``, the longer one in proportion.

    Parameters
    ----------
    src : NDArray
        The original image, (height, width, channels).
    size : int
        The length to be set for the shorter edge.
    interp : int, optional, default=2
        Interpolation method: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos; 9 bicubic
        to enlarge, area to shrink, bilinear otherwise; 10 one of 0-4 at random.

    Returns
    -------
    NDArray
        The resized image.

    Examples
    --------
    >>> mx.img.resize_short(image, 640)
    <NDArray 640x960x3 @cpu(0)>
    """
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(
    src: NDArray,
    x0: int,
    y0: int,
    w: int,
    h: int,
    size: Sequence[int] | None = None,
    interp: int = 2,
) -> NDArray:
    """Crop ``src`` at a fixed location, and optionally resize the crop to ``size``.

    Parameters
    ----------
    src : NDArray
        Input image, (height, width, channels).
    x0, y0 : int
        Left and top boundary of the cropping area.
    w, h : int
        Width and height of the cropping area (a crop reaching past the right or bottom edge
        stops at it, as in MXNet).
    size : tuple of (w, h), optional
        Resize to this size after cropping.
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.

    Returns
    -------
    NDArray
        The cropped image.

    Raises
    ------
    MXNetError
        When the cropping area starts outside the image or is empty.
    """
    height, width = src.shape[0], src.shape[1]
    if not (0 <= x0 < width and 0 <= y0 < height and w > 0 and h > 0):
        raise MXNetError(
            f"fixed_crop: the area x0={x0}, y0={y0}, w={w}, h={h} lies outside the "
            f"{width}x{height} (width x height) image"
        )
    out = src[y0 : y0 + h, x0 : x0 + w]
    if size is not None and (w, h) != size:
        sizes = (h, w, size[1], size[0])
        out = imresize(out, size[0], size[1], interp=_get_interp_method(interp, sizes))
    return out


def random_crop(
    src: NDArray, size: Sequence[int], interp: int = 2
) -> tuple[NDArray, tuple[int, int, int, int]]:
    """Crop ``src`` at a random location to ``size`` (width, height), scaled down to fit the
    image and then resized back to ``size``.

    Returns
    -------
    NDArray
        The cropped image.
    tuple
        (x, y, width, height) of the crop in the original image.

    Examples
    --------
    >>> cropped_im, rect = mx.image.random_crop(im, (100, 100))
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def center_crop(
    src: NDArray, size: Sequence[int], interp: int = 2
) -> tuple[NDArray, tuple[int, int, int, int]]:
    """Crop the centre of ``src`` to ``size`` (width, height), scaled down to fit the image and
    then resized back to ``size``.

    Returns
    -------
    NDArray
        The cropped image.
    tuple
        (x, y, width, height) of the crop in the original image.

    Examples
    --------
    >>> cropped_image, (x, y, width, height) = mx.image.center_crop(image, (1000, 500))
    >>> cropped_image
    <NDArray 500x1000x3 @cpu(0)>
    >>> x, y, width, height
    (1241, 910, 1000, 500)
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean: Any, std: Any = None) -> NDArray:
    """Subtract ``mean`` from ``src`` and divide by ``std`` (each optional), in place.

    Parameters
    ----------
    src : NDArray
        Input image.
    mean : NDArray or None
        RGB mean to be subtracted.
    std : NDArray or None
        RGB standard deviation to be divided.

    Returns
    -------
    NDArray
        ``src``, normalized.
    """
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(
    src: NDArray,
    size: Sequence[int],
    area: Any,
    ratio: Sequence[float],
    interp: int = 2,
    **kwargs: Any,
) -> tuple[NDArray, tuple[int, int, int, int]]:
    """Crop a random area of random aspect ratio from ``src`` and resize it to ``size``.

    Parameters
    ----------
    src : NDArray
        Input image.
    size : tuple of (int, int)
        Size of the result, (width, height).
    area : float in (0, 1] or tuple of (float, float)
        Fraction of the image's area the crop keeps: (min, max), or min with max 1.0.
    ratio : tuple of (float, float)
        Aspect ratio range (min, max) of the crop.
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.

    Returns
    -------
    NDArray
        The cropped image.
    tuple
        (x, y, width, height) of the crop in the original image; a centre crop when 10 tries
        found no crop that fits.
    """
    h, w, _ = src.shape
    src_area = h * w
    if "min_area" in kwargs:
        warnings.warn(
            "`min_area` is deprecated. Please use `area` instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        area = kwargs.pop("min_area")
    if kwargs:
        raise InvalidUsageError(
            f"unexpected keyword arguments for `random_size_crop`: {sorted(kwargs)}"
        )
    if isinstance(area, _numeric_types):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def imrotate(
    src: NDArray, rotation_degrees: Any, zoom_in: bool = False, zoom_out: bool = False
) -> NDArray:
    """Rotate image(s) by the given angle(s) in degrees, bilinearly, about their centres.

    Parameters
    ----------
    src : NDArray
        A float32 image (channels, height, width) or batch (N, channels, height, width).
    rotation_degrees : scalar or NDArray
        The angle; for a batch also a vector of N angles.
    zoom_in : bool
        Zoom in so that no padding shows in the result.
    zoom_out : bool
        Zoom out so that the whole original image shows in the result.

    Returns
    -------
    NDArray
        The rotated image(s), of ``src``'s shape (areas from outside the image read 0).

    Raises
    ------
    ValueError
        For ``zoom_in`` and ``zoom_out`` together, a ``src`` that is not 3- or 4-dimensional,
        or a number of angles other than the batch's.
    TypeError
        For a ``src`` that is not float32, or a vector of angles for a single image.
    """
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if np.dtype(src.dtype) != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    expanded = False
    if src.ndim == 3:
        expanded = True
        src = src.expand_dims(axis=0)
        if not isinstance(rotation_degrees, Number):
            raise TypeError(
                "When a single image is passed the rotation angle is required to be a scalar."
            )
    elif src.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    n, _, h, w = src.shape
    if isinstance(rotation_degrees, Number):
        degrees = np.full((n,), rotation_degrees, dtype=np.float32)
    else:
        degrees = _raw(rotation_degrees, "imrotate").astype(np.float32).reshape(-1)
    if len(degrees) != n:
        raise ValueError("The number of images must be equal to the number of rotation angles")
    rad = (np.float32(np.pi) * degrees / np.float32(180)).reshape(n, 1, 1)
    hscale = np.float32((h - 1) / 2)
    wscale = np.float32((w - 1) / 2)
    rows = (np.arange(h, dtype=np.float32).reshape(h, 1) - hscale) * np.ones((1, w), np.float32)
    cols = (np.arange(w, dtype=np.float32).reshape(1, w) - wscale) * np.ones((h, 1), np.float32)
    cos, sin = np.cos(rad), np.sin(rad)
    cols_rot = (cols * cos - rows * sin) / wscale
    rows_rot = (cols * sin + rows * cos) / hscale
    grid = np.stack([cols_rot, rows_rot], axis=1)
    if zoom_in or zoom_out:
        fh, fw = np.float32(h), np.float32(w)
        rho = np.sqrt(fh * fh + fw * fw)
        corner = np.arctan(fh / fw)
        turn = np.abs(rad)
        max_x = np.maximum(np.abs(rho * np.cos(corner + turn)), np.abs(rho * np.cos(corner - turn)))
        max_y = np.maximum(np.abs(rho * np.sin(corner + turn)), np.abs(rho * np.sin(corner - turn)))
        if zoom_out:
            scale = np.maximum(max_x / fw, max_y / fh)
        else:
            scale = np.minimum(fw / max_x, fh / max_y)
        grid = grid * scale.reshape(n, 1, 1, 1)
    rotated = nd.BilinearSampler(src, nd.array(grid.astype(np.float32), ctx=src.context))
    return rotated[0] if expanded else rotated


def random_rotate(
    src: NDArray, angle_limits: Sequence[float], zoom_in: bool = False, zoom_out: bool = False
) -> NDArray:
    """Rotate image(s) ``src`` by angle(s) drawn uniformly from ``angle_limits`` (degrees,
    from ``numpy.random``); see :func:`imrotate`."""
    low, high = angle_limits
    if src.ndim == 3:
        rotation_degrees: Any = np.random.uniform(low, high)
    else:
        n = src.shape[0]
        rotation_degrees = nd.array(np.random.uniform(low, high, size=n))
    return imrotate(src, rotation_degrees, zoom_in=zoom_in, zoom_out=zoom_out)


# --------------------------------------------------------------------------------- augmenters
def _listed_arrays(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` (changed in place) with its NDArray and numpy values made lists, for JSON."""
    for k, v in kwargs.items():
        if isinstance(v, NDArray):
            v = v.asnumpy()
        if isinstance(v, np.ndarray):
            kwargs[k] = v.tolist()
    return kwargs


def _dump_augmenter(aug: Any, kwargs: dict[str, Any]) -> str:
    """The JSON ``[class name in lower case, {parameter: value}]`` of an augmenter."""
    return json.dumps([type(aug).__name__.lower(), kwargs])


class Augmenter:
    """Image augmenter base class: call it on an image to get the augmented image.

    The keyword arguments are the augmenter's parameters, which :meth:`dumps` describes.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = _listed_arrays(kwargs)

    def dumps(self) -> Any:
        """Save the augmenter to a string.

        Returns
        -------
        str
            JSON formatted string that describes the Augmenter: ``[class name in lower case,
            {parameter: value}]``.
        """
        return _dump_augmenter(self, self._kwargs)

    def __call__(self, src: NDArray) -> NDArray:
        """Abstract implementation body."""
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Apply a list of augmenters in order.

    Parameters
    ----------
    ts : list of augmenters
        A series of augmenters to be applied in sequential order.
    """

    def __init__(self, ts: list[Augmenter]) -> None:
        super().__init__()
        self.ts = ts

    def dumps(self) -> Any:
        """``[name, [each augmenter's dumps()]]`` (a list, not a string)."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size`` (see :func:`resize_short`).

    Parameters
    ----------
    size : int
        The length to be set for the shorter edge.
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.
    """

    def __init__(self, size: int, interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (width, height) regardless of aspect ratio.

    Parameters
    ----------
    size : tuple of (int, int)
        The desired size as in (width, height).
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.
    """

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        w, h = self.size
        return imresize(src, w, h, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """Crop a random area of ``size`` (width, height), see :func:`random_crop`.

    Parameters
    ----------
    size : tuple of (int, int)
        Size of the crop, (width, height).
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.
    """

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crop a random area of random aspect ratio and resize it to ``size``, see
    :func:`random_size_crop`.

    Parameters
    ----------
    size : tuple of (int, int)
        Size of the result, (width, height).
    area : float in (0, 1] or tuple of (float, float)
        Fraction of the image's area the crop keeps: (min, max), or min with max 1.0.
    ratio : tuple of (float, float)
        Aspect ratio range as (min_aspect_ratio, max_aspect_ratio).
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.
    """

    def __init__(
        self,
        size: Sequence[int],
        area: Any,
        ratio: Sequence[float],
        interp: int = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        if "min_area" in kwargs:
            warnings.warn(
                "`min_area` is deprecated. Please use `area` instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            self.area = kwargs.pop("min_area")
        else:
            self.area = area
        self.ratio = ratio
        self.interp = interp
        if kwargs:
            raise InvalidUsageError(
                f"unexpected keyword arguments for `RandomSizedCropAug`: {sorted(kwargs)}"
            )

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Crop the centre to ``size`` (width, height), see :func:`center_crop`.

    Parameters
    ----------
    size : list or tuple of int
        The desired output image size.
    interp : int, optional, default=2
        Interpolation method, see :func:`resize_short`.
    """

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return center_crop(src, self.size, self.interp)[0]


class RandomOrderAug(Augmenter):
    """Apply a list of augmenters in a random order (shuffled in place at each call).

    Parameters
    ----------
    ts : list of augmenters
        A series of augmenters to be applied in random order.
    """

    def __init__(self, ts: list[Augmenter]) -> None:
        super().__init__()
        self.ts = ts

    def dumps(self) -> Any:
        """``[name, [each augmenter's dumps()]]`` (a list, not a string)."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


class BrightnessJitterAug(Augmenter):
    """Scale the image by a random factor in [1 - brightness, 1 + brightness] (in place).

    Parameters
    ----------
    brightness : float
        The brightness jitter ratio range, [0, 1].
    """

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


_GRAY_COEF = [[[0.299, 0.587, 0.114]]]


class ContrastJitterAug(Augmenter):
    """Blend the image with its mean gray level by a random factor in [1 - contrast,
    1 + contrast] (in place).

    Parameters
    ----------
    contrast : float
        The contrast jitter ratio range, [0, 1].
    """

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array(_GRAY_COEF)

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd.sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its gray level by a random factor in [1 - saturation,
    1 + saturation] (in place).

    Parameters
    ----------
    saturation : float
        The saturation jitter ratio range, [0, 1].
    """

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array(_GRAY_COEF)

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = src * self.coef
        gray = nd.sum(gray, axis=2, keepdims=True)
        gray *= 1.0 - alpha
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by a random angle in [-hue, hue] x 180 degrees, with the linear YIQ
    approximation of a hue rotation.

    Parameters
    ----------
    hue : float
        The hue jitter ratio range, [0, 1].
    """

    def __init__(self, hue: float) -> None:
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array(
            [[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]]
        )
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        alpha = random.uniform(-self.hue, self.hue)
        u = np.cos(alpha * np.pi)
        w = np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        return nd.dot(src, nd.array(t, ctx=src.context))


class ColorJitterAug(RandomOrderAug):
    """Apply brightness, contrast and saturation jitter (those above 0) in a random order.

    Parameters
    ----------
    brightness : float
        The brightness jitter ratio range, [0, 1].
    contrast : float
        The contrast jitter ratio range, [0, 1].
    saturation : float
        The saturation jitter ratio range, [0, 1].
    """

    def __init__(self, brightness: float, contrast: float, saturation: float) -> None:
        ts: list[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """Add PCA-based (AlexNet-style) lighting noise: ``eigvec * (alpha * eigval)`` with alpha
    drawn from N(0, alphastd) by ``numpy.random`` (in place).

    Parameters
    ----------
    alphastd : float
        Noise level.
    eigval : 3x1 np.array
        Eigen values.
    eigvec : 3x3 np.array
        Eigen vectors.
    """

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any) -> None:
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += nd.array(rgb, ctx=src.context)
        return src


class ColorNormalizeAug(Augmenter):
    """Subtract ``mean`` and divide by ``std``, see :func:`color_normalize`.

    Parameters
    ----------
    mean : NDArray, array-like or None
        RGB mean to be subtracted.
    std : NDArray, array-like or None
        RGB standard deviation to be divided.
    """

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """Convert the image to gray (kept in all channels) with probability ``p``.

    Parameters
    ----------
    p : float
        Probability to convert to grayscale.
    """

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        if random.random() < self.p:
            src = nd.dot(src, self.mat.as_in_context(src.context))
        return src


class HorizontalFlipAug(Augmenter):
    """Flip the image left to right with probability ``p``.

    Parameters
    ----------
    p : float
        Probability to flip image horizontally.
    """

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast the image to ``typ`` (float32 by default)."""

    def __init__(self, typ: str = "float32") -> None:
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: NDArray) -> NDArray:
        """Augmenter body."""
        return src.astype(self.typ)


#: ImageNet's RGB PCA of AlexNet's lighting noise.
_PCA_EIGVAL = [55.46, 4.794, 1.148]
_PCA_EIGVEC = [
    [-0.5675, 0.7192, 0.4009],
    [-0.5808, -0.0045, -0.8140],
    [-0.5836, -0.6948, 0.4203],
]
#: ImageNet's RGB mean and standard deviation (``mean=True``, ``std=True``).
_IMAGENET_MEAN = [123.68, 116.28, 103.53]
_IMAGENET_STD = [58.395, 57.12, 57.375]


def _check_color_stat(value: Any, name: str, allowed: tuple[type, ...]) -> None:
    shape: tuple[int, ...] = tuple(getattr(value, "shape", ()))
    if not (isinstance(value, allowed) and len(shape) >= 1 and shape[0] in (1, 3)):
        raise InvalidUsageError(
            f"{name} must be True, None or an array of 1 or 3 values, got {value!r}"
        )


def CreateAugmenter(
    data_shape: Sequence[int],
    resize: int = 0,
    rand_crop: bool = False,
    rand_resize: bool = False,
    rand_mirror: bool = False,
    mean: Any = None,
    std: Any = None,
    brightness: float = 0,
    contrast: float = 0,
    saturation: float = 0,
    hue: float = 0,
    pca_noise: float = 0,
    rand_gray: float = 0,
    inter_method: int = 2,
) -> list[Augmenter]:
    """Create the augmenter list of ``ImageIter``.

    Parameters
    ----------
    data_shape : tuple of int
        Shape for output data, (channels, height, width).
    resize : int
        Resize the shorter edge to this first, if larger than 0.
    rand_crop : bool
        Random crops instead of centre crops.
    rand_resize : bool
        Random-sized crops (area 0.08-1, aspect ratio 3/4-4/3); needs ``rand_crop``.
    rand_mirror : bool
        Flip horizontally with probability 0.5.
    mean : np.ndarray, NDArray, True or None
        Mean pixel values for [r, g, b] (True: ImageNet's).
    std : np.ndarray, NDArray, True or None
        Standard deviations for [r, g, b] (True: ImageNet's).
    brightness, contrast, saturation, hue : float
        Jitter ranges (fractions).
    pca_noise : float
        PCA noise level.
    rand_gray : float
        [0, 1], probability to convert to grayscale for all channels (the number of channels
        stays).
    inter_method : int, default=2
        Interpolation method for all resizing operations, see :func:`resize_short`.

    Returns
    -------
    list of Augmenter

    Examples
    --------
    >>> augs = mx.image.CreateAugmenter(data_shape=(3, 300, 300), rand_mirror=True,
    ...    mean=True, brightness=0.125, contrast=0.125, rand_gray=0.05,
    ...    saturation=0.125, pca_noise=0.05, inter_method=10)
    >>> for aug in augs:
    ...    aug.dumps()
    """
    auglist: list[Augmenter] = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise InvalidUsageError("CreateAugmenter: rand_resize needs rand_crop")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, np.array(_PCA_EIGVAL), np.array(_PCA_EIGVEC)))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array(_IMAGENET_MEAN)
    elif mean is not None:
        _check_color_stat(mean, "mean", (np.ndarray, NDArray))
    if std is True:
        std = nd.array(_IMAGENET_STD)
    elif std is not None:
        _check_color_stat(std, "std", (np.ndarray, NDArray))
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


# --------------------------------------------------------------------------------- ImageIter
_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _put_label(batch_label: NDArray, i: int, label: Any) -> None:
    """``batch_label[i] = label``, a label array of the row's size taking the row's shape."""
    if isinstance(label, NDArray):
        label = label.asnumpy()
    label = np.asarray(label, dtype=np.float64)
    row_shape = tuple(batch_label.shape[1:])
    if label.size == int(np.prod(row_shape)):
        label = label.reshape(row_shape)
    batch_label[i] = nd.array(label, ctx=batch_label.context, dtype=batch_label.dtype)


class ImageIter(io.DataIter):
    """Image data iterator with a large number of augmentation choices.

    Reads images from a RecordIO file (``path_imgrec``, with ``path_imgidx`` for random access)
    or from image files listed in ``path_imglist`` or ``imglist`` under ``path_root``; decodes,
    augments and batches them as (batch, channels, height, width) float32 arrays.

    Parameters
    ----------
    batch_size : int
        Number of examples per batch.
    data_shape : tuple
        Data shape in (channels, height, width) format. Only RGB images with 3 channels.
    label_width : int, optional
        Number of labels per example. The default label width is 1.
    path_imgrec : str
        Path to image record file (.rec), made by ``im2rec``.
    path_imglist : str
        Path to image list (.lst): tab separated index, one or more labels and path relative to
        ``path_root``.
    imglist : list
        A list of images with the label(s): each item is [label (a float or list of floats),
        path], or [label, label, ..., path].
    path_root : str
        Root folder of image files.
    path_imgidx : str
        Path to image index file. Needed for partition and shuffling of a .rec source.
    shuffle : bool
        Whether to shuffle all images at the start of each iteration.
    part_index : int
        Partition index.
    num_parts : int
        Total number of partitions.
    aug_list : list of Augmenter, optional
        The augmenters; by default ``CreateAugmenter(data_shape, **kwargs)``.
    data_name : str
        Data name for provided symbols.
    label_name : str
        Label name for provided symbols.
    dtype : str
        Data type of the labels read from lists: float32 (default), int32, int64 or float64
        (the batches' labels are float32).
    last_batch_handle : str, optional
        'pad' (default): the last batch is completed with data from the beginning; 'discard':
        the last batch is dropped; 'roll_over': the remaining samples start the next epoch's
        first batch.
    kwargs : ...
        More arguments for creating augmenters, see :func:`CreateAugmenter`.
    """

    def __init__(
        self,
        batch_size: int,
        data_shape: Sequence[int],
        label_width: int = 1,
        path_imgrec: str | None = None,
        path_imglist: str | None = None,
        path_root: str | None = None,
        path_imgidx: str | None = None,
        shuffle: bool = False,
        part_index: int = 0,
        num_parts: int = 1,
        aug_list: list[Any] | None = None,
        imglist: list[Any] | None = None,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: str = "float32",
        last_batch_handle: str = "pad",
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise InvalidUsageError(
                f"{self.__class__.__name__}: give path_imgrec, path_imglist or imglist (a list)"
            )
        if dtype not in _LABEL_DTYPES:
            raise InvalidUsageError(f"{dtype} label not supported (use one of {_LABEL_DTYPES})")
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(
                f"last_batch_handle must be one of {_LAST_BATCH_HANDLES}, got {last_batch_handle!r}"
            )
        num_threads = os.environ.get("MXNET_CPU_WORKER_NTHREADS", 1)
        logging.info("Using %s threads for decoding...", str(num_threads))
        class_name = self.__class__.__name__
        self.imgrec: Any = None
        self.imgidx: list[Any] | None = None
        if path_imgrec:
            logging.info("%s: loading recordio %s...", class_name, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        imgkeys: list[Any] = []
        self.imglist: dict[Any, tuple[NDArray, str]] | None = None
        if path_imglist:
            logging.info("%s: loading image list %s...", class_name, path_imglist)
            self.imglist = {}
            with open(path_imglist) as fin:
                for line in iter(fin.readline, ""):
                    fields = line.strip().split("\t")
                    label = nd.array(np.asarray(fields[1:-1], dtype=dtype), dtype=dtype)
                    key = int(fields[0])
                    self.imglist[key] = (label, fields[-1])
                    imgkeys.append(key)
        elif isinstance(imglist, list):
            logging.info("%s: loading image list...", class_name)
            self.imglist = {}
            for index, img in enumerate(imglist, start=1):
                skey = str(index)
                if len(img) > 2:
                    label = nd.array(np.asarray(img[:-1], dtype=dtype), dtype=dtype)
                elif isinstance(img[0], _numeric_types):
                    label = nd.array(np.asarray([img[0]], dtype=dtype), dtype=dtype)
                else:
                    label = nd.array(np.asarray(img[0], dtype=dtype), dtype=dtype)
                self.imglist[skey] = (label, img[-1])
                imgkeys.append(skey)
        self.path_root = path_root

        self.check_data_shape(data_shape)
        self.provide_data: list[tuple[str, tuple[int, ...]]] = [
            (data_name, (batch_size,) + tuple(data_shape))
        ]
        self.provide_label: list[tuple[str, tuple[int, ...]]]
        if label_width > 1:
            self.provide_label = [(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [(label_name, (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = label_width
        self.shuffle = shuffle
        self.seq: list[Any] | None
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise InvalidUsageError(
                    f"{class_name}: shuffle and num_parts > 1 need path_imgidx for a .rec source"
                )
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not part_index < num_parts:
                raise InvalidUsageError(
                    f"{class_name}: part_index ({part_index}) must be below num_parts ({num_parts})"
                )
            assert self.seq is not None
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part : (part_index + 1) * per_part]
        if aug_list is None:
            self.auglist: list[Any] = CreateAugmenter(data_shape, **kwargs)
        else:
            self.auglist = aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data: NDArray | None = None
        self._cache_label: NDArray | None = None
        self._cache_idx: int | None = None
        self.reset()

    def reset(self) -> None:
        """Reset the iterator to the beginning of the data (with 'roll_over', a cached
        incomplete batch stays and is completed by the next epoch)."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self) -> None:
        """Reset the iterator and drop any rolled-over data."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self) -> tuple[Any, Any]:
        """The next sample as (label, encoded image bytes); raises ``StopIteration`` at the end
        of the data."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is not None:
            assert self.num_image is not None
            if self.cur < self.num_image:
                idx = self.seq[self.cur]
            else:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            self.cur += 1
            if self.imgrec is not None:
                s = self.imgrec.read_idx(idx)
                header, img = recordio.unpack(s)
                if self.imglist is None:
                    return header.label, img
                return self.imglist[idx][0], img
            assert self.imglist is not None
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, batch_data: NDArray, batch_label: NDArray, start: int = 0) -> int:
        """Fill ``batch_data``/``batch_label`` from row ``start`` on; the rows filled."""
        i = start
        batch_size = self.batch_size
        try:
            while i < batch_size:
                label, s = self.next_sample()
                sample = self._prepare_sample(self.imdecode(s), label)
                if sample is None:
                    continue
                data, label = sample
                batch_data[i] = self.postprocess_data(data)
                self._store_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _prepare_sample(self, data: NDArray, label: Any) -> tuple[NDArray, Any] | None:
        """The augmented ``(data, label)`` of a decoded sample; None (logged) for an invalid
        image, which the batch skips."""
        try:
            self.check_valid_image(data)
        except RuntimeError as e:
            logging.debug("Invalid image, skipping:  %s", str(e))
            return None
        return self.augmentation_transform(data), label

    def _store_label(self, batch_label: NDArray, i: int, label: Any) -> None:
        """Write ``label`` into row ``i`` of ``batch_label``."""
        _put_label(batch_label, i, label)

    def _new_batch_label(self) -> NDArray:
        """A fresh label array of the batch's label shape."""
        return nd.empty(self.provide_label[0][1])

    def next(self) -> io.DataBatch:
        """The next batch of data."""
        batch_size = self.batch_size
        c, h, w = self.data_shape
        if self._cache_data is not None:
            assert self._cache_label is not None, "_cache_label didn't have values"
            assert self._cache_idx is not None, "_cache_idx didn't have values"
            batch_data = self._cache_data
            batch_label = self._cache_label
            i = self._cache_idx
        else:
            batch_data = nd.zeros((batch_size, c, h, w))
            batch_label = self._new_batch_label()
            i = self._batchify(batch_data, batch_label)
        pad = batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data = batch_data
                self._cache_label = batch_label
                self._cache_idx = i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = None
                self._cache_label = None
                self._cache_idx = None
        return io.DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape: Sequence[int]) -> None:
        """Check that ``data_shape`` is (3, height, width)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data: Any) -> None:
        """Raise ``RuntimeError`` for a decoded image with no shape."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s: Any) -> NDArray:
        """Decode an encoded image (see :func:`imdecode`); a failure raises ``RuntimeError``
        naming the image."""

        def locate() -> str:
            if self.num_image:
                pos = (self.cur % self.num_image) - 1
                idx = self.seq[pos] if self.seq is not None else pos
            else:
                idx = self.cur - 1
            if self.imglist is not None and idx in self.imglist:
                return f"Broken image filename: {self.imglist[idx][1]}"
            return f"Broken image index: {idx}"

        try:
            img = imdecode(s)
        except Exception as e:
            raise RuntimeError(f"{locate()}, {e}") from e
        return img

    def read_image(self, fname: str) -> bytes:
        """The bytes of image file ``fname`` under ``path_root``.

        Examples
        --------
        >>> dataIter.read_image('Face.jpg') # returns the encoded bytes
        """
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data: NDArray) -> NDArray:
        """Apply the augmenters to ``data`` in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum: NDArray) -> NDArray:
        """Final step before an image goes into the batch: (H, W, C) to (C, H, W)."""
        return nd.transpose(datum, axes=(2, 0, 1))
