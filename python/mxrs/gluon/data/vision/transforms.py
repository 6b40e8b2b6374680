"""Image transforms with MXNet 1.x's semantics: ``ToTensor``, ``Normalize``, ``Compose``, ...

A transform is a callable object taking one image (or a batch of images) as an NDArray and
returning the transformed NDArray; NumPy inputs are accepted too and keep their dtype. They are
used as ``dataset.transform_first(transforms.Compose([...]))`` or called directly. They run on the
context of their input, so they work on GPU arrays as well.

Examples
--------
>>> transformer = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.13, 0.31)])
>>> train = gluon.data.vision.MNIST(train=True).transform_first(transformer)
>>> train[0][0].shape
(1, 28, 28)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError

if TYPE_CHECKING:
    from ...._typing import DTypeLike

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "RandomFlipLeftRight"]


def _as_nd(x: Any) -> nd.NDArray:
    if isinstance(x, nd.NDArray):
        return x
    arr = np.asarray(x)
    return nd.array(arr, dtype=arr.dtype)


def _on_host(x: nd.NDArray) -> bool:
    """True for arrays in host memory: their transforms run as a few NumPy calls, which costs a
    fraction of the per-operation dispatch (data loading transforms one sample at a time)."""
    return x.context.device_type != "gpu"


class _Transform:
    """Shared behaviour: ``t(x)`` runs ``t.forward(x)``; ``hybridize`` is accepted."""

    def __call__(self, x: Any) -> nd.NDArray:
        return self.forward(_as_nd(x))

    def forward(self, x: nd.NDArray) -> nd.NDArray:
        """Transform NDArray ``x`` and return the result (subclasses implement this)."""
        raise NotImplementedError

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Accepted for compatibility with MXNet's Blocks; transforms run imperatively."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Compose(_Transform):
    """Apply several transforms one after the other.

    Parameters
    ----------
    transforms : list of callable
        Applied in list order, each to the previous one's output.

    Examples
    --------
    >>> t = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.5)])
    >>> t(mx.nd.full((2, 2, 1), 255, dtype='uint8')).asnumpy().ravel()
    array([1., 1., 1., 1.], dtype=float32)
    """

    def __init__(self, transforms: Iterable[Callable[[Any], Any]]) -> None:
        self._transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        """Apply each transform in turn to ``x``."""
        for t in self._transforms:
            x = t(x)
        return x

    forward = __call__

    def __len__(self) -> int:
        return len(self._transforms)

    def __getitem__(self, idx: int) -> Callable[[Any], Any]:
        return self._transforms[idx]

    def __repr__(self) -> str:
        inner = "".join(f"\n  ({i}): {t!r}" for i, t in enumerate(self._transforms))
        return f"Compose({inner}\n)"


class Cast(_Transform):
    """Convert the elements to another type.

    Parameters
    ----------
    dtype : str or numpy.dtype, default 'float32'
    """

    def __init__(self, dtype: DTypeLike = "float32") -> None:
        self._dtype = np.dtype(dtype)

    def forward(self, x: nd.NDArray) -> nd.NDArray:
        """Return ``x`` converted to the target type."""
        return x.astype(self._dtype)

    def __repr__(self) -> str:
        return f"Cast(dtype={self._dtype.name})"


class ToTensor(_Transform):
    """Turn an image of shape (H, W, C) with values 0-255 into float32 (C, H, W) in [0, 1].

    A batch (N, H, W, C) becomes (N, C, H, W). The values are divided by 255 in float32.

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

    def forward(self, x: nd.NDArray) -> nd.NDArray:
        """Return ``x`` as float32 channels-first values in [0, 1]."""
        axes: tuple[int, ...]
        if x.ndim == 3:
            axes = (2, 0, 1)
        elif x.ndim == 4:
            axes = (0, 3, 1, 2)
        else:
            raise MXNetError(
                f"ToTensor expects an (H, W, C) image or an (N, H, W, C) batch, got shape {x.shape}"
            )
        if _on_host(x):
            out = np.transpose(x.asnumpy(), axes).astype(np.float32) / np.float32(255.0)
            return nd.array(out, ctx=x.context, dtype=np.float32)
        return nd.transpose(x.astype(np.float32), axes=axes) / 255.0


class Normalize(_Transform):
    """Subtract a per-channel mean and divide by a per-channel standard deviation.

    For a (C, H, W) tensor, or an (N, C, H, W) batch, channel ``c`` becomes
    ``(x[c] - mean[c]) / std[c]``. Apply it after :class:`ToTensor`.

    Parameters
    ----------
    mean : float or sequence of float, default 0.0
        One value for every channel, or one per channel.
    std : float or sequence of float, default 1.0
        One value for every channel, or one per channel.

    Raises
    ------
    MXNetError
        For integer inputs, inputs that are not 3-D or 4-D, or a number of means or standard
        deviations that is neither 1 nor the number of channels.

    Examples
    --------
    >>> x = mx.nd.ones((3, 2, 2))
    >>> transforms.Normalize((0, 0.5, 1), (1, 0.5, 2))(x).asnumpy()[:, 0, 0]
    array([1., 1., 0.], dtype=float32)
    """

    def __init__(
        self, mean: float | Sequence[float] = 0.0, std: float | Sequence[float] = 1.0
    ) -> None:
        self._mean = np.atleast_1d(np.asarray(mean, dtype=np.float32)).ravel()
        self._std = np.atleast_1d(np.asarray(std, dtype=np.float32)).ravel()
        self._cache: dict[tuple[int, Any], tuple[Any, ...]] = {}

    def _constants(self, channels: int, dtype: Any) -> tuple[Any, ...]:
        """``(mean, std)`` shaped (C, 1, 1) in ``dtype``, made once per channel count and type."""
        key = (channels, dtype)
        if key not in self._cache:
            pair = []
            for values, name in ((self._mean, "mean"), (self._std, "std")):
                if values.size not in (1, channels):
                    raise MXNetError(
                        f"Normalize got {values.size} {name} values for "
                        f"{channels} channels; give one value, or one per channel"
                    )
                pair.append(
                    np.broadcast_to(values, (channels,)).reshape(channels, 1, 1).astype(dtype)
                )
            self._cache[key] = tuple(pair)
        return self._cache[key]

    def forward(self, x: nd.NDArray) -> nd.NDArray:
        """Return ``(x - mean) / std`` channel by channel."""
        if x.ndim not in (3, 4):
            raise MXNetError(
                f"Normalize expects a (C, H, W) tensor or an (N, C, H, W) batch, "
                f"got shape {x.shape}"
            )
        if not np.issubdtype(x.dtype, np.floating):
            raise MXNetError(
                f"Normalize expects floating-point input, got {np.dtype(x.dtype)}; "
                "apply ToTensor first"
            )
        channels, dtype = x.shape[-3], np.dtype(x.dtype)
        mean, std = self._constants(channels, dtype)
        if _on_host(x):
            return nd.array((x.asnumpy() - mean) / std, ctx=x.context, dtype=dtype)
        mean = nd.array(mean, ctx=x.context, dtype=dtype)
        std = nd.array(std, ctx=x.context, dtype=dtype)
        return (x - mean) / std

    def __repr__(self) -> str:
        return f"Normalize(mean={self._mean.tolist()}, std={self._std.tolist()})"


class RandomFlipLeftRight(_Transform):
    """Mirror an (H, W, C) image, or an (N, H, W, C) batch, left to right with probability 0.5.

    The coin is NumPy's global generator (each DataLoader worker process seeds its own).
    """

    def forward(self, x: nd.NDArray) -> nd.NDArray:
        """Return ``x`` mirrored along its width axis, or ``x`` itself, with even odds."""
        if x.ndim not in (3, 4):
            raise MXNetError(
                f"RandomFlipLeftRight expects an (H, W, C) image or an "
                f"(N, H, W, C) batch, got shape {x.shape}"
            )
        if np.random.random_sample() < 0.5:
            return nd.flip(x, axis=x.ndim - 2)
        return x
