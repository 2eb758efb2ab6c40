"""The registry kept in step with discovery: the first discovery, a recheck after the TTL, a
forced refresh, and decorated objects that arrive before or between them.

One ``Refresher`` per manager; it owns the process registry and what the last discovery saw
(each source's state), and calls back the manager for what follows a change (instances to
drop, cached lookups to forget)."""

from __future__ import annotations

import _thread
import sys
import time

from brainsmith.plugin import log
from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS
from brainsmith.plugin.registry import Registry, RegistryChanges
from brainsmith.plugin.spec import PluginProblem, PluginSpec

TYPE_CHECKING = False  # (``typing`` stays out of the everyday import)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from brainsmith.plugin.discovery.index import DiscoveryResult
    from brainsmith.plugin.settings.config import PluginConfig

    Decorated = tuple[str, object, dict[str, Any], str]  # type, object, metadata, "file:line"


class DiscoveryStats:
    """Lookups, cache hits and discoveries of one process (with ``performance_tracking``)."""

    def __init__(self) -> None:
        self.discoveries = 0
        self.discovery_ms = 0.0
        self.lookups = 0
        self.hits = 0

    def lookup(self, hit: bool) -> None:
        self.lookups += 1
        self.hits += hit

    def discovered(self, result: DiscoveryResult) -> None:
        self.discoveries += 1
        self.discovery_ms = result.duration_ms


class Refresher:
    """Owns the process registry: ``current()`` returns it, discovering first or again once
    the TTL has passed; ``refresh()`` checks every source now."""

    def __init__(
        self,
        config: Callable[[], PluginConfig],
        drop_instances: Callable[[list[PluginSpec]], None],
        changed: Callable[[], None],
    ) -> None:
        self.lock = _thread.RLock()
        self._config = config
        self._drop_instances = drop_instances
        self._changed = changed
        self.registry: Registry | None = None
        self.ready = False  # the registry holds a first discovery
        self.next_check = 0.0  # time.monotonic() after which discovery is checked again
        self.states: dict[str, dict[str, Any]] = {}  # the source states the registry follows
        self.last: DiscoveryResult | None = None
        self.discovering: int | None = None  # thread id while discovery runs
        self.pending: list[Decorated] = []  # decorated before discovery ran
        self.module_frameworks: dict[str, str] = {}  # module -> framework (loaded by path)
        self.stats = DiscoveryStats()

    def due(self) -> bool:
        """Whether the next lookup discovers (first) or checks the sources again (TTL)."""
        return not self.ready or time.monotonic() >= self.next_check

    def current(self) -> Registry:
        """The registry, discovered or rechecked if due."""
        registry = self.registry
        if registry is not None and not self.due():
            return registry
        return self.refresh(force=False)[0]

    def refresh(self, force: bool) -> tuple[Registry, RegistryChanges]:
        """Discover (again, when ``force`` or due) and apply what changed to the registry."""
        with self.lock:
            if self.discovering == _thread.get_ident():
                # a module imported by discovery asks for the registry: it gets it as it is
                return self.new_registry(), RegistryChanges()
            if self.ready and self.registry is not None and not force and not self.due():
                return self.registry, RegistryChanges()
            registry = self.new_registry()
            first = not self.ready
            started = time.monotonic()
            result = self._discover(first)
            changes, gone = self._sync(registry, result, first, force)
            pending, self.pending = self.pending, []
            self.ready = True
            # A check that finds nothing never takes more than a tenth of the process's time.
            spent = 0.0 if first or changes or gone else time.monotonic() - started
            self.next_check = time.monotonic() + max(self._config().cache_ttl, 10 * spent)
        self._after(registry, result, pending, changes, gone, first)
        return registry, changes

    def _discover(self, first: bool) -> DiscoveryResult:
        from brainsmith.plugin.discovery.index import discover  # not on the everyday import

        config = self._config()
        self.discovering = _thread.get_ident()
        try:
            result = discover(config, reload_modules=not first)
        finally:
            self.discovering = None
        if config.plugin_dirs or "brainsmith.plugin.discovery.folders" in sys.modules:
            from brainsmith.plugin.discovery import folders

            folders.configure(config.plugin_dirs)
        return result

    def _sync(
        self, registry: Registry, result: DiscoveryResult, first: bool, force: bool
    ) -> tuple[RegistryChanges, list[PluginSpec]]:
        """Apply ``result`` to ``registry``; remember the sources' states."""
        fresh = () if first else self._modules_to_reload(result)
        gone: list[PluginSpec] = []
        if not (first or fresh or result.problems) and _same_records(self.states, result):
            changes = RegistryChanges()  # a recheck that found nothing new
        else:
            from brainsmith.plugin.discovery.index import Found

            found = Found(result.states, self._config())
            found.problems += [PluginProblem(*p) for p in result.problems]  # shared index
            # A first discovery leaves brainsmith's, QONNX's and FINN's records to be
            # checked on use (refresh() reports every plugin it adds: it checks them all).
            changes, gone = registry.sync(found, fresh, lazy=first and not force)
        self.states = {
            k: {f: v for f, v in st.items() if f != "files"} for k, st in result.states.items()
        }
        self.last = result
        if self._config().performance_tracking:
            self.stats.discovered(result)
        return changes, gone

    def _after(
        self,
        registry: Registry,
        result: DiscoveryResult,
        pending: list[Decorated],
        changes: RegistryChanges,
        gone: list[PluginSpec],
        first: bool,
    ) -> None:
        """What follows a discovery, outside the lock: objects decorated meanwhile, instances
        and lookups of plugins that changed."""
        for args in pending:
            self.attach(registry, *args)
        if gone:
            self._drop_instances(gone)
        if (changes or gone) and not first:  # a first discovery has no lookups to forget
            self._changed()
            log.info("plugins changed:\n%s", changes)
        if log.debug_enabled:
            log.debug(
                "discovered %d plugins in %.1f ms (index %s)",
                len(registry.specs()),
                result.duration_ms,
                result.cache,
            )

    def new_registry(self) -> Registry:
        """The process's registry, created once (with the configured priority)."""
        if self.registry is None:
            config = self._config()
            registry = Registry(config.framework_priority)
            registry.load_timeout = config.load_timeout
            registry.index_dir = config.cache_dir
            registry.disabled = {
                fw: disabled_reason(fw, config)
                for fw in BUILTIN_FRAMEWORKS
                if not config.framework_enabled(fw)
            }
            self.registry = registry
        return self.registry

    def _modules_to_reload(self, result: DiscoveryResult) -> tuple[str, ...]:
        """Modules this process imported whose code has changed since: forgotten, so that
        their plugins import the new code on next use (user folders and pip packages)."""
        from brainsmith.plugin.discovery import folders
        from brainsmith.plugin.discovery.sources.entry_points import forget_modules

        fresh: list[str] = []
        for source_id, state in result.states.items():
            old = self.states.get(source_id)
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

    # -- decorated objects ---------------------------------------------------------------
    def decorated(
        self, plugin_type: str, obj: object, metadata: dict[str, Any], where: str
    ) -> None:
        """A decorator ran: register ``obj`` (after the first discovery, if it has not run)."""
        if self.discovering == _thread.get_ident():
            return  # an entry-point module being scanned; the source records it
        if not self.ready:
            with self.lock:
                if not self.ready:
                    self.pending.append((plugin_type, obj, metadata, where))
                    return
        self.attach(self.current(), plugin_type, obj, metadata, where)

    def attach(
        self,
        registry: Registry,
        plugin_type: str,
        obj: object,
        metadata: dict[str, Any],
        where: str,
    ) -> None:
        """Give ``obj`` to the spec discovery found for it, or register it as a new spec."""
        module = getattr(obj, "__module__", "") or ""
        target = f"{module}:{getattr(obj, '__qualname__', '')}"
        known = [s for s in registry.by_target(target) if s.type == plugin_type]
        from brainsmith.plugin.lifecycle.versions import incompatibility

        reason = incompatibility(metadata)
        error = f"unavailable: {reason}" if reason else None
        if known:
            self._update(known, obj, metadata, error)
            return
        meta = {k: v for k, v in metadata.items() if k != "name"}
        path, _, line = where.rpartition(":")
        meta["line"] = int(line) if line.isdigit() else 0
        spec = PluginSpec(
            plugin_type, metadata["name"], self.framework_of(module), target, meta, path
        )
        spec.obj = obj
        spec.error = error
        existing = registry.add(spec)
        if existing is not spec:
            log.debug("%s already registered as %s", target, existing.qualified_name)

    def _update(
        self, known: list[PluginSpec], obj: object, metadata: dict[str, Any], error: str | None
    ) -> None:
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
            self._drop_instances(replaced)

    def framework_of(self, module: str) -> str:
        """The framework a module's plugins belong to: brainsmith, a pip package, or user."""
        owner = self.module_frameworks.get(module.partition(".")[0])
        if owner:
            return owner
        if module == "brainsmith" or module.startswith("brainsmith."):
            return "brainsmith"
        for dist, _version, _name, value in self.states.get("entry_points", {}).get("listing", []):
            ep_module = value.partition(":")[0].strip()
            if module == ep_module or module.startswith(ep_module + "."):
                from brainsmith.plugin.names import normalise

                return normalise(dist)
        return "user"


def _same_records(states: dict[str, dict[str, Any]], result: DiscoveryResult) -> bool:
    """Whether ``result`` holds the same sources, records and problems as ``states``."""
    fields = ("specs", "problems")
    return states.keys() == result.states.keys() and all(
        [state.get(f) for f in fields] == [result.states[k].get(f) for f in fields]
        for k, state in states.items()
    )


def _code(state: Mapping[str, Any]) -> list[Any]:
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
