"""Converting float32 models for mixed-precision inference: ``convert_symbol`` (the graph),
``convert_model`` (a graph and its parameters), ``convert_hybrid_block`` (a Gluon block).

The casts are added by the graph pass of ``_convert``; these functions check the op lists
given, and cast the parameters to the types the converted graph gives them (its
``__dtype__`` attributes): to bfloat16 by rounding to nearest even, as ``amp_cast`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import ndarray as nd
from ...base import InvalidUsageError, MXNetError
from ...context import Context
from ...symbol import Symbol
from ...symbol.graph import DTYPE_CODES
from . import lists
from ._convert import reduce_precision

__all__ = ["convert_symbol", "convert_model", "convert_hybrid_block"]

_CODE_TO_NAME = {v: k for k, v in DTYPE_CODES.items()}


def _lists(target_dtype: str) -> Any:
    m = lists._by_type(target_dtype)
    if m is not None:
        return m
    raise InvalidUsageError(
        f"Only target_dtype float16 and bfloat16 are supported currently, not {target_dtype!r}"
    )


def _names(value: Any, what: str) -> list[str]:
    if not isinstance(value, list):
        raise InvalidUsageError(f"{what} should be a list of strs, got {type(value).__name__}")
    return value


def convert_symbol(
    sym: Symbol,
    target_dtype: str = "float16",
    target_dtype_ops: list[str] | None = None,
    fp32_ops: list[str] | None = None,
    conditional_fp32_ops: list[tuple[str, str, list[str]]] | None = None,
    excluded_sym_names: list[str] | None = None,
    data_names: list[str] | None = None,
    cast_optional_params: bool = False,
) -> Symbol:
    """Return a copy of float32 graph ``sym`` with ``amp_cast``/``amp_multicast`` nodes so the
    operators of the lists run in ``target_dtype`` or float32.

    Parameters
    ----------
    sym : Symbol
    target_dtype : {'float16', 'bfloat16'}
    target_dtype_ops, fp32_ops : list of str, optional
        Replace the default lists of operators run in ``target_dtype`` and in float32.
    conditional_fp32_ops : list of (str, str, list of str), optional
        Replace the default ``(operator, parameter, values)`` list.
    excluded_sym_names : list of str, optional
        Nodes (by name) that stay in float32.
    data_names : list of str, optional
        The graph's data inputs (float32); by default its inputs without a ``__dtype__``
        attribute. The other inputs are model parameters.
    cast_optional_params : bool, default False
        Store parameters read only by low-precision operators in ``target_dtype`` (their
        ``__dtype__`` says so) instead of casting them in the graph.

    Raises
    ------
    InvalidUsageError
        For a bad argument: another ``target_dtype``, lists that are not lists, an operator in
        two lists, or one in none of the default lists.
    """
    if not isinstance(sym, Symbol):
        raise InvalidUsageError("First argument to convert_symbol should be Symbol")
    m = _lists(target_dtype)
    low_default = m.FP16_FUNCS if target_dtype == "float16" else m.BF16_FUNCS
    either = m.FP16_FP32_FUNCS if target_dtype == "float16" else m.BF16_FP32_FUNCS
    lowp = (
        list(low_default)
        if target_dtype_ops is None
        else _names(target_dtype_ops, "target_dtype_ops")
    )
    fp32 = list(m.FP32_FUNCS) if fp32_ops is None else _names(fp32_ops, "fp32_ops")
    if conditional_fp32_ops is None:
        conditional = list(m.CONDITIONAL_FP32_FUNCS)
    else:
        conditional = _names(conditional_fp32_ops, "conditional_fp32_ops")
    for c in conditional:
        if not (len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
                and isinstance(c[2], list)):  # fmt: skip
            raise InvalidUsageError(
                f"conditional_fp32_ops should be a list of (str, str, list of str), got {c!r}"
            )
    excluded = (
        [] if excluded_sym_names is None else _names(excluded_sym_names, "excluded_sym_names")
    )
    cond_ops = [c[0] for c in conditional]
    for a, b, what in ((lowp, fp32, "target_dtype_ops and fp32_ops"),
                       (lowp, cond_ops, "target_dtype_ops and conditional_fp32_ops"),
                       (cond_ops, fp32, "fp32_ops and conditional_fp32_ops")):  # fmt: skip
        common = set(a) & set(b)
        if common:
            raise InvalidUsageError(
                f"Ops cannot be in two or more lists: {sorted(common)} in {what}"
            )
    known = set(low_default) | set(m.FP32_FUNCS) | set(either)
    known |= {c[0] for c in m.CONDITIONAL_FP32_FUNCS}
    illegal = set(lowp) | set(fp32) | set(cond_ops)
    illegal -= known
    if illegal:
        raise InvalidUsageError(
            f"Can only choose ops from the default lists (amp.list_lp16_ops, list_fp32_ops, "
            f"list_lp16_fp32_ops, list_conditional_fp32_ops of {target_dtype}); "
            f"{sorted(illegal)} are in none of them"
        )
    if data_names is None:
        attrs = sym.attr_dict()
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attrs.get(n, {})]
    return reduce_precision(
        sym, np.dtype(target_dtype), lowp, fp32, list(m.WIDEST_TYPE_CASTS), conditional,
        excluded, data_names, cast_optional_params,
    )  # fmt: skip


def _stored_type(attrs: dict[str, dict[str, str]], name: str) -> np.dtype | None:
    """The type the converted graph stores parameter ``name`` in (its ``__dtype__``)."""
    code = attrs.get(name, {}).get("__dtype__")
    if code is None or code == "-1":
        return None
    return np.dtype(_CODE_TO_NAME[int(code)])


def _cast_param(value: Any, dtype: np.dtype | None) -> Any:
    if dtype is None or np.dtype(value.dtype) == dtype:
        return value
    if dtype.name == "bfloat16":
        return nd.amp_cast(value, dtype=dtype)
    return value.astype(dtype)


def convert_model(
    sym: Symbol,
    arg_params: dict[str, Any],
    aux_params: dict[str, Any],
    target_dtype: str = "float16",
    target_dtype_ops: list[str] | None = None,
    fp32_ops: list[str] | None = None,
    conditional_fp32_ops: list[tuple[str, str, list[str]]] | None = None,
    excluded_sym_names: list[str] | None = None,
    cast_optional_params: bool = False,
) -> tuple[Symbol, dict[str, Any], dict[str, Any]]:
    """Convert a float32 model (graph and parameters) for mixed-precision inference: the graph
    as :func:`convert_symbol` does (the inputs that are not parameters are its data), the
    parameters to the types the converted graph stores them in.

    Returns
    -------
    (Symbol, dict, dict)
        The converted graph, arg_params and aux_params (the dicts given, updated).

    Raises
    ------
    InvalidUsageError
        For a bad argument (see :func:`convert_symbol`), or parameters that are not dicts.
    """
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise InvalidUsageError(
            "excluded_sym_names must be a list of strings representing the names of the "
            f"symbols that should not be casted, while received type {type(excluded_sym_names)}"
        )
    if not isinstance(sym, Symbol):
        raise InvalidUsageError("First argument to convert_model should be Symbol")
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise InvalidUsageError("arg_params and aux_params should be dicts of name to NDArray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    out = convert_symbol(
        sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
        excluded_sym_names, data_names, cast_optional_params,
    )  # fmt: skip
    attrs = out.attr_dict()
    for table, names in (
        (arg_params, out.list_arguments()),
        (aux_params, out.list_auxiliary_states()),
    ):
        for name in names:
            if name in table:
                table[name] = _cast_param(table[name], _stored_type(attrs, name))
    return out, arg_params, aux_params


def convert_hybrid_block(
    block: Any,
    target_dtype: str = "float16",
    target_dtype_ops: list[str] | None = None,
    fp32_ops: list[str] | None = None,
    conditional_fp32_ops: list[tuple[str, str, list[str]]] | None = None,
    excluded_sym_names: list[str] | None = None,
    ctx: Context | Sequence[Context] | None = None,
    cast_optional_params: bool = False,
) -> Any:
    """Convert a hybridized float32 Gluon block (that has run once) into a ``SymbolBlock``
    running in mixed precision, with its parameters in the types the converted graph gives.

    Parameters
    ----------
    block : HybridBlock
    ctx : Context or list of Context, optional
        Where the new block's parameters live; the block's own contexts by default (MXNet's
        default is ``gpu(0)``).

    Other parameters are :func:`convert_symbol`'s.

    Raises
    ------
    InvalidUsageError
        For something else than a HybridBlock, or a bad argument (see :func:`convert_symbol`).
    MXNetError
        When the block has not been hybridized and run yet.
    """
    from ...gluon import HybridBlock, SymbolBlock, _symbolic

    if not isinstance(block, HybridBlock):
        raise InvalidUsageError("block input should be a HybridBlock")
    inputs, sym = _symbolic.graph(block)
    converted = convert_symbol(
        sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
        excluded_sym_names, [str(i.name) for i in inputs], cast_optional_params,
    )  # fmt: skip
    attrs = converted.attr_dict()
    values: dict[str, Any] = {}
    contexts: list[Context] = []
    for name, param in block.collect_params().items():
        values[name] = _cast_param(param._reduce(), _stored_type(attrs, name))
        contexts = contexts or param.list_ctx()
    ret = SymbolBlock(converted, inputs)
    where = ctx if ctx is not None else (contexts or None)
    for name, param in ret.collect_params().items():
        if name not in values:
            raise MXNetError(f"convert_hybrid_block: the block has no parameter {name!r}")
        value = values[name]
        if param.dtype is None or np.dtype(param.dtype) != np.dtype(value.dtype):
            param.cast(value.dtype)
        param._load_init(value, where)
    return ret
