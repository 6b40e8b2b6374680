"""Timing a Symbol's forward (and backward) passes."""

from __future__ import annotations

import time

import numpy as np

from .. import ndarray as nd
from ..context import Context
from .arrays import default_context

__all__ = ["check_speed"]


def check_speed(
    sym,
    location: dict | None = None,
    ctx: Context | None = None,
    N: int = 20,
    grad_req=None,
    typ: str = "whole",
    **kwargs,
) -> float:
    """The mean time, in seconds, of one pass of ``sym`` over ``N`` passes (after one to warm
    up).

    Parameters
    ----------
    sym : Symbol
    location : dict of str to numpy.ndarray, optional
        The arguments' values; by default standard normal ones of the shapes in ``kwargs``.
    ctx : Context, optional
        Defaults to :func:`default_context`.
    N : int, default 20
        Passes timed.
    grad_req : str, list or dict, optional
        Defaults to 'write'.
    typ : {'whole', 'forward'}
        Time forward and backward (from the outputs as head gradients), or forward only
        (inference mode).
    **kwargs
        Shapes by argument name when ``location`` is None.

    Raises
    ------
    ValueError
        For another ``typ``.
    """
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    ctx = ctx or default_context()
    grad_req = "write" if grad_req is None else grad_req
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {
            k: np.random.normal(size=arr.shape, scale=1.0) for k, arr in exe.arg_dict.items()
        }
    else:
        if not isinstance(location, dict):
            raise AssertionError(f'Expect dict, get "location"={location}')
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})  # fmt: skip
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)

    train = typ == "whole"

    def one_pass() -> None:
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)

    one_pass()
    for output in exe.outputs:
        output.wait_to_read()
    tic = time.time()
    for _ in range(N):
        one_pass()
    nd.waitall()
    return (time.time() - tic) / N
