"""Key-value stores for data-parallel training (``mx.kv`` / ``mx.kvstore``).

Layout
------
base
    ``KVStoreBase`` (MXNet's interface, with ``register``), ``KVStore`` (what mxrs's stores
    share), the registry behind :func:`create`, key/value normalisation.
local
    ``local`` and ``device``: one process, sums on CPU or on the arrays' devices.
dist
    ``dist_sync``, ``dist_device_sync``, ``dist_async``: a worker of a parameter-server job.
server_optimizer
    Python optimizers on the servers: pickled by a worker, run by a server started from Python.
teststore
    ``teststore``: MXNet's store for tests, written on ``KVStoreBase`` alone.
"""

from . import dist, local, teststore  # noqa: F401  (registers the store types)
from .base import KVStore, KVStoreBase, chosen, create
from .dist import DistKVStore
from .local import LocalKVStore

__all__ = [
    "DistKVStore",
    "KVStore",
    "KVStoreBase",
    "LocalKVStore",
    "chosen",
    "create",
]
