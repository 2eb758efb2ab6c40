"""PluginManager: owns the configuration, the registry, discovery, the instance cache,
statistics and health. One per process: ``get_plugin_manager()``."""

from __future__ import annotations

import _thread
import os

from brainsmith.plugin import log
from brainsmith.plugin.config import PluginConfig, load_config
from brainsmith.plugin.discovery import DiscoveryKey, DiscoveryResult, discover
from brainsmith.plugin.registry import Registry
from brainsmith.plugin.spec import PluginSpec


class PluginManager:
    """The plugin hub's front door (see ``brainsmith.plugins`` for the everyday API)."""

    def __init__(self, config: PluginConfig | None = None) -> None:
        self._lock = _thread.RLock()
        self._config = config
        self._registry: Registry | None = None
        self._key: tuple | None = None
        self._last: DiscoveryResult | None = None
        self._discovering: int | None = None  # thread id while discovery runs
        self._pending: list[tuple] = []  # decorated before discovery ran
        self._runtime: list[PluginSpec] = []  # added after discovery; kept across rediscovery
        self.module_frameworks: dict[str, str] = {}  # module -> framework (loaded plugins)
        self._instances = None  # weakref.WeakValueDictionary, created on first use
        self._instance_locks: dict = {}
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
    def discover_plugins(self, modes=None, types=None, frameworks=None) -> Registry:
        """Discover plugins (modes: full | blueprint | selective; ``types``/``frameworks``
        narrow the search). Repeated calls with the same arguments are free."""
        if modes is not None and isinstance(modes, str):
            modes = [modes]
        wanted = (modes, types, frameworks)
        registry = self._registry
        if registry is not None and self._key == wanted:
            self._stats["hits"] += 1
            self._stats["lookups"] += 1
            return registry
        with self._lock:
            if self._registry is not None and self._key == wanted:
                return self._registry
            config = self.config
            key = DiscoveryKey(modes or [config.discovery_mode], types, frameworks)
            registry = Registry(config.framework_priority)
            self._discovering = _thread.get_ident()
            try:
                result = discover(config, key, registry)
            finally:
                self._discovering = None
            self._stats["discoveries"] += 1
            self._stats["lookups"] += 1
            self._stats["discovery_ms"] = result.duration_ms
            if result.cache == "hit":
                self._stats["hits"] += 1
            self._last = result
            self._registry, self._key = registry, wanted
            pending, self._pending = self._pending, []
            runtime = list(self._runtime)
        for spec in runtime:
            registry.add(spec)
        for args in pending:
            self._attach(registry, *args)
        log.debug(
            "discovered %d plugins in %.1f ms (index %s)",
            len(registry.specs()),
            result.duration_ms,
            result.cache,
        )
        return registry

    def registry(self) -> Registry:
        """The current registry, discovering with the configured defaults if needed."""
        registry = self._registry
        if registry is not None:
            return registry
        return self.discover_plugins()

    # -- decorators report here ------------------------------------------------------------
    def on_decorated(self, plugin_type: str, obj: object, metadata: dict, where: str) -> None:
        if self._discovering == _thread.get_ident():
            return  # an entry-point module being scanned; the source records it
        registry = self._registry
        if registry is None:
            with self._lock:
                if self._registry is None:
                    self._pending.append((plugin_type, obj, metadata, where))
                    return
                registry = self._registry
        self._attach(registry, plugin_type, obj, metadata, where)

    def _attach(
        self, registry: Registry, plugin_type: str, obj: object, metadata: dict, where: str
    ) -> None:
        module = getattr(obj, "__module__", "") or ""
        target = f"{module}:{getattr(obj, '__qualname__', '')}"
        known = [s for s in registry.by_target(target) if s.type == plugin_type]
        from brainsmith.plugin.versions import incompatibility

        reason = incompatibility(metadata)
        error = f"unavailable: {reason}" if reason else None
        if known:
            for spec in known:
                kept = {k: spec.metadata[k] for k in ("line", "path_entry") if k in spec.metadata}
                spec.metadata = {**{k: v for k, v in metadata.items() if k != "name"}, **kept}
                spec.obj = obj
                spec.error = error
            self.drop_instances(known)
            return
        meta = {k: v for k, v in metadata.items() if k != "name"}
        path, _, line = where.rpartition(":")
        meta["line"] = int(line) if line.isdigit() else 0
        spec = PluginSpec(
            plugin_type, metadata["name"], self._framework_of(module), target, meta, path
        )
        spec.obj = obj
        spec.error = error
        kept = registry.add(spec)
        if kept is not spec:
            log.debug("%s already registered as %s", target, kept.qualified_name)
        else:
            with self._lock:
                self._runtime.append(spec)

    def _framework_of(self, module: str) -> str:
        owner = self.module_frameworks.get(module.partition(".")[0])
        if owner:
            return owner
        if module == "brainsmith" or module.startswith("brainsmith."):
            return "brainsmith"
        states = self._last.states if self._last else {}
        for dist, _version, _name, value in states.get("entry_points", {}).get("listing", []):
            ep_module = value.partition(":")[0].strip()
            if module == ep_module or module.startswith(ep_module + "."):
                from brainsmith.plugin.sources.entry_points import normalise

                return normalise(dist)
        return "user"

    # -- plugins added at runtime (plugin packages, loaded paths, custom kernels) ----------
    def add_runtime(self, specs: list[PluginSpec]) -> None:
        """Add specs whose objects are already in memory; they survive rediscovery."""
        registry = self.registry()
        with self._lock:
            self._runtime.extend(s for s in specs if s not in self._runtime)
        for spec in specs:
            registry.add(spec)

    def remove_runtime(self, specs: list[PluginSpec]) -> None:
        """Remove specs from the registry, the instance cache and ``tfm.X`` lookups."""
        registry = self.registry()
        with self._lock:
            self._runtime = [s for s in self._runtime if s not in specs]
        for spec in specs:
            registry.remove(spec)
        self.drop_instances(specs)
        from brainsmith.plugin.collections import forget_cached_lookups

        forget_cached_lookups()

    # -- objects and instances -------------------------------------------------------------
    def get(self, plugin_type: str, name: str) -> object:
        return self.registry().get(plugin_type, name)

    def get_instance(self, plugin_type: str, name: str, **kwargs) -> object:
        """A shared instance of a plugin class (weakly cached: freed when unused).

        Steps are functions and are returned as they are."""
        registry = self.registry()
        spec = registry.find(plugin_type, name)
        obj = registry.load(spec)  # imports happen here, with no lock held
        if plugin_type == "step":
            return obj
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
        """Forget discovery results in memory and on disk; returns files removed.

        Raises CacheDirectoryError when the cache directory is not the user's own."""
        from brainsmith.plugin import memo
        from brainsmith.plugin.config import memo_folder

        with self._lock:
            self._registry = None
            self._key = None
            self.drop_instances()
        removed = 0
        if self.config.project_file:  # the parsed form of config.yaml, kept beside it
            folder = memo_folder(self.config.project_file)
            if memo.dir_problem(folder) is None:
                removed += memo.remove_if_ours(memo.path_for("config", folder))
        return removed + memo.remove_all(self.config.cache_dir)

    def get_performance_stats(self) -> dict:
        registry = self.registry()
        last = self._last
        lookups = self._stats["lookups"] or 1
        return {
            "discovery_time_ms": round(self._stats["discovery_ms"], 3),
            "cache_hit_rate": self._stats["hits"] / lookups,
            "index_cache": last.cache if last else "none",
            "memory_usage_mb": round(_rss_mb(), 1),
            "plugin_count": len(registry.specs()),
            "plugins_by_type": _count_by(registry.specs(), "type"),
            "plugins_by_framework": _count_by(registry.specs(), "framework"),
            "loaded_plugins": sum(1 for s in registry.specs() if s.loaded),
            "source_timings_ms": {
                k: round(v, 3) for k, v in (last.source_ms if last else {}).items()
            },
            "discoveries": self._stats["discoveries"],
            "files_parsed": _files_parsed(),
            "instances_cached": len(self._instances) if self._instances is not None else 0,
        }

    def health_check(self) -> dict:
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
        broken = [p.as_dict() for p in registry.problems]
        broken += [
            {"source": s.framework, "plugin": f"{s.type} {s.qualified_name}", "reason": s.error}
            for s in registry.specs()
            if s.error
        ]
        cache_ok = memo.usable_dir(self.config.cache_dir, create=True)
        if not any(frameworks.values()):
            status = "unhealthy"
        elif broken:
            status = "degraded"
        else:
            status = "healthy"
        hints = {fw: _missing_hint(fw) for fw, ok in frameworks.items() if not ok}
        return {
            "status": status,
            "cache_available": cache_ok,
            "cache_dir": self.config.cache_dir,
            "frameworks_available": sum(frameworks.values()),
            "frameworks": frameworks,
            "missing_frameworks": hints,
            "plugin_count": len(registry.specs()),
            "broken_plugins": broken,
        }


def _missing_hint(framework: str) -> str:
    from brainsmith.plugin.loading import INSTALL_HINTS

    return INSTALL_HINTS.get(framework, f"no plugins from {framework} are registered")


def _files_parsed() -> int:
    import sys

    scanner = sys.modules.get("brainsmith.plugin.sources.package_scan")
    return scanner.parsed_files if scanner else 0


def _freeze(kwargs: dict) -> tuple:
    items = []
    for key, value in sorted(kwargs.items()):
        try:
            hash(value)
            items.append((key, value))
        except TypeError:
            items.append((key, repr(value)))
    return tuple(items)


def _count_by(specs: list[PluginSpec], attribute: str) -> dict:
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


def register_decorated(plugin_type: str, obj: object, metadata: dict, where: str) -> None:
    get_plugin_manager().on_decorated(plugin_type, obj, metadata, where)


RESET_HOOKS: list = []  # callables run by reset_plugin_system (runtime plugin tables)


def reset_plugin_system() -> None:
    """Start afresh: new configuration, registry and instance cache (the disk index stays)."""
    global _manager
    for hook in list(RESET_HOOKS):
        hook()
    with _manager_lock:
        old = _manager
        _manager = None
    if old is not None:
        pending = old._pending
        old.drop_instances()
        if pending:
            get_plugin_manager()._pending.extend(pending)
    from brainsmith.plugin.collections import forget_cached_lookups

    forget_cached_lookups()


__all__ = ["PluginManager", "get_plugin_manager", "reset_plugin_system"]
