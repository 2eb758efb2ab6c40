"""The weak instance cache: one shared instance per plugin class and arguments, freed when
nothing uses it any more."""

from __future__ import annotations

import _thread
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from brainsmith.plugin.spec import PluginSpec

Key = tuple[str, str, tuple[object, ...]]


class InstanceCache:
    """Instances by (type, qualified name, arguments); two threads asking for the same key at
    once get one instance, made once (a lock per key, never held while another key is made)."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._instances: weakref.WeakValueDictionary[Key, Any] = weakref.WeakValueDictionary()
        self._key_locks: dict[Key, Any] = {}

    def __len__(self) -> int:
        return len(self._instances)

    def get(
        self, spec: PluginSpec, make: Callable[..., object], kwargs: dict[str, object]
    ) -> object:
        """The shared ``make(**kwargs)`` of ``spec``."""
        key = (spec.type, spec.qualified_name, _freeze(kwargs))
        with self._lock:
            instance = self._instances.get(key)
            if instance is not None:
                return instance
            key_lock = self._key_locks.setdefault(key, _thread.allocate_lock())
        with key_lock:
            instance = self._instances.get(key)
            if instance is None:
                instance = make(**kwargs)
                self._instances[key] = instance
            return instance

    def drop(self, specs: Iterable[PluginSpec] | None = None) -> None:
        """Forget the instances of ``specs`` (all of them when None)."""
        with self._lock:
            if specs is None:
                self._instances.clear()
                return
            names = {(s.type, s.qualified_name) for s in specs}
            for key in [k for k in list(self._instances.keys()) if (k[0], k[1]) in names]:
                self._instances.pop(key, None)


def _freeze(kwargs: dict[str, object]) -> tuple[object, ...]:
    """``kwargs`` as a hashable key (an unhashable value by its ``repr``)."""
    items = []
    for key, value in sorted(kwargs.items()):
        try:
            hash(value)
            items.append((key, value))
        except TypeError:
            items.append((key, repr(value)))
    return tuple(items)
