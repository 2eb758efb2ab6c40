"""PluginManager: owns the configuration, the registry (and through it every plugin of the
process), discovery, the instance cache, statistics and health.
One per process: ``get_plugin_manager()``."""

from __future__ import annotations

import _thread
import os
import sys
import time

from brainsmith.plugin import log
from brainsmith.plugin.config import DISCOVERY_MODES, PluginConfig, load_config
from brainsmith.plugin.discovery.index import DiscoveryResult, Found, discover
from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS
from brainsmith.plugin.errors import ConfigError, PluginMetadataError
from brainsmith.plugin.registry import Registry, RegistryChanges, shadowed_reason
from brainsmith.plugin.spec import PluginProblem, PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    import weakref
    from collections.abc import Callable, Iterable
    from typing import Any, Literal

    from brainsmith.plugin.records import Health, PerformanceStats, Problem
    from brainsmith.plugin.views import RegistryView
    from brainsmith.plugin.watch import PluginWatcher


class PluginManager:
    """The plugin hub's front door (see ``brainsmith.plugins`` for the everyday API).

    It owns the process's one registry. Discovery fills it; after the TTL the next discovery
    or lookup checks the index's stamps again and applies what changed to the same registry
    (``refresh()`` does so at once, ``watch()`` on every change of a plugin folder).
    """

    def __init__(self, config: PluginConfig | None = None) -> None:
        self._lock = _thread.RLock()
        self._config = config
        self._registry: Registry | None = None
        self._ready = False  # the registry holds a first discovery
        self._next_check = 0.0  # time.monotonic() after which discovery is checked again
        self._views: dict[tuple[object, ...], Registry | RegistryView] = {}
        self._states: dict[
            str, dict[str, Any]
        ] = {}  # the source states the registry was synced with
        self._last: DiscoveryResult | None = None
        self._discovering: int | None = None  # thread id while discovery runs
        self._pending: list[tuple[Any, ...]] = []  # decorated before discovery ran
        self.module_frameworks: dict[str, str] = {}  # module -> framework (loaded plugins)
        self._instances: weakref.WeakValueDictionary[tuple[Any, ...], Any] | None = None
        self._instance_locks: dict[tuple[Any, ...], Any] = {}
        self._stats = {"discoveries": 0, "hits": 0, "lookups": 0, "discovery_ms": 0.0}

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

    # -- discovery -------------------------------------------------------------------------
    def discover_plugins(
        self,
        modes: str | Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        frameworks: Iterable[str] | None = None,
    ) -> Registry | RegistryView:
        """The registry, discovered or checked again if its TTL has passed.

        ``types`` and ``frameworks`` narrow what the returned view shows (``"*"`` stands for
        pip packages); it is a view of the one process registry, never a replacement. Every
        mode (full | blueprint | selective) reads the same index and none imports a plugin
        before it is used, so ``modes`` is deprecated. Repeated calls cost a dictionary
        lookup."""
        registry = self._registry
        checked = not self._ready or time.monotonic() >= self._next_check
        if checked or registry is None:
            registry = self._refresh(force=False)[0]
        if self.config.performance_tracking:
            self._stats["lookups"] += 1
            if not checked or (self._last is not None and self._last.cache == "hit"):
                self._stats["hits"] += 1
        if isinstance(modes, str):
            modes = [modes]
        if modes is not None:
            from brainsmith.plugin.config import deprecated_mode

            _check_modes(modes)
            deprecated_mode("discover_plugins(modes=...)")
        if modes is None and types is None and frameworks is None:
            return registry
        key = (_frozen(modes), _frozen(types), _frozen(frameworks))
        view = self._views.get(key)
        if view is None:
            from brainsmith.plugin.views import make_view

            view = self._views[key] = make_view(registry, types, frameworks)
        return view

    def registry(self) -> Registry:
        """The process registry, discovering with the configured defaults if needed."""
        registry = self._registry
        if self._ready and registry is not None and time.monotonic() < self._next_check:
            return registry
        registry = self._refresh(force=False)[0]
        if self.config.performance_tracking:  # a discovery like discover_plugins' counts
            self._stats["lookups"] += 1
            if self._last is not None and self._last.cache == "hit":
                self._stats["hits"] += 1
        return registry

    def index_fingerprint(self) -> int:
        """Changes whenever a source of the registry's discovery read something else (the
        stamps of every file and folder each source checked)."""
        from brainsmith.plugin.discovery.stamps import digest32

        self.registry()
        stamps = [(source, state.get("stamp")) for source, state in sorted(self._states.items())]
        return digest32(repr(stamps))

    def refresh(self) -> RegistryChanges:
        """Check every source for changes now, as after the TTL, and apply them to the
        registry: new and deleted plugins, and plugin folders' edited modules imported anew
        on their next use. Returns what changed."""
        return self._refresh(force=True)[1]

    def folders_changed(self) -> bool:
        """True when a plugin folder's files or folders differ from those the registry was
        made from (a ``stat`` of each; no file is read)."""
        from brainsmith.plugin.discovery.stamps import unchanged

        states = self._states
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
        from brainsmith.plugin.watch import PluginWatcher

        folders = self.config.plugin_dirs
        if not folders:
            from brainsmith.plugin.errors import PluginError

            raise PluginError(
                "no plugin folders to watch: list them in plugin_system.plugin_dirs of "
                ".brainsmith/config.yaml or in BRAINSMITH_PLUGIN_DIRS"
            )
        self.registry()
        return PluginWatcher(self, folders, on_change, debounce).start()

    def _refresh(self, force: bool) -> tuple[Registry, RegistryChanges]:
        with self._lock:
            if self._discovering == _thread.get_ident():
                # a module imported by discovery asks for the registry: it gets it as it is
                return self._new_registry(), RegistryChanges()
            ready = self._registry if self._ready else None
            if ready is not None and not force and time.monotonic() < self._next_check:
                return ready, RegistryChanges()
            config = self.config
            registry = self._new_registry()
            first = not self._ready
            started = time.monotonic()
            self._discovering = _thread.get_ident()
            try:
                result = discover(config, reload_modules=not first)
            finally:
                self._discovering = None
            if config.plugin_dirs or "brainsmith.plugin.discovery.folders" in sys.modules:
                from brainsmith.plugin.discovery import folders

                folders.configure(config.plugin_dirs)
            fresh = () if first else self._modules_to_reload(result)
            gone: list[PluginSpec] = []
            if not (first or fresh or result.problems) and _same_records(self._states, result):
                changes = RegistryChanges()  # a recheck that found nothing new
            else:
                found = Found(result.states, config)
                found.problems += [PluginProblem(*p) for p in result.problems]  # shared index
                # A first discovery leaves brainsmith's, QONNX's and FINN's records to be
                # checked on use (refresh() reports every plugin it adds: it checks them all).
                changes, gone = registry.sync(found, fresh, lazy=first and not force)
            self._states = {
                k: {f: v for f, v in st.items() if f != "files"} for k, st in result.states.items()
            }
            self._last = result
            if config.performance_tracking:
                self._stats["discoveries"] += 1
                self._stats["discovery_ms"] = result.duration_ms
            pending, self._pending = self._pending, []
            self._ready = True
            # A check that finds nothing never takes more than a tenth of the process's time.
            spent = 0.0 if first or changes or gone else time.monotonic() - started
            self._next_check = time.monotonic() + max(config.cache_ttl, 10 * spent)
        for args in pending:
            self._attach(registry, *args)
        if gone:
            self.drop_instances(gone)
        if (changes or gone) and not first:  # a first discovery has no lookups to forget
            _registry_changed()
            log.info("plugins changed:\n%s", changes)
        if log.debug_enabled:
            log.debug(
                "discovered %d plugins in %.1f ms (index %s)",
                len(registry.specs()),
                result.duration_ms,
                result.cache,
            )
        return registry, changes

    def _new_registry(self) -> Registry:
        """The process's registry, created once (with the configured priority)."""
        if self._registry is None:
            config = self.config
            registry = Registry(config.framework_priority)
            registry.load_timeout = config.load_timeout
            registry.index_dir = config.cache_dir
            registry.disabled = {
                fw: disabled_reason(fw, config)
                for fw in BUILTIN_FRAMEWORKS
                if not config.framework_enabled(fw)
            }
            self._registry = registry
        return self._registry

    def _modules_to_reload(self, result: DiscoveryResult) -> tuple[str, ...]:
        """Modules this process imported whose code has changed since: forgotten, so that
        their plugins import the new code on next use (user folders and pip packages)."""
        from brainsmith.plugin.discovery import folders
        from brainsmith.plugin.discovery.sources.entry_points import forget_modules

        fresh: list[str] = []
        for source_id, state in result.states.items():
            old = self._states.get(source_id)
            if old is None:
                continue
            if source_id.startswith("user:") and _code(old) != _code(state):
                folders.forget(source_id[5:])
                fresh.append(folders.package_name(source_id[5:]))
            elif source_id == "entry_points":
                before, now = old.get("packages", {}), state.get("packages", {})
                changed = [p for p in before if before[p] != now.get(p)]
                changed += [p for p in now if p not in before]
                forget_modules([p for p in changed if p not in result.imported])
                fresh.extend(changed)
        return tuple(fresh)

    # -- decorators report here ------------------------------------------------------------
    def on_decorated(
        self, plugin_type: str, obj: object, metadata: dict[str, Any], where: str
    ) -> None:
        if self._discovering == _thread.get_ident():
            return  # an entry-point module being scanned; the source records it
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._pending.append((plugin_type, obj, metadata, where))
                    return
        self._attach(self.registry(), plugin_type, obj, metadata, where)

    def _attach(
        self,
        registry: Registry,
        plugin_type: str,
        obj: object,
        metadata: dict[str, Any],
        where: str,
    ) -> None:
        module = getattr(obj, "__module__", "") or ""
        target = f"{module}:{getattr(obj, '__qualname__', '')}"
        known = [s for s in registry.by_target(target) if s.type == plugin_type]
        from brainsmith.plugin.versions import incompatibility

        reason = incompatibility(metadata)
        error = f"unavailable: {reason}" if reason else None
        if known:
            # Instances of an object this replaces (a reload) go; on a first import there are
            # none, and dropping then would discard one another thread just made from ``obj``.
            replaced = [s for s in known if s.obj is not None and s.obj is not obj]
            for spec in known:
                if spec.record is not None and spec.obj is None:
                    continue  # discovered: its record is checked against obj on first load
                kept: dict[str, Any] = {
                    k: spec.metadata[k] for k in ("line", "plugin_dir") if k in spec.metadata
                }
                spec.metadata = {**{k: v for k, v in metadata.items() if k != "name"}, **kept}
                spec.obj = obj
                spec.error = error
            if replaced:
                self.drop_instances(replaced)
            return
        meta = {k: v for k, v in metadata.items() if k != "name"}
        path, _, line = where.rpartition(":")
        meta["line"] = int(line) if line.isdigit() else 0
        spec = PluginSpec(
            plugin_type, metadata["name"], self._framework_of(module), target, meta, path
        )
        spec.obj = obj
        spec.error = error
        existing = registry.add(spec)
        if existing is not spec:
            log.debug("%s already registered as %s", target, existing.qualified_name)

    def _framework_of(self, module: str) -> str:
        owner = self.module_frameworks.get(module.partition(".")[0])
        if owner:
            return owner
        if module == "brainsmith" or module.startswith("brainsmith."):
            return "brainsmith"
        for dist, _version, _name, value in self._states.get("entry_points", {}).get("listing", []):
            ep_module = value.partition(":")[0].strip()
            if module == ep_module or module.startswith(ep_module + "."):
                from brainsmith.plugin.names import normalise

                return normalise(dist)
        return "user"

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
        key = (plugin_type, spec.qualified_name, _freeze(kwargs))
        with self._lock:
            if self._instances is None:
                import weakref

                self._instances = weakref.WeakValueDictionary()
            instance = self._instances.get(key)
            if instance is not None:
                return instance
            key_lock = self._instance_locks.setdefault(key, _thread.allocate_lock())
        with key_lock:
            instance = self._instances.get(key)
            if instance is None:
                instance = obj(**kwargs)
                self._instances[key] = instance
            return instance

    def drop_instances(self, specs: list[PluginSpec] | None = None) -> None:
        with self._lock:
            if self._instances is None:
                return
            if specs is None:
                self._instances.clear()
                return
            names = {(s.type, s.qualified_name) for s in specs}
            for key in [k for k in list(self._instances.keys()) if (k[0], k[1]) in names]:
                self._instances.pop(key, None)

    # -- maintenance, stats, health --------------------------------------------------------
    def clear_cache(self) -> int:
        """Delete the persisted index (and the parsed form of config.yaml); the next discovery
        or lookup scans again, into the same registry: loaded plugins of unchanged files stay
        loaded. Returns files removed; CacheDirectoryError when the cache directory is not the
        user's own."""
        from brainsmith.plugin import memo
        from brainsmith.plugin.config import memo_folder

        with self._lock:
            self._next_check = 0.0
        removed = 0
        if self.config.project_file:  # the parsed form of config.yaml, kept beside it
            folder = memo_folder(self.config.project_file)
            if memo.dir_problem(folder) is None:
                removed += memo.remove_if_ours(memo.path_for("config", folder))
        return removed + memo.remove_all(self.config.cache_dir)

    def get_performance_stats(self) -> PerformanceStats:
        """Plugin counts, plus (with ``performance_tracking``) discovery statistics."""
        registry = self.registry()
        specs = registry.specs()
        counts: PerformanceStats = {
            "performance_tracking": False,
            "plugin_count": len(specs),
            "plugins_by_type": _count_by(specs, "type"),
            "plugins_by_framework": _count_by(specs, "framework"),
            "loaded_plugins": sum(1 for s in specs if s.loaded),
            "instances_cached": len(self._instances) if self._instances is not None else 0,
        }
        if not self.config.performance_tracking:
            return counts
        last = self._last
        lookups = self._stats["lookups"] or 1
        return {
            **counts,
            "performance_tracking": True,
            "discovery_time_ms": round(self._stats["discovery_ms"], 3),
            "cache_hit_rate": self._stats["hits"] / lookups,
            "index_cache": last.cache if last else "none",
            "index_from_shared_cache": bool(last and last.shared),
            "memory_usage_mb": round(_rss_mb(), 1),
            "source_timings_ms": {
                k: round(v, 3) for k, v in (last.source_ms if last else {}).items()
            },
            "discoveries": int(self._stats["discoveries"]),
            "files_parsed": _files_parsed(),
        }

    def health_check(self) -> Health:
        from brainsmith.plugin import memo

        try:
            registry = self.registry()
        except Exception as exc:  # the hub itself cannot start
            return {
                "status": "unhealthy",
                "cache_available": False,
                "frameworks_available": 0,
                "frameworks": {},
                "broken_plugins": [],
                "error": f"{type(exc).__name__}: {exc}",
            }
        frameworks = {
            fw: any(s.framework == fw for s in registry.specs())
            for fw in ("brainsmith", "qonnx", "finn")
        }
        for fw in registry.frameworks():
            frameworks.setdefault(fw, True)
        broken: list[Problem] = [p.as_dict() for p in registry.problems]
        broken += [
            {"source": s.framework, "plugin": f"{s.type} {s.qualified_name}", "reason": s.error}
            for s in registry.specs()
            if s.error
        ]
        cache_ok = memo.usable_dir(self.config.cache_dir, create=True)
        status: Literal["healthy", "degraded", "unhealthy"]
        if not any(frameworks.values()):
            status = "unhealthy"
        elif broken:
            status = "degraded"
        else:
            status = "healthy"
        hints = {
            fw: registry.disabled.get(fw) or _missing_hint(fw)
            for fw, ok in frameworks.items()
            if not ok
        }
        return {
            "status": status,
            "cache_available": cache_ok,
            "cache_dir": self.config.cache_dir,
            "frameworks_available": sum(frameworks.values()),
            "frameworks": frameworks,
            "missing_frameworks": hints,
            "disabled_frameworks": sorted(registry.disabled),
            "plugin_count": len(registry.specs()),
            "broken_plugins": broken,
            "shadowed_plugins": [shadowed_reason(h, w) for h, w in registry.shadowed()],
        }


def _same_records(states: dict[str, dict[str, Any]], result: DiscoveryResult) -> bool:
    """Whether ``result`` holds the same sources, records and problems as ``states``."""
    fields = ("specs", "problems")
    return states.keys() == result.states.keys() and all(
        [state.get(f) for f in fields] == [result.states[k].get(f) for f in fields]
        for k, state in states.items()
    )


def _code(state: dict[str, Any]) -> list[Any]:
    """The stamps of a folder source's Python files (its folders change with bytecode caches)."""
    return [entry for entry in state.get("stamp", ()) if str(entry[0]).endswith(".py")]


def disabled_reason(framework: str, config: PluginConfig) -> str:
    """Why a built-in framework's plugins are not registered although it may be installed."""
    where = f" in {config.project_file}" if config.project_file else ""
    listed = ", ".join(config.frameworks or ()) or "nothing"
    return (
        f"framework '{framework}' is disabled by configuration (plugin_system.frameworks"
        f"{where} lists {listed}); add '{framework}' there to use it"
    )


def _check_modes(modes: Iterable[str] | None) -> None:
    for mode in modes or ():
        if mode not in DISCOVERY_MODES:
            raise ConfigError(
                f"unknown discovery mode {mode!r}; expected one of {', '.join(DISCOVERY_MODES)}",
                key="discovery_mode",
            )


def _frozen(value: str | Iterable[str] | None) -> object:

    if value is None or isinstance(value, str):
        return value
    return tuple(value)


def _missing_hint(framework: str) -> str:
    from brainsmith.plugin.adapters import install_hint

    return install_hint(framework) or f"no plugins from {framework} are registered"


def _files_parsed() -> int:
    scanner = sys.modules.get("brainsmith.plugin.discovery.sources.package_scan")
    return scanner.parsed_files if scanner else 0


def _freeze(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    items = []
    for key, value in sorted(kwargs.items()):
        try:
            hash(value)
            items.append((key, value))
        except TypeError:
            items.append((key, repr(value)))
    return tuple(items)


def _count_by(specs: list[PluginSpec], attribute: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for spec in specs:
        value = getattr(spec, attribute)
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def register_decorated(plugin_type: str, obj: object, metadata: dict[str, Any], where: str) -> None:
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
    current = _manager._registry if _manager is not None else None
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
        pending = old._pending
        old.drop_instances()
        if pending:
            get_plugin_manager()._pending.extend(pending)
    _registry_changed()


__all__ = ["PluginManager", "get_plugin_manager", "reset_plugin_system"]
