"""A module's inputs: the names it is given checked against its symbol, shapes as DataDesc."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ..base import MXNetError
from ..io import DataDesc
from ..symbol import Symbol

__all__ = ["check_names", "names_of", "parse_descs"]


def names_of(value: Sequence[str] | None) -> list[str]:
    return list(value) if value is not None else []


def check_names(symbol: Symbol, names: list[str], what: str, throw: bool) -> None:
    args = symbol.list_arguments()
    for name in names:
        if name not in args:
            msg = (
                f"You created Module with Module(..., {what}_names={names}) but input with "
                f"name '{name}' is not found in symbol.list_arguments(). Did you mean one of:\n\t"
                + "\n\t".join(
                    a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))
                )  # fmt: skip
            )
            if throw:
                raise MXNetError(msg)
            warnings.warn(msg, stacklevel=3)


def parse_descs(names: list[str], shapes: Sequence[Any] | None, what: str) -> list[DataDesc]:
    descs = [s if isinstance(s, DataDesc) else DataDesc(*s) for s in (shapes or [])]
    given = [d.name for d in descs]
    if shapes is not None and sorted(given) != sorted(names):
        raise MXNetError(
            f"the {what} shapes name {given}, which does not match the module's "
            f"{what}_names {names}"
        )
    return descs
