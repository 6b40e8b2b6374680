"""Checkpoints of networks made of RNN cells: fused and stacked weights are saved unpacked (one
array per gate, as the unfused cells name them) and packed again when loaded, so a checkpoint
of a ``FusedRNNCell`` network loads into its ``unfuse()``-d twin and back."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .. import checkpoint as _ckpt
from ..symbol import Symbol
from .base_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]

_Cells = BaseRNNCell | list[BaseRNNCell]


def _as_cells(cells: _Cells) -> list[BaseRNNCell]:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell: BaseRNNCell, length: int, inputs: Any = None,
               begin_state: list[Any] | None = None, input_prefix: str = "",
               layout: str = "NTC") -> tuple[Any, list[Any]]:  # fmt: skip
    """Deprecated: ``cell.unroll(length, inputs, begin_state, layout)``."""
    warnings.warn(
        "rnn_unroll is deprecated. Please call cell.unroll directly.",
        DeprecationWarning,
        stacklevel=2,
    )
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(
    cells: _Cells,
    prefix: str,
    epoch: int,
    symbol: Symbol | None,
    arg_params: dict[str, Any],
    aux_params: dict[str, Any],
) -> None:
    """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` with the weights of ``cells``
    unpacked (see :meth:`BaseRNNCell.unpack_weights`).

    Parameters
    ----------
    cells : BaseRNNCell or list of BaseRNNCell
        The cells of the network.
    prefix : str
    epoch : int
    symbol : Symbol or None
    arg_params, aux_params : dict of str to NDArray
    """
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    _ckpt.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(
    cells: _Cells, prefix: str, epoch: int
) -> tuple[Symbol, dict[str, Any], dict[str, Any]]:
    """Read a checkpoint written by :func:`save_rnn_checkpoint`, packing the weights of
    ``cells`` again.

    Returns
    -------
    symbol : Symbol
    arg_params, aux_params : dict of str to NDArray
    """
    sym, arg, aux = _ckpt.load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells: _Cells, prefix: str, period: int = 1) -> Callable[..., None]:
    """An epoch-end callback for ``fit`` that calls :func:`save_rnn_checkpoint` every
    ``period`` epochs (numbered from 1 in the file names).

    Parameters
    ----------
    cells : BaseRNNCell or list of BaseRNNCell
    prefix : str
    period : int, default 1
    """
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Symbol | None = None, arg: Any = None,
                  aux: Any = None) -> None:  # fmt: skip
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)

    return _callback
