"""Basic layers: containers, Dense, Dropout, BatchNorm, LayerNorm, Embedding, Flatten, Lambdas.

Layers whose weight shapes depend on the input (Dense without ``in_units``, BatchNorm and
LayerNorm without ``in_channels``) infer them from the first batch they see.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from ..block import Block, HybridBlock
from ..parameter import Parameter
from ..utils import _indent
from . import _fusion
from .activations import Activation

if TYPE_CHECKING:
    from ..._typing import DTypeLike
    from ...ndarray import NDArray
    from ..parameter import InitLike
    from ..parameter_dict import ParameterDict

__all__ = [
    "Sequential",
    "HybridSequential",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "Lambda",
    "HybridLambda",
]


def _run_chain(children: Iterable[Block], x: Any, args: tuple[Any, ...], fuse: bool = False) -> Any:
    """Run ``children`` in order on ``x`` (and ``args``); with ``fuse``, as the graph pass of
    :mod:`._fusion` groups them."""
    for step in _fusion.steps(children) if fuse else children:
        x = step(x, *args)
        args = ()
        if isinstance(x, (tuple, list)):
            args, x = tuple(x[1:]), x[0]
    return (x, *args) if args else x


if TYPE_CHECKING:
    _MixinBase = Block  # the containers below put the mixin before Block
else:
    _MixinBase = object


class _SequentialMixin(_MixinBase):
    """``add``, indexing, ``len`` and ``repr`` shared by the two containers."""

    _chains_children = True

    def add(self, *blocks: Block) -> None:
        """Append blocks to the end of the stack."""
        for block in blocks:
            self.register_child(block)

    def __repr__(self) -> str:
        modstr = "\n".join(
            f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items()
        )
        return f"{type(self).__name__}(\n{modstr}\n)"

    def __getitem__(self, key: int | slice) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Stack blocks: each one's output is the next one's input.

    Examples
    --------
    >>> net = nn.Sequential()
    >>> with net.name_scope():
    ...     net.add(nn.Dense(10, activation='relu'), nn.Dense(20))
    >>> net[0].name
    'sequential0_dense0'
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def forward(self, x: Any, *args: Any) -> Any:
        """Run the children in order."""
        return _run_chain(self._children.values(), x, args)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize the children; warns, as MXNet does, when every child is a HybridBlock
        (a HybridSequential is then the container to use)."""
        children = list(self._children.values())
        if children and all(isinstance(c, HybridBlock) for c in children):
            warnings.warn(
                f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. "
                "Consider using HybridSequential for the best performance.",
                stacklevel=2,
            )
        super().hybridize(active, **kwargs)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Stack HybridBlocks: each one's output is the next one's input."""

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: NDArray, *args: Any) -> Any:
        """Run the children in order; hybridized, on NDArrays, a BatchNorm followed by
        ``Activation('relu')`` runs as one operator (see :mod:`mxrs.gluon.nn._fusion`)."""
        return _run_chain(self._children.values(), x, args, fuse=self._active and F is nd)


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Output size.
    activation : str, optional
        An :class:`Activation` type applied to the output ('relu', 'sigmoid', ...).
    use_bias : bool, default True
    flatten : bool, default True
        Flatten all input axes but the first; otherwise act on the last axis only.
    dtype : str or numpy.dtype, default 'float32'
    weight_initializer : Initializer or str, optional
        Defaults to the initializer given to ``initialize``.
    bias_initializer : Initializer or str, default 'zeros'
    in_units : int, default 0
        Input size; 0 infers it from the first input.

    Examples
    --------
    >>> layer = nn.Dense(3, in_units=2)
    >>> layer.weight.shape
    (3, 2)
    """

    def __init__(
        self,
        units: int,
        activation: str | None = None,
        use_bias: bool = True,
        flatten: bool = True,
        dtype: DTypeLike = "float32",
        weight_initializer: InitLike | None = None,
        bias_initializer: InitLike = "zeros",
        in_units: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get(
                "weight",
                shape=(units, in_units),
                init=weight_initializer,
                dtype=dtype,
                allow_deferred_init=True,
            )
            self.bias: Parameter | None
            if use_bias:
                self.bias = self.params.get(
                    "bias",
                    shape=(units,),
                    init=bias_initializer,
                    dtype=dtype,
                    allow_deferred_init=True,
                )
            else:
                self.bias = None
            self.act: Activation | None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def infer_shape(self, x: NDArray, *args: Any) -> None:
        """Set ``in_units`` from ``x``: all axes but the first (flatten) or the last one."""
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(
        self, F: Any, x: NDArray, weight: NDArray, bias: NDArray | None = None
    ) -> NDArray:
        """Compute ``act(FullyConnected(x, weight, bias))``."""
        out = F.FullyConnected(
            x, weight, bias, no_bias=bias is None, num_hidden=self._units, flatten=self._flatten
        )
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self) -> str:
        shape = self.weight.shape
        assert shape is not None  # layers always give their weight a shape (0: not known yet)
        return (
            f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
            f"{self.act if self.act else 'linear'})"
        )


class Dropout(HybridBlock):
    """Zero a fraction ``rate`` of the inputs at random in training mode (scaling the rest by
    ``1 / (1 - rate)``); the identity in inference mode.

    Parameters
    ----------
    rate : float
        Probability of dropping each element, in ``[0, 1]``.
    axes : tuple of int, default ()
        Axes along which one mask value is shared.
    """

    def __init__(self, rate: float, axes: Sequence[int] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise MXNetError(f"Dropout rate must be in [0, 1], got {rate}")
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Apply dropout (active only in training mode)."""
        return F.Dropout(x, p=self._rate, axes=self._axes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


class Embedding(HybridBlock):
    """Map integer indices to rows of a learned ``(input_dim, output_dim)`` matrix.

    Parameters
    ----------
    input_dim : int
        Vocabulary size (largest index + 1).
    output_dim : int
        Size of each embedding vector.
    dtype : str or numpy.dtype, default 'float32'
    weight_initializer : Initializer or str, optional
    sparse_grad : bool, default False
        Make the weight's gradient row_sparse (``grad_stype='row_sparse'``): it holds only the
        rows a batch looked up, and no table-sized gradient is made. Trainers then sum and apply
        those rows only (lazily, for optimizers with ``lazy_update``), as in MXNet.

    Examples
    --------
    >>> emb = mx.gluon.nn.Embedding(10000, 16, sparse_grad=True)
    >>> emb.initialize()
    >>> with mx.autograd.record():
    ...     emb(mx.nd.array([[1, 5]])).sum().backward()
    >>> emb.weight.grad().indices.asnumpy()
    array([1, 5])
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        dtype: DTypeLike = "float32",
        weight_initializer: InitLike | None = None,
        sparse_grad: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs: dict[str, Any] = {
            "input_dim": input_dim,
            "output_dim": output_dim,
            "dtype": dtype,
            "sparse_grad": sparse_grad,
        }
        self.weight = self.params.get(
            "weight",
            shape=(input_dim, output_dim),
            init=weight_initializer,
            dtype=dtype,
            allow_deferred_init=True,
            grad_stype="row_sparse" if sparse_grad else "default",
        )

    def hybrid_forward(self, F: Any, x: NDArray, weight: NDArray) -> NDArray:
        """Look up the rows of ``weight`` at indices ``x``."""
        return F.Embedding(x, weight, **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Flatten the input to ``(N, prod(other dims))``."""

    def hybrid_forward(self, F: Any, x: NDArray) -> NDArray:
        """Collapse all axes but the first."""
        return F.flatten(x)

    def __repr__(self) -> str:
        return type(self).__name__


class Lambda(Block):
    """Wrap a function (or the name of an ``mx.nd`` function) as a Block.

    Examples
    --------
    >>> block = nn.Lambda('tanh')
    >>> block = nn.Lambda(lambda x: mx.nd.LeakyReLU(x, slope=0.1))
    """

    def __init__(self, function: str | Callable[..., Any], prefix: str | None = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise MXNetError(f"Function name {function} is not found in ndarray.")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise MXNetError(
                f"Unrecognized function in lambda: {function} of type {type(function)}"
            )

    def forward(self, *args: Any) -> Any:
        """Call the wrapped function."""
        return self._func_impl(*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._func_impl.__name__})"


class HybridLambda(HybridBlock):
    """Wrap a function ``f(F, x, *args)`` (or the name of an ``F`` function) as a HybridBlock.

    Examples
    --------
    >>> block = nn.HybridLambda('tanh')
    >>> block = nn.HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.1))
    """

    def __init__(self, function: str | Callable[..., Any], prefix: str | None = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise MXNetError(f"Function name {function} is not found in ndarray.")
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise MXNetError(
                f"Unrecognized function in lambda: {function} of type {type(function)}"
            )

    def hybrid_forward(self, F: Any, x: NDArray, *args: Any) -> Any:
        """Call the wrapped function with ``F``."""
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._func_name})"
