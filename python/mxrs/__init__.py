"""mxrs: data-parallel deep-learning training with Apache MXNet 1.x's API.

Layout
------
_native
    The Rust extension (parameter-server bindings).
"""

from . import _native

__version__ = _native.__version__
