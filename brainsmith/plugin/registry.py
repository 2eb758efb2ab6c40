"""The unified registry: every plugin spec, by type and name, with framework-priority resolution."""

from __future__ import annotations

import _thread

from brainsmith.plugin import log
from brainsmith.plugin.errors import PluginError, PluginLoadError, PluginNotFoundError
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginProblem, PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from brainsmith.plugin.discovery.index import Found


class RegistryChanges:
    """What one synchronisation with discovery changed (``watch()`` reports these)."""

    __slots__ = ("added", "problems", "reloaded", "removed")

    def __init__(
        self,
        added: Iterable[str] = (),
        removed: Iterable[str] = (),
        reloaded: Iterable[str] = (),
        problems: Iterable[str] = (),
    ) -> None:

        self.added: tuple[str, ...] = tuple(added)  # "transform user:Name"
        self.removed: tuple[str, ...] = tuple(removed)
        self.reloaded: tuple[str, ...] = tuple(reloaded)  # served from new code from now on
        self.problems: tuple[str, ...] = tuple(problems)  # new problems: "plugin: reason"

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.reloaded or self.problems)

    def lines(self) -> list[str]:
        marks = (("+", self.added), ("-", self.removed), ("~", self.reloaded), ("!", self.problems))
        return [f"{mark} {item}" for mark, items in marks for item in items]

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "no changes"

    def __repr__(self) -> str:
        return f"<RegistryChanges {'; '.join(self.lines()) or 'none'}>"


Key = tuple[str, str, str]  # (type, framework, name)


class Source:
    """A contributor of plugins at run time — a plugin package, a path loaded with
    ``load_plugin``, a custom kernel — with the specs it holds and the framework name it owns.
    (A plain class: ``dataclasses`` is too costly an import for the everyday path.)"""

    __slots__ = ("framework", "label", "name", "record", "specs")

    def __init__(self, name: str, label: str, framework: str = "") -> None:
        self.name = name  # "bundle:my-ops", "path:my-ops", "kernel:swish"
        self.label = label  # how messages name it: "plugin package my_ops"
        self.framework = framework  # the framework name it owns, if any
        self.specs: list[PluginSpec] = []
        self.record: object = None  # the lifecycle's record of it (a loaded path, a package)

    def __repr__(self) -> str:
        return f"<Source {self.name}: {len(self.specs)} plugin(s)>"


class Registry:
    """All known plugins. Qualified names never collide; short names resolve by priority.

    The registry owns every plugin of the process. Discovered plugins are replaced as a
    whole by ``sync``; each runtime source (a plugin package, a loaded path, a custom kernel)
    by ``replace(source, specs)`` and ``release(source)``; plugins decorated at run time
    (``add``) stay until removed. The first holder of a qualified name keeps it.

    After the first discovery of a process, the records of brainsmith's, QONNX's and FINN's
    plugins are entered when a query first needs them (``_take``): a lookup checks the
    records of its name, a listing those of its type. Every query answers as if all had
    been entered at once.
    """

    def __init__(
        self, priority: tuple[str, ...] = ("brainsmith", "user", "*", "finn", "qonnx")
    ) -> None:
        self._lock = _thread.RLock()
        self._specs: dict[Key, PluginSpec] = {}
        self._by_name: dict[tuple[str, str], list[PluginSpec]] = {}
        self._by_target: dict[str, list[PluginSpec]] = {}
        self._found: dict[Key, PluginSpec] = {}  # the discovered part
        self._found_problems: list[PluginProblem] = []
        self._unchecked: Found | None = None  # discovered records not yet entered
        self._reported: list[PluginProblem] = []  # problems reported at runtime
        self._sources: dict[str, Source] = {}  # runtime sources by name
        self.backend_choices: dict[str, str] = {}  # kernel -> backend name or type (switch_backend)
        self.disabled: dict[str, str] = {}  # framework -> why it is off (configuration)
        self._warned: set[str] = set()  # targets already warned about as shadowed
        self.load_timeout = 0.0  # seconds an import may take (0: no limit); set from config
        # The folder of the discovery index (set from config): rebuilt when a record it holds
        # disagrees with its plugin's source
        self.index_dir: str | None = None
        self.set_priority(priority)

    @property
    def problems(self) -> list[PluginProblem]:
        """Problems of discovery (replaced at each sync) and those reported since."""
        with self._lock:
            self._take()
            return [*self._found_problems, *self._reported]

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
        with self._lock:
            return self._add(spec, self._reported)

    def _add(self, spec: PluginSpec, problems: list[PluginProblem]) -> PluginSpec:
        self._take(spec.type, spec.name)  # a discovered plugin of that name holds it first
        key = (spec.type, spec.framework, spec.name)
        existing = self._specs.get(key)
        if existing is not None:
            if existing.target != spec.target:
                self._clash(existing, spec, problems)
            return existing
        self._insert(key, spec)
        return spec

    def _clash(self, kept: PluginSpec, other: PluginSpec, problems: list[PluginProblem]) -> None:
        reason = (
            f"{other.type} {other.qualified_name} is defined twice: {kept.target} "
            f"({kept.source}) and {other.target} ({other.source}); keeping the first. "
            "Rename one with the decorator's name= argument."
        )
        known = (*self._found_problems, *self._reported, *problems)
        if not any(p.reason == reason for p in known):  # once per clash
            _warn_at(other, reason)
            problems.append(PluginProblem(other.framework, other.qualified_name, reason))

    def _insert(self, key: Key, spec: PluginSpec) -> None:
        self._specs[key] = spec
        short = (spec.type, spec.name)
        candidates = self._by_name.get(short)
        if candidates is None:
            self._by_name[short] = candidates = []
        candidates.append(spec)
        if len(candidates) > 1:
            candidates.sort(key=self._rank)
            log.debug(
                "%s %s is provided by %s; the short name resolves to %s",
                spec.type,
                spec.name,
                ", ".join(c.framework for c in candidates),
                candidates[0].qualified_name,
            )
            winner = candidates[0]
            for hidden in candidates[1:]:
                if by_design(hidden, winner) or hidden.target in self._warned:
                    continue
                self._warned.add(hidden.target)
                mine = winner if hidden.framework in BUILT_IN else hidden  # the user's file
                _warn_at(mine, shadowed_reason(hidden, winner))
        holders = self._by_target.get(spec.target)
        if holders is None:
            self._by_target[spec.target] = [spec]
        else:
            holders.append(spec)

    def remove(self, spec: PluginSpec) -> None:
        """Remove ``spec`` from the registry and from the source that holds it."""
        with self._lock:
            self._drop([spec])

    def _drop(self, specs: list[PluginSpec]) -> None:
        for spec in specs:
            self._delete(spec)
        dropped = {id(spec) for spec in specs}
        for name, source in list(self._sources.items()):
            source.specs = [s for s in source.specs if id(s) not in dropped]
            if not source.specs and not source.framework:  # nothing left to own
                del self._sources[name]

    # -- runtime sources -------------------------------------------------------------------
    def claim(self, source: Source) -> None:
        """Enter ``source`` (no specs yet); PluginError if its name or framework is taken."""
        with self._lock:
            framework = source.framework
            taken = self._sources.get(source.name) or (framework and self.owner(framework))
            if taken:
                raise PluginError(f"plugin name '{framework}' is already used by {taken.label}")
            if framework and self.has_framework(framework):
                raise PluginError(
                    f"plugin name '{framework}' clashes with installed framework "
                    f"'{framework}'; choose another name"
                )
            self._sources[source.name] = source

    def replace(self, name: str, specs: list[PluginSpec]) -> list[PluginSpec]:
        """Make ``specs`` the plugins of source ``name`` (entered if new); returns those that
        left. A qualified name another holder has keeps its holder (a reported clash)."""
        with self._lock:
            source = self._sources.setdefault(name, Source(name, name))
            gone = [old for old in source.specs if all(old is not new for new in specs)]
            for spec in gone:
                self._delete(spec)
            source.specs = [spec for spec in specs if self._add(spec, self._reported) is spec]
        return gone

    def release(self, name: str) -> Source | None:
        """Remove source ``name`` and its plugins; the source as it was, or None."""
        with self._lock:
            source = self._sources.pop(name, None)
            if source is not None:
                self._drop(source.specs)
        return source

    def discovered_only(self) -> bool:
        """True when every plugin came from discovery (none added at run time)."""
        with self._lock:
            return len(self._specs) == len(self._found)

    def source(self, name: str) -> Source | None:
        with self._lock:
            return self._sources.get(name)

    def sources(self, kind: str) -> list[Source]:
        """The runtime sources named ``kind:...``, in the order they were entered."""
        with self._lock:
            return [s for s in self._sources.values() if s.name.startswith(kind + ":")]

    def owner(self, framework: str) -> Source | None:
        """The runtime source that owns ``framework``, if any."""
        with self._lock:
            return next((s for s in self._sources.values() if s.framework == framework), None)

    def _delete(self, spec: PluginSpec) -> None:
        key = (spec.type, spec.framework, spec.name)
        if self._specs.get(key) is not spec:
            return
        del self._specs[key]
        if self._found.get(key) is spec:
            del self._found[key]
        self._by_name[(spec.type, spec.name)].remove(spec)
        if not self._by_name[(spec.type, spec.name)]:
            del self._by_name[(spec.type, spec.name)]
        self._by_target[spec.target].remove(spec)
        if not self._by_target[spec.target]:
            del self._by_target[spec.target]

    def report(self, source: str, plugin: str, reason: str) -> None:
        with self._lock:
            self._reported.append(PluginProblem(source, plugin, reason))

    def sync(
        self, found: Found, fresh_modules: tuple[str, ...] = (), lazy: bool = False
    ) -> tuple[RegistryChanges, list[PluginSpec]]:
        """Make the plugins ``found`` by discovery the discovered ones: (what changed, the
        specs that left).

        A plugin whose index record is unchanged keeps its spec (loaded object, error), unless
        its module is in ``fresh_modules`` (or below one): its code changed, and the new spec
        imports it afresh. With ``lazy`` (a first discovery), records ``found`` checks on use
        are entered when first needed, and the changes name only the others.
        """

        def fresh(module: str) -> bool:
            return any(module == m or module.startswith(m + ".") for m in fresh_modules)

        with self._lock:
            self._take()  # the previous discovery in full, to compare with
            specs, problems = found.take_first()
            if not lazy:
                rest, more = found.take()
                specs += rest
                problems += more
            old = dict(self._found)
            before = {(p.plugin, p.reason) for p in self._found_problems}
            kept: dict[Key, PluginSpec] = {}
            found_problems = [*found.problems, *problems]
            for spec in specs:
                key = (spec.type, spec.framework, spec.name)
                first = kept.get(key)
                if first is not None:
                    if first.target != spec.target:
                        self._clash(first, spec, found_problems)
                    continue
                current = old.get(key)
                if current is not None and current.record == spec.record:
                    used = current.loaded or current.error  # its old code ran
                    if not (used and fresh(current.module)):
                        spec = current
                kept[key] = spec
            gone = [s for key, s in old.items() if kept.get(key) is not s]
            for spec in gone:
                self._delete(spec)
            self._found = {}
            for key, spec in kept.items():
                holder = self._specs.get(key)
                if holder is spec:
                    self._found[key] = spec
                elif holder is None:
                    self._insert(key, spec)
                    self._found[key] = spec
                elif holder.target != spec.target:  # a runtime source holds the name
                    self._clash(holder, spec, found_problems)
            self._found_problems = found_problems
            self._unchecked = found if found else None
            label = "{0.type} {0.qualified_name}".format
            changes = RegistryChanges(
                added=sorted(label(s) for k, s in self._found.items() if k not in old),
                removed=sorted(label(s) for k, s in old.items() if k not in self._found),
                reloaded=sorted(
                    label(s)
                    for k, s in self._found.items()
                    if k in old and (old[k] is not s or fresh(s.module))
                ),
                problems=[
                    f"{p.plugin}: {p.reason}"
                    for p in found_problems
                    if (p.plugin, p.reason) not in before
                ],
            )
        return changes, gone

    def _take(self, kind: str | None = None, name: str | None = None) -> None:
        """Enter the unchecked discovered plugins of group (``kind``, ``name``), of type
        ``kind``, or all of them (the lock is held)."""
        unchecked = self._unchecked
        if unchecked is None:
            return
        specs, problems = unchecked.take(kind, name)
        if not unchecked:
            self._unchecked = None
        for spec in specs:
            key = (spec.type, spec.framework, spec.name)
            holder = self._specs.get(key)
            if holder is None:
                self._insert(key, spec)
                self._found[key] = spec
            elif holder.target != spec.target:  # the same name twice, or held at run time
                self._clash(holder, spec, self._found_problems)
        self._found_problems += problems

    @property
    def unchecked(self) -> int:
        """How many discovered records are still to be checked and entered on first use."""
        with self._lock:
            return len(self._unchecked) if self._unchecked is not None else 0

    def _may_hold(self, framework: str) -> bool:
        return self._unchecked is not None and self._unchecked.may_hold(framework)

    # -- queries ---------------------------------------------------------------------------
    def specs(self, type: str | None = None, framework: str | None = None) -> list[PluginSpec]:
        with self._lock:
            if framework is None or self._may_hold(framework):
                self._take(type)
            found = list(self._specs.values())
        return [
            s
            for s in found
            if (type is None or s.type == type) and (framework is None or s.framework == framework)
        ]

    def by_target(self, target: str) -> list[PluginSpec]:
        with self._lock:
            if self._unchecked is not None:
                for kind, name in self._unchecked.groups_naming(target):
                    self._take(kind, name)
            return list(self._by_target.get(target, ()))

    def candidates(self, type: str, name: str) -> list[PluginSpec]:
        """Every framework's plugin with this short name, best first."""
        with self._lock:
            self._take(type, name)
            return list(self._by_name.get((type, name), ()))

    def frameworks(self) -> list[str]:
        with self._lock:
            self._take()
            return sorted({s.framework for s in self._specs.values()}, key=self._framework_rank)

    def has_framework(self, framework: str) -> bool:
        """Whether any plugin of ``framework`` is registered."""
        with self._lock:
            if any(s.framework == framework for s in self._specs.values()):
                return True
            if not self._may_hold(framework):
                return False
            self._take()
            return any(s.framework == framework for s in self._specs.values())

    def _framework_rank(self, framework: str) -> tuple[int, str]:
        return (self._priority.get(framework, self._priority["*"]), framework)

    def find(self, type: str, name: str, framework: str | None = None) -> PluginSpec:
        """The spec for ``name`` (short or ``framework:name``; a kernel's in any case);
        PluginNotFoundError otherwise."""
        check_type(type)
        if framework is None and ":" in name:
            framework, _, name = name.partition(":")
        with self._lock:
            self._take(type, name)
            if framework is not None:
                spec = self._specs.get((type, framework, name))
            else:
                found = self._by_name.get((type, name))
                spec = found[0] if found else None
        if spec is None and type == "kernel":  # kernels mix cases (matmul, LayerNorm)
            wanted = f"{framework}:{name}" if framework is not None else name
            hits = self.find_case_insensitive(type, wanted)
            spec = hits[0] if hits else None
        if spec is None:
            raise PluginNotFoundError(self.not_found_message(type, name, framework), type, name)
        return spec

    def shadowed(self) -> list[tuple[PluginSpec, PluginSpec]]:
        """(plugin, the one its short name resolves to) for every plugin whose short name a
        higher-priority plugin also has, unless both are built in (brainsmith, QONNX, FINN)."""
        with self._lock:
            self._take()
            groups = [list(c) for c in self._by_name.values() if len(c) > 1]
        return [(hidden, c[0]) for c in groups for hidden in c[1:] if not by_design(hidden, c[0])]

    def find_case_insensitive(self, type: str, name: str) -> list[PluginSpec]:
        """Specs whose short or qualified name equals ``name`` ignoring case, best first."""
        wanted = name.lower()
        framework = None
        if ":" in wanted:
            framework, _, wanted = wanted.partition(":")
        with self._lock:
            self._take(type)
            hits = [
                s
                for s in self._specs.values()
                if s.type == type
                and s.name.lower() == wanted
                and (framework is None or s.framework.lower() == framework)
            ]
        return sorted(hits, key=self._rank)

    def not_found_message(self, type: str, name: str, framework: str | None = None) -> str:
        if framework in self.disabled:
            return f"no {type} named '{name}': {self.disabled[framework]}"
        where = f" in framework '{framework}'" if framework else ""
        pool = [s.name for s in self.specs(type, framework)]
        from brainsmith.plugin.names import suggest

        hint = suggest(name, pool)
        listing = f"brainsmith plugins list --type {type}" + (
            f" --framework {framework}" if framework else ""
        )
        if framework is not None and not self.has_framework(framework):
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
        if obj is None:
            log.debug("loading %s %s from %s", spec.type, spec.qualified_name, spec.target)
            from brainsmith.plugin.loading import RecordRefused, agree_with_source, import_target

            try:
                obj = import_target(spec, self.load_timeout)
            except PluginLoadError as exc:
                spec.error = str(exc)
                self._forget_failed_module(spec.module)
                if isinstance(exc, RecordRefused):
                    self._rebuild_index()
                raise
            differs = agree_with_source(spec, obj)  # the record's metadata, against the source's
            if differs:
                self._disagreed(spec, differs)
            spec.obj = obj
            spec.error = None
        if spec.type in LAYER_TYPES:
            _layer_loaded(self, spec, obj)
        return obj

    def _disagreed(self, spec: PluginSpec, differs: str) -> None:
        """``spec``'s record said other than its source (``differs``): named in the problems,
        the index rebuilt; PluginLoadError if the source's version range excludes this
        brainsmith."""
        from brainsmith.plugin.lifecycle.versions import incompatibility
        from brainsmith.plugin.loading import DISAGREES

        plugin = f"{spec.type} {spec.qualified_name}"
        reason = f"{DISAGREES} ({differs}); the source's metadata is used and the cache rebuilt"
        with self._lock:
            if not any(p.plugin == plugin and p.reason == reason for p in self._reported):
                self._reported.append(PluginProblem(spec.framework, plugin, reason))
        self._rebuild_index()
        unfit = incompatibility(spec.metadata)
        if unfit:
            spec.error = f"unavailable: {unfit}"
            raise PluginLoadError(f"{plugin} is {spec.error}", spec)

    def _rebuild_index(self) -> None:
        """The discovery index holds a record its source disagrees with: the next discovery
        scans every source afresh."""
        if self.index_dir is not None:
            from brainsmith.plugin.discovery.index import forget_index

            forget_index(self.index_dir)

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


# Kernels and backends are hardware layers: each one served is handed to every framework
# adapter, which registers it where its framework looks layers up (FINN: QONNX custom-op
# tables). Adapters import on first use, so the hub itself never imports a framework.
LAYER_TYPES = ("kernel", "backend")


def _layer_loaded(registry: Registry, spec: PluginSpec, obj: object) -> None:
    from brainsmith.plugin.adapters import adapter_classes

    for adapter in adapter_classes():
        adapter.layer_loaded(registry, spec, obj)


def check_type(type: str) -> None:
    if type not in PLUGIN_TYPES:
        raise ValueError(f"unknown plugin type {type!r}; expected one of {', '.join(PLUGIN_TYPES)}")


BUILT_IN = ("brainsmith", "qonnx", "finn")  # frameworks whose name clashes are by design


def by_design(hidden: PluginSpec, winner: PluginSpec) -> bool:
    """Whether ``winner`` taking ``hidden``'s short name is by design: both are built in."""
    return hidden.framework in BUILT_IN and winner.framework in BUILT_IN


def taken_from_built_in(candidates: list[PluginSpec]) -> list[PluginSpec]:
    """The built-in plugins whose short name the first of ``candidates`` (best first), a
    user's or a package's, takes: a name that must be written qualified to be clear."""
    if not candidates or candidates[0].framework in BUILT_IN:
        return []
    return [c for c in candidates[1:] if c.framework in BUILT_IN]


def located(spec: PluginSpec) -> str:
    """Where ``spec`` is defined: its file and line, else its file or target."""
    line = spec.metadata.get("line")
    return f"{spec.source}:{line}" if isinstance(line, int) else spec.source or spec.target


def shadowed_reason(hidden: PluginSpec, winner: PluginSpec) -> str:
    head = (
        f"{hidden.type} {hidden.qualified_name} ({located(hidden)}) is shadowed by "
        f"{winner.qualified_name}"
    )
    if hidden.framework in BUILT_IN:  # a user's or a package's plugin took a built-in name
        return (
            f"{head} ({located(winner)}): the short name {hidden.name} means "
            f"{winner.framework}'s; a blueprint must write {winner.qualified_name} or "
            f"{hidden.qualified_name}. Rename {winner.qualified_name} with the decorator's "
            "name= argument."
        )
    return (
        f"{head}: the short name {hidden.name} means {winner.framework}'s. "
        f"Use {hidden.qualified_name}, or rename it with the decorator's name= argument."
    )


def _warn_at(spec: PluginSpec, reason: str) -> None:
    """A ``DuplicatePluginWarning`` pointing at ``spec``'s file and line."""
    import warnings

    from brainsmith.errors import DuplicatePluginWarning

    line = spec.metadata.get("line")
    warnings.warn_explicit(
        reason,
        DuplicatePluginWarning,
        spec.source or spec.target,
        line if isinstance(line, int) else 0,
        module=spec.module,
    )
