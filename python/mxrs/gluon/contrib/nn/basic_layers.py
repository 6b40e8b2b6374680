"""Blocks that run their children side by side (:class:`Concurrent`, :class:`HybridConcurrent`),
the pass-through :class:`Identity`, and :class:`SparseEmbedding`, an embedding whose table and
gradient are both row_sparse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .... import ndarray as nd
from ....base import MXNetError
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

if TYPE_CHECKING:
    from ...._typing import DTypeLike
    from ....ndarray import NDArray
    from ...parameter import InitLike
    from ...parameter_dict import ParameterDict

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding"]


def _check_axis(axis: Any) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise MXNetError(f"Concurrent: axis must be an int, not {axis!r}")
    return axis


class Concurrent(Sequential):
    """Feed the input to every child and concatenate their outputs along ``axis``.

    Parameters
    ----------
    axis : int, default -1
        The axis the children's outputs are joined on.
    prefix : str, optional
    params : ParameterDict, optional

    Examples
    --------
    >>> net = Concurrent(axis=1)
    >>> net.add(nn.Dense(10, activation='relu'), nn.Dense(20), Identity())
    """

    _chains_children = False

    def __init__(
        self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = _check_axis(axis)

    def forward(self, x: Any, *args: Any) -> Any:
        """Run every child on ``x`` and join the outputs on ``axis``."""
        outs = [block(x) for block in self._children.values()]
        if not outs:
            raise MXNetError(f"{type(self).__name__} '{self.prefix}' has no children to run")
        return nd.concat(*outs, dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Feed the input to every child HybridBlock and concatenate their outputs along ``axis``;
    it can be hybridized.

    Parameters
    ----------
    axis : int, default -1
        The axis the children's outputs are joined on.
    prefix : str, optional
    params : ParameterDict, optional

    Examples
    --------
    >>> net = HybridConcurrent(axis=1)
    >>> net.add(nn.Dense(10, activation='relu'), nn.Dense(20), Identity())
    >>> net.hybridize()
    """

    _chains_children = False

    def __init__(
        self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = _check_axis(axis)

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        """Run every child on ``x`` and join the outputs on ``axis``."""
        outs = [block(x) for block in self._children.values()]
        if not outs:
            raise MXNetError(f"{type(self).__name__} '{self.prefix}' has no children to run")
        return F.concat(*outs, dim=self.axis)


class Identity(HybridBlock):
    """Return the input unchanged: the skip branch of a residual :class:`HybridConcurrent`.

    Parameters
    ----------
    prefix : str, optional
    params : ParameterDict, optional
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        """Return ``x``."""
        return x


class SparseEmbedding(Block):
    """Map integer indices to rows of an ``(input_dim, output_dim)`` table stored row_sparse.

    Both the weight (``stype='row_sparse'``) and its gradient (``grad_stype='row_sparse'``)
    are row_sparse: each forward fetches only the rows the batch looks up (with
    :meth:`~mxrs.gluon.Parameter.row_sparse_data`, so the weight must belong to a
    :class:`~mxrs.gluon.Trainer`), and the gradient holds only those rows. It is meant for
    very large vocabularies trained with a KVStore.

    Parameters
    ----------
    input_dim : int
        Vocabulary size (largest index + 1).
    output_dim : int
        Size of each embedding vector.
    dtype : str or numpy.dtype, default 'float32'
    weight_initializer : Initializer or str, optional

    Examples
    --------
    >>> emb = SparseEmbedding(1000, 8)
    >>> emb.initialize()
    >>> trainer = mx.gluon.Trainer(emb.collect_params(), 'sgd')
    >>> emb(mx.nd.array([3, 7])).shape
    (2, 8)
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        dtype: DTypeLike = "float32",
        weight_initializer: InitLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        for what, v in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise MXNetError(f"SparseEmbedding: {what} must be a positive int, not {v!r}")
        self._kwargs: dict[str, Any] = {
            "input_dim": input_dim,
            "output_dim": output_dim,
            "dtype": dtype,
            "sparse_grad": True,
        }
        self.weight = self.params.get(
            "weight",
            shape=(input_dim, output_dim),
            init=weight_initializer,
            dtype=dtype,
            grad_stype="row_sparse",
            stype="row_sparse",
        )

    def forward(self, x: NDArray) -> NDArray:
        """Look up the rows of the weight at indices ``x``."""
        weight = self.weight.row_sparse_data(x)
        return nd.Embedding(x, weight, **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"
