"""Weight initializers (``mx.init`` / ``mx.initializer``), with MXNet 1.x's formulas.

An initializer is called as ``init(desc, arr)``: ``desc`` is an :class:`InitDesc` (a ``str``, the
parameter's name, with attributes) and ``arr`` the NDArray to fill in place. When
``desc.attrs['__init__']`` names an initializer (Gluon puts a parameter's own ``init`` there), that
initializer's ``_init_weight`` fills the array whatever the name; otherwise the name's suffix picks
the rule: ``weight`` -> ``_init_weight``, ``bias`` and ``beta`` -> 0, ``gamma`` -> 1,
``moving_mean``/``running_mean`` -> 0, ``moving_var``/``running_var`` -> 1.

Random initializers draw through :mod:`mxrs.random`, so ``mx.random.seed(n)`` makes them
reproducible. Initializers are registered by lower-case class name (and aliases such as
``'zeros'``, ``'ones'``) and created with :func:`create`.

Examples
--------
>>> w = mx.nd.zeros((64, 100))
>>> mx.init.Xavier(magnitude=2.24)(mx.init.InitDesc('fc_weight'), w)
>>> mx.init.create('zeros')
<mxrs.initializer.Zero object at ...>
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from . import random
from ._rnn_layout import fused_num_input, fused_pieces
from .base import MXNetError
from .ndarray import NDArray, concat, load, zeros

__all__ = [
    "InitDesc",
    "Initializer",
    "register",
    "alias",
    "create",
    "Zero",
    "One",
    "Constant",
    "Uniform",
    "Normal",
    "Orthogonal",
    "Xavier",
    "MSRAPrelu",
    "Bilinear",
    "LSTMBias",
    "FusedRNN",
    "Mixed",
    "Load",
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


# ----------------------------------------------------------------- initializers
@register
@alias("zeros")
class Zero(Initializer):
    """Fill with zeros."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Fill with ones."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 1


@register
class Constant(Initializer):
    """Fill with ``value``: a scalar, or an array broadcastable to the parameter's shape.

    Parameters
    ----------
    value : float, array_like or NDArray
    """

    def __init__(self, value: float) -> None:
        super().__init__(
            value=value.tolist()
            if isinstance(value, np.ndarray)
            else value.asnumpy().tolist()
            if isinstance(value, NDArray)
            else value
        )
        self.value = value

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = self.value


@register
class Uniform(Initializer):
    """Draw uniformly from ``[-scale, scale]``.

    Parameters
    ----------
    scale : float, default 0.07
    """

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: str, arr: NDArray) -> None:
        random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Draw from the normal distribution with mean 0 and deviation ``sigma``.

    Parameters
    ----------
    sigma : float, default 0.01
    """

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: str, arr: NDArray) -> None:
        random.normal(0, self.sigma, out=arr)


@register
class Orthogonal(Initializer):
    """Fill with a scaled orthogonal matrix (Saxe et al., 2013) of a random draw's SVD.

    Parameters
    ----------
    scale : float, default 1.414
    rand_type : {'uniform', 'normal'}, default 'uniform'
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: str, arr: NDArray) -> None:
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise MXNetError(f"Orthogonal: unknown rand_type {self.rand_type!r}")
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res).reshape(arr.shape)


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization, scaled to keep activations' variance through layers.

    With ``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``,
    ``factor`` is their mean ('avg'), ``fan_in`` ('in') or ``fan_out`` ('out'), and
    ``scale = sqrt(magnitude / factor)``. 'uniform' draws from ``[-scale, scale]``, 'gaussian'
    from a normal distribution with deviation ``scale``.

    Parameters
    ----------
    rnd_type : {'uniform', 'gaussian'}, default 'uniform'
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    magnitude : float, default 3
    """

    def __init__(
        self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3
    ) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise MXNetError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D."
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise MXNetError(
                f"Incorrect factor type {self.factor_type!r}; expected 'avg', 'in' or 'out'"
            )
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            random.uniform(-scale, scale, out=arr)
        elif self.rnd_type == "gaussian":
            random.normal(0, scale, out=arr)
        else:
            raise MXNetError(
                f"Unknown random type {self.rnd_type!r}; expected 'uniform' or 'gaussian'"
            )


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for (P)ReLU networks: Gaussian Xavier with
    ``magnitude = 2 / (1 + slope**2)``.

    Parameters
    ----------
    factor_type : {'avg', 'in', 'out'}, default 'avg'
    slope : float, default 0.25
        The initial negative slope of the PReLU units.
    """

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope**2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Fill an upsampling (deconvolution) kernel with bilinear interpolation weights: each
    ``(H, W)`` filter is the outer product of the 1-d tent ``1 - |i / f - c|`` over its rows and
    columns, with ``f = ceil(W / 2)`` and ``c = (2f - 1 - f % 2) / (2f)``."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise MXNetError(f"Bilinear: needs a kernel of at least 2 dimensions, got {shape}")
        h, w = shape[-2], shape[-1]
        f = math.ceil(w / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        cols = 1 - np.abs(np.arange(w) / f - c)
        rows = 1 - np.abs(np.arange(h) / f - c)
        arr[:] = np.broadcast_to(np.outer(rows, cols), shape).astype(arr.dtype)


@register
class LSTMBias(Initializer):
    """Fill an LSTM cell's bias with zeros except the forget gate's quarter, set to
    ``forget_bias`` (the gates are stacked input, forget, cell, output; Jozefowicz et al. 2015
    recommend 1.0).

    Parameters
    ----------
    forget_bias : float, default 1.0

    Examples
    --------
    >>> cell = mx.gluon.rnn.LSTMCell(100, i2h_bias_initializer=mx.init.LSTMBias(2.0))
    """

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: NDArray) -> None:
        hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[hidden : 2 * hidden] = self.forget_bias


@register
class FusedRNN(Initializer):
    """Fill the flat parameter vector of a fused ``RNN`` operator (``mx.rnn.FusedRNNCell``)
    piece by piece, each per-gate weight and bias (``l0_i2h_f_weight``...) as the unfused cells
    would be: by ``init``, or the global initializer when None. An LSTM's forget-gate biases
    (i2h and h2h both) get ``forget_bias``. The other arguments must match the cell's.

    Parameters
    ----------
    init : Initializer, str or None
    num_hidden, num_layers : int
    mode : str
        'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
    bidirectional : bool, default False
    forget_bias : float, default 1.0
    """

    def __init__(
        self,
        init: Initializer | str | None,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ) -> None:
        init = create(init) if isinstance(init, str) else init
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)  # fmt: skip
        self._init = init
        self._layout = (mode, num_layers, bidirectional, num_hidden)
        self._forget_bias = forget_bias

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        mode, layers, bidirectional, hidden = self._layout
        fill = self._init or getattr(desc, "global_init", None)
        if fill is None or isinstance(fill, FusedRNN):
            raise MXNetError(
                f"FusedRNN: {desc} needs an initializer for its pieces; give FusedRNN one or "
                "initialize with a global initializer (mod.init_params(mx.init.Xavier()))"
            )
        num_input = fused_num_input(int(arr.size), mode, layers, bidirectional, hidden)
        pieces = []
        for name, _, shape in fused_pieces("", mode, layers, bidirectional, num_input, hidden):
            piece = zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                fill(InitDesc(name, global_init=getattr(desc, "global_init", None)), piece)
            pieces.append(piece.reshape((-1,)))
        arr[:] = concat(*pieces, dim=0)


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
