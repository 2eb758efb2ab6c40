"""Discovery: run the sources, reuse the persisted index when it is still valid, and fill
the registry. Layers: in-process memo -> on-disk index within its TTL (after a cheap stat
check of what each source read) -> incremental rescan of changed files -> full scan.
"""

from __future__ import annotations

import sys
import time

from brainsmith.plugin import log, memo
from brainsmith.plugin.config import PluginConfig
from brainsmith.plugin.registry import Registry
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginSpec
from brainsmith.plugin.stamps import stamp_paths
from brainsmith.plugin.trust import BUILTIN_FRAMEWORKS, from_source

INDEX_FORMAT = 1


class DiscoveryKey:
    """What a discovery was asked for; the persisted index is keyed by it."""

    __slots__ = ("frameworks", "modes", "types")

    def __init__(self, modes=None, types=None, frameworks=None) -> None:
        self.modes = tuple(sorted(modes or ("full",)))
        self.types = tuple(sorted(types)) if types else PLUGIN_TYPES
        self.frameworks = tuple(sorted(frameworks)) if frameworks else None
        bad = [t for t in self.types if t not in PLUGIN_TYPES]
        if bad:
            raise ValueError(f"unknown plugin type {bad[0]!r}; expected one of {PLUGIN_TYPES}")

    def as_tuple(self) -> tuple:
        return (self.modes, self.types, self.frameworks)

    def index_name(self, plugin_dirs: tuple[str, ...] = ()) -> str:
        """One index per request, interpreter and set of plugin folders."""
        import zlib

        text = repr((self.as_tuple(), sys.version_info[:2], sys.prefix, plugin_dirs))
        return f"index-{zlib.crc32(text.encode()):08x}"

    def wants(self, framework: str) -> bool:
        if self.frameworks is None:
            return True
        if framework in self.frameworks:
            return True
        return framework not in BUILTIN_FRAMEWORKS and "*" in self.frameworks


class DiscoveryResult:
    """Outcome of one discovery, for stats and health."""

    __slots__ = ("cache", "duration_ms", "source_ms", "states")

    def __init__(self) -> None:
        self.states: dict[str, dict] = {}
        self.source_ms: dict[str, float] = {}
        self.cache = "miss"  # hit | partial | miss | disabled
        self.duration_ms = 0.0


def source_names(config: PluginConfig, key: DiscoveryKey) -> list[str]:
    """Which sources a discovery with ``key`` runs (QONNX is read whenever FINN is)."""
    enabled = [fw for fw in BUILTIN_FRAMEWORKS if key.wants(fw) and config.framework_enabled(fw)]
    names = [fw for fw in ("brainsmith", "user") if fw in enabled]
    if "user" in names and not config.plugin_dirs:
        names.remove("user")
    if key.frameworks is None or any(fw not in BUILTIN_FRAMEWORKS for fw in key.frameworks):
        names.append("entry_points")
    if "qonnx" in enabled or "finn" in enabled:
        names.append("qonnx")
    if "finn" in enabled:
        names.append("finn")
    return names


def make_source(name: str, config: PluginConfig):
    from brainsmith.plugin.sources import adapters, entry_points, modules

    if name == "brainsmith":
        return modules.brainsmith_source()
    if name == "user":
        return modules.user_source(config.plugin_dirs)
    if name == "entry_points":
        return entry_points.EntryPointSource()
    return {"qonnx": adapters.QONNXAdapter, "finn": adapters.FINNAdapter}[name]()


def discover(config: PluginConfig, key: DiscoveryKey, registry: Registry) -> DiscoveryResult:
    started = time.perf_counter()
    registry.load_timeout = config.load_timeout
    result = DiscoveryResult()
    name = key.index_name(config.plugin_dirs)
    stamp = [INDEX_FORMAT, _brainsmith_version(), name, _scanner_stamp()]
    index = memo.read(name, stamp, config.cache_dir)
    if not _valid_index(index):
        index = None
    fresh = index is not None and (time.time() - index.get("created", 0)) <= config.cache_ttl
    previous = index["sources"] if index else {}
    if index is None:
        log.debug("discovery index %s: none usable, scanning", name)
    if _fast_path_valid(previous, fresh, config, key):
        result.states = previous
        result.cache = "hit"
        log.debug("discovery index %s: within TTL and unchanged, reused", name)
    else:
        if previous:  # the per-file scan data lives beside the index, read only to rescan
            files = memo.read(f"{name}-files", stamp, config.cache_dir)
            for source, state in previous.items():
                if isinstance(files, dict) and isinstance(files.get(source), dict):
                    state["files"] = files[source]
        result.states, changed = _rescan(config, key, previous, fresh, result)
        result.cache = "miss" if index is None or changed else "revalidated"
        light = {
            src: {k: v for k, v in st.items() if k != "files"} for src, st in result.states.items()
        }
        files = {src: st.get("files", {}) for src, st in result.states.items()}
        if memo.write(name, stamp, {"created": time.time(), "sources": light}, config.cache_dir):
            if changed:
                memo.write(f"{name}-files", stamp, files, config.cache_dir)
        else:
            result.cache = "disabled"
    fill_registry(registry, result.states, key, config)
    result.duration_ms = (time.perf_counter() - started) * 1000
    return result


def _valid_index(index: object) -> bool:
    if not isinstance(index, dict) or not isinstance(index.get("sources"), dict):
        return False
    if not isinstance(index.get("created"), int | float):
        return False
    return all(
        isinstance(state, dict) and isinstance(state.get("specs", []), list)
        for state in index["sources"].values()
    )


def _fast_path_valid(previous: dict, fresh: bool, config: PluginConfig, key: DiscoveryKey) -> bool:
    """Within the TTL: the index is used if every source's cheap stamp still matches."""
    if not fresh or not previous:
        return False
    wanted = source_names(config, key)
    if set(previous) != set(wanted):
        return False
    for state in previous.values():
        recorded = state.get("stamp")
        if not isinstance(recorded, list):
            return False
        if stamp_paths([entry[0] for entry in recorded]) != recorded:
            return False
    return True


_CONTENT_KEYS = ("files", "listing", "root")  # what the specs are derived from


def _rescan(config, key, previous: dict, fresh: bool, result: DiscoveryResult):
    sources = {name: make_source(name, config) for name in source_names(config, key)}
    states: dict[str, dict] = {}
    changed: set[str] = set()
    rescanned: set[str] = set()
    for name, source in sources.items():
        t0 = time.perf_counter()
        old = previous.get(name)
        if fresh and old is not None and source.stamp(old) == old.get("stamp"):
            states[name] = old
            log.debug("source %s: unchanged", name)
        else:
            try:
                state = source.scan(old)
            except Exception as exc:  # one broken source never stops discovery
                log.warning("plugin source %s failed: %s: %s", name, type(exc).__name__, exc)
                state = {
                    "specs": [],
                    "stamp": [],
                    "problems": [[name, name, f"{type(exc).__name__}: {exc}"]],
                }
            # The specs are always the ones just derived from the scan, never the old
            # index's: an unchanged source only spares rewriting its scan data.
            if old is not None and all(state.get(k) == old.get(k) for k in _CONTENT_KEYS):
                log.debug("source %s: revalidated, unchanged", name)
            else:
                changed.add(name)
                log.debug("source %s: scanned", name)
            states[name] = state
            rescanned.add(name)
        result.source_ms[name] = (time.perf_counter() - t0) * 1000
    # Adapter specs depend on both QONNX and FINN class tables.
    for name in ("qonnx", "finn"):
        state = states.get(name)
        if state is not None and "files" in state and (name in rescanned or "qonnx" in changed):
            t0 = time.perf_counter()
            adapter = sources[name]
            index = adapter.index([states[n] for n in ("qonnx", "finn") if n in states])
            state["specs"], state["problems"] = adapter.specs(state, index)
            result.source_ms[name] += (time.perf_counter() - t0) * 1000
    return states, changed


def fill_registry(
    registry: Registry, states: dict, key: DiscoveryKey, config: PluginConfig
) -> None:
    for source_name, state in states.items():
        for record in state.get("problems", []):
            registry.report(*[str(part) for part in record[:3]])
        for record in state.get("specs", []):
            try:
                spec = PluginSpec.from_record(record)
            except ValueError as exc:
                reason = f"malformed index record ({exc}); ignored"
                registry.report(source_name, _record_label(record), reason)
                continue
            if not from_source(spec, source_name, state, config):
                registry.report(
                    source_name,
                    spec.qualified_name,
                    f"index names {spec.target}, outside this source; ignored",
                )
                continue
            if spec.type not in key.types or not key.wants(spec.framework):
                continue
            if (
                not config.framework_enabled(spec.framework)
                and spec.framework in BUILTIN_FRAMEWORKS
            ):
                continue
            if any(k.endswith("brainsmith_version") for k in spec.metadata):
                from brainsmith.plugin.versions import incompatibility

                reason = incompatibility(spec.metadata)
                if reason:
                    spec.error = f"unavailable: {reason}"
            registry.add(spec)


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

    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, name) for name in ("discovery.py", "metadata.py", "spec.py")]
    sources = os.path.join(here, "sources")
    paths += [os.path.join(sources, n) for n in sorted(os.listdir(sources)) if n.endswith(".py")]
    return sum(entry[1] for entry in stamp_paths(paths)) & 0xFFFFFFFFFFFF


def _brainsmith_version() -> str:
    from brainsmith import __version__

    return __version__
