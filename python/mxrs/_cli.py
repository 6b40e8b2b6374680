"""Console scripts ``ps-scheduler`` and ``ps-server``: the Rust binaries' flags and environment,
installed by ``pip install``."""

import sys

from . import _native


def scheduler() -> int:
    """Runs the scheduler of a job (``ps-scheduler --help``)."""
    return _native.node_main("scheduler", ["ps-scheduler", *sys.argv[1:]])


def server() -> int:
    """Runs a server of a job (``ps-server --help``)."""
    return _native.node_main("server", ["ps-server", *sys.argv[1:]])
