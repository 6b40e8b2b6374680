"""Checking that a computation agrees with itself: a Symbol run on several contexts and dtypes,
a HybridBlock run imperatively and hybridized."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..initializer import Initializer
from ..symbol import Symbol
from .arrays import assert_almost_equal
from .tolerances import get_tols

__all__ = ["check_consistency", "check_gluon_hybridize_consistency"]


def _less_precise(dt1: Any, dt2: Any) -> Any:
    """The dtype of the two with fewer bytes (``dt1`` when ``dt2`` is None)."""
    if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize:
        return dt1
    return dt2


def _most_precise_index(dtypes: list[np.dtype]) -> int:
    """The first index of the dtype every other one casts to safely."""
    best = 0
    for i, dt in enumerate(dtypes):
        if dt > dtypes[best]:
            best = i
    return best


def _compare(arr, want, rtol, atol, equal_nan, raise_on_err, what: str) -> None:
    try:
        assert_almost_equal(arr, want, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as err:
        print(what)
        traceback.print_exc()
        if raise_on_err:
            raise
        print(str(err))


def check_consistency(
    sym,
    ctx_list: list[dict],
    scale: float = 1.0,
    grad_req="write",
    arg_params: dict | None = None,
    aux_params: dict | None = None,
    rtol=None,
    atol=None,
    raise_on_err: bool = True,
    ground_truth: dict | None = None,
    equal_nan: bool = False,
    use_uniform: bool = False,
    rand_type=np.float64,
) -> dict:
    """Check that ``sym`` gives the same outputs (inference and training) and gradients in
    every entry of ``ctx_list``: each is bound with ``sym.simple_bind(grad_req=grad_req,
    **entry)``, so an entry names the context (``'ctx'``), the input shapes and a
    ``'type_dict'``, e.g.::

        [{'ctx': mx.cpu(0), 'conv_data': (2, 2, 10, 10), 'type_dict': {'conv_data': np.float64}},
         {'ctx': mx.cpu(0), 'conv_data': (2, 2, 10, 10), 'type_dict': {'conv_data': np.float32}}]

    The reference is the first entry whose first output has the most precise dtype (or
    ``ground_truth``); the others are compared with it at their own dtype's tolerances.

    Parameters
    ----------
    sym : Symbol or list of Symbol
        One symbol for every entry, or one per entry (same arguments and outputs).
    ctx_list : list of dict
        At least two entries.
    scale : float, default 1.0
        Standard deviation of the random normal inputs (uniform ones lie in
        ``[-0.92 scale, 0.92 scale)``).
    grad_req : str, list or dict, default 'write'
        'null' compares the inference outputs only.
    arg_params : dict of str to numpy.ndarray, optional
        Input values; the arguments it lacks are drawn at random (in sorted name order) and
        added to it.
    aux_params : dict of str to numpy.ndarray, optional
        Auxiliary states (default 0).
    rtol, atol : float or dict of dtype to float, optional
    raise_on_err : bool, default True
        Raise the first mismatch; otherwise print every one.
    ground_truth : dict of str to array, optional
        Outputs (and gradients) to compare every entry with.
    equal_nan : bool, default False
    use_uniform : bool, default False
        Draw uniform rather than normal inputs.
    rand_type : dtype, default numpy.float64
        The random inputs are cast to it.

    Returns
    -------
    dict of str to NDArray
        The reference outputs and gradients by name.
    """
    if len(ctx_list) <= 1:
        raise AssertionError("check_consistency needs at least two contexts to compare")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise AssertionError(f"{len(syms)} symbols for {len(ctx_list)} contexts")
    output_names = syms[0].list_outputs()
    arg_names = syms[0].list_arguments()
    exe_list = []
    for s, entry in zip(syms, ctx_list, strict=True):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise AssertionError("the symbols' arguments or outputs differ")
        exe_list.append(s.simple_bind(grad_req=grad_req, **entry))

    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name, arr in sorted(exe_list[0].arg_dict.items(), key=lambda t: t[0]):
        if name in arg_params:
            continue
        if use_uniform:
            values = np.random.uniform(low=-0.92 * scale, high=0.92 * scale, size=arr.shape)
        else:
            values = np.random.normal(size=arr.shape, scale=scale)
        arg_params[name] = values.astype(rand_type)
    for name in exe_list[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exe_list:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0

    def reference(exe) -> dict:
        gt = dict(exe.output_dict)
        if grad_req != "null":
            gt.update(exe.grad_dict)
        return gt

    for exe in exe_list:
        exe.forward(is_train=False)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exe_list]
    gt_idx = _most_precise_index(dtypes)
    gt = ground_truth if ground_truth is not None else reference(exe_list[gt_idx])
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names, exe.outputs, strict=True):
            _compare(arr, gt[name], rtol, atol, equal_nan, raise_on_err,
                     f"Predict Err: ctx {i} vs ctx {gt_idx} at {name}")  # fmt: skip

    if grad_req == "null":
        return gt
    for exe in exe_list:
        exe.forward(is_train=True)
    # every backward starts from the first executor's outputs, in the least precise dtype
    least = [out.dtype for out in exe_list[0].outputs]
    for exe in exe_list:
        least = [_less_precise(out.dtype, dt) for out, dt in zip(exe.outputs, least, strict=True)]
    golden = [out.astype(dt).asnumpy() for out, dt in zip(exe_list[0].outputs, least, strict=True)]
    for exe in exe_list:
        heads = [
            nd.array(g, ctx=exe._ctx, dtype=out.dtype).tostype(out.stype)
            for g, out in zip(golden, exe.outputs, strict=True)
        ]
        exe.backward(heads)
    if ground_truth is None:
        gt = reference(exe_list[gt_idx])
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        pairs = zip(output_names + arg_names, list(exe.outputs) + list(exe.grad_arrays),
                    strict=True)  # fmt: skip
        for name, arr in pairs:
            want = gt.get(name)
            if want is None:
                if arr is not None:
                    raise AssertionError(f"{name}: a gradient where the reference has none")
                continue
            rt, at = rtol, atol
            # a float32 gradient (batchnorm's gamma) of a float16 model is compared as float16
            arr_dt = _less_precise(arr.dtype, dtypes[i])
            want_dt = _less_precise(want.dtype, dtypes[gt_idx])
            if arr_dt != arr.dtype or want_dt != want.dtype:
                rt, at = get_tols(arr.astype(arr_dt), want.astype(want_dt), rtol, atol)
            what = (
                f"Train Err: {np.dtype(arr.dtype).name} {arr.context} ctx {i} vs "
                f"{np.dtype(want.dtype).name} {want.context} ctx {gt_idx} at {name}"
            )
            _compare(arr, want, rt, at, equal_nan, raise_on_err, what)
    return gt


class _CachedValues(Initializer):
    """Fills every parameter with the value cached under its name."""

    def __init__(self, values: dict[str, np.ndarray]) -> None:
        super().__init__()
        self._values = values

    def __call__(self, desc: Any, arr: Any) -> None:
        arr[:] = self._values[str(desc)]

    def _init_weight(self, name: str, arr: Any) -> None:
        arr[:] = self._values[name]


def check_gluon_hybridize_consistency(
    net_builder,
    data_l: list,
    numpy_func=None,
    test_grad: bool = True,
    rtol: float = 1e-4,
    atol: float = 1e-4,
) -> None:
    """Check that a HybridBlock gives the same outputs (and input gradients) run imperatively
    and hybridized, with the same parameters; the network must not draw random numbers.

    Parameters
    ----------
    net_builder : callable
        ``net_builder(prefix='net_')`` builds the block (called once per variant).
    data_l : list of NDArray
        The inputs.
    numpy_func : callable, optional
        A NumPy reference, called with the inputs as NumPy arrays.
    test_grad : bool, default True
        Also compare the gradients of the inputs (backward from the output itself).
    rtol, atol : float, default 1e-4
    """
    saved_out = None
    saved_grads = None
    init = None
    for hybridize in (False, True):
        for use_autograd in (False, True) if test_grad else (False,):
            net = net_builder(prefix="net_")
            if init is None:
                net.initialize()
            else:
                net.initialize(init)
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if init is None:
                init = _CachedValues(
                    {k: v.data().asnumpy() for k, v in net.collect_params().items()}
                )
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for got, want in zip(grads, saved_grads, strict=True):
                        assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        expected = numpy_func(*[x.asnumpy() for x in data_l])
        assert_almost_equal(saved_out, expected, rtol=rtol, atol=atol)
