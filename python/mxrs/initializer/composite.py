"""Initializers made of others: ``Mixed`` (by name pattern) and ``Load`` (saved values, with a
default for the rest)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..base import MXNetError
from ..ndarray import NDArray, load

__all__ = [
    "Mixed",
    "Load",
]


class Mixed:
    """Initialize each array with the first initializer whose regex matches its name.

    Parameters
    ----------
    patterns : list of str
        Regular expressions matched against names with ``re.match``.
    initializers : list of Initializer
    """

    def __init__(
        self, patterns: Sequence[str], initializers: Sequence[Callable[[str, NDArray], None]]
    ) -> None:
        if len(patterns) != len(initializers):
            raise MXNetError("Mixed: patterns and initializers differ in length")
        self.map = list(zip([re.compile(p) for p in patterns], initializers, strict=True))

    def __call__(self, name: str, arr: NDArray) -> None:
        """Initialize ``arr`` with the initializer of the first matching pattern."""
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise MXNetError(
            f"Parameter name {name} did not match any pattern. Consider adding a "
            '".*" pattern at the end with a default Initializer.'
        )


class Load:
    """Initialize arrays from saved values (a file of :func:`mxrs.nd.save` or a dict).

    Names prefixed ``arg:`` or ``aux:`` match without the prefix; arrays not found go to
    ``default_init``.
    """

    def __init__(
        self,
        param: str | dict[str, NDArray],
        default_init: Callable[[str, NDArray], None] | None = None,
        verbose: bool = False,
    ) -> None:
        loaded = load(param) if isinstance(param, str) else param
        if not isinstance(loaded, dict):
            raise MXNetError("Load expects a dict of name to NDArray or a file holding one")
        self.param = {
            (k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in loaded.items()
        }
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: NDArray) -> None:
        """Fill ``arr`` from the saved array called ``name``, or with the default."""
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise MXNetError(
                    f"Parameter {name} cannot be initialized from loading. Shape "
                    f"mismatch, target {arr.shape} vs loaded "
                    f"{self.param[name].shape}"
                )
            arr[:] = self.param[name]
        elif self.default_init is None:
            raise MXNetError(
                f"Cannot Initialize {name}. Not found in loaded param and no "
                "default Initializer is provided."
            )
        else:
            self.default_init(name, arr)
