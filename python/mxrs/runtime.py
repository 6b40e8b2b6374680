"""What this build of mxrs can do, in the form of MXNet's ``mx.runtime.Features()``.

Each feature is a name and whether it is enabled here: ``CUDA`` when CuPy is installed and
sees a GPU, ``CUDNN`` and ``NCCL`` when CuPy has them, ``DIST_KVSTORE`` (the parameter server,
always), ``INT64_TENSOR_SIZE`` (arrays of more than 2**31 elements, always); the features of
MXNet's own engine that mxrs does not have (``MKLDNN``, ``TENSORRT``, ...) are listed disabled.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One feature: its ``name`` and whether it is ``enabled`` in this build."""

    def __init__(self, name: str, enabled: bool) -> None:
        self.name = name
        self.enabled = enabled

    def __repr__(self) -> str:
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _cupy_has(probe: Callable[[Any], bool]) -> bool:
    try:
        import cupy

        return bool(probe(cupy))
    except Exception:  # no CuPy, no driver, no device: the feature is off
        return False


def _probes() -> dict[str, Callable[[], bool]]:
    def cuda() -> bool:
        return _cupy_has(lambda cp: cp.cuda.runtime.getDeviceCount() > 0)

    def cudnn() -> bool:
        return cuda() and _cupy_has(lambda cp: __import__("cupy.cudnn") is not None)

    def nccl() -> bool:
        return cuda() and _cupy_has(lambda cp: __import__("cupy.cuda.nccl") is not None)

    return {
        "CUDA": cuda,
        "CUDNN": cudnn,
        "NCCL": nccl,
        "DIST_KVSTORE": lambda: True,
        "INT64_TENSOR_SIZE": lambda: True,
        "SIGNAL_HANDLER": lambda: False,
        "MKLDNN": lambda: False,
        "TENSORRT": lambda: False,
        "OPENCV": lambda: False,
        "DEBUG": lambda: False,
    }


def feature_list() -> list[Feature]:
    """Every feature of this build, in a fixed order."""
    return [Feature(name, probe()) for name, probe in _probes().items()]


class Features(collections.OrderedDict):
    """The features of this build by name (a dict of :class:`Feature`)."""

    def __init__(self) -> None:
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether ``feature_name`` (any case) is enabled; an unknown name raises
        ``RuntimeError`` naming the known ones."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(
                f"feature {feature_name!r} is unknown; known: {', '.join(self.keys())}"
            )
        return self[name].enabled
