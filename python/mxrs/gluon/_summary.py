"""``Block.summary``: one forward pass with a hook on every layer, printed as a table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..ndarray import NDArray

if TYPE_CHECKING:
    from .parameter_dict import ParameterDict

__all__ = ["summary", "Layer"]


class Layer(Protocol):
    """What a summary needs of a block (a :class:`~mxrs.gluon.Block` is one)."""

    _chains_children: bool

    @property
    def params(self) -> ParameterDict: ...

    def register_forward_hook(self, hook: Callable[[Any, tuple[Any, ...], Any], Any]) -> Any: ...

    def apply(self, fn: Callable[[Any], Any]) -> Any: ...

    def __call__(self, *args: Any) -> Any: ...


def summary(net: Layer, inputs: tuple[Any, ...]) -> None:
    """Print each layer's output shape and parameter count for one pass of ``inputs``
    through ``net`` (see :meth:`Block.summary`)."""
    rows: list[tuple[str, str, int, int, int]] = []
    seen = set()
    hooks = []

    def shape_str(x: Any) -> str:
        if isinstance(x, (list, tuple)):
            return ", ".join(shape_str(i) for i in x)
        return str(x.shape) if isinstance(x, NDArray) else str(x)

    def hook(block: Layer, _: Any, outputs: Any) -> None:
        n = trainable = shared = 0
        for p in block.params.values():
            size = p.data().size
            n += size
            trainable += 0 if p.grad_req == "null" else size
            if p in seen:
                shared += size
            seen.add(p)
        rows.append(
            (
                f"{type(block).__name__}-{len(rows) + 1}",
                shape_str(outputs),
                n,
                trainable,
                shared,
            )
        )

    def register(block: Layer) -> None:
        if not block._chains_children:
            hooks.append(block.register_forward_hook(hook))

    try:
        net.apply(register)
        net(*inputs)
    finally:
        for h in hooks:
            h.detach()
    line = "{:>20}  {:>42} {:>15}"
    print("-" * 80)
    print(line.format("Layer (type)", "Output Shape", "Param #"))
    print("=" * 80)
    print(line.format("Input", shape_str(inputs), 0))
    for name, shape, n, _, _ in rows:
        print(line.format(name, shape, n))
    total = sum(r[2] for r in rows)
    trainable = sum(r[3] for r in rows)
    shared = sum(r[4] for r in rows)
    print("=" * 80)
    print("Parameters in forward computation graph, duplicate included")
    print(f"   Total params: {total}")
    print(f"   Trainable params: {trainable}")
    print(f"   Non-trainable params: {total - trainable}")
    print(f"Shared params in forward computation graph: {shared}")
    print(f"Unique parameters in model: {total - shared}")
    print("-" * 80)
