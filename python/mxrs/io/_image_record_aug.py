"""The image pipeline of ``ImageRecordIter``: MXNet 1.9.1's default augmenter (resize, affine
transform, pad, crop, color jitter, HLS shift, PCA noise) on OpenCV images, then mirroring,
mean/std normalisation and the layout change to RGB(A) ``(channels, height, width)``."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError

__all__ = ["DefaultAugmenter", "Normalizer", "RecordRandom"]

#: ``inter_method`` values: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (OpenCV's
#: INTER_* of the same numbers), 9 chosen by the size change, 10 random among 0-4.
_INTER_METHODS = (0, 1, 2, 3, 4, 9, 10)

#: eigenvalue * eigenvector of ImageNet's RGB covariance, as rows r, g, b
_PCA_EIGVEC = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ],
    dtype=np.float32,
)


class RecordRandom:
    """The random numbers of one image's augmentation: a generator made from ``seed`` (an
    int) when first drawn from, so images without random augmentation cost nothing."""

    __slots__ = ("_gen", "_seed")

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._gen: random.Random | None = None

    def _random(self) -> random.Random:
        if self._gen is None:
            self._gen = random.Random(self._seed)
        return self._gen

    def random(self) -> float:
        """A float in [0, 1)."""
        return self._random().random()

    def integers(self, low: int, high: int) -> int:
        """An int in [low, high)."""
        return self._random().randrange(low, high)

    def uniform(self, low: float, high: float) -> float:
        """A float in [low, high]."""
        return self._random().uniform(low, high)

    def permutation(self, n: int) -> list[int]:
        """The numbers 0..n-1 shuffled."""
        order = list(range(n))
        self._random().shuffle(order)
        return order

    def normal(self, mean: float, std: float, size: int) -> np.ndarray:
        """``size`` normal draws."""
        gen = self._random()
        return np.array([gen.gauss(mean, std) for _ in range(size)])


def _round(x: float) -> int:
    """Round half away from zero (C's ``round``)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _saturate_u8(x: np.ndarray) -> np.ndarray:
    """OpenCV's ``saturate_cast<uchar>`` of floats: round half to even, clip to [0, 255]."""
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


class DefaultAugmenter:
    """MXNet 1.9.1's ``aug_default`` image augmenter, on BGR(A)/gray uint8 OpenCV images.

    The steps, in order, each only when its parameters ask for it: resize of the shorter edge
    to ``resize``; an affine transform (rotation, shear, random scale and aspect ratio, size
    limits) filled with ``fill_value``; ``pad`` pixels of ``fill_value`` around; a random
    resized crop, a random square crop, or a (center or random) crop to ``data_shape``;
    brightness/contrast/saturation jitter in random order; a random HLS shift; PCA noise.

    Calling it with an image and a ``numpy.random.Generator`` returns the augmented image,
    ``data_shape[1:]`` in size.
    """

    def __init__(
        self,
        data_shape: Sequence[int],
        resize: int = -1,
        rand_crop: bool = False,
        random_resized_crop: bool = False,
        max_rotate_angle: int = 0,
        max_aspect_ratio: float = 0.0,
        min_aspect_ratio: float | None = None,
        max_shear_ratio: float = 0.0,
        max_crop_size: int = -1,
        min_crop_size: int = -1,
        max_random_scale: float = 1.0,
        min_random_scale: float = 1.0,
        max_random_area: float = 1.0,
        min_random_area: float = 1.0,
        max_img_size: float = 1e10,
        min_img_size: float = 0.0,
        brightness: float = 0.0,
        contrast: float = 0.0,
        saturation: float = 0.0,
        pca_noise: float = 0.0,
        random_h: int = 0,
        random_s: int = 0,
        random_l: int = 0,
        rotate: int = -1,
        fill_value: int = 255,
        inter_method: int = 1,
        pad: int = 0,
        rotate_list: Sequence[int] = (),
    ) -> None:
        self.channels, self.height, self.width = (int(d) for d in data_shape)
        self.resize = int(resize)
        self.rand_crop = bool(rand_crop)
        self.random_resized_crop = bool(random_resized_crop)
        self.max_rotate_angle = int(max_rotate_angle)
        self.max_shear_ratio = float(max_shear_ratio)
        self.max_crop_size, self.min_crop_size = int(max_crop_size), int(min_crop_size)
        self.max_random_scale = float(max_random_scale)
        self.min_random_scale = float(min_random_scale)
        self.max_random_area = float(max_random_area)
        self.min_random_area = float(min_random_area)
        self.max_img_size, self.min_img_size = float(max_img_size), float(min_img_size)
        self.brightness, self.contrast = float(brightness), float(contrast)
        self.saturation, self.pca_noise = float(saturation), float(pca_noise)
        self.random_h, self.random_s, self.random_l = int(random_h), int(random_s), int(random_l)
        self.rotate = int(rotate)
        self.fill_value = int(fill_value)
        self.inter_method = int(inter_method)
        self.pad = int(pad)
        self.rotate_list = [int(a) for a in rotate_list]
        if min_aspect_ratio is not None:
            self.max_ratio, self.min_ratio = float(max_aspect_ratio), float(min_aspect_ratio)
        else:
            self.max_ratio, self.min_ratio = (
                1 + float(max_aspect_ratio),
                1 - float(max_aspect_ratio),
            )
        self._affine = self._affine_wanted()
        self._jitter = self.brightness > 0 or self.contrast > 0 or self.saturation > 0
        self._hls = self.random_h != 0 or self.random_s != 0 or self.random_l != 0
        self._check()

    # ------------------------------------------------------------------ parameters
    def _affine_wanted(self) -> bool:
        return (
            self.max_rotate_angle > 0
            or self.max_shear_ratio > 0
            or self.rotate > 0
            or bool(self.rotate_list)
            or self.max_random_scale != 1
            or self.min_random_scale != 1
            or (not self.random_resized_crop and (self.min_ratio != 1 or self.max_ratio != 1))
            or self.max_img_size != 1e10
            or self.min_img_size != 0
        )

    def _check(self) -> None:
        if self.inter_method not in _INTER_METHODS:
            raise MXNetError(
                f"ImageRecordIter: invalid inter_method {self.inter_method}: valid values are "
                "0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area), 4 (Lanczos), 9 (auto), "
                "10 (random)"
            )
        if self._affine and self.inter_method == 0:
            raise MXNetError(
                "ImageRecordIter: inter_method 0 (nearest) cannot be used with rotation, shear, "
                "random scale or aspect ratio; valid values there are 1, 2, 3, 4, 9, 10"
            )
        if self.random_resized_crop:
            if (
                self.min_random_scale != 1
                or self.max_random_scale != 1
                or self.min_crop_size != -1
                or self.max_crop_size != -1
                or self.rand_crop
            ):
                raise MXNetError(
                    "ImageRecordIter: random_resized_crop conflicts with min_random_scale, "
                    "max_random_scale, min_crop_size, max_crop_size and rand_crop"
                )
            if self.min_ratio <= 0 or self.min_ratio > self.max_ratio:
                raise MXNetError(
                    f"ImageRecordIter: the aspect ratio range [{self.min_ratio}, "
                    f"{self.max_ratio}] is empty or not positive"
                )
            if self.min_random_area > self.max_random_area:
                raise MXNetError(
                    f"ImageRecordIter: min_random_area {self.min_random_area} is above "
                    f"max_random_area {self.max_random_area}"
                )
        if (self._jitter or self._hls or self.pca_noise > 0) and self.channels != 3:
            raise MXNetError(
                "ImageRecordIter: brightness, contrast, saturation, random_h/s/l and pca_noise "
                f"need 3-channel images, data_shape has {self.channels}"
            )

    # ------------------------------------------------------------------ the pipeline
    def _inter(self, old_w: int, old_h: int, new_w: float, new_h: float, rng: Any) -> int:
        if self.inter_method == 9:
            if new_w > old_w and new_h > old_h:
                return 2
            if new_w < old_w and new_h < old_h:
                return 3
            return 1
        if self.inter_method == 10:
            return int(rng.integers(0, 5))
        return self.inter_method

    def __call__(self, img: np.ndarray, rng: Any) -> np.ndarray:
        """The augmented ``img`` (rows ``data_shape[1]``, columns ``data_shape[2]``)."""
        import cv2

        res = img
        if self.resize != -1:
            rows, cols = res.shape[:2]
            if rows > cols:
                new_h, new_w = self.resize * rows // cols, self.resize
            else:
                new_h, new_w = self.resize, self.resize * cols // rows
            inter = self._inter(cols, rows, new_w, new_h, rng)
            res = cv2.resize(res, (new_w, new_h), interpolation=inter)
        if self._affine:
            res = self._affine_transform(res, rng)
        if self.pad > 0:
            p = self.pad
            res = cv2.copyMakeBorder(res, p, p, p, p, cv2.BORDER_CONSTANT, value=self._fill())
        cropped = None
        if self.random_resized_crop:
            cropped = self._random_resized_crop(res, rng)
        elif self.max_crop_size != -1 or self.min_crop_size != -1:
            cropped = self._random_size_crop(res, rng)
        res = cropped if cropped is not None else self._crop(res, rng)
        if self._jitter:
            res = self._color_jitter(res, rng)
        if self._hls:
            res = self._hls_shift(res, rng)
        if self.pca_noise > 0:
            alpha = rng.normal(0.0, self.pca_noise, 3).astype(np.float32)
            rgb = _PCA_EIGVEC @ alpha
            bgr = rgb[::-1].astype(np.float32)
            res = np.clip(np.trunc(res.astype(np.float32) + bgr), 0, 255).astype(np.uint8)
        return res

    def _fill(self) -> tuple[int, int, int, int]:
        v = self.fill_value
        return (v, v, v, 0)

    def _affine_transform(self, res: np.ndarray, rng: Any) -> np.ndarray:
        import cv2

        f32 = np.float32
        rows, cols = res.shape[:2]
        shear = f32(rng.random() * self.max_shear_ratio * 2 - self.max_shear_ratio)
        angle = int(rng.integers(-self.max_rotate_angle, self.max_rotate_angle + 1))
        if self.rotate > 0:
            angle = self.rotate
        if self.rotate_list:
            angle = self.rotate_list[int(rng.integers(0, len(self.rotate_list)))]
        a = f32(math.cos(angle / 180.0 * math.pi))
        b = f32(math.sin(angle / 180.0 * math.pi))
        scale, ratio = f32(1), f32(1)
        if not self.random_resized_crop:
            scale = f32(
                rng.random() * (self.max_random_scale - self.min_random_scale)
                + self.min_random_scale
            )
            ratio = f32(rng.random() * (self.max_ratio - self.min_ratio) + self.min_ratio)
        hs = f32(2) * scale / (f32(1) + ratio)
        ws = ratio * hs
        new_w = max(self.min_img_size, min(self.max_img_size, float(scale * f32(cols))))
        new_h = max(self.min_img_size, min(self.max_img_size, float(scale * f32(rows))))
        m = np.zeros((2, 3), dtype=np.float32)
        m[0, 0] = hs * a - shear * b * ws
        m[1, 0] = -b * ws
        m[0, 1] = hs * b + shear * a * ws
        m[1, 1] = a * ws
        center_w = m[0, 0] * cols + m[0, 1] * rows
        center_h = m[1, 0] * cols + m[1, 1] * rows
        m[0, 2] = (f32(new_w) - center_w) / 2
        m[1, 2] = (f32(new_h) - center_h) / 2
        inter = self._inter(cols, rows, new_w, new_h, rng)
        return cv2.warpAffine(
            res,
            m,
            (int(new_w), int(new_h)),
            flags=inter,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=self._fill(),
        )

    def _random_resized_crop(self, res: np.ndarray, rng: Any) -> np.ndarray | None:
        import cv2

        if (
            self.max_random_area == 1
            and self.min_random_area == 1
            and self.max_ratio == 1
            and self.min_ratio == 1
        ):
            return None
        rows, cols = res.shape[:2]
        area = float(rows * cols)
        for _ in range(10):
            rand_area = rng.uniform(self.min_random_area, self.max_random_area)
            ratio = rng.uniform(self.min_ratio, self.max_ratio)
            target = area * rand_area
            y_area = _round(math.sqrt(target / ratio))
            x_area = _round(math.sqrt(target * ratio))
            if rng.random() > 0.5:
                y_area, x_area = x_area, y_area
            if 0 < y_area <= rows and 0 < x_area <= cols:
                y = int(rng.integers(0, rows - y_area + 1))
                x = int(rng.integers(0, cols - x_area + 1))
                inter = self._inter(x_area, y_area, self.width, self.height, rng)
                return cv2.resize(
                    res[y : y + y_area, x : x + x_area],
                    (self.width, self.height),
                    interpolation=inter,
                )
        return None

    def _random_size_crop(self, res: np.ndarray, rng: Any) -> np.ndarray:
        import cv2

        rows, cols = res.shape[:2]
        lo, hi = self.min_crop_size, self.max_crop_size
        if not (cols >= hi and rows >= hi and hi >= lo):
            raise MXNetError(
                f"ImageRecordIter: the image ({rows}x{cols}) is smaller than max_crop_size "
                f"{hi}, or max_crop_size is below min_crop_size {lo}"
            )
        size = int(rng.integers(lo, hi + 1))
        y, x = rows - size, cols - size
        if self.rand_crop:
            y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
        else:
            y, x = y // 2, x // 2
        inter = self._inter(size, size, self.width, self.height, rng)
        return cv2.resize(
            res[y : y + size, x : x + size], (self.width, self.height), interpolation=inter
        )

    def _crop(self, res: np.ndarray, rng: Any) -> np.ndarray:
        import cv2

        f32 = np.float32
        rows, cols = res.shape[:2]
        inter = self._inter(cols, rows, self.width, self.height, rng)
        if rows < self.height:
            new_cols = int(f32(self.height) / f32(rows) * f32(cols))
            res = cv2.resize(res, (new_cols, self.height), interpolation=inter)
            rows, cols = res.shape[:2]
        if cols < self.width:
            new_rows = int(f32(self.width) / f32(cols) * f32(rows))
            res = cv2.resize(res, (self.width, new_rows), interpolation=inter)
            rows, cols = res.shape[:2]
        if rows < self.height or cols < self.width:
            raise MXNetError(
                f"ImageRecordIter: the image ({rows}x{cols}) is smaller than data_shape "
                f"({self.height}x{self.width})"
            )
        y, x = rows - self.height, cols - self.width
        if self.rand_crop:
            y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
        else:
            y, x = y // 2, x // 2
        return res[y : y + self.height, x : x + self.width]

    def _color_jitter(self, res: np.ndarray, rng: Any) -> np.ndarray:
        import cv2

        f32 = np.float32
        alpha_b = 1.0 + rng.uniform(-self.brightness, self.brightness)
        alpha_c = 1.0 + rng.uniform(-self.contrast, self.contrast)
        alpha_s = 1.0 + rng.uniform(-self.saturation, self.saturation)
        for step in rng.permutation(3):
            if step == 0:
                res = _saturate_u8(res.astype(f32) * f32(alpha_b))
            elif step == 1:
                gray_mean = cv2.mean(cv2.cvtColor(res, cv2.COLOR_RGB2GRAY))[0]
                res = _saturate_u8(res.astype(f32) * f32(alpha_c) + f32((1 - alpha_c) * gray_mean))
            else:
                gray = cv2.cvtColor(cv2.cvtColor(res, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2BGR)
                res = cv2.addWeighted(res, alpha_s, gray, 1 - alpha_s, 0.0)
        return res

    def _hls_shift(self, res: np.ndarray, rng: Any) -> np.ndarray:
        import cv2

        def _draw(limit: int) -> int:
            r = (float(rng.random()) + 4 * float(rng.random())) / 5
            return int(r * limit * 2 - limit)

        h, s, l_ = _draw(self.random_h), _draw(self.random_s), _draw(self.random_l)
        hls = cv2.cvtColor(np.ascontiguousarray(res), cv2.COLOR_BGR2HLS).astype(np.int16)
        hls += np.array([h, l_, s], dtype=np.int16)
        hls = np.clip(hls, 0, np.array([180, 255, 255], dtype=np.int16)).astype(np.uint8)
        return cv2.cvtColor(hls, cv2.COLOR_HLS2BGR)


class Normalizer:
    """Turns an augmented BGR(A)/gray image into the iterator's ``(channels, height, width)``
    RGB(A) sample: mirrored (``mirror``, or at random with ``rand_mirror``), then

    - float32: ``(pixel - mean) * scale * c / std + scale * i / std``, ``c`` a random contrast
      factor in ``1 ± max_random_contrast``, ``i`` a random illumination in
      ``± max_random_illumination``; ``mean`` is ``mean_r/g/b/a`` or the mean image;
    - int8: ``pixel - round(mean)``, saturated to [-128, 127];
    - uint8: the pixels as they are.
    """

    def __init__(
        self,
        dtype: Any,
        channels: int,
        mean: Sequence[float] = (0.0, 0.0, 0.0, 0.0),
        std: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
        scale: float = 1.0,
        mirror: bool = False,
        rand_mirror: bool = False,
        max_random_contrast: float = 0.0,
        max_random_illumination: float = 0.0,
        mean_img: np.ndarray | None = None,
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.channels = channels
        self.mean = np.asarray(mean, dtype=np.float32)[:channels].reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32)[:channels].reshape(-1, 1, 1)
        self.scale = float(scale)
        self.mirror, self.rand_mirror = bool(mirror), bool(rand_mirror)
        self.max_random_contrast = float(max_random_contrast)
        self.max_random_illumination = float(max_random_illumination)
        self.mean_img = mean_img

    def __call__(self, img: np.ndarray, rng: Any, out: np.ndarray) -> None:
        """Write the sample of ``img`` (HWC or HW, BGR order) into ``out`` (CHW)."""
        f32 = np.float32
        if img.ndim == 2:
            img = img[:, :, None]
        if img.shape[2] != self.channels:
            raise MXNetError(
                f"ImageRecordIter: the image has {img.shape[2]} channels, data_shape "
                f"{self.channels}"
            )
        chw = img.transpose(2, 0, 1)
        if self.channels == 3:
            chw = chw[::-1]
        elif self.channels == 4:
            chw = chw[[2, 1, 0, 3]]
        mirrored = (self.rand_mirror and rng.random() < 0.5) or self.mirror
        dest = out[:, :, ::-1] if mirrored else out
        if self.dtype == np.uint8:
            dest[...] = chw
            return
        mean = self.mean_img if self.mean_img is not None else self.mean
        if self.dtype == np.int8:
            mean_int = (np.sign(mean) * np.floor(np.abs(mean) + 0.5)).astype(np.int16)
            dest[...] = np.clip(chw.astype(np.int16) - mean_int, -128, 127)
            return
        rc, ri = self.max_random_contrast, self.max_random_illumination
        contrast = f32(self.scale)
        illumination = f32(0)
        if rc or ri:
            contrast = f32((rng.random() * rc * 2 - rc + 1) * self.scale)
            illumination = f32((rng.random() * ri * 2 - ri) * self.scale)
        np.subtract(chw, mean, out=dest, dtype=f32)
        dest *= contrast / self.std
        if illumination:
            dest += illumination / self.std
