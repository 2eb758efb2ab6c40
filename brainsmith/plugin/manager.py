"""PluginManager: the configuration, and the front door to the refresher (the process
registry kept in step with discovery, ``refresher``), the instance cache (``instances``) and
the health reporter (``health``). One per process: ``get_plugin_manager()``."""

from __future__ import annotations

import _thread
import sys

from brainsmith.plugin import log
from brainsmith.plugin.errors import PluginMetadataError
from brainsmith.plugin.refresher import Refresher
from brainsmith.plugin.registry import Registry, RegistryChanges
from brainsmith.plugin.settings.config import PluginConfig, load_config
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from brainsmith.plugin.services.instances import InstanceCache
    from brainsmith.plugin.services.records import Health, PerformanceStats
    from brainsmith.plugin.services.views import RegistryView
    from brainsmith.plugin.services.watch import PluginWatcher


class PluginManager:
    """The plugin hub's front door (see ``brainsmith.plugins`` for the everyday API): a thin
    facade over the refresher (the process registry kept in step with discovery), the
    instance cache and the health reporter.

    Discovery fills the registry; after the TTL the next discovery or lookup checks the
    index's stamps again and applies what changed to the same registry (``refresh()`` does
    so at once, ``watch()`` on every change of a plugin folder).
    """

    def __init__(self, config: PluginConfig | None = None) -> None:
        self._config = config
        self._refresher = Refresher(lambda: self.config, self.drop_instances, _registry_changed)
        self._views: dict[tuple[object, ...], Registry | RegistryView] = {}
        self._instances: InstanceCache | None = None

    # -- configuration ---------------------------------------------------------------------
    @property
    def config(self) -> PluginConfig:
        if self._config is None:
            self._config = load_config()
            if self._config.debug:
                log.set_debug(True)
        return self._config

    def set_debug_mode(self, enabled: bool) -> None:
        """Log every source, cache decision and plugin load at DEBUG level."""
        log.set_debug(enabled)

    @property
    def module_frameworks(self) -> dict[str, str]:
        """Module -> framework of plugins loaded from a path (``brainsmith.load_plugins``)."""
        return self._refresher.module_frameworks

    # -- discovery -------------------------------------------------------------------------
    def discover_plugins(
        self,
        *,
        types: Iterable[str] | None = None,
        frameworks: Iterable[str] | None = None,
        **removed: object,
    ) -> Registry | RegistryView:
        """The registry, discovered or checked again if its TTL has passed.

        ``types`` and ``frameworks`` narrow what the returned view shows (``"*"`` stands for
        pip packages); it is a view of the one process registry, never a replacement.
        Repeated calls cost a dictionary lookup. Any other argument (``modes=``, which is
        gone) is a TypeError saying what to write instead."""
        if removed:
            raise _unknown_argument(next(iter(removed)))
        checked = self._refresher.due()
        registry = self._refresher.current()
        if self.config.performance_tracking:
            self._refresher.stats.lookup(not checked or self._index_hit())
        if types is None and frameworks is None:
            return registry
        key = (_frozen(types), _frozen(frameworks))
        view = self._views.get(key)
        if view is None:
            from brainsmith.plugin.services.views import make_view

            view = self._views[key] = make_view(registry, types, frameworks)
        return view

    def registry(self) -> Registry:
        """The process registry, discovering with the configured defaults if needed."""
        registry = self._refresher.registry
        if registry is not None and not self._refresher.due():
            return registry
        registry = self._refresher.refresh(force=False)[0]
        if self.config.performance_tracking:  # a discovery like discover_plugins' counts
            self._refresher.stats.lookup(self._index_hit())
        return registry

    def _index_hit(self) -> bool:
        last = self._refresher.last
        return last is not None and last.cache == "hit"

    def index_fingerprint(self) -> int:
        """Changes whenever a source of the registry's discovery read something else (the
        stamps of every file and folder each source checked)."""
        from brainsmith.plugin.discovery.stamps import digest32

        self.registry()
        states = self._refresher.states
        return digest32(
            repr([(source, state.get("stamp")) for source, state in sorted(states.items())])
        )

    def refresh(self) -> RegistryChanges:
        """Check every source for changes now, as after the TTL, and apply them to the
        registry: new and deleted plugins, and plugin folders' edited modules imported anew
        on their next use. Returns what changed."""
        return self._refresher.refresh(force=True)[1]

    def folders_changed(self) -> bool:
        """True when a plugin folder's files or folders differ from those the registry was
        made from (a ``stat`` of each; no file is read)."""
        from brainsmith.plugin.discovery.stamps import unchanged

        states = self._refresher.states
        return any(
            not unchanged(state.get("stamp")) for source, state in states.items()
            if source.startswith("user:")
        )  # fmt: skip

    def watch(
        self, on_change: Callable[[RegistryChanges], object] | None = None, debounce: float = 0.2
    ) -> PluginWatcher:
        """Hot reloading: refresh at once whenever a file in a plugin folder changes.

        ``on_change(changes)`` is called (in the watcher's thread) with each non-empty
        ``RegistryChanges``. Returns the running ``PluginWatcher``; use it as a context
        manager or call ``stop()``::

            with get_plugin_manager().watch(print):
                ...  # edit plugin files; tfm.X serves the new code
        """
        from brainsmith.plugin.services.watch import PluginWatcher

        folders = self.config.plugin_dirs
        if not folders:
            from brainsmith.plugin.errors import PluginError

            raise PluginError(
                "no plugin folders to watch: list them in plugin_system.plugin_dirs of "
                ".brainsmith/config.yaml or in BRAINSMITH_PLUGIN_DIRS"
            )
        self.registry()
        return PluginWatcher(self, folders, on_change, debounce).start()

    # -- decorators report here ------------------------------------------------------------
    def on_decorated(
        self, plugin_type: str, obj: object, metadata: dict[str, object], where: str
    ) -> None:
        self._refresher.decorated(plugin_type, obj, metadata, where)

    def _framework_of(self, module: str) -> str:
        return self._refresher.framework_of(module)

    # -- runtime sources (plugin packages, loaded paths, custom kernels) -------------------
    def replace_source(self, source: str, specs: list[PluginSpec]) -> None:
        """Make ``specs`` (objects already in memory) the plugins of runtime ``source``;
        they survive rediscovery. Instances and lookups of the plugins that left go."""
        gone = self.registry().replace(source, specs)
        if gone:
            self.drop_instances(gone)
            _registry_changed()

    def release_source(self, source: str) -> None:
        """Remove runtime ``source`` and its plugins (instances and ``tfm.X`` lookups too)."""
        released = self.registry().release(source)
        if released is not None:
            self.drop_instances(released.specs)
        _registry_changed()

    def remove_runtime(self, specs: list[PluginSpec]) -> None:
        """Remove specs from the registry, the instance cache and ``tfm.X`` lookups."""
        registry = self.registry()
        for spec in specs:
            registry.remove(spec)
        self.drop_instances(specs)
        _registry_changed()

    # -- objects and instances -------------------------------------------------------------
    def get(self, plugin_type: str, name: str) -> object:
        return self.registry().get(plugin_type, name)

    def get_instance(self, plugin_type: str, name: str, **kwargs: Any) -> object:
        """A shared instance of a plugin class (weakly cached: freed when unused).

        Steps are functions and are returned as they are."""
        registry = self.registry()
        spec = registry.find(plugin_type, name)
        obj = registry.load(spec)  # imports happen here, with no lock held
        if plugin_type == "step":
            return obj
        if not callable(obj):
            raise PluginMetadataError(
                f"{plugin_type} {spec.qualified_name} is not a class: {obj!r}",
                f"{spec.source}:{spec.metadata.get('line', 0)}",
                plugin_type,
            )
        return self._instance_cache().get(spec, obj, kwargs)

    def _instance_cache(self) -> InstanceCache:
        if self._instances is None:
            from brainsmith.plugin.services.instances import InstanceCache

            with self._refresher.lock:
                if self._instances is None:
                    self._instances = InstanceCache()
        return self._instances

    def drop_instances(self, specs: list[PluginSpec] | None = None) -> None:
        if self._instances is not None:
            self._instances.drop(specs)

    # -- maintenance, stats, health --------------------------------------------------------
    def clear_cache(self) -> int:
        """Delete the persisted index (and the parsed form of config.yaml); the next discovery
        or lookup scans again, into the same registry: loaded plugins of unchanged files stay
        loaded. Returns files removed; CacheDirectoryError when the cache directory is not the
        user's own."""
        from brainsmith.plugin.settings import memo
        from brainsmith.plugin.settings.config import memo_folder

        with self._refresher.lock:
            self._refresher.next_check = 0.0
        removed = 0
        if self.config.project_file:  # the parsed form of config.yaml, kept beside it
            folder = memo_folder(self.config.project_file)
            if memo.dir_problem(folder) is None:
                removed += memo.remove_if_ours(memo.path_for("config", folder))
        return removed + memo.remove_all(self.config.cache_dir)

    def get_performance_stats(self) -> PerformanceStats:
        """Plugin counts, plus (with ``performance_tracking``) discovery statistics."""
        from brainsmith.plugin.services.health import performance_stats

        registry = self.registry()
        instances = len(self._instances) if self._instances is not None else 0
        return performance_stats(
            registry, self.config, instances, self._refresher.stats, self._refresher.last
        )

    def health_check(self) -> Health:
        from brainsmith.plugin.services.health import health, unhealthy

        try:
            registry = self.registry()
        except Exception as exc:  # the hub itself cannot start
            return unhealthy(exc)
        return health(registry, self.config)


def _unknown_argument(name: str) -> TypeError:
    """The error for ``discover_plugins(name=...)``: ``modes`` is gone, naming what to write."""
    if name == "modes":
        return TypeError(
            "discover_plugins(modes=...) is gone: every discovery reads the one index and "
            "imports a plugin only when it is used; drop modes=, and narrow a discovery with "
            "types= or frameworks="
        )
    return TypeError(
        f"discover_plugins() got an unexpected keyword argument {name!r}; "
        "it takes types= and frameworks="
    )


def _frozen(value: str | Iterable[str] | None) -> object:
    if value is None or isinstance(value, str):
        return value
    return tuple(value)


_manager: PluginManager | None = None
_manager_lock = _thread.allocate_lock()


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager (created once, also when threads ask at once)."""
    global _manager
    manager = _manager
    if manager is None:
        with _manager_lock:
            manager = _manager
            if manager is None:
                manager = _manager = PluginManager()
    return manager


def register_decorated(
    plugin_type: str, obj: object, metadata: dict[str, object], where: str
) -> None:
    get_plugin_manager().on_decorated(plugin_type, obj, metadata, where)


# Cleanup that reads the registry's runtime sources before reset_plugin_system() replaces it
# (forgetting imported modules, QONNX op classes); the lifecycle modules register it, and the
# collections register CHANGE_HOOKS to forget cached lookups, so no import goes up.
RESET_HOOKS: list[Callable[[Registry], None]] = []
CHANGE_HOOKS: list[Callable[[], None]] = []


def _registry_changed() -> None:
    for hook in CHANGE_HOOKS:
        hook()


def report_problem(source: str, plugin: str, reason: str) -> None:
    """Record a problem for ``health_check()`` and ``brainsmith plugins list --all`` (once: a
    kernel may fail on every call)."""
    registry = get_plugin_manager().registry()
    if not any(p.plugin == plugin and p.reason == reason for p in registry.problems):
        registry.report(source, plugin, reason)


def reset_plugin_system() -> None:
    """Start afresh: new configuration, registry and instance cache (the disk index stays)."""
    global _manager
    current = _manager._refresher.registry if _manager is not None else None
    if current is not None:
        for hook in list(RESET_HOOKS):
            hook(current)
    folders = sys.modules.get("brainsmith.plugin.discovery.folders")
    if folders is not None:
        folders.forget()  # plugin folders' modules: imported afresh by the next use
    shared = sys.modules.get("brainsmith.plugin.discovery.shared_index")
    if shared is not None:
        shared.forget_failures()  # a Redis that was down is tried again
    with _manager_lock:
        old = _manager
        _manager = None
    if old is not None:
        pending = old._refresher.pending
        old.drop_instances()
        if pending:
            get_plugin_manager()._refresher.pending.extend(pending)
    _registry_changed()


__all__ = ["PluginManager", "get_plugin_manager", "reset_plugin_system"]
