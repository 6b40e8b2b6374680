"""The KVStore interface, its registry and the key/value normalisation every store shares.

:class:`KVStoreBase` is MXNet 1.9.1's abstract interface (``broadcast``, ``pushpull``, the
optimizer methods, ``type``/``rank``/``num_workers``) with its registry: a subclass registered
with :meth:`KVStoreBase.register` is made by ``create(its lower-case class name)``.
:class:`KVStore` is what mxrs's own stores share: ``init``/``push``/``pull``, the optimizer on
the store, statistics. Beside it: :mod:`.compression` checks gradient-compression settings,
:mod:`.rows` the row-sparse pulls; :mod:`.local` and :mod:`.dist` are the stores; :mod:`.teststore`
is MXNet's Python ``teststore``."""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, TypeVar, cast

from .. import optimizer as opt
from ..base import KVStoreError, MXNetError, ShapeMismatchError
from ..ndarray.ndarray import NDArray
from ._meter import Meter

#: A key: a non-negative int or a str.
Key: TypeAlias = int | str
#: The keys argument of init, push, pull and pushpull: one key or a list of keys.
Keys: TypeAlias = Key | Sequence[Key]
#: Their values: one array, a list (one per device, or one per key), or a list of such lists.
Values: TypeAlias = NDArray | Sequence[NDArray] | Sequence[Sequence[NDArray]]

_REGISTRY: dict[str, type[KVStoreBase]] = {}
_K = TypeVar("_K", bound="type[KVStoreBase]")


def register(*names: str) -> Callable[[_K], _K]:
    """Class decorator: make ``create(name)`` build this store for each of ``names``.

    A name that already builds another class is taken over, with a warning saying which class
    it built before (as MXNet does).
    """

    def deco(klass: _K) -> _K:
        for name in names:
            old = _REGISTRY.get(name.lower())
            if old is not None and old is not klass:
                warnings.warn(
                    f"KVStore {name.lower()!r}: new {klass.__module__}."
                    f"{klass.__qualname__} is overriding existing "
                    f"{old.__module__}.{old.__qualname__}",
                    stacklevel=2,
                )
            _REGISTRY[name.lower()] = klass
        return klass

    return deco


def chosen(name: Any) -> Any:
    """The store type a Trainer or Module uses when its code names ``name``: the value of
    ``MXRS_KVSTORE`` in place of a one-process type (``local``, ``device``), so that a
    single-machine script, unchanged, trains as a worker of a job (``MXRS_KVSTORE=dist_sync``
    under ``mxrs-launch``); ``name`` itself otherwise.

    Raises
    ------
    MXNetError
        When ``MXRS_KVSTORE`` names no store type.
    """
    override = os.environ.get("MXRS_KVSTORE", "").strip()
    if not override or not isinstance(name, str) or name.lower() not in ("local", "device"):
        return name
    if override.lower() not in _REGISTRY and override.lower() != "dist":
        raise MXNetError(
            f"MXRS_KVSTORE={override!r} is not a KVStore type; known: "
            f"{', '.join(sorted(_REGISTRY))}"
        )
    return override


def create(name: str | KVStoreBase = "local") -> KVStoreBase:
    """Create a KVStore.

    Parameters
    ----------
    name : str or KVStoreBase, default 'local'
        'local' (sum and update on CPU), 'device' (on the arrays' devices), 'dist_sync',
        'dist_device_sync', 'dist_async' or 'dist' (= 'dist_sync'); 'teststore' (MXNet's
        Python store for tests) or the lower-case class name of a store registered with
        :meth:`KVStoreBase.register`. A store passes through.

    Returns
    -------
    KVStoreBase

    Raises
    ------
    TypeError
        When ``name`` is neither a str nor a store (as MXNet does).
    MXNetError
        For an unknown name.
    """
    if isinstance(name, KVStoreBase):
        return name
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.lower()
    if key == "dist":
        key = "dist_sync"
    klass = _REGISTRY.get(key)
    if klass is None:
        raise MXNetError(f"unknown KVStore type '{name}'; known: {', '.join(sorted(_REGISTRY))}")
    if issubclass(klass, KVStore):
        return klass(key)  # mxrs's stores know the name they were made under
    return klass()  # a registered store is made without arguments, as MXNet does


def _optimizer_params(values: dict[str, Any]) -> dict[str, float]:
    """``values`` as floats, after checking each names a hyper-parameter a store can change."""
    unknown = sorted(set(values) - {"learning_rate", "rescale_grad"})
    if unknown:
        raise MXNetError(
            f"set_optimizer_params: cannot change {', '.join(unknown)}; only "
            "learning_rate and rescale_grad"
        )
    return {k: float(v) for k, v in values.items()}


def check_shapes(
    what: str, key: Key, shape: tuple[int, ...], arrays: Sequence[NDArray], role: str
) -> None:
    """Raise ShapeMismatchError naming ``key`` and both shapes if an array of ``arrays`` (the
    ``role``: 'pushed value' or 'output array') is not of the key's ``shape``."""
    for a in arrays:
        if a.shape != shape:
            raise ShapeMismatchError(
                f"KVStore.{what}: key {key!r} holds shape {shape}, the {role} has shape {a.shape}"
            )


def key_value_pairs(key: Keys, value: Values | None, what: str) -> list[tuple[Key, list[NDArray]]]:
    """Pair keys with lists of values: ``(k, v)``, ``(k, [v0, v1])``, ``([k..], [v..])``.

    Returns
    -------
    list of (key, list of NDArray)
    """
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            n = len(value) if isinstance(value, (list, tuple)) else 1
            raise MXNetError(f"KVStore.{what}: {len(key)} keys but {n} values")
        out: list[tuple[Key, list[NDArray]]] = []
        for k, v in zip(key, value, strict=True):
            if isinstance(v, NDArray) and type(k) is int and k >= 0:  # the common case, fast
                out.append((k, [v]))
            else:
                out.extend(key_value_pairs(k, v, what))
        return out
    key = check_key(key, what)
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    if not vals:
        raise MXNetError(f"KVStore.{what}: key {key!r} has an empty list of values")
    for v in vals:
        if not isinstance(v, NDArray):
            raise MXNetError(
                f"KVStore.{what}: the value of key {key!r} must be an NDArray, got "
                f"{type(v).__name__}"
            )
    return [(key, cast("list[NDArray]", vals))]  # each checked above


def check_key(key: object, what: str) -> Key:
    """Return ``key``; raise unless it is a non-negative int or a str."""
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise MXNetError(f"KVStore.{what}: a key must be an int or a str, got {key!r}")
    if isinstance(key, int) and key < 0:
        raise MXNetError(f"KVStore.{what}: key {key} is negative")
    return key


class KVStoreBase:
    """The interface of a key-value store for data-parallel training, as MXNet 1.9.1 defines it.

    A store subclasses it and implements ``broadcast``, ``pushpull``, ``is_capable``, the
    optimizer methods and the ``type``, ``rank`` and ``num_workers`` properties (each raises
    NotImplementedError here); registered with :meth:`register`, ``mx.kv.create`` makes it by
    its class name in lower case. A Gluon :class:`~mxrs.gluon.Trainer` uses such a store
    through ``broadcast`` (to start every device from the same weights) and ``pushpull`` (to
    sum gradients), and updates on the workers when ``is_capable('optimizer')`` is False.
    """

    #: The capability :meth:`is_capable` is asked about: running the optimizer on the store.
    OPTIMIZER = "optimizer"
    #: The stores ``create`` can make, by lower-case name.
    kv_registry: dict[str, type[KVStoreBase]] = _REGISTRY

    def broadcast(self, key: Keys, value: Values, out: Values, priority: int = 0) -> None:
        """Broadcast ``value`` (rank 0's) to every worker and store the result in ``out``
        (an array, or a list of them).

        Parameters
        ----------
        key : str or int
        value : NDArray
        out : NDArray or list of NDArray
        priority : int, optional
            Higher priority operations are likely to run before others.
        """
        raise NotImplementedError()

    def pushpull(
        self, key: Keys, value: Values, out: Values | None = None, priority: int = 0
    ) -> None:
        """Push ``value`` (summed over its list) and pull the result into ``out`` (into
        ``value`` when ``out`` is None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Make the store apply ``optimizer`` to what is pushed."""
        raise NotImplementedError()

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (:attr:`OPTIMIZER`: running the
        optimizer)."""
        raise NotImplementedError()

    def save_optimizer_states(
        self, fname: str | os.PathLike[str], dump_optimizer: bool = False
    ) -> None:
        """Write the optimizer's states (and, with ``dump_optimizer``, the optimizer) to a file."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str | os.PathLike[str]) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""
        raise NotImplementedError()

    @property
    def type(self) -> str:
        """str: the store's type name."""
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        """int: this worker's rank, in ``[0, num_workers)``."""
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        """int: the number of workers."""
        raise NotImplementedError()

    @staticmethod
    def register(klass: _K) -> _K:
        """Register store class ``klass`` under its class name in lower case, so that
        ``mx.kv.create(name)`` makes one (with no arguments). A name already registered is
        taken over, with a warning.

        Usable as a class decorator::

            @mx.kv.KVStoreBase.register
            class MyStore(mx.kv.KVStoreBase):
                ...

            kv = mx.kv.create("mystore")

        Raises
        ------
        TypeError
            When ``klass`` is not a class.
        """
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register takes a class, got {klass!r}")
        return register(klass.__name__)(klass)


class KVStore(KVStoreBase):
    """What mxrs's stores (``mx.kv.create(name)``) share.

    Every store offers ``init``, ``push``, ``pull``, ``pushpull``, ``broadcast``,
    ``set_optimizer``, ``save_optimizer_states`` / ``load_optimizer_states``, ``barrier``,
    ``type``, ``rank``, ``num_workers`` and (mxrs) ``stats``. Keys are ints or strs; a key's
    value may be a list of arrays, one per device, which are summed before the push.
    """

    def __init__(self, name: str) -> None:
        self._type = name
        self._key_type: type | None = None  # int or str: the kind of keys this store takes
        # an optimizer.Updater, or any updater(key, merged, stored) given to _set_updater
        self._updater: Any = None
        self._optimizer: opt.Optimizer | None = None
        self._meter = Meter()  # what stats() reports

    def _pairs(self, key: Keys, value: Values | None, what: str) -> list[tuple[Key, list[NDArray]]]:
        """:func:`key_value_pairs`, after checking the keys are of the store's kind."""
        pairs = key_value_pairs(key, value, what)
        self._check_key_types([k for k, _ in pairs], what)
        return pairs

    def _check_key_types(self, keys: Sequence[Key], what: str) -> None:
        """Raise MXNetError unless every key is of the kind (int or str) the store took first
        (MXNet's stores take one kind of key)."""
        for k in keys:
            kind = type(k)
            if self._key_type is None:
                self._key_type = kind
            elif kind is not self._key_type:
                raise MXNetError(
                    f"KVStore.{what}: key {k!r} is a {kind.__name__}, but this store holds "
                    f"{self._key_type.__name__} keys; one store takes one kind of key"
                )

    # ------------------------------------------------------------------ identity
    @property
    def type(self) -> str:
        """str: the store's type name, such as 'local' or 'dist_sync'."""
        return self._type

    @property
    def rank(self) -> int:
        """int: this worker's rank (0 in a single process)."""
        return 0

    @property
    def num_workers(self) -> int:
        """int: the number of workers in the job (1 in a single process)."""
        return 1

    def stats(self) -> dict[str, int | float]:
        """This worker's traffic through the store since it was created (mxrs).

        Returns
        -------
        dict
            ``pushes`` and ``pulls``: requests by key (one per key per call; a pushpull counts
            one of each). ``push_bytes`` and ``pull_bytes``: the bytes of those keys' values as
            sent to and received from the servers (before gradient compression; a row_sparse
            push or pull counts the rows' values); for a single-process store, the bytes of the
            arrays pushed and of the output arrays written. ``wait_seconds``: the total time
            the caller was blocked waiting for push and pull requests to complete (0 for a
            single-process store, which never waits for servers).
        """
        return self._meter.stats()

    @staticmethod
    def is_capable(capability: str) -> bool:
        """Whether the store supports ``capability``: True for :attr:`OPTIMIZER` (every mxrs
        store can run the optimizer).

        Raises
        ------
        ValueError
            For another capability (as MXNet does).
        """
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    # ------------------------------------------------------------------ data
    def init(self, key: Keys, value: Values) -> None:
        """Initialise ``key`` (or each key of a list) with ``value``."""
        raise NotImplementedError

    def push(self, key: Keys, value: Values, priority: int = 0) -> None:
        """Push ``value`` into ``key``: lists of values are summed, then the updater applies."""
        raise NotImplementedError

    def pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, ignore_sparse: bool = True
    ) -> None:
        """Copy the current value of ``key`` into ``out`` (an array or a list, one per device)."""
        raise NotImplementedError

    def row_sparse_pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, row_ids: Any = None
    ) -> None:
        """Copy only the rows ``row_ids`` of each key's value into row_sparse arrays ``out``.

        Parameters
        ----------
        key : int, str or list of them
        out : RowSparseNDArray or list
            The arrays to fill, one per device (or a list of those per key); each receives
            exactly the rows asked for (repeats and order of ``row_ids`` do not matter).
        row_ids : NDArray or list
            Row ids (any shape and numeric dtype): one array for every output, or one per
            output array as ``out`` is structured.

        Raises
        ------
        MXNetError
            When an output is not row_sparse, a row id is out of range, or the key was never
            initialised; nothing is written then.
        """
        raise NotImplementedError

    def pushpull(
        self, key: Keys, value: Values, out: Values | None = None, priority: int = 0
    ) -> None:
        """Push ``value`` then pull into ``out`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Keys, value: Values, out: Values, priority: int = 0) -> None:
        """Initialise ``key`` with ``value`` and pull it into ``out``, as MXNet's stores do:
        every output (on any device) receives rank 0's value.

        Parameters
        ----------
        key : int, str or list of them
        value : NDArray or list
            One value per key (of a list of values, the first initialises the key).
        out : NDArray or list
            The arrays to fill: one or a list per key.
        priority : int, optional

        Raises
        ------
        KVStoreError
            When a key is already initialised (broadcast or ``init`` twice).
        """
        self.init(key, value)
        self.pull(key, out, priority)

    # ------------------------------------------------------------------ optimizer
    def set_optimizer(self, optimizer: opt.Optimizer) -> None:
        """Make the store apply ``optimizer`` to every push (instead of storing the sum)."""
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)

    def _set_updater(self, updater: Callable[[Key, NDArray, NDArray], Any]) -> None:
        """Apply ``updater(key, merged_value, stored_value)`` to every push."""
        self._updater = updater

    def set_optimizer_params(self, **values: float) -> None:
        """Change hyper-parameters of the optimizer the store applies, from now on.

        Parameters
        ----------
        **values : float
            New ``learning_rate`` and ``rescale_grad``. A local store's updater shares the
            caller's optimizer, which is changed here; a distributed store sends them to its
            servers' optimizer.

        Raises
        ------
        MXNetError
            For a name other than those above, or when no optimizer is set.
        """
        params = _optimizer_params(values)
        if self._optimizer is None:
            raise KVStoreError("set_optimizer_params: no optimizer is set on this KVStore")
        if "learning_rate" in params:
            self._optimizer.set_learning_rate(params["learning_rate"])
        if "rescale_grad" in params:
            self._optimizer.rescale_grad = params["rescale_grad"]

    def save_optimizer_states(
        self, fname: str | os.PathLike[str], dump_optimizer: bool = False
    ) -> None:
        """Write the optimizer's states (and, with ``dump_optimizer``, the optimizer) to a file."""
        if self._updater is None:
            raise KVStoreError("save_optimizer_states: no optimizer is set on this KVStore")
        with open(fname, "wb") as f:
            f.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str | os.PathLike[str]) -> None:
        """Restore optimizer states written by :meth:`save_optimizer_states`."""
        if self._updater is None:
            raise KVStoreError("load_optimizer_states: no optimizer is set on this KVStore")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    # ------------------------------------------------------------------ compression
    def set_gradient_compression(self, compression_params: dict[str, Any]) -> None:
        """Compress the gradients this store pushes from now on.

        Parameters
        ----------
        compression_params : dict
            ``{'type': '2bit', 'threshold': 0.5}``: MXNet 1.9.1's 2-bit quantization with error
            feedback (each value sent as +threshold, -threshold or 0, the rest kept in a
            residual and added to the next gradient; 16 values per 4 bytes). Beyond MXNet:
            ``{'type': 'fp16'}`` and ``{'type': 'bf16'}`` send 16-bit values (rounded to nearest
            even) that are summed in float32; on dist stores the pulled sums travel in 16 bits
            too, and the pulled weights with ``'pull_weights': True`` (the servers keep
            float32). Only float32 gradients are compressed.

        Raises
        ------
        KVStoreError
            For a store that cannot compress ('local', as in MXNet) or bad parameters
            (:func:`compression_spec`).
        """
        raise KVStoreError(
            f"gradient compression is not supported for a {self.type!r} KVStore (use 'device' "
            "or a dist store)"
        )

    # ------------------------------------------------------------------ sync
    def barrier(self) -> None:
        """Wait until every worker reaches this point (nothing to wait for in one process)."""

    _barrier = barrier

    def __repr__(self) -> str:
        return f"<{type(self).__name__} type={self.type} rank={self.rank}/{self.num_workers}>"

    def __reduce__(self) -> Any:
        raise pickle.PicklingError("a KVStore cannot be pickled")
