"""Checking computations: an optimizer against a reference one, a function's or a Symbol's
gradients against finite differences, a Symbol's outputs against expected values."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import autograd
from .. import ndarray as nd
from .. import random as _random
from .. import symbol as _symbol
from ..context import Context
from ..ndarray import NDArray, array
from ..symbol import Symbol, Variable
from .arrays import (
    _numpy,
    assert_almost_equal,
    compare_ndarray_tuple,
    default_context,
    rand_ndarray,
)
from .tolerances import default_numeric_eps, get_tolerance

__all__ = [
    "compare_optimizer",
    "check_symbolic_forward",
    "check_symbolic_backward",
    "numeric_grad",
    "check_numeric_gradient",
]


def compare_optimizer(
    opt1,
    opt2,
    shape,
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

    ``shape`` is one shape, or a list of ``ntensors`` shapes: then ``opt2`` updates all the
    tensors in one multi-tensor call and ``opt1``, the reference, one by one.
    """
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes")
        if w_stype == "default":
            w2 = _random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            w1 = w2.copyto(ctx)
        else:  # opt2 gets a fully stored sparse weight, the reference its dense copy
            w2 = rand_ndarray(shape, w_stype, density=1, dtype=dtype, ctx=ctx)
            w1 = w2.copyto(ctx).tostype("default")
        if g_stype == "default":
            g2 = _random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            g1 = g2.copyto(ctx)
        else:
            g2 = rand_ndarray(shape, g_stype, dtype=dtype, ctx=ctx)
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
    if len(shape) != ntensors:
        raise ValueError(f"compare_optimizer: {len(shape)} shapes for ntensors={ntensors}")
    ws1 = [_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape]
    gs1 = [_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape]
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


_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _float_dtype(dtype) -> np.dtype:
    """``dtype`` as a NumPy dtype; ``AssertionError`` unless float16, float32 or float64."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _FLOATS:
        raise AssertionError(f"dtype must be float16, float32 or float64, not {dtype!r}")
    return dt


def _aux_arrays(sym, aux_states, ctx, dtype) -> dict[str, NDArray] | None:
    """``aux_states`` (a list in ``sym.list_auxiliary_states()`` order, or a dict by name) as
    NDArrays of ``dtype`` (``"asnumpy"``: each value's own) on ``ctx``; None stays None."""
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, Mapping):
        if set(aux_states) != set(names):
            raise ValueError(
                f"the symbol's auxiliary states {sorted(names)} and the given ones "
                f"{sorted(aux_states)} differ"
            )
        items = [(k, aux_states[k]) for k in names]
    else:
        items = list(zip(names, aux_states, strict=False))
    out = {}
    for k, v in items:
        v = _numpy(v)
        out[k] = array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)
    return out


def numeric_grad(
    executor,
    location,
    aux_states=None,
    eps: float = 1e-4,
    use_forward_train: bool = True,
    dtype=np.float32,
) -> dict[str, np.ndarray]:
    """Central finite differences of the sum of an executor's first output.

    Each element ``x`` of each floating-point argument in ``location`` is set to
    ``x + eps/2`` and to ``x - eps/2`` in turn (in ``dtype``), the executor run forward for
    each, and ``sum(f(x + eps/2) - f(x - eps/2)) / eps`` recorded; ``aux_states`` are reset
    before every forward (a training-mode BatchNorm updates them). The executor's arguments
    are left at ``location``.

    Parameters
    ----------
    executor : Executor
        Bound with every argument of ``location``.
    location : dict of str to numpy.ndarray
        The point; its entries are replaced by C-ordered arrays (integer ones are skipped).
    aux_states : dict of str to numpy.ndarray, optional
    eps : float, default 1e-4
    use_forward_train : bool, default True
        Run forward in training mode.
    dtype : float16, float32 or float64, default float32
        The arguments' dtype while perturbed.

    Returns
    -------
    dict of str to numpy.ndarray
        The gradient estimates (of ``dtype``) by argument name.
    """
    dtype = _float_dtype(dtype)

    def as_stype(value, stype: str) -> NDArray:
        return nd.cast_storage(array(value, dtype=dtype), stype=stype)

    def reset_aux() -> None:
        for key, val in (aux_states or {}).items():
            target = executor.aux_dict[key]
            target[:] = as_stype(val, target.stype)

    approx = {k: np.zeros(np.shape(v), dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        if executor.arg_dict[k].stype == "default":
            executor.arg_dict[k][:] = as_stype(v, "default")
    for k in location:
        value = np.asarray(location[k], order="C")
        location[k] = value if value.flags.writeable else value.copy()
    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        stype = executor.arg_dict[k].stype
        old = v.copy()
        flat, grad = v.reshape(-1), approx[k].reshape(-1)
        for i in range(flat.size):
            flat[i] += eps / 2.0
            executor.arg_dict[k][:] = as_stype(v, stype)
            reset_aux()
            executor.forward(is_train=use_forward_train)
            f_peps = executor.outputs[0].asnumpy()
            flat[i] -= eps
            executor.arg_dict[k][:] = as_stype(v, stype)
            reset_aux()
            executor.forward(is_train=use_forward_train)
            f_neps = executor.outputs[0].asnumpy()
            grad[i] = (f_peps - f_neps).sum() / eps
            flat[i] = old.reshape(-1)[i]
        executor.arg_dict[k][:] = as_stype(old, stype)
    return approx


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
    if not (isinstance(dtype, str) and dtype == "asnumpy"):
        _float_dtype(dtype)
    ctx = ctx or default_context()
    args = _bound_arrays(sym, location, ctx, dtype)
    aux = _aux_arrays(sym, aux_states, ctx, dtype)
    if isinstance(expected, Mapping):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx=ctx, args=args, aux_states=aux)
    outputs = executor.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outputs, strict=False):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)  # fmt: skip
    return outputs


def check_symbolic_backward(
    sym,
    location,
    out_grads,
    expected,
    rtol: float | None = None,
    atol: float | None = None,
    aux_states=None,
    grad_req="write",
    ctx: Context | None = None,
    grad_stypes=None,
    equal_nan: bool = False,
    dtype=np.float32,
):
    """Run ``sym`` forward (training mode) on ``location``, then backward from ``out_grads``,
    and compare each argument's gradient with ``expected``.

    Parameters
    ----------
    sym : Symbol
    location : list or dict
        The arguments' values (NumPy arrays or NDArrays), as ``sym.list_arguments()``.
    out_grads : list or dict or None
        The gradients of the outputs (a list in ``sym.list_outputs()`` order, or a dict by
        output name); None for loss outputs.
    expected : list or dict
        The arguments' expected gradients (a list in ``sym.list_arguments()`` order, or a dict
        by name; only the arguments named are checked).
    rtol, atol : float, optional
        Tolerances (by default those of the dtypes).
    aux_states : list or dict, optional
        The auxiliary states' values.
    grad_req : str, list or dict, default 'write'
        'write', 'add' or 'null', for every argument or per argument. The gradient arrays
        start from random normal values: with 'add' the expected gradient is what was added to
        them, with 'null' they must be left alone.
    ctx : Context, optional
        Defaults to :func:`default_context`.
    grad_stypes : dict, optional
        Storage types of the gradient arrays by argument name ('row_sparse', 'csr'): those
        start as zero sparse arrays.
    equal_nan : bool, default False
        Whether NaNs in the same places compare equal.
    dtype : numpy dtype or "asnumpy", default float32
        Of the arrays made from ``location``, ``out_grads`` and the gradients.

    Returns
    -------
    dict of str to NDArray
        The gradient arrays by argument name.

    Raises
    ------
    ValueError
        For an unknown ``grad_req``.
    """
    if not (isinstance(dtype, str) and dtype == "asnumpy"):
        _float_dtype(dtype)
    ctx = ctx or default_context()
    args = _bound_arrays(sym, location, ctx, dtype)
    names = sym.list_arguments()
    aux = _aux_arrays(sym, aux_states, ctx, dtype)
    if not isinstance(expected, Mapping):
        expected = dict(zip(names, expected, strict=False))
    if isinstance(grad_req, str):
        reqs = {k: grad_req for k in names}
    elif isinstance(grad_req, Mapping):
        reqs = dict(grad_req)
    else:
        reqs = dict(zip(names, grad_req, strict=False))
    # drawn in sorted name order, so that the same random state fills them as in MXNet
    start = {k: np.random.normal(size=np.shape(expected[k])) for k in sorted(expected)}
    grads: dict[str, NDArray] = {}
    for k, v in start.items():
        dt = np.asarray(expected[k]).dtype if isinstance(dtype, str) else dtype
        stype = (grad_stypes or {}).get(k)
        if stype not in (None, "default"):
            grads[k] = nd.sparse.zeros(stype, v.shape, ctx=ctx, dtype=dt)
        else:
            grads[k] = array(v, ctx=ctx, dtype=dt)

    def as_nd(v):
        if isinstance(v, NDArray):
            return v
        v = np.asarray(v)
        return array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)

    if isinstance(out_grads, Mapping):
        out_grads = [as_nd(out_grads[k]) for k in sym.list_outputs()]
    elif out_grads is not None:
        out_grads = [as_nd(v) for v in out_grads]
    executor = sym.bind(ctx=ctx, args=args, args_grad=grads, aux_states=aux, grad_req=reqs)
    executor.forward(is_train=True)
    executor.backward(out_grads)
    for name, want in expected.items():
        req = reqs.get(name, "write")
        labels = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        got = grads[name].asnumpy()
        if req == "write":
            assert_almost_equal(want, got, rtol, atol, labels, equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(want, got - start[name], rtol, atol, labels, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(start[name], got, rtol, atol, labels, equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return grads


def check_numeric_gradient(
    sym,
    location,
    aux_states=None,
    numeric_eps=None,
    rtol=None,
    atol=None,
    grad_nodes=None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict=None,
    dtype=None,
) -> None:
    """Check the gradients of ``sym`` against central finite differences.

    ``sym`` is multiplied by a random projection ``proj`` (uniform in [0.1, 1.1)) under
    ``make_loss``; the gradient of ``sum(sym * proj)`` from backward is compared with
    :func:`numeric_grad`'s estimate, argument by argument.

    Parameters
    ----------
    sym : Symbol or callable
        A Symbol with one output. A callable (mxrs only) takes NDArrays and returns one; its
        autograd gradients are checked instead (``numeric_eps`` 1e-3, ``rtol`` 1e-2, ``atol``
        1e-4 and float64 by default).
    location : list or dict
        The arguments' values (NumPy arrays or NDArrays): a list in ``sym.list_arguments()``
        order or a dict by name.
    aux_states : list or dict, optional
        The auxiliary states' values.
    numeric_eps : float or dict of dtype to float, optional
        The finite-difference step; by default :func:`default_numeric_eps` of the output's
        dtype (2**-6, 2**-9, 2**-14 for float16, 32, 64). float16 and float32 need at least
        1e-5.
    rtol, atol : float or dict of dtype to float, optional
        Tolerances of the comparison, by default those of the dtypes
        (:func:`default_rtols`, :func:`default_atols`).
    grad_nodes : list, tuple or dict, optional
        The arguments to check (default: all, with 'write'); a dict gives each one's
        grad_req: 'write', 'add' (the gradient is added to random values) or 'null' (the
        gradient array must stay as it was).
    use_forward_train : bool, default True
        Run the finite-difference forwards in training mode.
    ctx : Context, optional
        Defaults to :func:`default_context`.
    grad_stype_dict : dict of str to str, optional
        Storage types ('row_sparse', 'csr') of the gradient arrays by argument name.
    dtype : float16, float32 or float64, optional
        Of the arrays made from ``location`` (default float32, as in MXNet).

    Raises
    ------
    AssertionError
        When a gradient differs from its estimate, or for a bad ``dtype`` or ``numeric_eps``.
    ValueError
        For ``grad_nodes`` of another type or an unknown grad_req.
    """
    if not isinstance(sym, Symbol):
        return _check_function_gradient(
            sym, location, numeric_eps=1e-3 if numeric_eps is None else numeric_eps,
            rtol=1e-2 if rtol is None else rtol, atol=atol,
            dtype=np.float64 if dtype is None else dtype,
        )  # fmt: skip
    dtype = _float_dtype(np.float32 if dtype is None else dtype)
    ctx = ctx or default_context()
    if len(sym.list_outputs()) != 1:
        raise AssertionError(
            f"check_numeric_gradient needs a symbol with one output, not {sym.list_outputs()}"
        )
    args = dict(sorted(_bound_arrays(sym, location, ctx, dtype).items()))
    args_npy = {k: v.asnumpy() for k, v in args.items()}
    aux = _aux_arrays(sym, aux_states, ctx, dtype)
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        nodes = sym.list_arguments()
        grad_req = {k: "write" for k in nodes}
    elif isinstance(grad_nodes, list | tuple):
        nodes = list(grad_nodes)
        grad_req = {k: "write" for k in nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        nodes = list(grad_nodes)
    else:
        raise ValueError(
            f"grad_nodes must be a list, tuple or dict, not {type(grad_nodes).__name__}"
        )
    for name, req in grad_req.items():
        if req not in ("write", "add", "null"):
            raise ValueError(f"Invalid grad_req {req} for argument {name}")

    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in args.items()})
    proj = Variable("__random_proj")
    loss = _symbol.make_loss(sym * proj)
    args["__random_proj"] = array(np.random.rand(*out_shapes[0]) + 0.1, ctx=ctx, dtype=dtype)
    start = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in nodes}
    start["__random_proj"] = np.random.normal(0, 0.01, size=out_shapes[0])
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in start.items()}
    if grad_stype_dict is not None:
        if not isinstance(grad_stype_dict, dict):
            raise AssertionError("grad_stype_dict must be a dict")
        for k, stype in grad_stype_dict.items():
            if k in grads and stype in ("row_sparse", "csr"):
                # a sparse gradient starts empty (a zero gradient must stay unstored)
                grads[k] = nd.sparse.zeros(stype, grads[k].shape, ctx=ctx, dtype=dtype)
    executor = loss.bind(ctx, grad_req=grad_req, args=args, args_grad=grads, aux_states=aux)
    if len(executor.arg_arrays) != len(args):
        raise ValueError(
            f"Executor arg_arrays and location len do not match: {len(executor.arg_arrays)} "
            f"inputs and {len(args)} locations"
        )
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.dtype(np.float32), np.dtype(np.float16)) and not eps >= 1e-5:
        raise AssertionError(f"numeric_eps={eps} is too small for finite differences in {dtype}")
    executor.backward()
    symbolic = executor.grad_dict
    checked = [k for k in nodes if grad_req[k] != "null"]
    numeric = numeric_grad(executor, {k: args_npy[k] for k in checked}, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)  # fmt: skip
    for name in nodes:
        labels = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        got = symbolic[name] if name in symbolic else grads[name]
        if grad_req[name] == "write":
            assert_almost_equal(numeric[name], got, rtol, atol, labels)
        elif grad_req[name] == "add":
            assert_almost_equal(numeric[name], _numpy(got) - start[name], rtol, atol, labels)
        else:
            assert_almost_equal(start[name], got, rtol, atol, labels)
    return None
