"""Attribute-access views of the registry: ``tfm.ExpandNorms``, ``tfm.finn.Streamline``."""

from __future__ import annotations

import _thread
import _weakref

from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS
from brainsmith.plugin.errors import PluginNotFoundError
from brainsmith.plugin.manager import CHANGE_HOOKS, get_plugin_manager
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from brainsmith.plugin.registry import Registry


FRAMEWORK_NAMESPACES = BUILTIN_FRAMEWORKS
_OWN = ("list_plugins", "get_spec", "specs", "framework")


class _Lookups:
    """The collections that cache lookups, and a generation bumped whenever the registry
    changes: a lookup begun before a change is not cached.

    Collections are held weakly by id (a weak reference drops its entry when its collection
    goes; ``weakref.WeakSet`` would cost the everyday import a module of its own)."""

    def __init__(self) -> None:
        self.views: dict[int, _weakref.ReferenceType[PluginCollection]] = {}
        self.generation = 0
        self.lock = _thread.allocate_lock()

    def add(self, view: PluginCollection) -> None:
        key = id(view)

        def gone(_: object) -> None:
            self.views.pop(key, None)

        self.views[key] = _weakref.ref(view, gone)

    def forget(self) -> None:
        with self.lock:
            self.generation += 1
            for ref in list(self.views.values()):
                view = ref()
                if view is not None:
                    view._forget()


LOOKUPS = _Lookups()
CHANGE_HOOKS.append(LOOKUPS.forget)


class PluginCollection:
    """Plugins of one type, optionally of one framework or a fixed subset (a blueprint's).

    Looked-up objects and framework namespaces are kept as instance attributes, so a repeated
    ``tfm.X`` or ``tfm.qonnx.X`` is plain attribute reads; they are forgotten whenever the
    registry changes (and by ``reset_plugin_system()``).
    """

    _type: str
    _framework: str | None
    _subset: dict[str, PluginSpec] | None
    _namespaces: dict[str, PluginCollection]

    def __init__(
        self,
        plugin_type: str,
        framework: str | None = None,
        subset: dict[str, PluginSpec] | None = None,
    ) -> None:
        object.__setattr__(self, "_type", plugin_type)
        object.__setattr__(self, "_framework", framework)
        object.__setattr__(self, "_subset", subset)
        object.__setattr__(self, "_namespaces", {})
        with LOOKUPS.lock:
            LOOKUPS.add(self)

    # -- lookups ---------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        generation = LOOKUPS.generation
        if self._framework is None and self._subset is None:
            namespace = self.framework(name.replace("_", "-"), strict=False)
            if namespace is not None:
                object.__setattr__(self, name, namespace)  # tfm.qonnx: a plain attribute read
                return namespace
        spec = self.get_spec(name)
        obj = _registry().load(spec)
        with LOOKUPS.lock:  # not if the plugin was unloaded or replaced meanwhile
            if LOOKUPS.generation == generation:
                object.__setattr__(self, name, obj)
        return obj

    def __getitem__(self, name: str) -> object:
        return _registry().load(self.get_spec(name))

    def __contains__(self, name: str) -> bool:
        try:
            self.get_spec(name)
        except PluginNotFoundError:
            return False
        return True

    def get_spec(self, name: str) -> PluginSpec:
        """The spec behind ``name`` (short or ``framework:name``) without importing it."""
        if self._subset is not None:
            spec = self._subset.get(name)
            if spec is None:
                from brainsmith.plugin.names import suggest

                raise PluginNotFoundError(
                    f"{self._type} '{name}' is not part of this blueprint"
                    f"{suggest(name, list(self._subset))}; add it to the blueprint to use it",
                    self._type,
                    name,
                )
            return spec
        registry = _registry()
        try:
            return registry.find(self._type, name, self._framework)
        except PluginNotFoundError:
            if not self._framework or registry.has_framework(self._framework):
                raise
            from brainsmith.plugin.adapters import install_hint

            hint = registry.disabled.get(self._framework) or install_hint(self._framework)
            if not hint:
                raise
            raise PluginNotFoundError(
                f"{self._type} '{name}' of framework '{self._framework}' is not available: {hint}",
                self._type,
                name,
            ) from None

    def framework(self, name: str, strict: bool = True) -> PluginCollection | None:
        """The namespace of one framework, e.g. ``tfm.framework("my-plugins")``."""
        cached = self._namespaces.get(name)
        if cached is not None:
            return cached
        generation = LOOKUPS.generation
        if name not in FRAMEWORK_NAMESPACES and not _registry().has_framework(name):
            if strict:
                raise PluginNotFoundError(
                    f"no framework named '{name}' (known: {', '.join(_registry().frameworks())})",
                    self._type,
                    name,
                )
            return None
        namespace = PluginCollection(self._type, name)
        with LOOKUPS.lock:
            if LOOKUPS.generation == generation:
                self._namespaces[name] = namespace
        return namespace

    # -- listing ---------------------------------------------------------------------------
    def specs(self) -> list[PluginSpec]:
        if self._subset is not None:
            return sorted(set(self._subset.values()), key=lambda s: s.qualified_name)
        return sorted(_registry().specs(self._type, self._framework), key=lambda s: s.name)

    def list_plugins(self, available_only: bool = False) -> list[str]:
        """Names usable as attributes here (short names; qualified where shadowed).

        ``available_only`` keeps plugins whose version, ``requires`` and ``tools`` fit here."""
        if available_only:
            from brainsmith.plugin.lifecycle.availability import is_available

            return sorted({s.name for s in self.specs() if is_available(s)[0]})
        if self._subset is not None:
            return sorted(k for k in self._subset if ":" not in k)
        return sorted({s.name for s in _registry().specs(self._type, self._framework)})

    def __dir__(self) -> list[str]:
        names = set(self.list_plugins()) | set(_OWN)
        if self._framework is None and self._subset is None:
            names |= {fw.replace("-", "_") for fw in _registry().frameworks()}
        return sorted(n for n in names if n.isidentifier())

    def __iter__(self) -> Iterator[str]:
        return iter(self.list_plugins())

    def __len__(self) -> int:
        return len(self.list_plugins())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("plugin collections are read-only; register plugins with decorators")

    def __repr__(self) -> str:
        scope = f" {self._framework}" if self._framework else ""
        return f"<{self._type} plugins{scope}: {len(self)}>"

    def _forget(self) -> None:
        for key in list(vars(self)):
            if not key.startswith("_"):
                object.__delattr__(self, key)
        self._namespaces.clear()


def _registry() -> Registry:

    return get_plugin_manager().registry()
