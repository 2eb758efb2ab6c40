"""Discovery: one persisted index per Python environment, reused only while everything that
decides its content is unchanged.

Each source (brainsmith's packages, each user plugin folder, pip packages' entry points,
QONNX, FINN) has its own state in the index: the records it produced, the stamps of what it
read, and when it was last checked in full. A source is reused when it was checked within the
TTL and its stamps still match. The index also records what every ``sys.path`` folder holds
(``stamps.survey``): entry points are read again when the distributions on ``sys.path``
changed, QONNX and FINN when their packages did, and a source that failed when either did.
Otherwise the source is rescanned, re-reading only changed files, and its records are derived
again from that scan data (never copied from the old index).
"""

from __future__ import annotations

import os
import sys
import time

from brainsmith.plugin import log
from brainsmith.plugin.adapters import (
    ADAPTERS,
    adapter_class,
    adapter_classes,
    adapter_files,
    reads_with,
)
from brainsmith.plugin.discovery import stamps
from brainsmith.plugin.discovery.stamps import stamp_paths, unchanged
from brainsmith.plugin.discovery.store import ORIGIN, index_stores
from brainsmith.plugin.discovery.trust import SourceCheck
from brainsmith.plugin.settings import memo
from brainsmith.plugin.settings.config import PluginConfig, masked_url
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginProblem, PluginSpec
from brainsmith.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypedDict, TypeGuard

    from brainsmith.plugin.discovery.sources import Row, Source, State
    from brainsmith.plugin.discovery.stamps import Survey
    from brainsmith.plugin.discovery.store import FileStore, IndexStore, RedisStore

    class Index(TypedDict):
        """What the index file holds (its keys in the order written)."""

        created: float
        environment: Survey
        sources: dict[str, State]


INDEX_FORMAT = 2
KEPT_FOLDERS = 32  # states of plugin folders no longer configured, kept for a switch back


class DiscoveryResult:
    """Outcome of one discovery, for the registry, stats and health."""

    __slots__ = (
        "cache",
        "changed",
        "checked",
        "duration_ms",
        "imported",
        "problems",
        "shared",
        "source_ms",
        "states",
    )

    def __init__(self) -> None:
        self.states: dict[str, State] = {}
        self.source_ms: dict[str, float] = {}
        self.cache = "miss"  # hit | revalidated | miss | disabled
        self.changed: set[str] = set()  # sources whose scan data changed
        self.checked: set[str] = set()  # sources checked in full (their TTL had passed)
        self.imported: set[str] = set()  # top-level packages imported afresh by this scan
        self.duration_ms = 0.0
        self.shared = False  # the index came from the shared (Redis) index
        self.problems: list[list[str]] = []  # [source, culprit, reason]: a refused shared index


def index_name() -> str:
    """One index per interpreter and environment (``sys.prefix``)."""
    identity = (sys.executable, sys.prefix, sys.version, sys.implementation.cache_tag)
    return f"index-{stamps.digest32(repr(identity)):08x}"


def forget_index(directory: str) -> None:
    """Delete this environment's index and its scan data in ``directory`` (a record disagreed
    with its plugin's source): the next discovery scans every source afresh, reusing nothing."""
    name = index_name()
    for stem in (name, f"{name}-files"):
        memo.remove_if_ours(memo.path_for(stem, directory))


def source_ids(config: PluginConfig) -> list[str]:
    """The sources a discovery with ``config`` reads (a framework's adapter with those it is
    read with: QONNX whenever FINN is)."""
    enabled = config.framework_enabled
    ids = ["brainsmith"] if enabled("brainsmith") else []
    if enabled("user"):
        ids += [f"user:{folder}" for folder in config.plugin_dirs]
    return [*ids, "entry_points", *_adapter_ids(config)]


def _adapter_ids(config: PluginConfig) -> list[str]:
    """The frameworks enabled, and those they are read with, in ADAPTERS order."""
    wanted = {name for name in ADAPTERS if config.framework_enabled(name)}
    wanted |= {other for name in wanted for other in reads_with(name)}
    return [name for name in ADAPTERS if name in wanted]


def make_source(source_id: str, reload_modules: bool = False) -> Source:
    from brainsmith.plugin.discovery.sources import entry_points, modules

    if source_id == "brainsmith":
        return modules.brainsmith_source()
    if source_id.startswith("user:"):
        return modules.user_source(source_id[5:])
    if source_id == "entry_points":
        return entry_points.EntryPointSource(reload_modules)
    adapter = adapter_class(source_id)
    if adapter is None:
        raise ValueError(f"no discovery source {source_id!r}")
    return adapter()


def discover(config: PluginConfig, reload_modules: bool = False) -> DiscoveryResult:
    """The source states for ``config``, from the index where still valid, else rescanned."""
    started = time.perf_counter()
    result = DiscoveryResult()
    name = index_name()
    stamp = [INDEX_FORMAT, _brainsmith_version(), name, _scanner_stamp()]
    local, shared = index_stores(config)
    index = _index(name, stamp, local, shared, result)
    stored = index["sources"] if index else {}
    before = index["environment"] if index else None
    now_environment = stamps.survey(before)
    now = time.time()
    stale = _stale(config, stored, _what_moved(before, now_environment), now, result)
    if not stale:
        result.cache = "hit"
        log.debug("discovery index %s: within the TTL and unchanged, reused", name)
        if result.shared and index is not None:  # kept locally: the next start needs no network
            local.save(name, stamp, index)
    else:
        scan_data = ScanData(name, stamp, local, bool(stored))
        _rescan(stale, stored, scan_data, now, config.cache_ttl, result, reload_modules)
        result.cache = "miss" if index is None or result.changed else "revalidated"
        if not _write(name, stamp, now_environment, stored, scan_data, result, local, shared):
            result.cache = "disabled"
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


def _index(
    name: str,
    stamp: list[object],
    local: FileStore,
    shared: RedisStore | None,
    result: DiscoveryResult,
) -> Index | None:
    """This environment's index: the local one (its states from Redis checked again), else
    the shared one; None when neither is usable."""
    index = _usable(local.load(name, stamp), f"discovery index {name}")
    if shared is not None:
        index = _with_shared(index, name, stamp, shared, result)
    if index is None:
        log.debug("discovery index %s: none usable, scanning", name)
    return index


def _stale(
    config: PluginConfig,
    stored: dict[str, State],
    moved: set[str],
    now: float,
    result: DiscoveryResult,
) -> list[str]:
    """The sources of ``config`` to rescan; the states of the others go to ``result``."""
    stale = []
    for source_id in source_ids(config):
        state = stored.get(source_id)
        if isinstance(state, dict) and _still_valid(source_id, state, now, config.cache_ttl, moved):
            result.states[source_id] = state
        else:
            stale.append(source_id)
    return stale


# -- the shared index: read when there is no local one, never trusted beyond its data --------------
# An index read from Redis is used only after its signature (with a key) and its plausibility
# are checked. Without a key, each of its states is kept locally marked with the SHA-256 of what
# Redis held (``store.ORIGIN``): a later start asks Redis whether it still holds exactly that and
# rescans those sources when it does not (Redis fixed, emptied or gone), so nothing read from
# Redis outlives its data there. A signed index is as good as a scan and is kept as such.


def _with_shared(
    index: Index | None,
    name: str,
    stamp: list[object],
    shared: RedisStore,
    result: DiscoveryResult,
) -> Index | None:
    """The local index (its states from Redis checked again), or the shared one if there is
    no local index and Redis holds a good one."""
    origins = _origins(index)
    if index is not None and not origins:
        return index  # a machine's own index: Redis is not asked
    fetched = _fetch(shared, name, stamp, result)
    if index is not None:
        if not origins & _origins(fetched):
            kept = {k: v for k, v in index["sources"].items() if v.get(ORIGIN) is None}
            log.debug("shared index %s changed or gone: rescanning what came from it", name)
            index = {**index, "sources": kept}
        return index
    return None if fetched is None else _shared_copy(fetched, name, shared, result)


def _shared_copy(
    fetched: object, name: str, shared: RedisStore, result: DiscoveryResult
) -> Index | None:
    """The index Redis held, if it has this code's shape and could be what a scan wrote."""
    copy = _usable(fetched, f"shared index {name} at {masked_url(shared.url)}")
    implausible = _implausible(copy) if copy is not None else None
    if implausible:
        _refuse(shared.url, f"{implausible}; ignored", result)
        return None
    result.shared = copy is not None
    return copy


def _fetch(shared: RedisStore, name: str, stamp: list[object], result: DiscoveryResult) -> object:
    """What Redis holds under ``name``, or None (refusals are warnings and problems of
    ``result``)."""
    from brainsmith.plugin.discovery.shared_index import Refused

    try:
        return shared.load(name, stamp)
    except Refused as exc:
        _refuse(shared.url, str(exc), result)
        return None


def _refuse(url: str, reason: str, result: DiscoveryResult) -> None:
    culprit = f"shared index at {masked_url(url)}"
    log.warning("%s: %s", culprit, reason)
    result.problems.append(["shared", culprit, reason])


def _origins(index: object) -> set[str]:
    """The shared indexes (by digest) that states of ``index`` were read from."""
    sources = index.get("sources") if isinstance(index, dict) else None
    if not isinstance(sources, dict):
        return set()
    return {
        v[ORIGIN]
        for v in sources.values()
        if isinstance(v, dict) and isinstance(v.get(ORIGIN), str)
    }


def _implausible(index: Index) -> str | None:
    """Why a shared index cannot be what a scan wrote: a source that always has plugins lists
    none (its records were emptied), or a distribution with entry points has neither a plugin
    nor a problem. None when nothing is wrong that can be seen without a scan."""
    for source_id, state in index["sources"].items():
        if state.get("failed"):
            continue
        reason = _emptied(source_id, state)
        if reason is None and source_id == "entry_points":
            reason = _unaccounted(state)
        if reason is not None:
            return reason
    return None


def _emptied(source_id: str, state: State) -> str | None:
    """brainsmith, or an installed framework, with no plugin records."""
    always_some = source_id == "brainsmith" or (source_id in ADAPTERS and bool(state.get("stamp")))
    if state.get("specs", []) or not always_some:
        return None
    return f"source {source_id} lists no plugins although it always has some"


def _unaccounted(state: State) -> str | None:
    """A distribution listed with entry points that gave neither a plugin nor a problem."""
    from brainsmith.plugin.names import normalise

    listed = {normalise(str(row[0])) for row in state.get("listing", []) if row}
    missing = listed - _accounted(state)
    if missing:
        return f"distribution {sorted(missing)[0]} has entry points but no plugins"
    return None


def _accounted(state: State) -> set[str]:
    """The frameworks the state has a plugin or a problem of."""
    seen = {str(r[2]) for r in state.get("specs", []) if isinstance(r, list) and len(r) > 2}
    return seen | {str(p[0]) for p in state.get("problems", []) if isinstance(p, list) and p}


class ScanData:
    """The per-file scan data beside the index: read from disk only when a source needs it."""

    def __init__(self, name: str, stamp: list[object], store: IndexStore, exists: bool) -> None:
        self._where = (f"{name}-files", stamp)
        self._store = store
        self._data: dict[str, object] | None = None if exists else {}

    def all(self) -> dict[str, object]:
        if self._data is None:
            data = self._store.load(*self._where)
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def of(self, source_id: str) -> Callable[[], object]:
        """A loader of one source's scan data (called only if the source needs it)."""
        return lambda: self.all().get(source_id)

    def save(self, states: dict[str, State], result: DiscoveryResult) -> None:
        """Keep the scan data of the sources in ``states``, this discovery's afresh (written
        only when a source changed or was dropped)."""
        if not result.changed and not set(self.all()) - set(states):
            return
        merged = {k: v for k, v in self.all().items() if k in states}
        merged.update({k: st["files"] for k, st in result.states.items() if "files" in st})
        self._store.save(*self._where, merged)


def _usable(index: object, where: str) -> Index | None:
    """``index`` if it has the shape this code writes (else None: rebuilt whole), without the
    states whose numbers no clock or file system gives (each a warning: that source is
    rescanned). Read from a cache file or Redis, a number is never used unchecked."""
    if not _shaped(index):
        return None
    sources = index["sources"]
    for source_id, state in list(sources.items()):
        if not _is_time(state.get("checked")) or not stamps.in_range(state.get("stamp", [])):
            log.warning("%s: source %s holds a time or stamp out of range; rescanning it",
                        where, source_id)  # fmt: skip
            del sources[source_id]
    if not stamps.in_range(index["environment"]):
        log.warning("%s: sys.path stamps out of range; rescanning what depends on them", where)
        index["environment"] = []
    return index


def _shaped(index: object) -> TypeGuard[Index]:
    """``index`` has the shape this code writes (its numbers still unchecked)."""
    if not isinstance(index, dict) or not isinstance(index.get("sources"), dict):
        return False
    if not isinstance(index.get("environment"), list):
        return False
    return all(
        isinstance(state, dict) and isinstance(state.get("specs", []), list)
        for state in index["sources"].values()
    )


def _is_time(value: object) -> bool:
    """A time in seconds a clock can give (not NaN, infinite, negative or ages away)."""
    return type(value) in (int, float) and 0 <= value <= MAX_TIME  # type: ignore[operator]


MAX_TIME = 1 << 34  # seconds since 1970: the year 2514


def _what_moved(before: object, now: Survey) -> set[str]:
    """Which path-dependent sources the environment's changes concern."""
    moved = set()
    if stamps.distributions(before) != stamps.distributions(now):
        moved.add("entry_points")
    if stamps.framework_packages(before) != stamps.framework_packages(now):
        moved.update(ADAPTERS)
    return moved


def _still_valid(source_id: str, state: object, now: float, ttl: float, moved: set[str]) -> bool:
    if not isinstance(state, dict):
        return False
    checked = state.get("checked")
    if not isinstance(checked, int | float) or not (now - ttl <= checked <= now + 1):
        return False  # past its TTL (or checked "in the future": a clock set back)
    if source_id in moved or (state.get("failed") and moved):
        return False  # sys.path now holds other distributions or framework packages
    return unchanged(state.get("stamp"))


def _rescan(
    stale: list[str],
    stored: dict[str, State],
    scan_data: ScanData,
    now: float,
    ttl: float,
    result: DiscoveryResult,
    reload_modules: bool,
) -> None:
    """Rescan the stale sources (the others' states are already in ``result``)."""
    for source_id in stale:
        t0 = time.perf_counter()
        old = stored.get(source_id)
        previous = old if isinstance(old, dict) and not old.get("failed") else None
        within_ttl = previous is not None and now - previous.get("checked", 0) <= ttl
        source = make_source(source_id, reload_modules)
        if not within_ttl:
            result.checked.add(source_id)
        state = _scanned(source, source_id, previous, not within_ttl, scan_data)
        result.imported |= getattr(source, "imported", set())
        _note(source_id, state, previous, scan_data, result)
        result.states[source_id] = state
        result.source_ms[source_id] = (time.perf_counter() - t0) * 1000
    _derive_adapter_specs(scan_data, result)


def _scanned(
    source: Source, source_id: str, previous: State | None, full: bool, scan_data: ScanData
) -> State:
    """The source's new state; a failed one when its scan raised (one broken source never
    stops discovery)."""
    try:
        return source.scan(previous, full, scan_data.of(source_id))
    except Exception as exc:
        log.warning("plugin source %s failed: %s: %s", source_id, type(exc).__name__, exc)
        return {
            "specs": [],
            "stamp": [],
            "failed": True,  # retried after the TTL, or when sys.path changes
            "checked": time.time(),
            "problems": [[source_id, source_id, f"{type(exc).__name__}: {exc}"]],
        }


def _note(
    source_id: str,
    state: State,
    previous: State | None,
    scan_data: ScanData,
    result: DiscoveryResult,
) -> None:
    """Count the source as changed when its scan data differs from what was kept."""
    if state is previous:
        log.debug("source %s: still valid for this sys.path", source_id)
    elif previous is None or state.get("files") != scan_data.of(source_id)():
        result.changed.add(source_id)
        log.debug("source %s: scanned", source_id)
    else:
        log.debug("source %s: revalidated, unchanged", source_id)


def _derive_adapter_specs(scan_data: ScanData, result: DiscoveryResult) -> None:
    """Adapter records depend on the class tables of every framework read (FINN's classes
    derive from QONNX's): derive them again when one changed or was checked in full."""
    redo = (result.changed | result.checked) & set(ADAPTERS) & result.states.keys()
    if not redo:
        return
    t0 = time.perf_counter()
    scanned = _adapter_states(scan_data, result)
    for cls in adapter_classes():
        state = scanned.get(cls.framework)
        if state is None:
            continue
        framework = cls.__new__(cls)  # no package lookup: the state has it
        classes = framework.index(list(scanned.values()))
        specs, problems = framework.specs(state, classes)
        result.states[cls.framework] = {
            **result.states[cls.framework],
            "specs": specs,
            "problems": problems,
        }
    result.source_ms[sorted(redo)[0]] += (time.perf_counter() - t0) * 1000


def _adapter_states(scan_data: ScanData, result: DiscoveryResult) -> dict[str, State]:
    """The frameworks' states that did not fail, each with its scan data."""
    scanned: dict[str, State] = {}
    for adapter in ADAPTERS:
        state = result.states.get(adapter)
        if state is not None and not state.get("failed"):
            files: object = state["files"] if "files" in state else scan_data.of(adapter)()
            scanned[adapter] = {**state, "files": files if isinstance(files, dict) else {}}
    return scanned


def _write(
    name: str,
    stamp: list[object],
    surveyed: Survey,
    stored: dict[str, State],
    scan_data: ScanData,
    result: DiscoveryResult,
    local: FileStore,
    shared: RedisStore | None,
) -> bool:
    """Persist the merged index: this discovery's states, plus those of sources it did not
    read (a disabled framework, another project's plugin folders: the newest few)."""
    states = _merged(stored, result)
    light = {k: _without_files(st) for k, st in states.items()}
    payload: Index = {"created": time.time(), "environment": surveyed, "sources": light}
    written = local.save(name, stamp, payload)
    if shared is not None and (result.changed or not result.shared):
        _publish(shared, name, stamp, payload, result)
    if not written:
        return False
    scan_data.save(states, result)
    return True


def _merged(stored: dict[str, State], result: DiscoveryResult) -> dict[str, State]:
    """This discovery's states, after those kept of the sources it did not read."""
    others = {k: v for k, v in stored.items() if k not in result.states and isinstance(v, dict)}
    folders = sorted((v.get("checked", 0), k) for k, v in others.items() if k.startswith("user:"))
    for _, source_id in folders[: max(0, len(folders) - KEPT_FOLDERS)]:
        del others[source_id]
    return {**others, **result.states}


def _without_files(state: State) -> State:
    """``state`` without its scan data (kept beside the index)."""
    light = state.copy()
    light.pop("files", None)
    return light


def _publish(
    shared: RedisStore,
    name: str,
    stamp: list[object],
    payload: Index,
    result: DiscoveryResult,
) -> None:
    """Publish the index through Redis (signed, with a key); nothing when the key file is
    unfit (a warning and a problem of ``result`` say why)."""
    from brainsmith.plugin.discovery.shared_index import Refused

    try:
        shared.save(name, stamp, payload)
    except Refused as exc:
        if not result.problems:  # (reported already when the index was read)
            _refuse(shared.url, str(exc), result)


# -- from states to registry contents ----------------------------------------------------------


# Sources whose records are checked when first needed: each record names a module of the
# source's own package under the source's own name, so its framework is known unchecked.
CHECKED_ON_USE = ("brainsmith", "qonnx", "finn")


class Found:
    """The plugins of one discovery, their records checked when the registry first needs them
    (an index record can only name what its source may provide: ``trust.SourceCheck``).

    Records are grouped by (type, short name), the unit in which the registry resolves names:
    ``take(kind, name)`` checks one group, ``take(kind)`` a type, ``take()`` all that are left
    (grouped only once a group or type is asked for: a full listing checks them in order).
    A process that uses a few plugins checks those alone. The records of plugin folders and
    pip packages, with the groups they join, are checked at once (``take_first``): their
    problems, clashes and shadowing warnings are reported by discovery itself. A record with
    no type and name to group it by can only be a problem: ``take()`` reports it.
    """

    def __init__(self, states: dict[str, State], config: PluginConfig) -> None:
        self.problems: list[PluginProblem] = []
        self._first: list[tuple[SourceCheck, object]] = []
        self._later: list[tuple[SourceCheck, list[Row]]] = []  # per source, ungrouped
        self._groups: dict[tuple[str, str], list[tuple[SourceCheck, object]]] | None = None
        self._lazy: set[str] = set()  # the sources checked on use
        first_keys: dict[tuple[str, str], None] = {}  # (ordered: problems keep their order)
        for source_id, state in states.items():
            self.problems += _problems_of(state)
            check = SourceCheck(source_id, state, config)
            records = state.get("specs", [])
            if source_id in CHECKED_ON_USE and records:
                self._later.append((check, records))
                self._lazy.add(source_id)
                continue
            first_keys.update(dict.fromkeys(self._add_first(check, records)))
        self._count = len(self._first) + sum(len(records) for _, records in self._later)
        if first_keys:  # the records of brainsmith, QONNX and FINN that share their names
            groups = self._grouped()
            for key in first_keys:
                self._first += groups.pop(key, [])
        self.problems += _folder_clashes(states, config)

    def _add_first(self, check: SourceCheck, records: list[Row]) -> list[tuple[str, str]]:
        """Take ``records`` to be checked at once; the groups they join."""
        keys = []
        for record in records:
            key = _group(record)
            if key is not None:
                keys.append(key)
            self._first.append((check, record))
        return keys

    def _grouped(self) -> dict[tuple[str, str], list[tuple[SourceCheck, object]]]:
        """The unchecked records by group (one with no group waits for ``take()``)."""
        if self._groups is None:
            self._groups = {}
            for check, records in self._later:
                for record in records:
                    key = _group(record)
                    if key is None:
                        self._first.append((check, record))
                    else:
                        self._groups.setdefault(key, []).append((check, record))
            self._later = []
        return self._groups

    def take_first(self) -> tuple[list[PluginSpec], list[PluginProblem]]:
        """The records discovery checks at once (see the class)."""
        first, self._first = self._first, []
        self._count -= len(first)
        return _checked(first)

    def take(
        self, kind: str | None = None, name: str | None = None
    ) -> tuple[list[PluginSpec], list[PluginProblem]]:
        """Check the unchecked records of group (``kind``, ``name``), of type ``kind``, or all."""
        entries = self._all() if kind is None else self._of(kind, name)
        self._count -= len(entries)
        return _checked(entries)

    def _all(self) -> list[tuple[SourceCheck, object]]:
        """Every unchecked record, taken."""
        entries: list[tuple[SourceCheck, object]]
        entries = [(check, record) for check, records in self._later for record in records]
        for group in (self._groups or {}).values():
            entries += group
        entries += self._first
        self._later, self._first = [], []
        self._groups = {} if self._groups is not None else None
        return entries

    def _of(self, kind: str, name: str | None) -> list[tuple[SourceCheck, object]]:
        """The unchecked records of group (``kind``, ``name``), or of type ``kind``, taken."""
        groups = self._grouped()
        if name is not None:
            return groups.pop((kind, name), [])
        keys = [key for key in groups if key[0] == kind]
        return [entry for key in keys for entry in groups.pop(key)]

    def groups_naming(self, target: str) -> list[tuple[str, str]]:
        """The unchecked groups with a record whose target is ``target``."""
        groups = self._grouped()
        return [
            k
            for k, entries in groups.items()
            if any(isinstance(r, list) and r[3] == target for _, r in entries)
        ]

    def may_hold(self, framework: str) -> bool:
        """Whether unchecked records may give plugins of ``framework``."""
        return self._count > 0 and framework in self._lazy

    def __len__(self) -> int:
        """The records still unchecked."""
        return self._count


def _problems_of(state: State) -> list[PluginProblem]:
    """The problems a source's scan recorded."""
    return [
        PluginProblem(*[str(part) for part in problem[:3]]) for problem in state.get("problems", [])
    ]


def _folder_clashes(states: dict[str, State], config: PluginConfig) -> list[PluginProblem]:
    """The plain imports of the configured plugin folders that reach another module."""
    folders = [(f, states[f"user:{f}"]) for f in config.plugin_dirs if f"user:{f}" in states]
    if not folders:
        return []
    from brainsmith.plugin.discovery.sources.modules import module_clashes

    return [PluginProblem(*record) for record in module_clashes(folders)]


def _group(record: object) -> tuple[str, str] | None:
    if type(record) is list and len(record) == 6:
        kind, name = record[0], record[1]
        if kind in PLUGIN_TYPES and type(name) is str:
            return kind, name
    return None


def _checked(
    entries: list[tuple[SourceCheck, object]],
) -> tuple[list[PluginSpec], list[PluginProblem]]:
    specs: list[PluginSpec] = []
    problems: list[PluginProblem] = []
    for check, record in entries:
        outcome = check.check(record)
        if isinstance(outcome, PluginSpec):
            specs.append(outcome)
        elif outcome is not None:
            problems.append(outcome)
    return specs, problems


def _scanner_stamp() -> int:
    """Changes whenever the code that reads plugin sources changes (editable installs)."""
    here = os.path.dirname(os.path.abspath(__file__))  # brainsmith/plugin/discovery
    names = ("index.py", "folders.py", "stamps.py", "../metadata.py", "../spec.py")
    paths = [os.path.normpath(os.path.join(here, name)) for name in names] + adapter_files()
    sources = os.path.join(here, "sources")
    paths += [os.path.join(sources, n) for n in sorted(os.listdir(sources)) if n.endswith(".py")]
    return sum(int(entry[1]) for entry in stamp_paths(paths)) & 0xFFFFFFFFFFFF


def _brainsmith_version() -> str:
    return __version__
