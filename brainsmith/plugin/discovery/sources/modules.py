"""Module scanning: brainsmith's own plugin packages and the user's plugin folders.

Decorated plugins are read from source; their decorator keywords must be literals so the
hub can list them without importing anything. A user plugin folder is a package of its own
(``brainsmith.plugin.discovery.folders``), so its modules have unique names.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import time

from brainsmith.plugin.discovery import folders as plugin_folders
from brainsmith.plugin.discovery.sources.package_scan import facts_of, folder_stamps, scan_folder
from brainsmith.plugin.discovery.sources.pyscan import scan_tree
from brainsmith.plugin.discovery.stamps import stamp_paths
from brainsmith.plugin.discovery.trust import brainsmith_roots
from brainsmith.plugin.metadata import validate_metadata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.plugin.discovery.sources import (
        ModuleFacts,
        Row,
        ScannedFile,
        State,
        StoredScan,
    )


def plugin_records(
    framework: str, root: str, files: dict[str, Any], plugin_dir: str | None = None
) -> tuple[list[Row], list[Row]]:
    """(spec records, problem records) for the decorated plugins found in ``files``."""
    specs: list[Row] = []
    problems: list[Row] = []
    for rel, (*_, data) in sorted(files.items()):
        source = os.path.join(root, rel)
        if "error" in data:
            problems.append([framework, os.path.relpath(source), data["error"]])
            continue
        for plugin_type, qualname, _kind, line, kwargs, error, doc in data["plugins"]:
            label = f"{source}:{line}"
            if error:
                problems.append([framework, f"{qualname} ({label})", error])
                continue
            metadata, issues = validate_metadata(plugin_type, kwargs)
            if issues:
                reason = f"{label}: invalid @{plugin_type}: " + "; ".join(issues)
                problems.append([framework, qualname, reason])
                continue
            name = metadata.pop("name", qualname)
            metadata.setdefault("description", doc)
            if not metadata["description"]:
                metadata["description"] = doc
            metadata["line"] = line
            if plugin_dir:
                metadata["plugin_dir"] = plugin_dir
            target = f"{data['module']}:{qualname}"
            specs.append([plugin_type, name, framework, target, metadata, source])
    return specs, problems


class FolderSource:
    """Decorated plugins in folder trees: brainsmith's own packages, or one user folder."""

    def __init__(
        self, framework: str, roots: list[tuple[str, str]], plugin_dir: str | None = None
    ) -> None:
        self.framework = framework
        self.roots = roots  # (folder, dotted package name)
        self.plugin_dir = plugin_dir

    def scan(
        self, previous: State | None, full: bool = True, scan_data: StoredScan = lambda: None
    ) -> State:
        """Rescan the folders; files whose stamp is unchanged reuse ``scan_data()``."""
        old = scan_data() if previous is not None else None
        old = old if isinstance(old, dict) else {}
        state: State = {"files": {}, "specs": [], "problems": [], "stamp": []}
        for root, prefix in self.roots:
            if not os.path.isdir(root):
                reason = f"plugin folder {root} does not exist (check plugin_dirs)"
                state["problems"].append([self.framework, root, reason])
                state["files"][root] = {}
                state["stamp"] += stamp_paths([root])  # noticed when it is created
                continue
            files, walked = scan_folder(root, prefix, old.get(root), scan_tree)
            state["files"][root] = files
            specs, problems = plugin_records(self.framework, root, files, self.plugin_dir)
            state["specs"].extend(specs)
            state["problems"].extend(problems)
            state["stamp"] += folder_stamps(root, files, walked)
        if self.plugin_dir:
            state.update(plain_imports_of(self.plugin_dir, state["files"].get(self.plugin_dir, {})))
        state["checked"] = time.time()
        return state


def plain_imports_of(folder: str, files: dict[str, ScannedFile]) -> State:
    """What a folder offers to, and takes from, plain imports (``import helpers``): the names
    of its top-level modules, what an installed module of the same name would shadow, and the
    top-level names each file imports. ``module_clashes`` turns these into problems."""
    provides = plugin_folders.top_level_names(folder)
    shadowed: dict[str, str] = {}
    for name in provides:
        owner = installed_module(name)
        if owner:
            shadowed[name] = owner
    imports = _plain_imports(files, plugin_folders.package_name(folder))
    return {"provides": provides, "shadowed": shadowed, "imports": imports}


def _plain_imports(files: dict[str, ScannedFile], package: str) -> dict[str, list[str]]:
    """The top-level names each file imports, but its own ``package``."""
    imports: dict[str, list[str]] = {}
    for rel, entry in sorted(files.items()):
        heads = _imported_heads(facts_of(entry), package)
        if heads:
            imports[rel] = heads
    return imports


def _imported_heads(data: ModuleFacts, package: str) -> list[str]:
    """The top-level names a file imports, but its own ``package`` (none if unread)."""
    if "error" in data:
        return []
    tops = {target.partition(".")[0] for target in data.get("imports", {}).values()}
    return sorted(h for h in tops if h and h != package and h.isidentifier())


def installed_module(name: str) -> str:
    """Who answers a plain ``import name`` before any plugin folder ("" for nobody)."""
    if name in sys.stdlib_module_names:
        return f"the standard library's {name}"
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, ValueError):
        return ""
    if spec is None:
        return ""
    where = spec.origin or next(iter(spec.submodule_search_locations or ()), "")
    return f"the installed module {name} ({where})"


def module_clashes(folders: list[tuple[str, State]]) -> list[list[str]]:
    """Problems for plain imports in plugin folders that reach a module other than the one
    beside the importing file, or that two folders both provide (in configured order)."""
    providers: dict[str, list[str]] = {}
    shadowed: dict[str, str] = {}
    for folder, state in folders:
        for name in state.get("provides", ()):
            providers.setdefault(name, []).append(folder)
        shadowed.update(state.get("shadowed", {}))
    problems = []
    for folder, state in folders:
        own = set(state.get("provides", ()))
        for rel, names in state.get("imports", {}).items():
            for name in names:
                reason = _clash(name, folder, name in own, providers.get(name, []), shadowed)
                if reason:
                    problems.append(["user", os.path.join(folder, rel), reason])
    return problems


def _clash(
    name: str, folder: str, own: bool, found: list[str], shadowed: dict[str, str]
) -> str | None:
    """Why a plain ``import name`` in ``folder`` (which provides it when ``own``) reaches
    another module than meant; None when it does not. ``found``: the folders providing it."""
    if not found:
        return None
    winner = shadowed.get(name) or _module_path(found[0], name)
    if own and (name in shadowed or found[0] != folder):
        return f"`import {name}` gets {winner}, not {name} beside it; write `from . import {name}`"
    if own or len(found) < 2 or name in shadowed:
        return None
    others = ", ".join(_module_path(f, name) for f in found[1:])
    return f"`import {name}` gets {winner}; {others} has that name too"


def _module_path(folder: str, name: str) -> str:
    path = os.path.join(folder, name + ".py")
    return path if os.path.isfile(path) else os.path.join(folder, name)


def brainsmith_source() -> FolderSource:
    return FolderSource("brainsmith", brainsmith_roots())


def user_source(folder: str) -> FolderSource:
    return FolderSource("user", [(folder, plugin_folders.package_name(folder))], folder)
