"""Module scanning: brainsmith's own plugin packages and the user's plugin folders.

Decorated plugins are read from source; their decorator keywords must be literals so the
hub can list them without importing anything.
"""

from __future__ import annotations

import os

from brainsmith.plugin.metadata import validate_metadata
from brainsmith.plugin.sources.package_scan import folder_stamps, scan_folder
from brainsmith.plugin.sources.pyscan import scan_tree


def plugin_records(framework: str, root: str, files: dict, path_entry: str | None = None):
    """(spec records, problem records) for the decorated plugins found in ``files``."""
    specs: list[list] = []
    problems: list[list] = []
    for rel, (_, _, data) in sorted(files.items()):
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
            if path_entry:
                metadata["path_entry"] = path_entry
            target = f"{data['module']}:{qualname}"
            specs.append([plugin_type, name, framework, target, metadata, source])
    return specs, problems


class FolderSource:
    """Decorated plugins in a folder tree (a package of brainsmith, or a user folder)."""

    def __init__(self, framework: str, roots: list[tuple[str, str]], path_entry: bool) -> None:
        self.framework = framework
        self.roots = roots  # (folder, dotted prefix)
        self.path_entry = path_entry

    def stamp(self, state: dict) -> list:
        stamps: list = []
        for root, _ in self.roots:
            stamps.extend(folder_stamps(root, state.get("files", {}).get(root, {})))
        return stamps

    def scan(self, previous: dict | None) -> dict:
        old = (previous or {}).get("files", {})
        state: dict = {"files": {}, "specs": [], "problems": []}
        for root, prefix in self.roots:
            if not os.path.isdir(root):
                state["problems"].append(
                    [
                        self.framework,
                        root,
                        f"plugin folder {root} does not exist (check plugin_dirs)",
                    ]
                )
                state["files"][root] = {}
                continue
            files = scan_folder(root, prefix, old.get(root), scan_tree)
            state["files"][root] = files
            specs, problems = plugin_records(
                self.framework, root, files, root if self.path_entry else None
            )
            state["specs"].extend(specs)
            state["problems"].extend(problems)
        state["stamp"] = self.stamp(state)
        return state


def brainsmith_source() -> FolderSource:
    from brainsmith.plugin.trust import brainsmith_roots

    return FolderSource("brainsmith", brainsmith_roots(), path_entry=False)


def user_source(folders: tuple[str, ...]) -> FolderSource:
    return FolderSource("user", [(folder, "") for folder in folders], path_entry=True)
