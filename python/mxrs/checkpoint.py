"""Model checkpoints in Apache MXNet 1.x's file layout (``mx.model.save_checkpoint`` & co.).

A checkpoint of epoch ``N`` under ``prefix`` is two files:

``prefix-symbol.json``
    The network, in MXNet's symbol JSON format (:meth:`Symbol.save`).
``prefix-NNNN.params``
    The parameters, in MXNet's binary NDArray format (:func:`mxrs.nd.save`), as a dict whose
    keys are ``arg:NAME`` for arguments and ``aux:NAME`` for auxiliary states.

The files are interchangeable with MXNet 1.9.1's: either library loads what the other wrote.

Examples
--------
>>> save_checkpoint("mlp", 3, net, arg_params, aux_params)   # mlp-symbol.json, mlp-0003.params
>>> net, arg_params, aux_params = load_checkpoint("mlp", 3)
"""

from __future__ import annotations

import logging
import os
from typing import Any

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu

__all__ = [
    "save_checkpoint",
    "load_params",
    "load_checkpoint",
    "save_params_file",
    "load_params_file",
]


def _params_file(prefix: str, epoch: int) -> str:
    return f"{prefix}-{int(epoch):04d}.params"


def _symbol_file(prefix: str) -> str:
    return f"{prefix}-symbol.json"


def _on_cpu(value: Any) -> nd.NDArray:
    """``value`` as an NDArray on the CPU (a NumPy array or nested list is converted)."""
    if isinstance(value, nd.NDArray):
        return value.as_in_context(cpu())
    return nd.array(value, ctx=cpu())


def save_checkpoint(
    prefix: str,
    epoch: int,
    symbol: sym.Symbol | None,
    arg_params: dict[str, Any] | None,
    aux_params: dict[str, Any] | None,
    remove_amp_cast: bool = True,
) -> None:
    """Write the checkpoint of ``epoch``: ``prefix-symbol.json`` and ``prefix-%04d.params``.

    Parameters
    ----------
    prefix : str
        Path prefix of the two files.
    epoch : int
        Epoch number, written with four digits in the parameter file's name.
    symbol : Symbol or None
        The network; with None no symbol file is written (as in MXNet).
    arg_params, aux_params : dict of str to NDArray
        Arguments (weights, biases) and auxiliary states (BatchNorm's moving statistics); arrays
        on any context are copied to the CPU first. None counts as an empty dict.
    remove_amp_cast : bool, default True
        Passed to :meth:`Symbol.save`.

    Notes
    -----
    Logs ``Saved checkpoint to "prefix-NNNN.params"`` at INFO level, as MXNet does.
    """
    if symbol is not None:
        if not isinstance(symbol, sym.Symbol):
            raise MXNetError(
                f"save_checkpoint: symbol must be an mx.sym.Symbol or None, "
                f"got {type(symbol).__name__}"
            )
        symbol.save(_symbol_file(prefix), remove_amp_cast=remove_amp_cast)
    param_name = _params_file(prefix, epoch)
    save_params_file(param_name, arg_params, aux_params)
    logging.info('Saved checkpoint to "%s"', param_name)


def save_params_file(
    fname: str, arg_params: dict[str, Any] | None, aux_params: dict[str, Any] | None
) -> None:
    """Write ``arg_params``/``aux_params`` to ``fname`` as ``arg:NAME``/``aux:NAME`` entries
    (on the CPU), the parameter file of a checkpoint."""
    save_dict = {f"arg:{k}": _on_cpu(v) for k, v in (arg_params or {}).items()}
    save_dict.update({f"aux:{k}": _on_cpu(v) for k, v in (aux_params or {}).items()})
    nd.save(fname, save_dict)


def load_params(prefix: str, epoch: int) -> tuple[dict[str, nd.NDArray], dict[str, nd.NDArray]]:
    """Read ``prefix-%04d.params`` into ``(arg_params, aux_params)``.

    Keys with a prefix other than ``arg:`` / ``aux:`` are skipped, as in MXNet; an empty file
    logs a warning and gives two empty dicts.

    Raises
    ------
    MXNetError
        When the file is missing (the message names it), is not an NDArray file, holds a list
        instead of a dict, or holds a key without a ``type:`` prefix.
    """
    return load_params_file(_params_file(prefix, epoch))


def load_params_file(fname: str) -> tuple[dict[str, nd.NDArray], dict[str, nd.NDArray]]:
    """Read a parameter file of ``arg:NAME``/``aux:NAME`` entries into ``(arg_params,
    aux_params)``; errors as :func:`load_params`."""
    if not os.path.isfile(fname):
        raise MXNetError(f"load_params: no parameter file {fname!r}")
    save_dict = nd.load(fname)
    arg_params: dict[str, nd.NDArray] = {}
    aux_params: dict[str, nd.NDArray] = {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise MXNetError(f"load_params: {fname!r} holds a list of arrays, not a dict by name")
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep:
            raise MXNetError(
                f"load_params: key {key!r} of {fname!r} is not of the form 'arg:NAME' or 'aux:NAME'"
            )
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(
    prefix: str, epoch: int
) -> tuple[sym.Symbol, dict[str, nd.NDArray], dict[str, nd.NDArray]]:
    """Read the checkpoint of ``epoch``: ``(symbol, arg_params, aux_params)``.

    The symbol comes from ``prefix-symbol.json``, the parameters from ``prefix-%04d.params``
    (see :func:`load_params`).

    Raises
    ------
    MXNetError
        When either file is missing (the message names it) or cannot be read.
    """
    fname = _symbol_file(prefix)
    if not os.path.isfile(fname):
        raise MXNetError(f"load_checkpoint: no symbol file {fname!r}")
    symbol = sym.load(fname)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
