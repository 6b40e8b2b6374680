"""Image transforms, as Gluon Blocks with MXNet 1.9.1's semantics.

Each transform is a :class:`~mxrs.gluon.Block` taking one image (or a batch of images) as an
NDArray and returning the transformed NDArray; NumPy inputs are accepted too and keep their
dtype. Most are :class:`~mxrs.gluon.HybridBlock` s built on the ``mx.nd.image`` operators (so
they can join a ``HybridSequential`` and be called on Symbols); ``CenterCrop``,
``RandomResizedCrop``, ``Rotate`` and ``RandomRotation`` run ``mx.image``'s functions and are
plain Blocks, as in MXNet. Use them as ``dataset.transform_first(transforms.Compose([...]))`` or
call them directly.

Examples
--------
>>> transformer = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.13, 0.31)])
>>> train = gluon.data.vision.MNIST(train=True).transform_first(transformer)
>>> train[0][0].shape
(1, 28, 28)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from numbers import Number
from typing import TYPE_CHECKING, Any

import numpy as np

from .... import image as _image
from .... import ndarray as nd
from ....base import MXNetError
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

if TYPE_CHECKING:
    from ...._typing import DTypeLike

__all__ = [
    "Compose",
    "HybridCompose",
    "Cast",
    "ToTensor",
    "Normalize",
    "Rotate",
    "RandomRotation",
    "RandomResizedCrop",
    "CropResize",
    "CenterCrop",
    "Resize",
    "RandomCrop",
    "RandomFlipLeftRight",
    "RandomFlipTopBottom",
    "RandomBrightness",
    "RandomContrast",
    "RandomSaturation",
    "RandomHue",
    "RandomColorJitter",
    "RandomLighting",
    "RandomGray",
    "RandomApply",
    "HybridRandomApply",
]


def _as_nd(x: Any) -> Any:
    """NumPy arrays become NDArrays of their dtype; anything else is returned as it is."""
    if isinstance(x, np.ndarray):
        return nd.array(x, dtype=x.dtype)
    return x


def _pair(size: Any) -> tuple[int, int]:
    """``(w, h)`` from one number or a pair."""
    if isinstance(size, Number):
        return (int(size), int(size))  # type: ignore[call-overload]
    w, h = size
    return int(w), int(h)


class _HybridTransform(HybridBlock):
    """A HybridBlock transform that also takes NumPy arrays."""

    def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Run :meth:`hybrid_forward` on ``x`` (a NumPy array becomes an NDArray first)."""
        return super().forward(_as_nd(x), *args, **kwargs)


class Compose(Sequential):
    """Apply several transforms one after the other.

    Runs of consecutive HybridBlocks are grouped into a hybridized ``HybridSequential``, as
    MXNet groups them, so ``len(Compose([ToTensor(), Normalize()]))`` is 1.

    Parameters
    ----------
    transforms : list of callable
        Applied in list order, each to the previous one's output (Blocks, or any callables).

    Examples
    --------
    >>> t = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.5)])
    >>> t(mx.nd.full((2, 2, 1), 255, dtype='uint8')).asnumpy().ravel()
    array([1., 1., 1., 1.], dtype=float32)
    """

    def __init__(self, transforms: Iterable[Callable[[Any], Any]]) -> None:
        super().__init__()
        hybrid: list[HybridBlock] = []
        for t in [*transforms, None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                group = HybridSequential()
                group.add(*hybrid)
                group.hybridize()
                self.add(group)
            hybrid = []
            if t is not None:
                self.add(t)  # type: ignore[arg-type]

    def forward(self, x: Any, *args: Any) -> Any:
        """Apply each transform in turn to ``x``."""
        return super().forward(_as_nd(x), *args)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the transforms that are Blocks (a Compose of HybridBlocks only is a
        natural case, so no advice to use a HybridSequential is given)."""
        for child in self._children.values():
            if isinstance(child, Block):
                child.hybridize(active, **kwargs)


class HybridCompose(HybridSequential):
    """:class:`Compose` of HybridBlocks only, itself a hybridized HybridBlock.

    Parameters
    ----------
    transforms : list of HybridBlock

    Raises
    ------
    ValueError
        When a transform is not a HybridBlock.
    """

    def __init__(self, transforms: Iterable[HybridBlock]) -> None:
        super().__init__()
        for t in transforms:
            if not isinstance(t, HybridBlock):
                raise ValueError(f"{t} is not a HybridBlock, try use `Compose` instead")
            self.add(t)
        self.hybridize()

    def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Apply each transform in turn to ``x``."""
        return super().forward(_as_nd(x), *args, **kwargs)


class Cast(_HybridTransform):
    """Convert the elements to another type.

    Parameters
    ----------
    dtype : str or numpy.dtype, default 'float32'
    """

    def __init__(self, dtype: DTypeLike = "float32") -> None:
        super().__init__()
        self._dtype = np.dtype(dtype)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` converted to the target type."""
        return F.cast(x, dtype=self._dtype.name)

    def __repr__(self) -> str:
        return f"Cast(dtype={self._dtype.name})"


class ToTensor(_HybridTransform):
    """Turn an image of shape (H, W, C) with values 0-255 into float32 (C, H, W) in [0, 1].

    A batch (N, H, W, C) becomes (N, C, H, W). The values are divided by 255 in float32
    (:func:`mxrs.nd.image.to_tensor`).

    Raises
    ------
    MXNetError
        For inputs that are not 3-D or 4-D.

    Examples
    --------
    >>> img = mx.nd.full((28, 28, 1), 255, dtype='uint8')
    >>> out = transforms.ToTensor()(img)
    >>> out.shape, out.dtype, float(out.max().asscalar())
    ((1, 28, 28), <class 'numpy.float32'>, 1.0)
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` as float32 channels-first values in [0, 1]."""
        return F.image.to_tensor(x)


class Normalize(_HybridTransform):
    """Subtract a per-channel mean and divide by a per-channel standard deviation.

    For a (C, H, W) tensor, or an (N, C, H, W) batch, of 1 or 3 channels, channel ``c``
    becomes ``(x[c] - mean[c]) / std[c]`` (:func:`mxrs.nd.image.normalize`). Apply it after
    :class:`ToTensor`.

    Parameters
    ----------
    mean : float or sequence of float, default 0.0
        One value for every channel, or one per channel.
    std : float or sequence of float, default 1.0
        One value for every channel, or one per channel.

    Raises
    ------
    MXNetError
        For inputs that are not 3-D or 4-D or have other than 1 or 3 channels, or a number of
        means or standard deviations that is neither 1 nor the number of channels.

    Examples
    --------
    >>> x = mx.nd.ones((3, 2, 2))
    >>> transforms.Normalize((0, 0.5, 1), (1, 0.5, 2))(x).asnumpy()[:, 0, 0]
    array([1., 1., 0.], dtype=float32)
    """

    def __init__(
        self, mean: float | Sequence[float] = 0.0, std: float | Sequence[float] = 1.0
    ) -> None:
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``(x - mean) / std`` channel by channel."""
        return F.image.normalize(x, self._mean, self._std)

    def __repr__(self) -> str:
        return f"Normalize(mean={self._mean}, std={self._std})"


def _float32_only(x: Any) -> None:
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(
            "This transformation only supports float32. Consider calling it after ToTensor"
        )


class Rotate(Block):
    """Rotate a float32 (C, H, W) tensor, or an (N, C, H, W) batch, by a fixed angle, keeping
    its shape (:func:`mxrs.image.imrotate`).

    Parameters
    ----------
    rotation_degrees : float
        The angle in degrees.
    zoom_in : bool, default False
        Zoom in so that no padding shows in the result.
    zoom_out : bool, default False
        Zoom out so that the whole original image shows in the result.

    Raises
    ------
    TypeError
        For inputs that are not float32.
    """

    def __init__(
        self, rotation_degrees: float, zoom_in: bool = False, zoom_out: bool = False
    ) -> None:
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: Any) -> Any:
        """Return ``x`` rotated."""
        x = _as_nd(x)
        _float32_only(x)
        return _image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate a float32 (C, H, W) tensor, or each tensor of an (N, C, H, W) batch, by an angle
    drawn uniformly from ``angle_limits`` (NumPy's global generator), keeping its shape.

    Parameters
    ----------
    angle_limits : (float, float)
        The lower and upper angle in degrees.
    zoom_in : bool, default False
        Zoom in so that no padding shows in the result.
    zoom_out : bool, default False
        Zoom out so that the whole original image shows in the result.
    rotate_with_proba : float, default 1.0
        The probability of rotating; otherwise the input is returned as it is.

    Raises
    ------
    ValueError
        For ``angle_limits`` whose lower limit is not below the upper one, or a probability
        outside [0, 1].
    TypeError
        (when called) For inputs that are not float32.
    """

    def __init__(
        self,
        angle_limits: Sequence[float],
        zoom_in: bool = False,
        zoom_out: bool = False,
        rotate_with_proba: float = 1.0,
    ) -> None:
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x: Any) -> Any:
        """Return ``x`` rotated by a random angle (or ``x`` itself)."""
        x = _as_nd(x)
        if np.random.random() > self._rotate_with_proba:
            return x
        _float32_only(x)
        return _image.random_rotate(x, *self._args)


class RandomResizedCrop(Block):
    """Crop a random area of random aspect ratio out of an (H, W, C) image and resize it.

    The area is drawn from ``scale`` (fractions of the image's area) and the aspect ratio from
    ``ratio``, with Python's ``random`` module (:func:`mxrs.image.random_size_crop`); the centre
    crop is the fallback when ten draws do not fit.

    Parameters
    ----------
    size : int or (int, int)
        The output size, (width, height).
    scale : (float, float), default (0.08, 1.0)
        The range of the crop's area, as fractions of the image's.
    ratio : (float, float), default (3/4, 4/3)
        The range of the crop's aspect ratio before resizing.
    interpolation : int, default 1
        OpenCV's interpolation for the resize (1: bilinear).
    """

    def __init__(
        self,
        size: int | Sequence[int],
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: int = 1,
    ) -> None:
        super().__init__()
        self._args = (_pair(size), scale, ratio, interpolation)

    def forward(self, x: Any) -> Any:
        """Return a random crop of ``x``, resized."""
        return _image.random_size_crop(_as_nd(x), *self._args)[0]


class CropResize(_HybridTransform):
    """Crop a fixed window out of an (H, W, C) image, or out of each image of an (N, H, W, C)
    batch, and optionally resize it.

    Parameters
    ----------
    x, y : int
        The window's left and top edges.
    width, height : int
        The window's size.
    size : int or (int, int), optional
        Resize the window to this (width, height) (one number: a square).
    interpolation : int, optional
        OpenCV's interpolation for the resize (default 1: bilinear).

    Raises
    ------
    MXNetError
        (when called) For a window that does not fit the image, or a non-positive size.

    Examples
    --------
    >>> img = mx.nd.zeros((224, 224, 3), dtype='uint8')
    >>> transforms.CropResize(0, 0, 100, 50, size=(25, 25))(img).shape
    (25, 25, 3)
    """

    def __init__(
        self,
        x: int,
        y: int,
        width: int,
        height: int,
        size: int | Sequence[int] | None = None,
        interpolation: int | None = None,
    ) -> None:
        super().__init__()
        self._x, self._y = x, y
        self._width, self._height = width, height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return the window of ``x``, resized when a size was given."""
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            interp = 1 if self._interpolation is None else self._interpolation
            out = F.image.resize(out, self._size, False, interp)
        return out


class CenterCrop(Block):
    """Crop the centre of an (H, W, C) image to ``size``; the image is scaled up first when it
    is smaller (:func:`mxrs.image.center_crop`).

    Parameters
    ----------
    size : int or (int, int)
        The output size, (width, height).
    interpolation : int, default 1
        OpenCV's interpolation for the resize (1: bilinear).

    Examples
    --------
    >>> img = mx.nd.zeros((2321, 3482, 3), dtype='uint8')
    >>> transforms.CenterCrop(size=(1000, 500))(img).shape
    (500, 1000, 3)
    """

    def __init__(self, size: int | Sequence[int], interpolation: int = 1) -> None:
        super().__init__()
        self._args = (_pair(size), interpolation)

    def forward(self, x: Any) -> Any:
        """Return the centre crop of ``x``."""
        return _image.center_crop(_as_nd(x), *self._args)[0]


class Resize(_HybridTransform):
    """Resize an (H, W, C) image, or each image of an (N, H, W, C) batch, with OpenCV
    (:func:`mxrs.nd.image.resize`). Apply it before :class:`ToTensor`.

    Parameters
    ----------
    size : int or (int, int)
        The output size, (width, height); one number resizes both sides to it, or with
        ``keep_ratio`` the shorter side.
    keep_ratio : bool, default False
        With one number, keep the aspect ratio (the longer side is rounded down).
    interpolation : int, default 1
        OpenCV's interpolation (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos).

    Raises
    ------
    MXNetError
        (when called) For a size that is not one or two positive numbers.

    Examples
    --------
    >>> img = mx.nd.zeros((224, 224, 3), dtype='uint8')
    >>> transforms.Resize(size=(1000, 500))(img).shape
    (500, 1000, 3)
    """

    def __init__(
        self, size: int | Sequence[int], keep_ratio: bool = False, interpolation: int = 1
    ) -> None:
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` resized."""
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class RandomCrop(_HybridTransform):
    """Crop a random ``size`` window out of an (H, W, C) image (the same window out of each
    image of a batch), after optional constant padding; an image smaller than ``size`` gives
    its largest window of that aspect ratio, resized (:func:`mxrs.nd.image.random_crop`).

    Parameters
    ----------
    size : int or (int, int)
        The output size, (width, height).
    pad : int or sequence of int, optional
        Padding added first: one number for all four sides, or ``(top, bottom, left, right)``.
    pad_value : int, default 0
        The value of the padded pixels.
    interpolation : int, default 1
        OpenCV's interpolation for the resize (1: bilinear).
    """

    def __init__(
        self,
        size: int | Sequence[int],
        pad: int | Sequence[int] | None = None,
        pad_value: float = 0,
        interpolation: int = 1,
    ) -> None:
        super().__init__()
        w, h = _pair(size)
        self._args = ((0.0, 1.0), (0.0, 1.0), w, h, interpolation)
        self._pad_value = pad_value
        self._pad: tuple[int, int, int, int] | None = None
        if isinstance(pad, Number):
            p = int(pad)
            self._pad = (p, p, p, p)
        elif pad is not None:
            sides = tuple(int(v) for v in pad)  # type: ignore[union-attr]
            if len(sides) < 4:
                raise MXNetError(
                    f"RandomCrop: pad must be one number or (top, bottom, left, right), got {pad}"
                )
            self._pad = (sides[0], sides[1], sides[2], sides[3])

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return a random window of (padded) ``x``."""
        if self._pad:
            top, bottom, left, right = self._pad
            # pad pads the last three axes of a 5-d array: (1 or N, 1, H, W, C)
            batch = F is nd and x.ndim == 4
            x5 = F.expand_dims(x, axis=1) if batch else F.expand_dims(F.expand_dims(x, 0), 0)
            widths = (0, 0, 0, 0, top, bottom, left, right, 0, 0)
            x5 = F.pad(x5, mode="constant", pad_width=widths, constant_value=self._pad_value)
            x = F.squeeze(x5, axis=1) if batch else F.squeeze(x5, axis=(0, 1))
        return F.image.random_crop(x, *self._args)


class RandomFlipLeftRight(_HybridTransform):
    """Mirror an (H, W, C) image (a batch: all its images) left to right with probability
    0.5, drawn from ``mx.random``'s generator (:func:`mxrs.nd.image.random_flip_left_right`)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` mirrored, or a copy of it, with even odds."""
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(_HybridTransform):
    """Mirror an (H, W, C) image (a batch: all its images) top to bottom with probability 0.5
    (:func:`mxrs.nd.image.random_flip_top_bottom`)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` mirrored, or a copy of it, with even odds."""
        return F.image.random_flip_top_bottom(x)


class _RandomEnhance(_HybridTransform):
    """A colour change by a factor drawn from ``[max(0, 1 - amount), 1 + amount]``."""

    _op = ""

    def __init__(self, amount: float) -> None:
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` with the change applied."""
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomEnhance):
    """Scale the brightness of an (H, W, C) image by a factor drawn from
    ``[max(0, 1 - brightness), 1 + brightness]`` (:func:`mxrs.nd.image.random_brightness`).

    Parameters
    ----------
    brightness : float
    """

    _op = "random_brightness"


class RandomContrast(_RandomEnhance):
    """Scale the contrast of an (H, W, C) image by a factor drawn from
    ``[max(0, 1 - contrast), 1 + contrast]`` (:func:`mxrs.nd.image.random_contrast`).

    Parameters
    ----------
    contrast : float
    """

    _op = "random_contrast"


class RandomSaturation(_RandomEnhance):
    """Change the saturation of an (H, W, C) image by a factor drawn from
    ``[max(0, 1 - saturation), 1 + saturation]`` (:func:`mxrs.nd.image.random_saturation`).

    Parameters
    ----------
    saturation : float
    """

    _op = "random_saturation"


class RandomHue(_RandomEnhance):
    """Change the hue of an (H, W, C) image by a factor drawn from ``[max(0, 1 - hue),
    1 + hue]`` (:func:`mxrs.nd.image.random_hue`).

    Parameters
    ----------
    hue : float
    """

    _op = "random_hue"


class RandomColorJitter(_HybridTransform):
    """Jitter the brightness, contrast, saturation and hue of an (H, W, C) image, in random
    order (:func:`mxrs.nd.image.random_color_jitter`).

    Parameters
    ----------
    brightness, contrast, saturation, hue : float, default 0
        How much to jitter each (0: not at all).
    """

    def __init__(
        self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0
    ) -> None:
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` jittered."""
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(_HybridTransform):
    """Add AlexNet-style PCA lighting noise to an (H, W, C) image
    (:func:`mxrs.nd.image.random_lighting`).

    Parameters
    ----------
    alpha : float
        The standard deviation of the noise's weights.
    """

    def __init__(self, alpha: float) -> None:
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` with lighting noise."""
        return F.image.random_lighting(x, self._alpha)


class RandomGray(_HybridTransform):
    """With probability ``p``, replace every channel of an RGB (H, W, 3) image (or batch) by
    its grey level ``0.2989 R + 0.587 G + 0.114 B``. The result is float32 either way.

    Parameters
    ----------
    p : float, default 0.5
        The probability of turning the image grey.
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x`` as float32, turned grey with probability ``p``."""
        x = F.cast(x, dtype="float32")
        r, g, b = (F.slice_axis(x, axis=-1, begin=i, end=i + 1) for i in range(3))
        gray = r * 0.2989 + g * 0.587 + b * 0.114
        gray = F.concat(gray, gray, gray, dim=-1)
        if F is nd:
            draw = nd.random.uniform(0.0, 1.0, shape=(1,), ctx=x.context).asscalar()
            return x if self.p < draw else gray
        keep = F.random.uniform(low=0.0, high=1.0, shape=(1,)) > self.p
        return F.broadcast_mul(x, keep) + F.broadcast_mul(gray, 1 - keep)


class RandomApply(Sequential):
    """Apply a transform with probability ``p`` (drawn with Python's ``random`` module), else
    return the input unchanged.

    Parameters
    ----------
    transforms : callable
        The transform (a Block, e.g. a :class:`Compose`).
    p : float, default 0.5
        The probability of applying it.
    """

    def __init__(self, transforms: Callable[[Any], Any], p: float = 0.5) -> None:
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x: Any, *args: Any) -> Any:
        """Return ``transforms(x)`` with probability ``p``, else ``x``."""
        if self.p < random.random():
            return x
        return self.transforms(_as_nd(x))


class HybridRandomApply(HybridSequential):
    """Apply a HybridBlock transform with probability ``p`` (drawn from ``mx.random``'s
    generator), else return the input unchanged.

    Parameters
    ----------
    transforms : HybridBlock
        The transform (e.g. a :class:`HybridCompose`).
    p : float, default 0.5
        The probability of applying it.

    Raises
    ------
    ValueError
        When ``transforms`` is not a HybridBlock.
    MXNetError
        (when called on Symbols) The choice is made when the block runs, so it has no
        symbolic form.
    """

    def __init__(self, transforms: HybridBlock, p: float = 0.5) -> None:
        super().__init__()
        if not isinstance(transforms, HybridBlock):
            raise ValueError(f"{transforms} is not a HybridBlock, try use `RandomApply` instead")
        self.transforms = transforms
        self.p = p

    def forward(self, x: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Run the block on ``x`` (a NumPy array becomes an NDArray first)."""
        return super().forward(_as_nd(x), *args, **kwargs)

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        """Return ``transforms(x)`` with probability ``p``, else ``x``."""
        if F is not nd:
            raise MXNetError(
                "HybridRandomApply chooses when it runs on NDArrays; it has no symbolic form"
            )
        draw = float(nd.random.uniform(0.0, 1.0, shape=(1,)).asscalar())
        if self.p < draw:
            return x
        return self.transforms(x)
