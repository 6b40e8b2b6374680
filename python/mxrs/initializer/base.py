"""The initializer protocol and registry: ``InitDesc`` (a parameter's name with attributes),
``Initializer`` (the suffix rules that pick a fill for weights, biases, gammas and running
statistics), ``register``/``alias`` and ``create``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray

__all__ = [
    "InitDesc",
    "Initializer",
    "register",
    "alias",
    "create",
]

_REGISTRY: dict[str, type[Initializer]] = {}
_I = TypeVar("_I", bound="type[Initializer]")


class InitDesc(str):
    """The name of an array to initialize, with attributes:
    ``InitDesc(name, attrs=None, global_init=None)``.

    The string itself is the array's name; its suffix (``weight``, ``bias``, ...) picks the
    default rule.

    Attributes
    ----------
    attrs : dict of str to object
        ``'__init__'`` names (or is) the initializer that must fill this array.
    global_init : Initializer or None
        The initializer to fall back to.
    """

    attrs: dict[str, Any]
    global_init: Initializer | None

    def __new__(
        cls, name: str, attrs: dict[str, Any] | None = None, global_init: Initializer | None = None
    ) -> InitDesc:
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class of initializers: ``init(desc, arr)`` fills NDArray ``arr`` in place.

    Subclasses implement ``_init_weight(name, arr)``; the other ``_init_*`` rules default to
    MXNet's constants (bias and beta 0, gamma 1).
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Callable[[NDArray], str] | None = None

    def set_verbosity(
        self, verbose: bool = False, print_func: Callable[[NDArray], str] | None = None
    ) -> Initializer:
        """Log a statistic of every initialized array (default: its RMS value).

        Parameters
        ----------
        verbose : bool
        print_func : callable, optional
            Takes an NDArray, returns a str.
        """
        self._verbose = verbose
        if print_func is None:

            def print_func(x: NDArray) -> str:
                return str(float(np.sqrt((x.asnumpy().astype(np.float64) ** 2).mean())))

        self._print_func = print_func
        return self

    def _verbose_print(self, desc: str, init: object, arr: NDArray) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """Return the initializer as a JSON string ``'["name", {kwargs}]'``."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __eq__(self, other: object) -> bool:
        """Initializers of one class with the same arguments are equal (two ``Constant(-10.0)``
        describe one initialization, for a shared Parameter too)."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self.dumps() == other.dumps()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dumps()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"

    def __call__(self, desc: str, arr: NDArray) -> None:
        """Initialize NDArray ``arr`` described by ``desc`` (an :class:`InitDesc` or a str)."""
        if not isinstance(arr, NDArray):
            raise TypeError(f"initializer expects an NDArray to fill, got {type(arr).__name__}")
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _init_zero(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_one(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_bias(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_gamma(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_beta(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_weight(self, name: str, arr: NDArray) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight")

    def _init_default(self, name: str, _: NDArray) -> None:
        raise MXNetError(
            f"Unknown initialization pattern for {name}. Default initialization is limited to "
            'names ending in "weight", "bias", "gamma" (1.0), "beta" (0.0) and the '
            "running statistics; give the parameter its own init=mx.init.*"
        )


_SUFFIX_RULES = (
    ("weight", "_init_weight"),
    ("bias", "_init_bias"),
    ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("moving_mean", "_init_zero"),
    ("running_mean", "_init_zero"),
    ("moving_var", "_init_one"),
    ("running_var", "_init_one"),
    ("moving_inv_var", "_init_zero"),
    ("moving_avg", "_init_zero"),
)


# ----------------------------------------------------------------- registry
def register(klass: _I) -> _I:
    """Register initializer class ``klass`` under its lower-case name (usable as a decorator).

    Examples
    --------
    >>> @mx.init.register
    ... class Halves(mx.init.Initializer):
    ...     def _init_weight(self, _: str, arr: NDArray) -> None:
    ...         arr[:] = 0.5
    >>> mx.init.create('halves')
    """
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise MXNetError(f"can only register Initializer subclasses, not {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases: str) -> Callable[[_I], _I]:
    """Return a decorator registering an initializer class under extra names."""

    def reg(klass: _I) -> _I:
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass

    return reg


def create(
    initializer: Initializer | type[Initializer] | str, *args: Any, **kwargs: Any
) -> Initializer:
    """Return an initializer from an instance, a registered name or a JSON dump.

    Parameters
    ----------
    initializer : Initializer or str
        An instance (returned as is), a registered name such as ``'xavier'`` or ``'zeros'``, or
        what :meth:`Initializer.dumps` wrote.
    *args, **kwargs
        Passed to the class when creating by name.

    Raises
    ------
    MXNetError
        For an unknown name.
    """
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise MXNetError("create: extra arguments given with an Initializer instance")
        return initializer
    if isinstance(initializer, type) and issubclass(initializer, Initializer):
        return initializer(*args, **kwargs)
    if not isinstance(initializer, str):
        raise MXNetError(f"cannot create an initializer from {initializer!r}")
    if initializer.startswith("["):
        name, kw = json.loads(initializer)
        return create(name, **kw)
    name = initializer.lower()
    if name not in _REGISTRY:
        raise MXNetError(
            f"{name} is not registered. Please register with "
            f"mx.init.register first (known: {', '.join(sorted(_REGISTRY))})"
        )
    return _REGISTRY[name](*args, **kwargs)
