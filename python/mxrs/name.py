"""Automatic names (``mx.name``): the counters behind ``dense0``, ``dense1``, ``conv0``...

Blocks created outside any parent's ``name_scope()`` take their prefix from the current
:class:`NameManager` (one per thread). ``with mx.name.NameManager():`` starts fresh counters for
the duration of the block, and ``with mx.name.Prefix('model_'):`` also prepends a prefix.

Examples
--------
>>> with mx.name.NameManager():
...     print(mx.gluon.nn.Dense(2).name)
dense0
"""

import threading

__all__ = ["NameManager", "Prefix", "current"]


class NameManager:
    """Hands out names ``hint + count``, one counter per hint; usable as a ``with`` scope."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """Return ``name`` when given, else the next ``hint<count>`` name."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self):
        self._old_manager = current()
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old_manager
        return False


class Prefix(NameManager):
    """A NameManager that prepends ``prefix`` to every name it hands out.

    Parameters
    ----------
    prefix : str
    """

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        """Return ``prefix`` + the name :meth:`NameManager.get` would give."""
        return self._prefix + super().get(name, hint)


def current():
    """Return this thread's current NameManager (creating the default one on first use)."""
    manager = getattr(NameManager._current, "value", None)
    if manager is None:
        manager = NameManager._current.value = NameManager()
    return manager
