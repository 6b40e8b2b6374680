"""ParameterDict: an ordered mapping of full parameter names to Parameters, with bulk operations.

Blocks create their parameters through their dict's :meth:`ParameterDict.get`, which prepends
the block's prefix (``'dense0_'`` + ``'weight'``) and, for a dict created with ``shared=``, hands
out the shared dict's parameter of that name instead of creating one: that is how two blocks
share weights.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import ItemsView, Iterator, KeysView, Sequence, ValuesView
from typing import Any

import numpy as np

from .. import initializer
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context
from .parameter import Constant, InitLike, Parameter, _norm_shape
from .utils import _brief_print_list, _indent

__all__ = ["ParameterDict"]


class ParameterDict:
    """An ordered dictionary of :class:`Parameter` objects keyed by full name.

    Parameters
    ----------
    prefix : str, default ''
        Prepended to the names of the parameters :meth:`get` creates.
    shared : ParameterDict, optional
        :meth:`get` looks names up here before creating a parameter.

    Examples
    --------
    >>> params = mx.gluon.ParameterDict('net_')
    >>> w = params.get('weight', shape=(2, 3))
    >>> list(params.keys())
    ['net_weight']
    """

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None) -> None:
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        name = self._prefix + " " if self._prefix else ""
        content = "\n".join(_indent(f"  {v}", 2) for v in self.values())
        return f"{name}(\n{content}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key: object) -> bool:
        return key in self._params

    def items(self) -> ItemsView[str, Parameter]:
        """Return ``(name, Parameter)`` pairs in insertion order."""
        return self._params.items()

    def keys(self) -> KeysView[str]:
        """Return the full parameter names in insertion order."""
        return self._params.keys()

    def values(self) -> ValuesView[Parameter]:
        """Return the parameters in insertion order."""
        return self._params.values()

    @property
    def prefix(self) -> str:
        """str: the prefix :meth:`get` prepends to names."""
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """Return the parameter ``prefix + name``, creating it with ``kwargs`` if needed.

        An existing parameter (here or in the shared dict) is returned when ``kwargs`` agree
        with it; unknown shape dimensions (0) are filled in from ``kwargs['shape']``.

        Raises
        ------
        MXNetError
            When an attribute in ``kwargs`` contradicts the existing parameter's.
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if k in ("allow_deferred_init", "differentiable", "stype", "grad_stype"):
                continue
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == "shape":
                merged = _merge_shapes(_norm_shape(v), existing)
                if merged is not None:
                    param._shape = merged
                    continue
            elif k == "dtype" and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise MXNetError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute "
                    f"does not match with stored for attribute '{k}': desired "
                    f"'{v}' vs stored '{existing}'."
                )
        return param

    def get_constant(self, name: str, value: Any = None) -> Parameter:
        """Return the :class:`Constant` ``prefix + name``, creating it from ``value``.

        Raises
        ------
        KeyError
            When it does not exist and no ``value`` is given.
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(
                    f"No constant named '{name}'. Please specify value if you want "
                    "to create a new constant."
                )
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise MXNetError(f"Parameter '{name}' already exists but it is not a constant.")
            value = value.asnumpy() if isinstance(value, nd.NDArray) else np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise MXNetError(
                    f"Constant '{name}' already exists but it's value doesn't match new value"
                )
        return param

    def update(self, other: ParameterDict | dict[str, Parameter]) -> None:
        """Add every parameter of ``other`` (a ParameterDict or a dict of them).

        Raises
        ------
        MXNetError
            When a name is taken by a different Parameter object.
        """
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise MXNetError(
                    "Cannot update self with other because they have different "
                    f"Parameters with the same name '{k}'"
                )
        for k, v in other.items():
            self._params[k] = v

    def initialize(
        self,
        init: InitLike | None = None,
        ctx: Context | Sequence[Context] | None = None,
        verbose: bool = False,
        force_reinit: bool = False,
    ) -> None:
        """Initialize every parameter (see :meth:`Parameter.initialize`).

        Parameters
        ----------
        init : Initializer or str, default Uniform()
            The default initializer; a parameter's own ``init`` wins.
        ctx : Context or list of Context, optional
        verbose : bool, default False
            Log a statistic of each initialized array.
        force_reinit : bool, default False
        """
        init = initializer.create(init if init is not None else initializer.Uniform())
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Set every parameter's gradient buffers to 0."""
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx: Context | Sequence[Context] | None) -> None:
        """Move every parameter to the contexts ``ctx``."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        """Return the contexts any parameter lives on, in first-seen order."""
        seen = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in seen:
                    seen.append(c)
        return seen

    def setattr(self, name: str, value: Any) -> None:
        """Set attribute ``name`` of every parameter, e.g. ``setattr('grad_req', 'null')``."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename: str | os.PathLike[str], strip_prefix: str = "") -> None:
        """Save the parameters' values (names without ``strip_prefix``) with ``mx.nd.save``.

        A row_sparse weight is fetched whole from its Trainer's store first, as in MXNet; the
        file holds it dense (``nd.save`` writes dense arrays), which MXNet and mxrs both load
        back into a row_sparse Parameter.

        Raises
        ------
        MXNetError
            When a name does not start with ``strip_prefix``.
        """
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise MXNetError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's "
                    f"name '{param.name}' does not start with '{strip_prefix}'. this may be due "
                    "to your Block shares parameters from other Blocks or you forgot to use "
                    "'with name_scope()' when creating child blocks."
                )
            arg_dict[param.name[len(strip_prefix) :]] = param._reduce()
        nd.save(filename, arg_dict)

    def load(
        self,
        filename: str | os.PathLike[str],
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        restore_prefix: str = "",
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load values saved by :meth:`save` (names get ``restore_prefix`` prepended).

        Parameters
        ----------
        filename : str
        ctx : Context or list of Context, optional
            Where uninitialized parameters are created (default cpu).
        allow_missing : bool, default False
            Leave parameters absent from the file alone instead of failing.
        ignore_extra : bool, default False
            Skip arrays in the file that match no parameter instead of failing.
        restore_prefix : str, default ''
        cast_dtype : bool, default False
            Cast loaded arrays whose dtype differs (to the parameter's with
            ``dtype_source='current'``, or adopt the file's with ``'saved'``).

        Raises
        ------
        MXNetError
            On a missing or extra name, or a shape or dtype mismatch.
        """
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise MXNetError(
                        f"restore_prefix is '{restore_prefix}' but Parameters name "
                        f"'{name}' does not start with '{restore_prefix}'"
                    )
        lprefix = len(restore_prefix)
        loaded = nd.load(filename)
        if not isinstance(loaded, dict):
            raise MXNetError(f"{filename} holds a list of arrays, not named parameters")
        arg_dict = {
            restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v
            for k, v in loaded.items()
        }
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise MXNetError(
                        f"Parameter '{name[lprefix:]}' is missing in file '{filename}', which "
                        f"contains parameters: {_brief_print_list(arg_dict.keys())}. Please "
                        "make sure source and target networks have the same prefix."
                    )
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise MXNetError(
                        f"Parameter '{name[lprefix:]}' loaded from file '{filename}' is not "
                        f"present in ParameterDict, choices are: "
                        f"{_brief_print_list(self._params.keys())}. Set ignore_extra to True "
                        "to ignore. Please make sure source and target networks have the same "
                        "prefix."
                    )
                continue
            self._params[name]._load_init(
                value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source
            )


def _merge_shapes(
    wanted: tuple[int, ...] | None, existing: tuple[int, ...]
) -> tuple[int, ...] | None:
    """Merge two shapes where 0 means unknown; None when they contradict."""
    if wanted is None or len(wanted) != len(existing):
        return None
    merged = []
    for a, b in zip(wanted, existing, strict=True):
        if a != b and a * b != 0:
            return None
        merged.append(a or b)
    return tuple(merged)
