"""Object detection augmenters and ``ImageDetIter`` (``mx.image.detection``, ``mx.image.det``).

A detection label is a NumPy array of objects, one row each: ``[class id, xmin, ymin, xmax,
ymax, extra...]`` with coordinates as fractions of the image's width and height. Augmenters take
and return ``(image, label)``; those that move pixels (flips, crops, padding) update the boxes.
Random choices come from Python's :mod:`random` in MXNet 1.9.1's order.
"""

from __future__ import annotations

import logging
import math
import random
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import InvalidUsageError
from ..ndarray import NDArray
from .image import (
    _IMAGENET_MEAN,
    _IMAGENET_STD,
    _PCA_EIGVAL,
    _PCA_EIGVEC,
    Augmenter,
    CastAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HueJitterAug,
    ImageIter,
    LightingAug,
    RandomGrayAug,
    ResizeAug,
    _check_color_stat,
    _dump_augmenter,
    _listed_arrays,
    _numeric_types,
    copyMakeBorder,
    fixed_crop,
)

__all__ = [
    "DetAugmenter",
    "DetBorrowAug",
    "DetRandomSelectAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "CreateMultiRandCropAugmenter",
    "CreateDetAugmenter",
    "ImageDetIter",
]

# copyMakeBorder's border type for padding: a constant border (0) of the image on its own (16).
_PAD_BORDER = 16


class DetAugmenter:
    """Detection augmenter base class: call it on ``(image, label)`` to get the augmented
    pair. The keyword arguments are the augmenter's parameters, which :meth:`dumps` describes.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = _listed_arrays(kwargs)

    def dumps(self) -> Any:
        """Save the augmenter to a string.

        Returns
        -------
        str
            JSON formatted string that describes the augmenter.
        """
        return _dump_augmenter(self, self._kwargs)

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Abstract implementation body."""
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Use a classification augmenter that leaves the boxes alone (color, cast, resize...).

    Parameters
    ----------
    augmenter : mx.image.Augmenter
        The borrowed augmenter.
    """

    def __init__(self, augmenter: Augmenter) -> None:
        if not isinstance(augmenter, Augmenter):
            raise TypeError("Borrowing from invalid Augmenter")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> Any:
        """``[name, the borrowed augmenter's dumps()]`` (a list, not a string)."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Augmenter implementation body."""
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter of a list, picked at random, or with probability ``skip_prob`` none.

    Parameters
    ----------
    aug_list : list of DetAugmenter
        The augmenters to pick from (an empty list always skips).
    skip_prob : float
        The probability to skip all augmenters and return the input directly.
    """

    def __init__(self, aug_list: Any, skip_prob: float = 0) -> None:
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("Allow DetAugmenter in list only")
        if not aug_list:
            skip_prob = 1
        self.aug_list = aug_list
        self.skip_prob = skip_prob

    def dumps(self) -> Any:
        """``[name, [each augmenter's dumps()]]`` (a list, not a string)."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Augmenter implementation body."""
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Flip image and boxes left to right with probability ``p`` (the label in place).

    Parameters
    ----------
    p : float
        Chance [0, 1] to flip.
    """

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Augmenter implementation."""
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    def _flip_label(self, label: np.ndarray) -> None:
        left = 1.0 - label[:, 1]
        label[:, 1] = 1.0 - label[:, 3]
        label[:, 3] = left


def _as_range(value: Any, name: str, aug: str) -> Any:
    """A (min, max) range from a range or a single number (min = max)."""
    if isinstance(value, (tuple, list)):
        return value
    if not isinstance(value, _numeric_types):
        raise InvalidUsageError(f"{aug}: {name} must be a number or a (min, max) pair")
    logging.info("Using fixed %s: %s in %s", name, str(value), aug)
    return (value, value)


def _areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of boxes given as rows [xmin, ymin, xmax, ymax, ...] (0 for empty boxes)."""
    heights = np.maximum(0, boxes[:, 3] - boxes[:, 1])
    widths = np.maximum(0, boxes[:, 2] - boxes[:, 0])
    return heights * widths


class DetRandomCropAug(DetAugmenter):
    """Random crop with constraints on the boxes it keeps.

    Parameters
    ----------
    min_object_covered : float, default=0.1
        The cropped area of the image must contain at least this fraction of any bounding box
        supplied (non-negative; 0: the crop need not overlap any box).
    aspect_ratio_range : tuple of floats, default=(0.75, 1.33)
        The aspect ratio (width / height) range of the crop.
    area_range : tuple of floats, default=(0.05, 1.0)
        The range of the crop's area as a fraction of the image's.
    min_eject_coverage : float, default=0.3
        Objects keeping less than this fraction of their area after the crop are dropped.
    max_attempts : int, default=50
        Tries at a crop meeting the constraints; after them the input is returned unchanged.
    """

    def __init__(
        self,
        min_object_covered: float = 0.1,
        aspect_ratio_range: Any = (0.75, 1.33),
        area_range: Any = (0.05, 1.0),
        min_eject_coverage: float = 0.3,
        max_attempts: int = 50,
    ) -> None:
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _as_range(area_range, "area range", "DetRandomCropAug")
        super().__init__(
            min_object_covered=min_object_covered,
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts,
        )
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn(
                f"Skip DetRandomCropAug due to invalid area_range: {area_range}", stacklevel=2
            )
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn(
                f"Skip DetRandomCropAug due to invalid aspect_ratio_range: {aspect_ratio_range}",
                stacklevel=2,
            )
        else:
            self.enabled = True

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Augmenter implementation body."""
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _calculate_areas(self, label: np.ndarray) -> np.ndarray:
        return _areas(label)

    def _intersect(
        self, label: np.ndarray, xmin: float, ymin: float, xmax: float, ymax: float
    ) -> np.ndarray:
        """The boxes clipped to the window (empty intersections: all zeros)."""
        left = np.maximum(label[:, 0], xmin)
        right = np.minimum(label[:, 2], xmax)
        top = np.maximum(label[:, 1], ymin)
        bot = np.minimum(label[:, 3], ymax)
        invalid = np.where(np.logical_or(left >= right, top >= bot))[0]
        out = label.copy()
        out[:, 0] = left
        out[:, 1] = top
        out[:, 2] = right
        out[:, 3] = bot
        out[invalid, :] = 0
        return out

    def _check_satisfy_constraints(
        self,
        label: np.ndarray,
        xmin: int,
        ymin: int,
        xmax: int,
        ymax: int,
        width: int,
        height: int,
    ) -> bool:
        """Whether the crop window covers more than ``min_object_covered`` of every box it
        touches (and touches one)."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        x1 = float(xmin) / width
        y1 = float(ymin) / height
        x2 = float(xmax) / width
        y2 = float(ymax) / height
        object_areas = _areas(label[:, 1:])
        valid_objects = np.where(object_areas * width * height > 2)[0]
        if valid_objects.size < 1:
            return False
        intersects = self._intersect(label[valid_objects, 1:], x1, y1, x2, y2)
        coverages = _areas(intersects) / object_areas[valid_objects]
        coverages = coverages[np.where(coverages > 0)[0]]
        return bool(coverages.size > 0 and np.amin(coverages) > self.min_object_covered)

    def _update_labels(
        self, label: np.ndarray, crop_box: tuple[int, int, int, int], height: int, width: int
    ) -> np.ndarray | None:
        """The boxes in the crop's coordinates, without those the crop (nearly) ejects; None
        when none is left."""
        xmin = float(crop_box[0]) / width
        ymin = float(crop_box[1]) / height
        w = float(crop_box[2]) / width
        h = float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] -= xmin
        out[:, (2, 4)] -= ymin
        out[:, (1, 3)] /= w
        out[:, (2, 4)] /= h
        out[:, 1:5] = np.maximum(0, out[:, 1:5])
        out[:, 1:5] = np.minimum(1, out[:, 1:5])
        coverage = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        valid = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        valid = np.logical_and(valid, coverage > self.min_eject_coverage)
        kept = np.where(valid)[0]
        if kept.size < 1:
            return None
        return out[kept, :]

    def _random_crop_proposal(self, label: np.ndarray, height: int, width: int) -> tuple[Any, ...]:
        """(x, y, w, h, new label) of a crop meeting the constraints, or () after
        ``max_attempts`` tries."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                # the largest max_h with round(max_h * ratio) <= width
                max_h = int((width + 0.4999999) / ratio)
            if max_h > height:
                max_h = height
            if h > max_h:
                h = max_h
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            # rounding can leave the area just outside the range
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random padding (zoom out): the image is placed at a random position on a larger canvas
    filled with ``pad_val``.

    Parameters
    ----------
    aspect_ratio_range : tuple of floats, default=(0.75, 1.33)
        The aspect ratio (width / height) range of the padded image.
    area_range : tuple of floats, default=(1.0, 3.0)
        The range of the padded area as a multiple of the image's (above 1).
    max_attempts : int, default=50
        Tries at a padding meeting the constraints; after them the input is returned unchanged.
    pad_val : float or tuple of float, default=(128, 128, 128)
        Pixel value to be filled when padding is enabled: per channel, or one value for every
        channel.
    """

    def __init__(
        self,
        aspect_ratio_range: Any = (0.75, 1.33),
        area_range: Any = (1.0, 3.0),
        max_attempts: int = 50,
        pad_val: Any = (128, 128, 128),
    ) -> None:
        if not isinstance(pad_val, (list, tuple)) and not isinstance(pad_val, _numeric_types):
            raise InvalidUsageError("DetRandomPadAug: pad_val must be a number or a tuple")
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _as_range(area_range, "area range", "DetRandomPadAug")
        super().__init__(
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            max_attempts=max_attempts,
            pad_val=pad_val,
        )
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn(
                f"Skip DetRandomPadAug due to invalid parameters: {area_range}", stacklevel=2
            )
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn(
                f"Skip DetRandomPadAug due to invalid aspect_ratio_range: {aspect_ratio_range}",
                stacklevel=2,
            )
        else:
            self.enabled = True

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        """Augmenter body."""
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            margins = (y, h - y - height, x, w - x - width)
            if isinstance(self.pad_val, (list, tuple)):
                src = copyMakeBorder(src, *margins, _PAD_BORDER, values=self.pad_val)
            else:
                src = copyMakeBorder(src, *margins, _PAD_BORDER, value=float(self.pad_val))
        return src, label

    def _update_labels(
        self, label: np.ndarray, pad_box: tuple[int, int, int, int], height: int, width: int
    ) -> np.ndarray:
        """The boxes in the padded image's coordinates."""
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label: np.ndarray, height: int, width: int) -> tuple[Any, ...]:
        """(x, y, w, h, new label) of a padding meeting the constraints, or ()."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            if h < height:
                h = height
            if h > max_h:
                h = max_h
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # marginal padding is not helpful
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            new_label = self._update_labels(label, (x, y, w, h), height, width)
            return (x, y, w, h, new_label)
        return ()


def CreateMultiRandCropAugmenter(
    min_object_covered: Any = 0.1,
    aspect_ratio_range: Any = (0.75, 1.33),
    area_range: Any = (0.05, 1.0),
    min_eject_coverage: Any = 0.3,
    max_attempts: Any = 50,
    skip_prob: float = 0,
) -> DetRandomSelectAug:
    """Several random crop augmenters, one picked at random per sample.

    Each parameter is a value or a list of values; lists (all of one length, single values
    repeated) give one :class:`DetRandomCropAug` per position.

    Parameters
    ----------
    min_object_covered : float or list of float, default=0.1
        See :class:`DetRandomCropAug`.
    aspect_ratio_range : tuple of floats or list of tuple of floats, default=(0.75, 1.33)
        See :class:`DetRandomCropAug`.
    area_range : tuple of floats or list of tuple of floats, default=(0.05, 1.0)
        See :class:`DetRandomCropAug`.
    min_eject_coverage : float or list of float, default=0.3
        See :class:`DetRandomCropAug`.
    max_attempts : int or list of int, default=50
        See :class:`DetRandomCropAug`.
    skip_prob : float
        Probability of no crop at all.

    Examples
    --------
    >>> aug = mx.image.det.CreateMultiRandCropAugmenter(
    ...     min_object_covered=[0.1, 0.3, 0.5, 0.7, 0.9], aspect_ratio_range=(0.75, 1.33),
    ...     area_range=[(0.1, 1.0), (0.2, 1.0), (0.2, 1.0), (0.3, 0.9), (0.5, 1.0)])
    >>> aug.dumps()
    """
    params = []
    num = 1
    for p in (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts):
        values = p if isinstance(p, list) else [p]
        params.append(values)
        num = max(num, len(values))
    for k, values in enumerate(params):
        if len(values) != num:
            if len(values) != 1:
                raise InvalidUsageError(
                    "CreateMultiRandCropAugmenter: parameter lists must be of one length "
                    f"({num}) or single values, got a list of {len(values)}"
                )
            params[k] = values * num
    augs: list[DetAugmenter] = [
        DetRandomCropAug(
            min_object_covered=moc,
            aspect_ratio_range=arr,
            area_range=ar,
            min_eject_coverage=mec,
            max_attempts=ma,
        )
        for moc, arr, ar, mec, ma in zip(*params, strict=True)
    ]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(
    data_shape: Sequence[int],
    resize: int = 0,
    rand_crop: float = 0,
    rand_pad: float = 0,
    rand_gray: float = 0,
    rand_mirror: bool = False,
    mean: Any = None,
    std: Any = None,
    brightness: float = 0,
    contrast: float = 0,
    saturation: float = 0,
    pca_noise: float = 0,
    hue: float = 0,
    inter_method: int = 2,
    min_object_covered: Any = 0.1,
    aspect_ratio_range: Any = (0.75, 1.33),
    area_range: Any = (0.05, 3.0),
    min_eject_coverage: Any = 0.3,
    max_attempts: Any = 50,
    pad_val: Any = (127, 127, 127),
) -> list[DetAugmenter]:
    """Create the augmenter list of ``ImageDetIter``.

    Parameters
    ----------
    data_shape : tuple of int
        Shape for output data, (channels, height, width).
    resize : int
        Resize the shorter edge to this first, if larger than 0.
    rand_crop : float
        [0, 1], probability to apply random cropping.
    rand_pad : float
        [0, 1], probability to apply random padding.
    rand_gray : float
        [0, 1], probability to convert to grayscale for all channels.
    rand_mirror : bool
        Flip horizontally with probability 0.5.
    mean : np.ndarray, True or None
        Mean pixel values for [r, g, b] (True: ImageNet's).
    std : np.ndarray, True or None
        Standard deviations for [r, g, b] (True: ImageNet's).
    brightness, contrast, saturation, hue : float
        Jitter ranges (fractions).
    pca_noise : float
        PCA noise level.
    inter_method : int, default=2
        Interpolation method for all resizing operations, see ``mx.image.resize_short``.
    min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts
        The random crops' constraints, see :func:`CreateMultiRandCropAugmenter` (the padding
        takes the aspect ratios, ``(1, area_range[1])`` and ``max_attempts``).
    pad_val : float or tuple of float
        Pixel value to be filled when padding is enabled.

    Returns
    -------
    list of DetAugmenter

    Examples
    --------
    >>> augs = mx.image.CreateDetAugmenter(data_shape=(3, 300, 300), rand_crop=0.5,
    ...    rand_pad=0.5, rand_mirror=True, mean=True, brightness=0.125, contrast=0.125,
    ...    saturation=0.125, pca_noise=0.05, inter_method=10, min_object_covered=[0.3, 0.5, 0.9],
    ...    area_range=(0.3, 3.0))
    >>> for aug in augs:
    ...    aug.dumps()
    """
    auglist: list[DetAugmenter] = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(
            CreateMultiRandCropAugmenter(
                min_object_covered,
                aspect_ratio_range,
                area_range,
                min_eject_coverage,
                max_attempts,
                skip_prob=(1 - rand_crop),
            )
        )
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    # padding as late as possible: the images it works on are smallest there
    if rand_pad > 0:
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        lighting = LightingAug(pca_noise, np.array(_PCA_EIGVAL), np.array(_PCA_EIGVEC))
        auglist.append(DetBorrowAug(lighting))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    if mean is True:
        mean = np.array(_IMAGENET_MEAN)
    elif mean is not None:
        _check_color_stat(mean, "mean", (np.ndarray,))
    if std is True:
        std = np.array(_IMAGENET_STD)
    elif std is not None:
        _check_color_stat(std, "std", (np.ndarray,))
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """Image iterator with a large number of augmentation choices for detection.

    A raw label (from a list or a record) is ``[header width n, object width k, (n - 2 more
    header values), then k values per object: id, xmin, ymin, xmax, ymax, ...]``; batches'
    labels are (batch, max objects, k), rows past an image's objects filled with -1.

    Parameters
    ----------
    batch_size : int
        Number of examples per batch.
    data_shape : tuple
        Data shape in (channels, height, width) format. Only RGB images with 3 channels.
    path_imgrec : str
        Path to image record file (.rec), made by ``im2rec``.
    path_imglist : str
        Path to image list (.lst): tab separated index, the raw label and path relative to
        ``path_root``.
    imglist : list
        A list of images with their raw labels: each item is [label values..., path].
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
    aug_list : list of DetAugmenter, optional
        The augmenters; by default ``CreateDetAugmenter(data_shape, **kwargs)``.
    data_name : str
        Data name for provided symbols.
    label_name : str
        Name for detection labels.
    last_batch_handle : str, optional
        'pad' (default), 'discard' or 'roll_over', see ``ImageIter``.
    kwargs : ...
        More arguments for creating augmenters, see :func:`CreateDetAugmenter`.
    """

    def __init__(
        self,
        batch_size: int,
        data_shape: Sequence[int],
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
        label_name: str = "label",
        last_batch_handle: str = "pad",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            batch_size=batch_size,
            data_shape=data_shape,
            path_imgrec=path_imgrec,
            path_imglist=path_imglist,
            path_root=path_root,
            path_imgidx=path_imgidx,
            shuffle=shuffle,
            part_index=part_index,
            num_parts=num_parts,
            aug_list=[],
            imglist=imglist,
            data_name=data_name,
            label_name=label_name,
            last_batch_handle=last_batch_handle,
        )
        if aug_list is None:
            self.auglist = CreateDetAugmenter(data_shape, **kwargs)
        else:
            self.auglist = aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size, label_shape[0], label_shape[1]))]
        self.label_shape: tuple[int, ...] = label_shape

    def _check_valid_label(self, label: np.ndarray) -> None:
        """Raise ``RuntimeError`` unless ``label`` is (objects >= 1, width >= 5) with a valid
        object."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid_label = np.where(
            np.logical_and(
                label[:, 0] >= 0,
                np.logical_and(label[:, 3] > label[:, 1], label[:, 4] > label[:, 2]),
            )
        )[0]
        if valid_label.size < 1:
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self) -> tuple[int, int]:
        """(most objects in an image, object width) over the whole data set."""
        max_count = 0
        width = None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                parsed = self._parse_label(label)
                max_count = max(max_count, parsed.shape[0])
                width = parsed.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise InvalidUsageError(
                f"{self.__class__.__name__}: the data set has no images to estimate the label "
                "shape from"
            )
        return (max_count, width)

    def _parse_label(self, label: Any) -> np.ndarray:
        """The objects (rows) of a raw detection label, without invalid boxes.

        Format of a raw label: ``n, k, ..., [id, xmin, ymin, xmax, ymax, ...] * objects``, where
        n (>= 2) is the width of the header and k (>= 5) that of each object.
        """
        if isinstance(label, NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError(f"Label shape is invalid: {raw.shape}")
        header_width = int(raw[0])
        obj_width = int(raw[1])
        if obj_width < 1 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(
                f"Label shape {raw.shape} inconsistent with annotation width {obj_width}."
            )
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.where(np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid, :]

    def reshape(
        self,
        data_shape: Sequence[int] | None = None,
        label_shape: Sequence[int] | None = None,
    ) -> None:
        """Change the data shape and/or the label shape (objects, object width) of the
        batches; the label shape can only grow in objects."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = data_shape
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [
                (self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))
            ]
            self.label_shape = tuple(label_shape)

    def _prepare_sample(self, data: NDArray, label: Any) -> tuple[NDArray, np.ndarray] | None:
        """The parsed, augmented and checked ``(data, label)`` of a decoded sample; None
        (logged) when the image or its label is invalid, which the batch skips."""
        try:
            self.check_valid_image([data])
            label = self._parse_label(label)
            data, label = self.augmentation_transform(data, label)
            self._check_valid_label(label)
        except RuntimeError as e:
            logging.debug("Invalid image, skipping:  %s", str(e))
            return None
        return data, label

    def _store_label(self, batch_label: NDArray, i: int, label: Any) -> None:
        """Write the ``(objects, width)`` label into row ``i``, padding the rest with -1."""
        num_object = label.shape[0]
        row = batch_label[i]
        row[0:num_object] = nd.array(label, ctx=row.context)
        if num_object < row.shape[0]:
            row[num_object:] = -1

    def _new_batch_label(self) -> NDArray:
        """A label array of the batch's label shape, all -1 (no object)."""
        batch_label = nd.empty(self.provide_label[0][1])
        batch_label[:] = -1
        return batch_label

    def augmentation_transform(  # type: ignore[override]
        self, data: NDArray, label: np.ndarray
    ) -> tuple[NDArray, np.ndarray]:
        """Apply the detection augmenters to ``(data, label)`` in order."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape: Sequence[int]) -> None:
        """Check that a new label shape keeps the object width and does not shrink the object
        count."""
        if not len(label_shape) == 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(
                f"Attempts to reduce label count from {self.label_shape[0]} to "
                f"{label_shape[0]}, not allowed."
            )
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(
                f"label_shape object width inconsistent: {self.provide_label[0][1][2]} vs "
                f"{label_shape[1]}."
            )

    def draw_next(
        self,
        color: Any = None,
        thickness: int = 2,
        mean: Any = None,
        std: Any = None,
        clip: bool = True,
        waitKey: int | None = None,
        window_name: str = "draw_next",
        id2labels: dict[int, str] | None = None,
    ) -> Any:
        """Yield the next images (augmented, BGR ``uint8`` NumPy arrays) with their bounding
        boxes drawn.

        Parameters
        ----------
        color : tuple
            Bounding box color in RGB, None for random colors.
        thickness : int
            Bounding box border thickness.
        mean : True or numpy.ndarray
            Add this mean back (True: ImageNet's) for a better visual effect.
        std : True or numpy.ndarray
            Multiply by this standard deviation back (True: ImageNet's).
        clip : bool
            Clip to [0, 255].
        waitKey : None or int
            Show each image in an OpenCV window for waitKey milliseconds; None: do not show.
        window_name : str
            Window name when waitKey is set.
        id2labels : dict
            Class names by class id, written at the boxes.

        Examples
        --------
        >>> for image in iterator.draw_next(waitKey=None):
        ...     pass  # display image
        """
        import cv2

        count = 0
        try:
            while True:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                count += 1
                data, label = self.augmentation_transform(data, label)
                image = data.asnumpy()
                if std is True:
                    std = np.array(_IMAGENET_STD)
                if std is not None:
                    image *= std
                if mean is True:
                    mean = np.array(_IMAGENET_MEAN)
                if mean is not None:
                    image += mean
                image[:, :, (0, 1, 2)] = image[:, :, (2, 1, 0)]
                if clip:
                    image = np.maximum(0, np.minimum(255, image))
                if color:
                    color = color[::-1]
                image = image.astype(np.uint8)
                height, width, _ = image.shape
                for i in range(label.shape[0]):
                    x1 = int(label[i, 1] * width)
                    if x1 < 0:
                        continue
                    y1 = int(label[i, 2] * height)
                    x2 = int(label[i, 3] * width)
                    y2 = int(label[i, 4] * height)
                    bc = np.random.rand(3) * 255 if not color else color
                    cv2.rectangle(image, (x1, y1), (x2, y2), tuple(float(v) for v in bc), thickness)
                    if id2labels is not None:
                        cls_id = int(label[i, 0])
                        if cls_id in id2labels:
                            text = f"{id2labels[cls_id]:s}"
                            font = cv2.FONT_HERSHEY_SIMPLEX
                            text_height = cv2.getTextSize(text, font, 0.5, 2)[0][1]
                            tpos = (x1 + 5, y1 + text_height + 5)
                            cv2.putText(image, text, tpos, font, 0.5, (255, 255, 255), 2)
                if waitKey is not None:
                    cv2.imshow(window_name, image)
                    cv2.waitKey(waitKey)
                yield image
        except StopIteration:
            return

    def sync_label_shape(self, it: ImageDetIter, verbose: bool = False) -> ImageDetIter:
        """Give this iterator and ``it`` the same label shape (the larger object count), e.g.
        for training and validation iterators with different padding.

        Parameters
        ----------
        it : ImageDetIter
            The other iterator to synchronize.
        verbose : bool
            Log the new shape if true.

        Returns
        -------
        ImageDetIter
            ``it``, its label shape updated (this iterator's too).

        Examples
        --------
        >>> train_iter.label_shape, val_iter.label_shape
        ((30, 6), (25, 6))
        >>> val_iter = train_iter.sync_label_shape(val_iter)
        >>> train_iter.label_shape, val_iter.label_shape
        ((30, 6), (30, 6))
        """
        if not isinstance(it, ImageDetIter):
            raise InvalidUsageError("Synchronize with invalid iterator.")
        train_label_shape = self.label_shape
        val_label_shape = it.label_shape
        if train_label_shape[1] != val_label_shape[1]:
            raise InvalidUsageError("object width mismatch.")
        max_count = max(train_label_shape[0], val_label_shape[0])
        if max_count > train_label_shape[0]:
            self.reshape(None, (max_count, train_label_shape[1]))
        if max_count > val_label_shape[0]:
            it.reshape(None, (max_count, val_label_shape[1]))
        if verbose and max_count > min(train_label_shape[0], val_label_shape[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, train_label_shape[1])
        return it
