"""Pip-installed plugin packages: entry points in groups ``brainsmith.plugins`` and
``brainsmith.plugin_packages``.

An entry point of ``brainsmith.plugins`` names a module; stevedore imports it and the
decorated plugins in its namespace are registered under the distribution's name. An entry
point of ``brainsmith.plugin_packages`` names a package whose files are read from source like
a plugin folder (decorator keywords must be literals): nothing is imported until a plugin is
used, so a package whose layers subclass FINN's keeps discovery fast. Every distribution is
recorded on its own and stamped by its metadata files (every pip install rewrites them), by
the files it was read from, and by the files of the modules it imported (an edit in place, or
in the source tree of an editable install), so only a new, changed or previously failing
distribution is read again. A distribution that fails to import, or whose metadata is broken,
is reported by name (or folder) with the reason; the others are unaffected.
"""

from __future__ import annotations

import os
import sys
import time

from brainsmith.plugin.discovery.sources.distributions import is_editable, stamped_files
from brainsmith.plugin.discovery.stamps import stamp_paths, unchanged
from brainsmith.plugin.names import normalise

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.metadata import Distribution as Installed
    from importlib.metadata import EntryPoint
    from typing import TypedDict, TypeGuard

    from stevedore.extension import Extension

    from brainsmith.plugin.discovery.sources import Row, State, StoredScan
    from brainsmith.plugin.discovery.stamps import Stamp

    class Listed(TypedDict):
        """An installed distribution with plugin entry points, as ``read_listing`` finds it."""

        name: str
        version: str
        rows: list[list[str]]  # [distribution, version, entry point name, value]
        source: list[str]  # the values of its ``brainsmith.plugin_packages`` entry points

    class Distribution(Listed):
        """A distribution's record in the scan data: what reading it gave."""

        stamp: list[Stamp]
        specs: list[Row]
        problems: list[Row]


GROUP = "brainsmith.plugins"  # modules imported to read their plugins
SOURCE_GROUP = "brainsmith.plugin_packages"  # packages read from source, imported on use
GROUPS = (GROUP, SOURCE_GROUP)


def read_listing() -> tuple[dict[str, Listed], list[Row]]:
    """``({metadata folder: {"name", "version", "rows"}}, problem records)`` of every installed
    distribution with ``brainsmith.plugins`` entry points (the first of a name on ``sys.path``
    wins, as for imports). Rows are ``[distribution, version, entry point name, value]``."""
    from importlib.metadata import distributions

    found: dict[str, Listed] = {}
    problems: list[Row] = []
    seen: set[str] = set()
    for dist in distributions():
        where = str(getattr(dist, "_path", "") or "")
        listed, problem = _listed(dist, where)
        if problem is not None:
            problems.append(problem)
        if listed is None or normalise(listed["name"]) in seen:
            continue
        seen.add(normalise(listed["name"]))
        found[where] = listed
    return found, problems


def _listed(dist: Installed, where: str) -> tuple[Listed | None, Row | None]:
    """A distribution's plugin entry points (None when it has none), or the problem that
    hides them (one unreadable distribution never hides the others)."""
    try:
        entries = _plugin_entries(dist)
    except Exception as exc:
        return None, ["entry_points", f"installation {where}", f"unreadable entry points: {exc}"]
    if not entries:
        return None, None
    name, version = _identity(dist)
    if name is None:
        reason = (
            "its METADATA names no distribution (left by an interrupted pip install?); "
            "its entry points are skipped: reinstall the package or delete the folder"
        )
        return None, ["entry_points", f"incomplete installation {where}", reason]
    rows = sorted([name, version, ep_name, value] for ep_name, value, _ in entries)
    from_source = sorted(value for _, value, group in entries if group == SOURCE_GROUP)
    return {"name": name, "version": version, "rows": rows, "source": from_source}, None


def _plugin_entries(dist: Installed) -> list[tuple[str, str, str]]:
    """``(name, value, group)`` of a distribution's entry points in brainsmith's groups."""
    entries = [(ep.name, ep.value, ep.group) for ep in dist.entry_points]
    return [entry for entry in entries if entry[2] in GROUPS]


def _identity(dist: Installed) -> tuple[str | None, str]:
    """A distribution's name (None when its metadata names none) and version."""
    try:
        name, version = dist.metadata["Name"], dist.version
    except Exception:
        return None, ""
    if not isinstance(name, str) or not name.strip():
        return None, ""
    return name, str(version or "")


def listing() -> list[list[str]]:
    """``[distribution, version, entry point name, value]`` of every plugin entry point."""
    return sorted(row for info in read_listing()[0].values() for row in info["rows"])


def declared_packages() -> set[str]:
    """Top-level packages named by installed distributions' plugin entry points."""
    return {top_package(value) for *_, value in listing()}


def top_package(value: str) -> str:
    return value.partition(":")[0].strip().partition(".")[0]


class EntryPointSource:
    """Every installed distribution's plugins; ``reload_modules`` re-imports changed ones in a
    process that imported them before (a long-running process)."""

    framework = "*"

    def __init__(self, reload_modules: bool = False) -> None:
        self.reload_modules = reload_modules
        self.imported: set[str] = set()  # top-level packages this scan imported afresh

    def scan(
        self, previous: State | None, full: bool = True, scan_data: StoredScan = lambda: None
    ) -> State:
        """Read the installed entry points again; a distribution whose listing and stamps are
        unchanged (and that loaded without problems) reuses its record in ``scan_data()``."""
        dists = _stored_dists(scan_data() if previous is not None else None)
        found, problems = read_listing()
        state_dists: dict[str, Distribution] = {}
        for where, info in found.items():
            old = dists.get(where)
            state_dists[where] = old if _still_valid(old, info) else self._load(where, info)
        return summarise(state_dists, problems)

    def _load(self, where: str, info: Listed) -> Distribution:
        """Import one distribution's entry-point modules and read its decorated plugins."""
        rows = info["rows"]
        framework = normalise(info["name"])
        tops = sorted({top_package(value) for *_, value in rows})
        if self.reload_modules:
            forget_modules(tops)
        invalidate_import_caches()
        problems: list[Row] = []
        stamp = stamp_paths(stamped_files(where))  # before anything is read
        imported = [row for row in rows if row[3] not in info["source"]]
        imported_tops = {top_package(row[3]) for row in imported}
        specs = _imported_specs(imported, framework, problems) if imported else []
        self.imported.update(imported_tops)
        for value in info["source"]:
            found, read, stamps = _read_package(value, framework, where)
            specs.extend(found)
            problems.extend(read)
            stamp += stamps
        stamp += stamp_paths(_module_files(imported_tops))
        return {**info, "stamp": stamp, "specs": specs, "problems": problems}


def _imported_specs(rows: list[list[str]], framework: str, problems: list[Row]) -> list[Row]:
    """Spec records of the entry points ``rows`` (of ``brainsmith.plugins``): their modules
    imported, their decorated plugins read; failures are added to ``problems``."""
    specs: list[Row] = []
    for extension in _load_entry_points(rows, framework, problems):
        specs.extend(_plugins_of(extension.plugin, extension.entry_point, framework, problems))
    return specs


def _module_files(tops: set[str]) -> list[str]:
    """The files of the imported modules of the top-level packages ``tops``, sorted."""
    return sorted(
        file
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] in tops
        and isinstance(file := getattr(module, "__file__", None), str)
    )


def _read_package(
    value: str, framework: str, where: str
) -> tuple[list[Row], list[Row], list[Stamp]]:
    """(spec records, problems, stamps) of the package ``value`` names, read from source
    (``brainsmith.plugin_packages``); found without importing it, on ``sys.path`` or through
    the editable import hook of its distribution (metadata folder ``where``)."""
    from brainsmith.plugin.discovery.sources.modules import plugin_records
    from brainsmith.plugin.discovery.sources.package_scan import (
        folder_stamps,
        link_out,
        scan_folder,
    )
    from brainsmith.plugin.discovery.sources.pyscan import scan_tree

    label = f"{framework} (entry point {value} in {SOURCE_GROUP})"
    name = value.strip()
    if not name.isidentifier():
        reason = "a brainsmith.plugin_packages entry point names a top-level package, e.g. acme"
        return [], [[framework, label, f"{value!r} is not one: {reason}"]], []
    folder, error, hooks = _package_folder(name, where)
    if folder is None:
        return [], [[framework, label, error]], stamp_paths(hooks)
    installed_in = os.path.dirname(folder)
    target = link_out(folder, installed_in)
    if target is not None:  # the package folder is a link: none of what it leads to is read
        reason = (
            f"a link out of the package: its folder leads out of {installed_in}, where it is "
            f"installed, to {target}; not read"
        )
        return [], [[framework, folder, reason]], stamp_paths([folder, *hooks])
    files, walked = scan_folder(folder, name, None, scan_tree)
    specs, problems = plugin_records(framework, folder, files)
    if not specs and not problems:
        reason = "defines no decorated plugins (@transform, @kernel, @backend, @step)"
        problems.append([framework, label, reason])
    return specs, problems, [*folder_stamps(folder, files, walked), *stamp_paths(hooks)]


def _package_folder(name: str, where: str) -> tuple[str | None, str, list[str]]:
    """``(folder, problem, hook files)`` of the top-level package ``name``, where an import
    finds it: ``sys.path`` first, then the distribution's editable import hooks."""
    import importlib.machinery

    from brainsmith.plugin.discovery.sources import editable

    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}", []
    if spec is not None:
        folders = list(spec.submodule_search_locations or ())
        if folders:
            return folders[0], "", []
        return None, f"{name} is a module, not a package (a folder with __init__.py)", []
    folder, error, hooks = editable.locate(name, where)
    if folder is not None or error:
        return folder, error, hooks
    error = f"no package {name} is installed"
    if is_editable(where):
        error += f": its editable install leads to none; {editable.reinstall(where)}"
    return None, error, hooks


def _stored_dists(known: object) -> dict[str, object]:
    """The distributions' records in the scan data (unchecked: read from a cache file)."""
    dists = known.get("dists") if isinstance(known, dict) else None
    return dists if isinstance(dists, dict) else {}


def _still_valid(old: object, info: Listed) -> TypeGuard[Distribution]:
    """``old``, a distribution's record in the scan data, holds for its listing ``info``: the
    same entry points, loaded without problems, from files that have not changed since."""
    return (
        _complete(old)
        and old["rows"] == info["rows"]
        and old["source"] == info["source"]
        and not old["problems"]
        and unchanged(old["stamp"])
    )


def _complete(record: object) -> TypeGuard[Distribution]:
    """A distribution's record in the scan data has every field ``summarise`` reads (it was
    read from a cache file another process may have written)."""
    fields = ("rows", "source", "stamp", "specs", "problems")
    return isinstance(record, dict) and all(isinstance(record.get(f), list) for f in fields)


def invalidate_import_caches() -> None:
    """What ``importlib.invalidate_caches()`` does, without its race: it deletes entries of
    ``sys.path_importer_cache`` by key, so it raises ``KeyError`` when another thread (another
    discovery, ``load_plugin``, any library) deleted the same entry first; the "no finder"
    entries of ``sys.path`` folders that do not exist come back with every import. Here an
    entry is removed with ``pop``, and every finder's own cache is cleared."""
    for path, finder in list(sys.path_importer_cache.items()):
        if finder is None or not os.path.isabs(path):
            sys.path_importer_cache.pop(path, None)
        elif hasattr(finder, "invalidate_caches"):
            finder.invalidate_caches()
    _invalidate_meta_path()
    bootstrap = sys.modules.get("importlib._bootstrap_external")
    namespace_path = getattr(bootstrap, "_NamespacePath", None)
    if isinstance(getattr(namespace_path, "_epoch", None), int):
        namespace_path._epoch += 1  # type: ignore[union-attr]  # namespace packages look again


def _invalidate_meta_path() -> None:
    """Clear the caches of the finders on ``sys.meta_path`` (``PathFinder``'s are those of
    ``sys.path_importer_cache``)."""
    import importlib.machinery

    for meta_finder in list(sys.meta_path):
        if meta_finder is importlib.machinery.PathFinder:
            continue
        if hasattr(meta_finder, "invalidate_caches"):
            meta_finder.invalidate_caches()


def summarise(dists: dict[str, Distribution], problems: list[Row]) -> State:
    """The source state: what each distribution gave, plus the listing's own problems."""
    return {
        "files": {"dists": dists},
        "packages": _packages(dists),
        "listing": sorted(row for d in dists.values() for row in d["rows"]),
        "specs": [spec for d in dists.values() for spec in d["specs"]],
        "problems": [*problems, *(p for d in dists.values() for p in d["problems"])],
        "stamp": [stamp for d in dists.values() for stamp in d["stamp"]],
        "checked": time.time(),
    }


def _packages(dists: dict[str, Distribution]) -> dict[str, list[Stamp]]:
    """Top-level package -> the stamp of its distribution (what a reload checks)."""
    packages: dict[str, list[Stamp]] = {}
    for d in dists.values():
        for top in sorted({top_package(value) for *_, value in d["rows"]}):
            packages[top] = d["stamp"]
    return packages


def _load_entry_points(
    rows: list[list[str]], framework: str, problems: list[Row]
) -> list[Extension[object]]:
    """stevedore's extensions for ``rows``; each failure becomes a problem naming the package."""
    from importlib.metadata import EntryPoint

    from stevedore import ExtensionManager

    from brainsmith.plugin.containment import contained

    class Contained(EntryPoint):
        """An entry point whose import is contained: a package that calls ``sys.exit()``,
        raises ``KeyboardInterrupt`` or fails an ``assert`` at import is reported like any
        other broken package (stevedore lets those three through its failure callback)."""

        def load(self) -> object:
            try:
                with contained():
                    return super().load()
            except AssertionError as exc:
                raise ImportAssertion(exc) from exc

    entry_points = [Contained(name=name, value=value, group=GROUP) for _, _, name, value in rows]

    class Listed(ExtensionManager[object]):
        """stevedore over the entry points read here (its own listing is cached per process
        and on disk by float32 mtimes, so it can miss installs)."""

        def list_entry_points(self) -> list[EntryPoint]:
            return list(entry_points)

    def failed(_manager: object, entry_point: EntryPoint, exc: BaseException) -> None:
        problems.append(
            [
                framework,
                f"{framework} (entry point {entry_point.name} = {entry_point.value})",
                _reason(exc),
            ]
        )

    try:
        return list(Listed(GROUP, invoke_on_load=False, on_load_failure_callback=failed))
    except Exception as exc:  # stevedore lets AssertionError through its callback
        problems.append([framework, framework, f"{type(exc).__name__}: {exc}"])
        return []


def _plugins_of(
    module: object, entry_point: EntryPoint, framework: str, problems: list[Row]
) -> list[Row]:
    """Spec records of the decorated plugins in an entry point's module namespace."""
    try:
        specs = _decorated(module, framework, problems)
    except Exception as exc:  # a module attribute's code raised while being read
        problems.append([framework, framework, f"reading {entry_point.value}: {_reason(exc)}"])
        return []
    if not specs:
        problems.append(
            [
                framework,
                framework,
                f"entry point {entry_point.value} defines no "
                "decorated plugins (@transform, @kernel, @backend, @step)",
            ]
        )
    return specs


def forget_modules(packages: list[str]) -> None:
    """Drop imported modules of ``packages`` so that their next import reads the new code."""
    from brainsmith.plugin.discovery.folders import discard_bytecode

    names = [n for n in sys.modules if n.partition(".")[0] in packages]
    discard_bytecode([module for n in names if (module := sys.modules.pop(n, None)) is not None])


def _decorated(module: object, framework: str, problems: list[Row]) -> list[Row]:
    """Spec records of the decorated plugins in an entry point's module namespace."""
    from brainsmith.plugin.containment import contained
    from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE

    specs: list[Row] = []
    with contained():
        declared = _declared_versions(module, framework, problems)
        for obj in list(vars(module).values()) if hasattr(module, "__dict__") else []:
            info = getattr(obj, PLUGIN_ATTRIBUTE, None) if _is_plugin_like(obj) else None
            if not isinstance(info, dict) or PLUGIN_ATTRIBUTE not in vars(obj):
                continue
            own = {k: v for k, v in info.items() if k not in ("type", "name")}
            metadata = {**declared, **own}
            source = getattr(sys.modules.get(obj.__module__), "__file__", "") or ""
            target = f"{obj.__module__}:{obj.__qualname__}"
            specs.append([info["type"], info["name"], framework, target, metadata, source])
    return specs


class ImportAssertion(Exception):
    """An ``AssertionError`` raised while a package's entry-point module imported."""

    def __init__(self, original: AssertionError) -> None:
        from brainsmith.plugin.containment import origin

        super().__init__(f"AssertionError: {original} at {origin(original)}")


def _reason(exc: BaseException) -> str:
    from brainsmith.plugin.containment import PluginExit

    if isinstance(exc, PluginExit | ImportAssertion):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _declared_versions(module: object, framework: str, problems: list[Row]) -> dict[str, str]:
    """Version constraints of the package's ``BRAINSMITH_PLUGIN`` dict, for each of its plugins."""
    from brainsmith.plugin.lifecycle.versions import (
        PACKAGE_ATTRIBUTE,
        VERSION_KEYS,
        package_metadata,
    )

    declared = getattr(module, PACKAGE_ATTRIBUTE, None)
    if declared is None:
        return {}
    where = f"{getattr(module, '__name__', framework)}.{PACKAGE_ATTRIBUTE}"
    metadata, issues = package_metadata(declared, where)
    problems.extend([framework, framework, issue] for issue in issues)
    return {k: v for k, v in metadata.items() if k in VERSION_KEYS}


def _is_plugin_like(obj: object) -> bool:
    return isinstance(obj, type) or callable(obj)
