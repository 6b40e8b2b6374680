"""Imperative automatic differentiation: recording scopes and the backward pass.

Operations run inside :func:`record` are taped when at least one input needs a gradient (an array
with :meth:`~mxrs.ndarray.NDArray.attach_grad`, or the output of a taped operation). Each taped
operation is a primitive op object holding its inputs and what its hand-written backward needs;
:func:`backward` walks that graph in reverse topological order, sums the gradients reaching every
array, and stores them into each variable's ``.grad`` per its ``grad_req`` ('write' overwrites,
'add' accumulates, 'null' skips). A variable's gradient is stored as soon as the last op using it
has been differentiated, while the pass goes on through the ops before it; a gluon Trainer uses
that moment to start reducing the gradient. Without ``retain_graph`` the graph is freed
afterwards.

Examples
--------
>>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
>>> with autograd.record():
...     y = (x * x).sum()
>>> y.backward()
>>> x.grad.asnumpy()
array([2., 4.], dtype=float32)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast

from . import _threaded, timeline
from ._failure import ComputeError, Failure, fail
from ._grad_parts import defer, total
from ._sole import hand_over
from ._sparse_rows import SparseRows, add_grads, as_dense
from .base import MXNetError

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "record",
    "pause",
    "train_mode",
    "predict_mode",
    "is_recording",
    "is_training",
    "set_recording",
    "set_training",
    "mark_variables",
    "backward",
    "grad",
    "get_symbol",
    "Function",
]


class TapeNode(Protocol):
    """What the tape reads of a recorded operation (``mxrs.ndarray``'s ``Op`` is one): its
    inputs (None once a backward pass freed them), which of them want a gradient, its number of
    outputs, its context and its backward."""

    inputs: Sequence[Any] | None
    needs: tuple[bool, ...]
    nout: int
    ctx: Any

    def backward(self, *out_grads: Any) -> Any: ...


class TapeArray(Protocol):
    """What the tape reads and writes of an array (``mxrs.ndarray``'s ``NDArray`` is one): its
    raw data and context, the operation that computed it (``_node``, its output ``_oidx``) and,
    for a variable, its gradient array, ``grad_req`` and whether the gradient is fresh. The tape
    sits below the array classes, so it names this narrow type instead of them."""

    _data: Any
    _ctx: Any
    _node: Any
    _oidx: int
    _grad: Any
    _grad_req: str
    _fresh: bool

    @property
    def stype(self) -> str: ...

    def _new(self, data: Any, ctx: Any) -> Self: ...

    def _needs_grad(self) -> bool: ...

    def _mark_variable(self, grad: Any, grad_req: str) -> None: ...


#: An array type that goes through the tape and comes back (``grad`` returns the variables' type).
A = TypeVar("A", bound=TapeArray)


_NOT_IN_GRAPH = (
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for backward. "
    "If you want to differentiate the same graph twice, you need to pass retain_graph=True to "
    "backward."
)


class _State(threading.local):
    def __init__(self) -> None:
        self.recording = False
        self.training = False


_state = _State()


class _Scope:
    """Sets the recording and/or training flags for the duration of a ``with`` block."""

    __slots__ = ("_rec", "_train", "_prev")

    _rec: bool | None
    _train: bool | None
    _prev: tuple[bool, bool] | None

    def __init__(self, recording: bool | None, training: bool | None) -> None:
        self._rec = recording
        self._train = training
        self._prev = None

    def __enter__(self) -> _Scope:
        self._prev = (_state.recording, _state.training)
        if self._rec is not None:
            _state.recording = self._rec
        if self._train is not None:
            _state.training = self._train
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        assert self._prev is not None  # set by __enter__
        _state.recording, _state.training = self._prev
        return False


def record(train_mode: bool = True) -> _Scope:
    """Return a scope in which operations are recorded for differentiation.

    Parameters
    ----------
    train_mode : bool, default True
        Also switch to training mode (Dropout active, BatchNorm uses batch statistics).
    """
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> _Scope:
    """Return a scope in which nothing is recorded, e.g. for metric computations."""
    return _Scope(False, train_mode)


def train_mode() -> _Scope:
    """Return a scope in training mode, without changing whether operations are recorded."""
    return _Scope(None, True)


def predict_mode() -> _Scope:
    """Return a scope in inference mode, without changing whether operations are recorded."""
    return _Scope(None, False)


def is_recording() -> bool:
    """Return whether operations are being recorded."""
    return _state.recording


def is_training() -> bool:
    """Return whether operations run in training mode."""
    return _state.training


def set_recording(is_recording: bool) -> bool:
    """Set the recording flag and return its previous value."""
    prev = _state.recording
    _state.recording = bool(is_recording)
    return prev


def set_training(train_mode: bool) -> bool:
    """Set the training flag and return its previous value."""
    prev = _state.training
    _state.training = bool(train_mode)
    return prev


def mark_variables(
    variables: TapeArray | list[TapeArray] | tuple[TapeArray, ...],
    gradients: TapeArray | Sequence[TapeArray],
    grad_reqs: str | Sequence[str] = "write",
) -> None:
    """Mark arrays as variables whose gradients go into the given gradient arrays.

    Parameters
    ----------
    variables : NDArray or list of NDArray
    gradients : NDArray or list of NDArray
        Buffers of the same shapes that receive the gradients.
    grad_reqs : str or list of str, default 'write'
    """
    if not isinstance(variables, (list, tuple)):
        variables, gradients = [variables], [cast("TapeArray", gradients)]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    grads = cast("Sequence[TapeArray]", gradients)
    for var, g, req in zip(variables, grads, grad_reqs, strict=True):
        var._mark_variable(g, req)


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _toposort(heads: list[TapeArray]) -> list[Any]:
    """Return the op nodes reachable from ``heads``, every node after all of its inputs' nodes."""
    order = []
    visited = set()
    for h in heads:
        node = h._node
        if node is None or id(node) in visited:
            continue
        stack = [(node, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in visited:
                continue
            inputs = node.inputs
            if inputs is None:
                raise MXNetError(_NOT_IN_GRAPH)
            visited.add(id(node))
            stack.append((node, True))
            for a in inputs:
                p = a._node
                if p is not None and id(p) not in visited:
                    stack.append((p, False))
    return order


def _run(
    heads: TapeArray | Sequence[TapeArray],
    head_grads: TapeArray | Sequence[TapeArray | None] | None,
    retain_graph: bool,
    on_final: Callable[[Any, Any], None],
    create_graph: bool = False,
    on_fail: Callable[[Any, Failure], None] | None = None,
) -> None:
    """Propagate gradients from ``heads``; call ``on_final(variable, gradient)`` once for every
    variable reached, as soon as the last op that uses it has given its share (so a caller may
    act on early layers' gradients while the pass goes on through the rest).

    Gradients are raw arrays; with ``create_graph`` they are NDArrays computed with recorded
    operations (``ndarray.grad.graph``), so they can be differentiated again.

    A failed array on the way (a head, a head gradient, or an operation recorded on failed
    arrays; see :mod:`mxrs._failure`) does not raise: ``on_fail(variable, failure)`` is called
    instead for every variable not given its gradient yet, as MXNet's backward operators fail
    their outputs."""
    if create_graph:
        with _Scope(True, None):
            _run_pass(heads, head_grads, retain_graph, on_final, True, on_fail)
    else:
        _run_pass(heads, head_grads, retain_graph, on_final, False, on_fail)


def _run_pass(
    heads: TapeArray | Sequence[TapeArray],
    head_grads: TapeArray | Sequence[TapeArray | None] | None,
    retain_graph: bool,
    on_final: Callable[[Any, Any], None],
    graph: bool,
    on_fail: Callable[[Any, Failure], None] | None,
) -> None:
    heads = _as_list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    else:
        head_grads = _as_list(head_grads)
        if len(head_grads) != len(heads):
            raise MXNetError(f"backward got {len(heads)} heads but {len(head_grads)} head_grads")
    order = _toposort(heads)
    uses: dict[int, int] = {}  # id(variable) -> ops using it that have not run yet
    for node in order:
        for a in node.inputs:
            if a._node is None and a._grad is not None:
                uses[id(a)] = uses.get(id(a), 0) + 1
    pending: dict[int, Any] = {}
    leaves: dict[int, Any] = {}
    try:
        for h, hg in zip(heads, head_grads, strict=True):
            be = h._ctx.backend
            if hg is None:
                with be.guard(h._ctx.device_id):
                    g = be.xp.ones_like(h._data)
                if graph:
                    g = h._new(g, h._ctx)
            else:
                if hg._ctx != h._ctx:
                    raise MXNetError(f"head gradient on {hg._ctx} for a head on {h._ctx}")
                g = hg if graph else hg._data
            node = h._node
            if node is None:
                if h._grad is None:
                    raise MXNetError(_NOT_IN_GRAPH)
                _accumulate(leaves, h, g)
                continue
            slot = pending.setdefault(id(node), [None] * node.nout)
            k = h._oidx
            slot[k] = g if slot[k] is None else slot[k] + g
        for node in reversed(order):
            gouts = pending.pop(id(node), None)
            if gouts is not None:
                _propagate(node, gouts, pending, leaves, graph)
            for a in node.inputs:
                if a._node is not None or a._grad is None:
                    continue
                left = uses[id(a)] - 1
                uses[id(a)] = left
                if left == 0:
                    entry = leaves.pop(id(a), None)
                    if entry is not None:
                        on_final(*entry)
        for var, g in leaves.values():  # heads that no op uses
            on_final(var, g)
    except ComputeError as err:  # free while nothing fails
        if err.failure is None or on_fail is None:
            raise
        err.failure.rearm()
        _fail_rest(heads, order, uses, err.failure, on_fail)
    finally:
        if not retain_graph:
            for node in order:
                node.__dict__.clear()
                node.inputs = None


def _fail_rest(
    heads: list[Any],
    order: list[Any],
    uses: dict[int, int],
    failure: Failure,
    on_fail: Callable[[Any, Failure], None],
) -> None:
    """The pass met ``failure``: fail every variable it reaches that has no gradient yet."""
    seen = set()
    reached = [h for h in heads if h._node is None and h._grad is not None]
    reached += [a for node in order for a in node.inputs if a._node is None and a._grad is not None]
    for var in reached:  # a head is given its gradient last; the others when their uses are done
        if id(var) not in seen and uses.get(id(var), 1) > 0:
            seen.add(id(var))
            on_fail(var, failure)


def _propagate(
    node: Any, gouts: list[Any], pending: dict[int, Any], leaves: dict[int, Any], graph: bool
) -> None:
    """Run ``node``'s backward and hand each input's gradient to its producer or variable."""
    ctx = node.ctx
    if not graph and any(type(g) is SparseRows for g in gouts):
        gouts = [as_dense(total(g)) for g in gouts]  # ops take dense output gradients
    if graph:
        gins = _graph_backward(node, gouts)
    elif ctx.device_typeid == 2:
        with ctx.backend.guard(ctx.device_id):
            gins = node.backward(*gouts)
    else:
        gins = node.backward(*gouts)
    if type(gins) is not tuple:
        gins = (gins,)
    for a, gi, need in zip(node.inputs, gins, node.needs, strict=True):
        if gi is None or not need:
            continue
        p = a._node
        if p is not None:
            slot = pending.get(id(p))
            if slot is None:
                slot = pending[id(p)] = [None] * p.nout
            k = a._oidx
            have = slot[k]
            if have is None:
                slot[k] = gi
            else:
                parts = None
                if not graph and getattr(p, "sums_gradients", False):
                    parts = defer(have, gi)  # the producer adds them in its own pass
                slot[k] = add_grads(total(have), gi) if parts is None else parts
        elif a._grad is not None:
            _accumulate(leaves, a, gi)


def _graph_backward(node: Any, gouts: list[Any]) -> Any:
    """``node``'s backward with recorded NDArray operations (for ``create_graph``)."""
    backward_graph = getattr(node, "backward_graph", None)
    if backward_graph is not None:  # a Function's node
        return backward_graph(*gouts)
    if _graph_rules is None:
        raise MXNetError("autograd.grad(create_graph=True) needs mxrs.ndarray imported")
    ctx = node.ctx
    with ctx.backend.guard(ctx.device_id):
        return _graph_rules(node)(node, list(node.inputs), gouts)


#: Looks up an op's differentiable backward (installed by ``ndarray.grad.graph``: the tape sits
#: below the op modules and does not import them).
_graph_rules: Callable[[Any], Callable[..., Any]] | None = None


def _install_graph_rules(lookup: Callable[[Any], Callable[..., Any]]) -> None:
    """Set the lookup of ops' differentiable backward rules used by ``create_graph``."""
    global _graph_rules
    _graph_rules = lookup


#: Builds the Symbol of a recorded computation (installed by ``mxrs.symbol``, which sits above
#: the tape: the tape does not import it).
_symbol_builder: Callable[[Any], Any] | None = None


def _install_symbol_builder(build: Callable[[Any], Any]) -> None:
    """Set the function :func:`get_symbol` runs (``mxrs.symbol.from_autograd.get_symbol``)."""
    global _symbol_builder
    _symbol_builder = build


def get_symbol(x: TapeArray) -> Any:
    """Return the Symbol of the recorded computation that produced ``x``.

    Arrays marked with ``attach_grad`` are its variables (``var0``, ``var1``...), other arrays
    it read are variables ``null0``..., operations are nodes ``node_0``..., as in MXNet.

    Examples
    --------
    >>> x = mx.nd.ones((1,)); x.attach_grad()
    >>> with autograd.record():
    ...     y = x * x + 2 * x - 1
    >>> autograd.get_symbol(y).list_arguments()
    ['var0']

    Raises
    ------
    MXNetError
        When ``x`` was not computed inside :func:`record` (nor is a marked variable).
    """
    if _symbol_builder is None:
        raise MXNetError("autograd.get_symbol needs mxrs.symbol imported")
    return _symbol_builder(x)


def _accumulate(leaves: dict[int, Any], var: TapeArray, g: Any) -> None:
    entry = leaves.get(id(var))
    if entry is None:
        leaves[id(var)] = (var, g)
    else:
        leaves[id(var)] = (var, add_grads(entry[1], g))


def _store(var: TapeArray, g: Any) -> None:
    """Store ``var``'s final gradient per its grad_req, then tell its trainer, if it has one."""
    req = var._grad_req
    grad = var._grad
    assert grad is not None  # only variables reach here
    if grad.stype != "default":
        cast(Any, grad)._store_grad(g, req == "add")  # a sparse .grad keeps its storage type
    elif type(g) is SparseRows:
        if req == "write":
            grad._data[...] = 0
        g.add_into(grad._data)
    elif req == "write":
        if not hand_over(grad, g):  # g's buffer becomes grad's when no one else holds either
            _threaded.copy(grad._data, g, var._ctx.backend.xp)
    elif req == "add":
        grad._data += g
    var._fresh = True
    hook = getattr(var, "_on_grad", None)
    if hook is not None:
        hook(var)


def _store_failed(var: TapeArray, failure: Failure) -> None:
    """The backward pass failed before ``var``'s gradient: its ``.grad`` becomes a failed array,
    raising the error at the next wait on it (as MXNet's failed backward operators leave it)."""
    fail((var._grad,), failure)
    var._fresh = True
    hook = getattr(var, "_on_grad", None)
    if hook is not None:
        hook(var)


@timeline.traced("backward")
def backward(
    heads: TapeArray | Sequence[TapeArray],
    head_grads: TapeArray | Sequence[TapeArray | None] | None = None,
    retain_graph: bool = False,
    train_mode: bool = True,
) -> None:
    """Compute the gradients of ``heads`` with respect to the marked variables.

    Parameters
    ----------
    heads : NDArray or list of NDArray
        Outputs to differentiate.
    head_grads : NDArray or list of NDArray or None
        Gradients flowing into the heads; ones when None.
    retain_graph : bool, default False
        Keep the recorded graph so it can be differentiated again.
    train_mode : bool, default True
        Accepted for compatibility; primitive backward passes do not depend on it.

    Raises
    ------
    MXNetError
        When a head was not computed inside :func:`record` or its graph was already freed.
    """
    _run(heads, head_grads, retain_graph, _store, on_fail=_store_failed)


def grad(
    heads: TapeArray | Sequence[TapeArray],
    variables: A | Sequence[A],
    head_grads: TapeArray | Sequence[TapeArray | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    train_mode: bool = True,
) -> A | list[A]:
    """Return the gradients of ``heads`` with respect to ``variables``.

    The variables' ``.grad`` buffers are left untouched. With ``create_graph`` the gradients
    are recorded, so they can be differentiated again (higher-order gradients).

    Parameters
    ----------
    heads : NDArray or list of NDArray
    variables : NDArray or list of NDArray
        Arrays marked with ``attach_grad`` before recording.
    head_grads : NDArray or list of NDArray or None
    retain_graph : bool or None
        Defaults to ``create_graph``.
    create_graph : bool, default False
        Record the gradient computation. The ops that support it are listed in
        ``mxrs.ndarray.grad.graph``; any other on the path raises :class:`MXNetError`.

    Returns
    -------
    NDArray or list of NDArray
        One gradient per variable (a single array when ``variables`` is one array).
    """
    if retain_graph is None:
        retain_graph = create_graph
    single = not isinstance(variables, (list, tuple))
    variables = _as_list(variables)
    for v in variables:
        if v._grad is None:
            raise MXNetError("autograd.grad: every variable needs attach_grad() before record()")
    found: dict[int, Any] = {}
    _run(
        heads,
        head_grads,
        retain_graph,
        lambda var, g: found.__setitem__(id(var), g),
        create_graph=create_graph,
        on_fail=lambda var, f: found.__setitem__(id(var), f),
    )
    out = []
    for v in variables:
        g = found.get(id(v))
        if create_graph and g is not None and not isinstance(g, Failure):
            out.append(g)
            continue
        be = v._ctx.backend
        with be.guard(v._ctx.device_id):
            if g is None or isinstance(g, Failure):
                raw = be.xp.zeros_like(v._data)
            else:
                raw = be.xp.array(g, copy=True)
        res = v._new(raw, v._ctx)
        if isinstance(g, Failure):  # the pass failed before this gradient
            fail((res,), g)
        out.append(res)
    return out[0] if single else out


class Function:
    """A differentiable operation with a hand-written backward, written with NDArrays.

    Subclass it, define ``forward(*inputs)`` and ``backward(*output_grads)`` (each taking and
    returning NDArrays, one gradient per input), and call an instance on NDArrays. Both run
    without recording; ``save_for_backward`` keeps arrays for the backward pass.

    Examples
    --------
    >>> class Sigmoid(autograd.Function):
    ...     def forward(self, x):
    ...         y = 1 / (1 + mx.nd.exp(-x))
    ...         self.save_for_backward(y)
    ...         return y
    ...     def backward(self, dy):
    ...         y, = self.saved_tensors
    ...         return dy * y * (1 - y)
    """

    saved_tensors: tuple[Any, ...] = ()

    def save_for_backward(self, *args: Any) -> None:
        """Keep ``args`` as ``self.saved_tensors`` for :meth:`backward`."""
        self.saved_tensors = args

    def forward(self, *inputs: Any) -> Any:
        """Compute the outputs from input NDArrays."""
        raise NotImplementedError

    def backward(self, *output_grads: Any) -> Any:
        """Return the gradient of each input given the gradient of each output."""
        raise NotImplementedError

    def __call__(self, *inputs: TapeArray) -> Any:
        with _Scope(False, None):
            outputs = self.forward(*inputs)
        single = not isinstance(outputs, (list, tuple))
        outs = [outputs] if single else list(outputs)
        needs = tuple(x._needs_grad() for x in inputs)
        if _state.recording and any(needs):
            node = _FunctionNode(self, inputs, needs, outs)
            outs = [o._new(o._data, o._ctx) for o in outs]
            for i, o in enumerate(outs):
                o._node = node
                o._oidx = i
        return outs[0] if single else outs


class _FunctionNode:
    """Graph node adapting a :class:`Function` to the primitive-op protocol."""

    def __init__(
        self,
        fn: Function,
        inputs: Sequence[TapeArray],
        needs: tuple[bool, ...],
        outs: list[TapeArray],
    ) -> None:
        self.fn, self.inputs, self.needs = fn, tuple(inputs), needs
        self.nout = len(outs)
        self.ctx = inputs[0]._ctx
        self.outs = [(o._ctx, o._data.shape, o._data.dtype) for o in outs]

    def backward(self, *gouts: Any) -> tuple[Any, ...]:
        new = self.inputs[0]._new
        grads = []
        for g, (ctx, shape, dtype) in zip(gouts, self.outs, strict=True):
            if g is None:
                g = ctx.backend.xp.zeros(shape, dtype)
            grads.append(new(g, ctx))
        with _Scope(False, None):
            gins = self._checked(self.fn.backward(*grads))
        return tuple(None if g is None else g._data for g in gins)

    def backward_graph(self, *gouts: Any) -> tuple[Any, ...]:
        """As :meth:`backward` on NDArray gradients, with the Function's backward recorded."""
        like = self.inputs[0]
        grads = [
            like._new(ctx.backend.xp.zeros(shape, dtype), ctx) if g is None else g
            for g, (ctx, shape, dtype) in zip(gouts, self.outs, strict=True)
        ]
        return self._checked(self.fn.backward(*grads))

    def _checked(self, gins: Any) -> tuple[Any, ...]:
        """The Function's backward result as a tuple of one gradient per input."""
        if not isinstance(gins, (list, tuple)):
            gins = (gins,)
        if len(gins) != len(self.inputs):
            raise MXNetError(
                f"{type(self.fn).__name__}.backward returned {len(gins)} "
                f"gradients for {len(self.inputs)} inputs"
            )
        return tuple(gins)
