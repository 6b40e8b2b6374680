"""Key-value stores for data-parallel training (``mx.kv`` / ``mx.kvstore``).

Layout
------
base
    ``KVStoreBase``, the registry behind :func:`create`, key/value normalisation.
local
    ``local`` and ``device``: one process, sums on CPU or on the arrays' devices.
dist
    ``dist_sync``, ``dist_device_sync``, ``dist_async``: a worker of a parameter-server job.
"""

from . import dist, local  # noqa: F401  (registers the store types)
from .base import KVStoreBase, chosen, create
from .dist import DistKVStore
from .local import LocalKVStore

KVStore = KVStoreBase

__all__ = ["DistKVStore", "KVStore", "KVStoreBase", "LocalKVStore", "chosen", "create"]
