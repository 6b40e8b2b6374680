"""Control flow of ``mx.nd.contrib``: ``foreach``, ``while_loop`` and ``cond``.

They run imperatively, calling the user's functions on NDArrays, so autograd records whatever
they compute; the per-step outputs are stacked along a new axis 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...base import InvalidShapeError, MXNetError
from ..core.array import ArrayCore, ArrayT
from ..creation import zeros
from ..shape import concat, stack

__all__ = ["foreach", "while_loop", "cond"]


def _flatten(args: Any, what: str) -> tuple[list[ArrayCore], Any]:
    """The NDArrays of a nested list, and its format for :func:`_regroup` (0: one array)."""
    if isinstance(args, ArrayCore):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise MXNetError(
            f"{what} must be an NDArray or a (nested) list of NDArrays, not {type(args).__name__}"
        )
    flat: list[ArrayCore] = []
    fmt = []
    for a in args:
        f, sub = _flatten(a, what)
        flat.extend(f)
        fmt.append(sub)
    return flat, fmt


def _regroup(flat: list[ArrayT], fmt: Any) -> tuple[Any, list[ArrayT]]:
    """Rebuild the nesting ``fmt`` from ``flat``; returns it and the arrays left over."""
    if isinstance(fmt, int):
        return flat[0], flat[1:]
    out = []
    for sub in fmt:
        res, flat = _regroup(flat, sub)
        out.append(res)
    return out, flat


def _truth(value: Any, what: str) -> bool:
    try:
        if hasattr(value, "asscalar"):
            value = value.asscalar()
        return bool(value)
    except (TypeError, ValueError):
        raise MXNetError(f"{what} must be a scalar (one-element NDArray or number)") from None


def foreach(body: Callable[..., Any], data: Any, init_states: Any) -> tuple[Any, Any]:
    """Run ``body`` on each slice of ``data`` along axis 0, threading loop states through.

    Equivalent to::

        states, outs = init_states, []
        for i in range(len(data)):
            out, states = body(data[i], states)
            outs.append(out)
        outputs = stack(*outs)

    Parameters
    ----------
    body : callable
        ``body(slice, states) -> (out, new_states)``; ``out`` is an NDArray or a nested list of
        NDArrays with the same structure and shapes at every step.
    data : NDArray or list of NDArray
        Sliced along axis 0; with a list, ``body`` gets the list of the arrays' slices.
    init_states : NDArray or nested list of NDArray
        The loop states at the first step.

    Returns
    -------
    (outputs, states)
        ``outputs``: each output of ``body`` stacked along a new axis 0 (nested as ``body``
        returns them; an empty list when ``data`` has no slices); ``states``: the last states.

    Examples
    --------
    >>> step = lambda x, s: (x + s[0], [s[0] * 2])
    >>> outs, states = mx.nd.contrib.foreach(step, mx.nd.ones((3, 2)), [mx.nd.ones(2)])
    >>> outs.asnumpy()
    array([[2., 2.],
           [3., 3.],
           [5., 5.]], dtype=float32)
    """
    flat, _ = _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    single = isinstance(data, ArrayCore)
    if any(a.ndim == 0 for a in flat):
        raise InvalidShapeError("foreach: data arrays need an axis 0 to loop over")
    lengths = {a.shape[0] for a in flat}
    if len(lengths) != 1:
        raise InvalidShapeError(
            f"foreach: the data arrays differ in length along axis 0: {lengths}"
        )
    states = init_states
    steps: list[list[ArrayCore]] = []
    fmt: Any = None
    for i in range(lengths.pop()):
        eles = data[i] if single else [d[i] for d in data]
        outs, states = body(eles, states)
        out_flat, fmt = _flatten(outs, "foreach output")
        if steps and len(out_flat) != len(steps[0]):
            raise MXNetError("foreach: body returned a different number of outputs than before")
        steps.append(out_flat)
    if not steps:
        return [], states
    stacked = [stack(*col) for col in zip(*steps, strict=True)]
    return _regroup(stacked, fmt)[0], states


def while_loop(
    cond: Callable[..., Any],
    func: Callable[..., Any],
    loop_vars: Any,
    max_iterations: int | None = None,
) -> tuple[Any, Any]:
    """Run ``func`` while ``cond`` holds, for at most ``max_iterations`` steps.

    Parameters
    ----------
    cond : callable
        ``cond(*loop_vars)`` returns a scalar NDArray (or number); the loop ends when it is 0.
    func : callable
        ``func(*loop_vars) -> (step_output, new_loop_vars)``; ``step_output`` is an NDArray, a
        nested list of NDArrays or None, of the same structure and shapes at every step;
        ``new_loop_vars`` has as many arrays as ``loop_vars``.
    loop_vars : NDArray or list of NDArray
    max_iterations : int
        Required.

    Returns
    -------
    (outputs, loop_vars)
        ``outputs``: each step output stacked along axis 0 and padded to ``max_iterations``
        rows (MXNet leaves the padding undefined; here it is zeros), or an empty list when no
        step ran; ``loop_vars``: the final loop variables (one NDArray if one was given).

    Examples
    --------
    >>> cond = lambda i, s: i <= 5
    >>> func = lambda i, s: ([i + s], [i + 1, s + i])
    >>> loop_vars = (mx.nd.array([0]), mx.nd.array([1]))
    >>> outs, states = mx.nd.contrib.while_loop(cond, func, loop_vars, max_iterations=8)
    >>> outs[0].asnumpy().ravel()
    array([ 1.,  2.,  4.,  7., 11., 16.,  0.,  0.], dtype=float32)
    """
    if max_iterations is None:
        raise MXNetError("while_loop: max_iterations must be given")
    try:
        limit = int(
            max_iterations.asscalar() if hasattr(max_iterations, "asscalar") else max_iterations
        )
    except (TypeError, ValueError):
        raise MXNetError(
            f"while_loop: max_iterations must be an int, not {max_iterations!r}"
        ) from None
    single = isinstance(loop_vars, ArrayCore)
    lv = [loop_vars] if single else loop_vars
    if not isinstance(lv, (list, tuple)) or len(lv) == 0:
        raise MXNetError("while_loop: loop_vars must hold at least one NDArray")
    steps: list[list[ArrayCore]] = []
    fmt: Any = None
    while len(steps) < limit and _truth(cond(*lv), "while_loop: the value of cond"):
        step_output, new_vars = func(*lv)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        new_vars = [new_vars] if isinstance(new_vars, ArrayCore) else list(new_vars)
        if len(new_vars) != len(lv):
            raise MXNetError(
                f"while_loop: func returned {len(new_vars)} loop variables, expected {len(lv)}"
            )
        out_flat, fmt = _flatten(step_output, "while_loop step output")
        if steps and len(out_flat) != len(steps[0]):
            raise MXNetError("while_loop: func returned a different number of outputs than before")
        steps.append(out_flat)
        lv = new_vars
    stacked = []
    for k, col in enumerate(zip(*steps, strict=True)):
        if len({c.shape for c in col}) != 1:
            shapes = ", ".join(f"step {i}: {c.shape}" for i, c in enumerate(col))
            raise InvalidShapeError(f"while_loop: output {k} changes shape across steps ({shapes})")
        out = stack(*col)
        if len(col) < limit:
            pad = zeros((limit - len(col),) + col[0].shape, ctx=col[0].context, dtype=col[0].dtype)
            out = concat(out, pad, dim=0)
        stacked.append(out)
    outputs = _regroup(stacked, fmt)[0] if fmt is not None else stacked
    return outputs, (lv[0] if single else lv)


def cond(pred: Any, then_func: Callable[[], Any], else_func: Callable[[], Any]) -> Any:
    """Return ``then_func()`` if the scalar ``pred`` is nonzero, else ``else_func()``.

    Examples
    --------
    >>> a, b = mx.nd.array([1]), mx.nd.array([2])
    >>> mx.nd.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: a - b).asnumpy()
    array([42.], dtype=float32)
    """
    return then_func() if _truth(pred, "cond: pred") else else_func()
