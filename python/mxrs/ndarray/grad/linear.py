"""Higher-order gradients of linear ops (part of ``grad.graph``).

A linear op's backward ``g -> J^T g`` is itself linear. It runs as the op
:class:`LinearBackward`, whose own backward applies the original op again (``J gg``), whose
backward is :class:`LinearBackward` again, and so on to any order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import elementwise as ew
from .. import indexing, padding, reduce, sequence, shape, unary
from ..core.op import Op, apply

__all__ = ["LINEAR", "LinearBackward", "linear", "linear_again", "const"]


def const(like: Any, raw: Any) -> Any:
    """Raw array ``raw`` as an NDArray that autograd treats as a constant."""
    return like._new(raw, like._ctx)


#: Linear ops, each with how to turn its recorded attributes into those that apply ``J`` alone
#: (a constant pad value is an offset, not part of ``J``).
LINEAR: dict[type, Callable[[dict[str, Any]], dict[str, Any]]] = {
    cls: (lambda attrs: attrs)
    for cls in (
        ew._Add,
        ew._Sub,
        ew._MulS,
        ew._DivS,
        unary._Neg,
        unary._Cast,
        unary._Identity,
        reduce._Sum,
        reduce._Mean,
        shape._Reshape,
        shape._Transpose,
        shape._BroadcastTo,
        shape._Concat,
        shape._Stack,
        shape._Split,
        shape._Slice,
        shape._Tile,
        shape._Repeat,
        shape._Flip,
        indexing._BasicIndex,
        indexing._AdvancedIndex,
        unary._Scale,
        shape._DiagMake,
        shape._DiagTake,
        shape._SplitAt,
        indexing._ScatterNd,
        reduce._Cumsum,
        sequence._SeqLast,
        sequence._SeqReverse,
    )
}
LINEAR[padding._Pad] = lambda attrs: {**attrs, "value": 0.0}
LINEAR[sequence._SeqMask] = lambda attrs: {**attrs, "value": 0.0}


def _zeros_for(node: Any, grads: tuple[Any, ...], metas: list[tuple[Any, Any]]) -> list[Any]:
    """``grads`` with None replaced by zeros of the given shapes and dtypes."""
    xp = node.xp
    return [xp.zeros(s, d) if g is None else g for g, (s, d) in zip(grads, metas, strict=True)]


class LinearBackward(Op):
    """``J^T g`` of a recorded linear op ``node`` as an op of its own: forward is ``node``'s
    backward, backward applies ``node`` again (``J gg``)."""

    def forward(self, *gouts: Any, node: Any) -> Any:
        self.node = node
        metas = getattr(node, "out_meta", None) or [(g.shape, g.dtype) for g in gouts]
        self.gmeta = [(g.shape, g.dtype) for g in gouts]
        gins = node.backward(*_zeros_for(node, gouts, metas))
        gins = gins if type(gins) is tuple else (gins,)
        ins = [(a._data.shape, a._data.dtype) for a in node.inputs]
        out = tuple(_zeros_for(node, gins, ins))
        # an op's backward may return views of its gradient (reshape): own the results
        out = tuple(o.copy() if any(o is g for g in gouts) else o for o in out)
        return out if len(out) > 1 else out[0]

    def backward(self, *ggs: Any) -> Any:
        node = self.node
        ins = [(a._data.shape, a._data.dtype) for a in node.inputs]
        again = type(node)()
        again.xp, again.be, again.ctx = node.xp, node.be, node.ctx
        again.needs = (False,) * len(ins)
        out = again.forward(*_zeros_for(node, ggs, ins), **LINEAR[type(node)](node.attrs))
        outs = out if type(out) is tuple else (out,)
        outs = tuple(o.astype(d, copy=False) for o, (_, d) in zip(outs, self.gmeta, strict=True))
        return outs if len(outs) > 1 else outs[0]


def linear(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    metas = getattr(node, "out_meta", None)
    if metas is not None:  # several outputs: the ones that got no gradient get zeros
        like = next(g for g in gs if g is not None)
        gs = [
            const(like, node.xp.zeros(s, d)) if g is None else g
            for g, (s, d) in zip(gs, metas, strict=True)
        ]
    out = apply(LinearBackward, gs, node=node)
    return tuple(out) if isinstance(out, list) else out


def linear_again(node: Any, xs: list[Any], gs: list[Any]) -> Any:
    """The rule of :class:`LinearBackward` itself: the original op applied again."""
    orig = node.node
    ins = [(a._data.shape, a._data.dtype) for a in orig.inputs]
    like = next(g for g in gs if g is not None)
    gs = [
        const(like, orig.xp.zeros(s, d)) if g is None else g
        for g, (s, d) in zip(gs, ins, strict=True)
    ]
    out = apply(type(orig), gs, **LINEAR[type(orig)](orig.attrs))
    outs = out if isinstance(out, list) else [out]
    outs = [
        o if o.dtype == x.dtype else unary.cast(o, x.dtype) for o, x in zip(outs, xs, strict=True)
    ]
    return tuple(outs) if len(outs) > 1 else outs[0]
