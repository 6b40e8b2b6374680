"""mxrs: data-parallel deep-learning training with Apache MXNet 1.x's API.

Layout
------
_native
    The Rust extension (parameter-server bindings).
_role
    ``import mxrs`` in a process whose ``DMLC_ROLE`` is scheduler or server runs that role.
base
    ``MXNetError`` and its subclasses.
context
    ``Context``, ``cpu``, ``gpu``, ``current_context``, ``num_gpus``.
ndarray (``nd``)
    ``NDArray`` and the array operations, on NumPy (CPU) or CuPy (GPU).
autograd
    Recording scopes and the backward pass.
random
    Seeding and sampling, one generator per context.
"""

from . import _role

_role.run_if_scheduler_or_server()

from . import _native, autograd, base, context, ndarray, random  # noqa: E402
from .base import MXNetError  # noqa: E402
from .context import Context, cpu, cpu_pinned, current_context, gpu  # noqa: E402

nd = ndarray

__version__ = _native.__version__

__all__ = ["Context", "MXNetError", "autograd", "base", "context", "cpu", "cpu_pinned",
           "current_context", "gpu", "nd", "ndarray", "random"]
