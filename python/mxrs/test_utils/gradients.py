"""Checking computations: an optimizer against a reference one, a function's or a Symbol's
gradients against finite differences, a Symbol's outputs against expected values."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import autograd
from .. import ndarray as nd
from .. import random as _random
from ..context import Context
from ..ndarray import NDArray, array
from .arrays import (
    _numpy,
    assert_almost_equal,
    compare_ndarray_tuple,
    default_context,
    rand_ndarray,
)

__all__ = [
    "compare_optimizer",
    "check_symbolic_forward",
    "check_numeric_gradient",
]


def compare_optimizer(
    opt1,
    opt2,
    shapes,
    dtype,
    w_stype: str = "default",
    g_stype: str = "default",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    compare_states: bool = True,
    ntensors: int = 1,
) -> None:
    """Check that optimizers ``opt1`` and ``opt2`` agree: both create states for the same
    random weights and update them with the same random gradients; their states (if
    ``compare_states``) and weights must match.

    ``shapes`` is one shape, or a list of ``ntensors`` shapes: then ``opt2`` updates all the
    tensors in one multi-tensor call and ``opt1``, the reference, one by one.
    """
    ctx = default_context()
    if not isinstance(shapes, list):
        if ntensors != 1:
            raise ValueError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes")
        if w_stype == "default":
            w2 = _random.uniform(shape=shapes, ctx=ctx, dtype=dtype)
            w1 = w2.copyto(ctx)
        else:  # opt2 gets a fully stored sparse weight, the reference its dense copy
            w2 = rand_ndarray(shapes, w_stype, density=1, dtype=dtype, ctx=ctx)
            w1 = w2.copyto(ctx).tostype("default")
        if g_stype == "default":
            g2 = _random.uniform(shape=shapes, ctx=ctx, dtype=dtype)
            g1 = g2.copyto(ctx)
        else:
            g2 = rand_ndarray(shapes, g_stype, dtype=dtype, ctx=ctx)
            g1 = g2.copyto(ctx).tostype("default")
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    if w_stype != "default" or g_stype != "default":
        raise ValueError("compare_optimizer: sparse storage types take one shape, not a list")
    if len(shapes) != ntensors:
        raise ValueError(f"compare_optimizer: {len(shapes)} shapes for ntensors={ntensors}")
    ws1 = [_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shapes]
    gs1 = [_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shapes]
    ws2 = [w.copyto(ctx) for w in ws1]
    gs2 = [g.copyto(ctx) for g in gs1]
    states2 = [opt2.create_state_multi_precision(0, w) for w in ws2]
    opt2.update_multi_precision(list(range(ntensors)), ws2, gs2, states2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, ws1[i])
        opt1.update_multi_precision(i, ws1[i], gs1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, states2[i], rtol, atol)
        compare_ndarray_tuple(ws1[i], ws2[i], rtol, atol)


def _check_function_gradient(
    f,
    location,
    numeric_eps: float = 1e-3,
    rtol: float = 1e-2,
    atol: float | None = None,
    dtype=np.float64,
) -> None:
    """Check the gradients autograd computes for ``f`` against central finite differences.

    ``f`` takes the NDArrays of ``location`` (a list or dict of arrays) and returns one NDArray;
    the gradient of ``sum(f(...) * head)`` for a random ``head`` is compared at each input.
    """
    names = list(location) if isinstance(location, Mapping) else None
    values = list(location.values()) if names is not None else list(location)
    points = [_numpy(v).astype(dtype) for v in values]
    head = np.random.normal(size=_numpy(f(*[array(p, dtype=dtype) for p in points])).shape)

    def objective(arrays) -> float:
        out = _numpy(f(*[array(a, dtype=dtype) for a in arrays]))
        return float(np.sum(out * head))

    inputs = [array(p, dtype=dtype) for p in points]
    for x in inputs:
        x.attach_grad()
    with autograd.record():
        out = f(*inputs)
    out.backward(array(head, dtype=dtype))
    for i, p in enumerate(points):
        numeric = np.zeros_like(p)
        flat, grad = p.reshape(-1), numeric.reshape(-1)
        for j in range(flat.size):
            keep = flat[j]
            flat[j] = keep + numeric_eps / 2
            up = objective(points)
            flat[j] = keep - numeric_eps / 2
            down = objective(points)
            flat[j] = keep
            grad[j] = (up - down) / numeric_eps
        name = names[i] if names is not None else f"input {i}"
        assert_almost_equal(
            inputs[i].grad,
            numeric,
            rtol=rtol,
            atol=atol if atol is not None else 1e-4,
            names=(f"autograd gradient of {name}", f"numeric gradient of {name}"),
        )


#: finite-difference steps by dtype (powers of two: adding one drops no bits), as MXNet's
_NUMERIC_EPS = {np.dtype(np.float16): 2.0**-6, np.dtype(np.float32): 2.0**-9,
                np.dtype(np.float64): 2.0**-14}  # fmt: skip


def _bound_arrays(sym, location, ctx, dtype) -> dict[str, NDArray]:
    """``location`` (a list in ``sym.list_arguments()`` order, or a dict by name) as NDArrays
    of ``dtype`` (``"asnumpy"``: each value's own) on ``ctx``."""
    names = sym.list_arguments()
    if isinstance(location, Mapping):
        if set(location) != set(names):
            raise ValueError(
                f"the symbol's arguments {sorted(names)} and the location's keys "
                f"{sorted(location)} differ"
            )
        items = [(k, location[k]) for k in names]
    else:
        if len(location) != len(names):
            raise ValueError(f"{len(location)} values for the arguments {names}")
        items = list(zip(names, location, strict=True))
    out = {}
    for k, v in items:
        if isinstance(v, NDArray):
            out[k] = v.as_in_context(ctx)
            continue
        v = np.asarray(v)
        out[k] = array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)
    return out


def check_symbolic_forward(
    sym,
    location,
    expected,
    rtol: float | None = None,
    atol: float | None = None,
    aux_states=None,
    ctx: Context | None = None,
    equal_nan: bool = False,
    dtype=np.float32,
):
    """Run ``sym`` forward (inference mode) on ``location`` and compare each output with
    ``expected`` (a list in ``sym.list_outputs()`` order, or a dict by output name).

    Parameters
    ----------
    sym : Symbol
    location : list or dict
        The arguments' values (NumPy arrays or NDArrays), as ``sym.list_arguments()``.
    expected : list or dict
        The outputs' expected values.
    rtol, atol : float, optional
        Tolerances (by default those of the dtypes).
    aux_states : list or dict, optional
        The auxiliary states' values.
    ctx : Context, optional
        Defaults to :func:`default_context`.
    equal_nan : bool, default False
        Whether NaNs in the same places compare equal.
    dtype : numpy dtype or "asnumpy", default float32
        Of the arrays made from ``location``.

    Returns
    -------
    list of NDArray
        The outputs.
    """
    ctx = ctx or default_context()
    args = _bound_arrays(sym, location, ctx, dtype)
    aux = None
    if aux_states is not None:
        aux_names = sym.list_auxiliary_states()
        values = (
            [aux_states[k] for k in aux_names] if isinstance(aux_states, Mapping) else aux_states
        )
        aux = [v if isinstance(v, NDArray) else array(v, ctx=ctx) for v in values]
    if isinstance(expected, Mapping):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx=ctx, args=args, aux_states=aux)
    outputs = executor.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outputs, strict=False):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)  # fmt: skip
    return outputs


def check_numeric_gradient(
    sym,
    location,
    aux_states=None,
    numeric_eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    grad_nodes=None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict=None,
    dtype=None,
) -> None:
    """Check the gradients of ``sym`` (a Symbol, as in MXNet, or a function of NDArrays)
    against central finite differences.

    For a Symbol, the gradient of ``sum(sym(location) * proj)`` for a random projection
    ``proj`` is computed by backward and numerically (each element of each argument in
    ``grad_nodes`` moved by ``numeric_eps / 2`` both ways) and the two compared.

    Parameters
    ----------
    sym : Symbol or callable
        A callable takes NDArrays and returns one: see the function form's checks above
        (``numeric_eps`` 1e-3, ``rtol`` 1e-2, float64 by default).
    location : list or dict
        The arguments' values.
    aux_states : list or dict, optional
    numeric_eps : float, optional
        The finite-difference step (by default 2**-6, 2**-9, 2**-14 for float16, 32, 64).
    rtol, atol : float, optional
        Tolerances of the comparison, by default 1e-2 and 1e-4.
    grad_nodes : list of str or dict, optional
        The arguments to check (default: all).
    use_forward_train : bool, default True
        Run forward in training mode.
    ctx : Context, optional
    grad_stype_dict : dict, optional
        Accepted for MXNet's signature; gradients are dense here.
    dtype : numpy dtype, default float32 (float64 for a callable)

    Raises
    ------
    AssertionError
        When a gradient differs from its numeric estimate.
    """
    from ..symbol import Symbol

    if not isinstance(sym, Symbol):
        return _check_function_gradient(
            sym, location, numeric_eps=1e-3 if numeric_eps is None else numeric_eps,
            rtol=1e-2 if rtol is None else rtol, atol=atol,
            dtype=np.float64 if dtype is None else dtype,
        )  # fmt: skip
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    ctx = ctx or default_context()
    args = _bound_arrays(sym, location, ctx, dtype)
    names = sym.list_arguments()
    nodes = list(names) if grad_nodes is None else list(grad_nodes)
    aux = None
    if aux_states is not None:
        values = (
            [aux_states[k] for k in sym.list_auxiliary_states()]
            if isinstance(aux_states, Mapping) else aux_states
        )  # fmt: skip
        aux = [v if isinstance(v, NDArray) else array(v, ctx=ctx, dtype=dtype) for v in values]
    grads = {k: nd.zeros(args[k].shape, ctx=ctx, dtype=args[k].dtype) for k in nodes}
    executor = sym.bind(ctx=ctx, args=args, args_grad=grads, grad_req="write", aux_states=aux)
    outs = executor.forward(is_train=use_forward_train)
    proj = [np.random.rand(*o.shape) + 0.1 for o in outs]
    executor.backward([array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(proj, outs, strict=True)])
    symbolic = {k: grads[k].asnumpy() for k in nodes}
    eps = _NUMERIC_EPS.get(dtype, 2.0**-9) if numeric_eps is None else numeric_eps

    def objective() -> float:
        res = executor.forward(is_train=use_forward_train)
        return float(
            sum(np.sum(r.asnumpy().astype(np.float64) * p) for r, p in zip(res, proj, strict=True))
        )

    for k in nodes:
        point = args[k].asnumpy()
        numeric = np.zeros(point.shape, dtype=np.float64)
        flat = point.reshape(-1)
        for i in range(flat.size):
            keep = flat[i]
            flat[i] = keep + eps / 2
            executor.arg_dict[k][:] = point
            up = objective()
            flat[i] = keep - eps / 2
            executor.arg_dict[k][:] = point
            down = objective()
            flat[i] = keep
            numeric.reshape(-1)[i] = (up - down) / eps
        executor.arg_dict[k][:] = point
        assert_almost_equal(numeric, symbolic[k], rtol=1e-2 if rtol is None else rtol,
                            atol=1e-4 if atol is None else atol,
                            names=(f"NUMERICAL_{k}", f"BACKWARD_{k}"))  # fmt: skip
    return None
