"""The unified registry: every plugin spec, by type and name, with framework-priority resolution."""

from __future__ import annotations

import _thread

from brainsmith.plugin import log
from brainsmith.plugin.errors import PluginLoadError, PluginNotFoundError
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginSpec


class PluginProblem:
    """Something wrong with one plugin or source, kept for ``health_check()``."""

    __slots__ = ("plugin", "reason", "source")

    def __init__(self, source: str, plugin: str, reason: str) -> None:
        self.source = source
        self.plugin = plugin
        self.reason = reason

    def as_dict(self) -> dict:
        return {"source": self.source, "plugin": self.plugin, "reason": self.reason}

    def to_record(self) -> list:
        return [self.source, self.plugin, self.reason]

    def __repr__(self) -> str:
        return f"<PluginProblem {self.plugin}: {self.reason}>"


class Registry:
    """All known plugins. Qualified names never collide; short names resolve by priority."""

    def __init__(self, priority: tuple[str, ...] = ("brainsmith", "user", "*", "finn", "qonnx")):
        self._lock = _thread.RLock()
        self._specs: dict[tuple[str, str, str], PluginSpec] = {}
        self._by_name: dict[tuple[str, str], list[PluginSpec]] = {}
        self._by_target: dict[str, list[PluginSpec]] = {}
        self.problems: list[PluginProblem] = []
        self.load_timeout = 0.0  # seconds an import may take (0: no limit); set from config
        self.set_priority(priority)

    # -- filling ---------------------------------------------------------------------------
    def set_priority(self, priority: tuple[str, ...]) -> None:
        order = list(priority)
        if "*" not in order:
            order.append("*")
        self._priority = {framework: rank for rank, framework in enumerate(order)}
        with self._lock:
            for candidates in self._by_name.values():
                candidates.sort(key=self._rank)

    def _rank(self, spec: PluginSpec) -> int:
        return self._priority.get(spec.framework, self._priority["*"])

    def add(self, spec: PluginSpec) -> PluginSpec:
        """Add ``spec``; an existing entry with the same qualified name wins (logged, reported)."""
        key = (spec.type, spec.framework, spec.name)
        with self._lock:
            existing = self._specs.get(key)
            if existing is not None:
                if existing.target != spec.target:
                    reason = (
                        f"{spec.type} {spec.qualified_name} is defined twice: {existing.target} "
                        f"({existing.source}) and {spec.target} ({spec.source}); keeping the first. "
                        "Rename one with the decorator's name= argument."
                    )
                    if not any(p.reason == reason for p in self.problems):  # once per clash
                        log.warning(reason)
                        self.problems.append(
                            PluginProblem(spec.framework, spec.qualified_name, reason)
                        )
                return existing
            self._specs[key] = spec
            candidates = self._by_name.setdefault((spec.type, spec.name), [])
            candidates.append(spec)
            candidates.sort(key=self._rank)
            if len(candidates) > 1:
                log.debug(
                    "%s %s is provided by %s; the short name resolves to %s",
                    spec.type,
                    spec.name,
                    ", ".join(c.framework for c in candidates),
                    candidates[0].qualified_name,
                )
            self._by_target.setdefault(spec.target, []).append(spec)
            return spec

    def remove(self, spec: PluginSpec) -> None:
        with self._lock:
            if self._specs.get((spec.type, spec.framework, spec.name)) is not spec:
                return
            del self._specs[(spec.type, spec.framework, spec.name)]
            self._by_name[(spec.type, spec.name)].remove(spec)
            if not self._by_name[(spec.type, spec.name)]:
                del self._by_name[(spec.type, spec.name)]
            self._by_target[spec.target].remove(spec)
            if not self._by_target[spec.target]:
                del self._by_target[spec.target]

    def report(self, source: str, plugin: str, reason: str) -> None:
        with self._lock:
            self.problems.append(PluginProblem(source, plugin, reason))

    # -- queries ---------------------------------------------------------------------------
    def specs(self, type: str | None = None, framework: str | None = None) -> list[PluginSpec]:
        with self._lock:
            found = list(self._specs.values())
        return [
            s
            for s in found
            if (type is None or s.type == type) and (framework is None or s.framework == framework)
        ]

    def by_target(self, target: str) -> list[PluginSpec]:
        with self._lock:
            return list(self._by_target.get(target, ()))

    def candidates(self, type: str, name: str) -> list[PluginSpec]:
        """Every framework's plugin with this short name, best first."""
        with self._lock:
            return list(self._by_name.get((type, name), ()))

    def frameworks(self) -> list[str]:
        with self._lock:
            return sorted({s.framework for s in self._specs.values()}, key=self._framework_rank)

    def _framework_rank(self, framework: str) -> tuple[int, str]:
        return (self._priority.get(framework, self._priority["*"]), framework)

    def find(self, type: str, name: str, framework: str | None = None) -> PluginSpec:
        """The spec for ``name`` (short or ``framework:name``); PluginNotFoundError otherwise."""
        check_type(type)
        if framework is None and ":" in name:
            framework, _, name = name.partition(":")
        with self._lock:
            if framework is not None:
                spec = self._specs.get((type, framework, name))
            else:
                found = self._by_name.get((type, name))
                spec = found[0] if found else None
        if spec is None:
            raise PluginNotFoundError(self.not_found_message(type, name, framework), type, name)
        return spec

    def find_case_insensitive(self, type: str, name: str) -> list[PluginSpec]:
        """Specs whose short or qualified name equals ``name`` ignoring case, best first."""
        wanted = name.lower()
        framework = None
        if ":" in wanted:
            framework, _, wanted = wanted.partition(":")
        with self._lock:
            hits = [
                s
                for s in self._specs.values()
                if s.type == type
                and s.name.lower() == wanted
                and (framework is None or s.framework.lower() == framework)
            ]
        return sorted(hits, key=self._rank)

    def not_found_message(self, type: str, name: str, framework: str | None = None) -> str:
        where = f" in framework '{framework}'" if framework else ""
        pool = [s.name for s in self.specs(type, framework)]
        hint = suggest(name, pool)
        listing = f"brainsmith plugins list --type {type}" + (
            f" --framework {framework}" if framework else ""
        )
        if framework is not None and not self.specs(framework=framework):
            known = ", ".join(self.frameworks()) or "none"
            return (
                f"no {type} named '{name}'{where}: no plugins from framework '{framework}' "
                f"are registered (known frameworks: {known})"
            )
        return f"no {type} named '{name}'{where}{hint} ({listing})"

    # -- loading ---------------------------------------------------------------------------
    def get(self, type: str, name: str, framework: str | None = None) -> object:
        """The plugin object (class or function), imported on first use."""
        return self.load(self.find(type, name, framework))

    def load(self, spec: PluginSpec) -> object:
        """Import the object behind ``spec`` (no registry lock is held while importing)."""
        if spec.error and spec.error.startswith("unavailable:"):
            raise PluginLoadError(f"{spec.type} {spec.qualified_name} is {spec.error}", spec)
        obj = spec.obj
        if obj is not None:
            return obj
        log.debug("loading %s %s from %s", spec.type, spec.qualified_name, spec.target)
        from brainsmith.plugin.loading import import_target

        try:
            obj = import_target(spec, self.load_timeout)
        except PluginLoadError as exc:
            spec.error = str(exc)
            self._forget_failed_module(spec.module)
            raise
        spec.obj = obj
        spec.error = None
        return obj

    def _forget_failed_module(self, module: str) -> None:
        """Decorators hand their objects over while a module imports; if the import then
        failed, those objects belong to a module Python discarded and must not be served."""
        import sys

        if module in sys.modules:
            return
        with self._lock:
            stale = [s for s in self._specs.values() if s.module == module and s.obj is not None]
        for spec in stale:
            spec.obj = None


def check_type(type: str) -> None:
    if type not in PLUGIN_TYPES:
        raise ValueError(f"unknown plugin type {type!r}; expected one of {', '.join(PLUGIN_TYPES)}")


def suggest(name: str, pool: list[str]) -> str:
    """ "; did you mean 'X'?" for the closest names in ``pool`` (empty when none is close)."""
    if not pool:
        return ""
    lowered = {p.lower(): p for p in pool}
    if name.lower() in lowered:
        return f"; did you mean '{lowered[name.lower()]}'?"
    import difflib

    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    if not close:
        close = [lowered[m] for m in difflib.get_close_matches(name.lower(), list(lowered), n=3)]
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
