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

import sys
import time

from brainsmith.plugin import log, memo
from brainsmith.plugin.config import PluginConfig
from brainsmith.plugin.discovery import stamps
from brainsmith.plugin.discovery.stamps import stamp_paths, unchanged
from brainsmith.plugin.discovery.trust import BUILTIN_FRAMEWORKS, from_source
from brainsmith.plugin.spec import PluginProblem, PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeGuard

    from brainsmith.plugin.discovery.sources import Source


INDEX_FORMAT = 2
ADAPTERS = ("qonnx", "finn")
KEPT_FOLDERS = 32  # states of plugin folders no longer configured, kept for a switch back


class DiscoveryResult:
    """Outcome of one discovery, for the registry, stats and health."""

    __slots__ = (
        "cache",
        "changed",
        "checked",
        "duration_ms",
        "imported",
        "shared",
        "source_ms",
        "states",
    )

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}
        self.source_ms: dict[str, float] = {}
        self.cache = "miss"  # hit | revalidated | miss | disabled
        self.changed: set[str] = set()  # sources whose scan data changed
        self.checked: set[str] = set()  # sources checked in full (their TTL had passed)
        self.imported: set[str] = set()  # top-level packages imported afresh by this scan
        self.duration_ms = 0.0
        self.shared = False  # the index came from the shared (Redis) index


def index_name() -> str:
    """One index per interpreter and environment (``sys.prefix``)."""
    import zlib

    identity = (sys.executable, sys.prefix, sys.version, sys.implementation.cache_tag)
    return f"index-{zlib.crc32(repr(identity).encode()):08x}"


def source_ids(config: PluginConfig) -> list[str]:
    """The sources a discovery with ``config`` reads (QONNX is read whenever FINN is)."""
    enabled = config.framework_enabled
    ids = ["brainsmith"] if enabled("brainsmith") else []
    if enabled("user"):
        ids += [f"user:{folder}" for folder in config.plugin_dirs]
    ids.append("entry_points")
    if enabled("qonnx") or enabled("finn"):
        ids.append("qonnx")
    if enabled("finn"):
        ids.append("finn")
    return ids


def make_source(source_id: str, reload_modules: bool = False) -> Source:
    from brainsmith.plugin.discovery.sources import entry_points, modules

    if source_id == "brainsmith":
        return modules.brainsmith_source()
    if source_id.startswith("user:"):
        return modules.user_source(source_id[5:])
    if source_id == "entry_points":
        return entry_points.EntryPointSource(reload_modules)
    if source_id == "qonnx":
        from brainsmith.frameworks.qonnx import QONNXAdapter

        return QONNXAdapter()
    from brainsmith.frameworks.finn.adapter import FINNAdapter

    return FINNAdapter()


def discover(config: PluginConfig, reload_modules: bool = False) -> DiscoveryResult:
    """The source states for ``config``, from the index where still valid, else rescanned."""
    started = time.perf_counter()
    result = DiscoveryResult()
    name = index_name()
    stamp = [INDEX_FORMAT, _brainsmith_version(), name, _scanner_stamp()]
    index = memo.read(name, stamp, config.cache_dir)
    shared = config.cache_backend if config.cache_backend != "file" else None
    if index is None and shared:  # another machine of this environment may have scanned
        from brainsmith.plugin.discovery import shared_index

        index = shared_index.read(shared, name, stamp)
        result.shared = index is not None
    if not _valid_index(index):
        index = None
        log.debug("discovery index %s: none usable, scanning", name)
    stored = index["sources"] if index else {}
    before = index["environment"] if index else None
    now_environment = stamps.survey(before)
    moved = _what_moved(before, now_environment)
    now = time.time()
    stale = []
    for source_id in source_ids(config):
        state = stored.get(source_id)
        if isinstance(state, dict) and _still_valid(source_id, state, now, config.cache_ttl, moved):
            result.states[source_id] = state
        else:
            stale.append(source_id)
    if not stale:
        result.cache = "hit"
        log.debug("discovery index %s: within the TTL and unchanged, reused", name)
        if result.shared:  # kept locally too: the next process needs no network
            memo.write(name, stamp, index, config.cache_dir)
    else:
        scan_data = ScanData(name, stamp, config.cache_dir, bool(stored))
        _rescan(stale, stored, scan_data, now, config.cache_ttl, result, reload_modules)
        result.cache = "miss" if index is None or result.changed else "revalidated"
        if not _write(name, stamp, now_environment, stored, scan_data, result, config):
            result.cache = "disabled"
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


class ScanData:
    """The per-file scan data beside the index: read from disk only when a source needs it."""

    def __init__(self, name: str, stamp: list[Any], directory: str, exists: bool) -> None:
        self._where = (f"{name}-files", stamp, directory)
        self._data: dict[str, Any] | None = None if exists else {}

    def all(self) -> dict[str, Any]:
        if self._data is None:
            data = memo.read(*self._where)
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def of(self, source_id: str) -> Callable[[], Any]:
        """A loader of one source's scan data (called only if the source needs it)."""
        return lambda: self.all().get(source_id)


def _valid_index(index: object) -> TypeGuard[dict[str, Any]]:
    """The index has the shape this code writes (else it is discarded whole and rebuilt)."""
    if not isinstance(index, dict) or not isinstance(index.get("sources"), dict):
        return False
    if not isinstance(index.get("environment"), list):
        return False
    return all(
        isinstance(state, dict)
        and isinstance(state.get("specs", []), list)
        and isinstance(state.get("checked"), int | float)
        for state in index["sources"].values()
    )


def _what_moved(before: object, now: list[Any]) -> set[str]:
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
    stored: dict[str, Any],
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
        try:
            state = source.scan(previous, not within_ttl, scan_data.of(source_id))
        except Exception as exc:  # one broken source never stops discovery
            log.warning("plugin source %s failed: %s: %s", source_id, type(exc).__name__, exc)
            state = {
                "specs": [],
                "stamp": [],
                "failed": True,  # retried after the TTL, or when sys.path changes
                "checked": time.time(),
                "problems": [[source_id, source_id, f"{type(exc).__name__}: {exc}"]],
            }
        result.imported |= getattr(source, "imported", set())
        if state is previous:
            log.debug("source %s: still valid for this sys.path", source_id)
        elif previous is None or state.get("files") != scan_data.of(source_id)():
            result.changed.add(source_id)
            log.debug("source %s: scanned", source_id)
        else:
            log.debug("source %s: revalidated, unchanged", source_id)
        result.states[source_id] = state
        result.source_ms[source_id] = (time.perf_counter() - t0) * 1000
    _derive_adapter_specs(scan_data, result)


def _derive_adapter_specs(scan_data: ScanData, result: DiscoveryResult) -> None:
    """Adapter records depend on both QONNX's and FINN's class tables: derive them again
    from the scan data when either changed or was checked in full."""
    redo = (result.changed | result.checked) & set(ADAPTERS) & result.states.keys()
    if not redo:
        return
    t0 = time.perf_counter()
    from brainsmith.frameworks.finn.adapter import FINNAdapter
    from brainsmith.frameworks.qonnx import QONNXAdapter

    scanned = {}
    for adapter in ADAPTERS:
        state = result.states.get(adapter)
        if state is not None and not state.get("failed"):
            files = state["files"] if "files" in state else scan_data.of(adapter)()
            scanned[adapter] = {**state, "files": files if isinstance(files, dict) else {}}
    for adapter_class in (QONNXAdapter, FINNAdapter):
        state = scanned.get(adapter_class.framework)
        if state is None:
            continue
        framework = adapter_class.__new__(adapter_class)  # no package lookup: the state has it
        classes = framework.index(list(scanned.values()))
        specs, problems = framework.specs(state, classes)
        result.states[adapter_class.framework] = {
            **result.states[adapter_class.framework],
            "specs": specs,
            "problems": problems,
        }
    result.source_ms[sorted(redo)[0]] += (time.perf_counter() - t0) * 1000


def _write(
    name: str,
    stamp: list[Any],
    surveyed: list[Any],
    stored: dict[str, Any],
    scan_data: ScanData,
    result: DiscoveryResult,
    config: PluginConfig,
) -> bool:
    """Persist the merged index: this discovery's states, plus those of sources it did not
    read (a disabled framework, another project's plugin folders: the newest few)."""
    others = {k: v for k, v in stored.items() if k not in result.states and isinstance(v, dict)}
    folders = sorted((v.get("checked", 0), k) for k, v in others.items() if k.startswith("user:"))
    for _, source_id in folders[: max(0, len(folders) - KEPT_FOLDERS)]:
        del others[source_id]
    states = {**others, **result.states}
    light = {k: {f: v for f, v in st.items() if f != "files"} for k, st in states.items()}
    payload = {"created": time.time(), "environment": surveyed, "sources": light}
    written = memo.write(name, stamp, payload, config.cache_dir)
    if config.cache_backend != "file" and (result.changed or not result.shared):
        from brainsmith.plugin.discovery import shared_index

        shared_index.write(config.cache_backend, name, stamp, payload)
    if not written:
        return False
    scanned = {k: st["files"] for k, st in result.states.items() if "files" in st}
    if result.changed or set(scan_data.all()) - set(states):
        merged = {k: v for k, v in scan_data.all().items() if k in states}
        merged.update(scanned)
        memo.write(f"{name}-files", stamp, merged, config.cache_dir)
    return True


# -- from states to registry contents ----------------------------------------------------------


def records(
    states: dict[str, Any], config: PluginConfig
) -> tuple[list[PluginSpec], list[PluginProblem]]:
    """The specs and problems the sources' states give, each record checked against its
    source (an index record can only name what its source may provide)."""
    specs: list[PluginSpec] = []
    problems: list[PluginProblem] = []
    for source_id, state in states.items():
        for record in state.get("problems", []):
            problems.append(PluginProblem(*[str(part) for part in record[:3]]))
        for record in state.get("specs", []):
            try:
                spec = PluginSpec.from_record(record)
            except (ValueError, TypeError) as exc:
                reason = f"malformed index record ({exc}); ignored"
                problems.append(PluginProblem(source_id, _record_label(record), reason))
                continue
            if not from_source(spec, source_id, state, config):
                reason = f"index names {spec.target}, outside this source; ignored"
                problems.append(PluginProblem(source_id, spec.qualified_name, reason))
                continue
            if spec.framework in BUILTIN_FRAMEWORKS and not config.framework_enabled(
                spec.framework
            ):
                continue
            if any(k.endswith("brainsmith_version") for k in spec.metadata):
                from brainsmith.plugin.versions import incompatibility

                unfit = incompatibility(spec.metadata)
                if unfit:
                    spec.error = f"unavailable: {unfit}"
            specs.append(spec)
    folders = [(f, states[f"user:{f}"]) for f in config.plugin_dirs if f"user:{f}" in states]
    if folders:
        from brainsmith.plugin.discovery.sources.modules import module_clashes

        problems += [PluginProblem(*record) for record in module_clashes(folders)]
    return specs, problems


def _record_label(record: object) -> str:
    """``transform qonnx:Name`` for a record that has those fields; else its text, cut."""
    if (
        isinstance(record, list)
        and len(record) >= 3
        and all(isinstance(f, str) for f in record[:3])
    ):
        return f"{record[0][:20]} {record[2][:40]}:{record[1][:100]}"
    return str(record)[:80]


def _scanner_stamp() -> int:
    """Changes whenever the code that reads plugin sources changes (editable installs)."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))  # brainsmith/plugin/discovery
    names = ("index.py", "folders.py", "stamps.py", "../metadata.py", "../spec.py",
             "../../frameworks/qonnx.py", "../../frameworks/finn/adapter.py")  # fmt: skip
    paths = [os.path.normpath(os.path.join(here, name)) for name in names]
    sources = os.path.join(here, "sources")
    paths += [os.path.join(sources, n) for n in sorted(os.listdir(sources)) if n.endswith(".py")]
    return int(sum(entry[1] for entry in stamp_paths(paths))) & 0xFFFFFFFFFFFF


def _brainsmith_version() -> str:
    from brainsmith.version import __version__

    return __version__
