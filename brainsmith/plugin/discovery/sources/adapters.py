"""Framework adapters: a framework's transforms, kernels, backends and build steps, read from
its installed sources (``ast``), so listing them imports neither FINN, torch nor onnx.

This module is the contract every adapter fulfils and the part they share: finding the
installed tree, scanning it incrementally, resolving subclasses; and the hooks through which
the hub asks a framework what only it knows (``plugin/adapters.py`` names the adapters).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
import time

from brainsmith.plugin.discovery.sources import pyscan
from brainsmith.plugin.discovery.sources.classindex import ClassIndex
from brainsmith.plugin.discovery.sources.distributions import is_editable, owner_of, stamped_files
from brainsmith.plugin.discovery.sources.package_scan import (
    KnownFacts,
    facts_of,
    folder_stamps,
    scan_folder,
)
from brainsmith.plugin.discovery.sources.pyscan import scan_tree
from brainsmith.plugin.discovery.stamps import stamp_paths, unchanged

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.plugin.discovery.sources import ModuleFacts, Row, State, StoredScan
    from brainsmith.plugin.spec import PluginSpec

    # (build option, problem, what is expected, a suggestion or "")
    TargetProblem = tuple[str, str, str, str]


def locate_package(name: str) -> str | None:
    """The folder of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations or spec.origin in (None, "namespace"):
        return None
    return next(iter(spec.submodule_search_locations))


def stage_of(module: str, is_package: bool = False) -> str:
    """``finn.transformation.streamline.reorder`` -> ``streamline``; top-level -> ``general``."""
    parts = module.split(".")
    if "transformation" in parts:
        rest = parts[parts.index("transformation") + 1 :]
        return rest[0] if len(rest) > 1 or (rest and is_package) else "general"
    return parts[1] if len(parts) > 1 else "general"


class FrameworkAdapter:
    """Discovers one framework's plugins from its installed source tree.

    Installed with pip, the tree changes only through pip, which rewrites the distribution's
    metadata: within the TTL its stamp is the package folder and those files. A tree that is
    not a plain install (an editable install, a checkout on ``PYTHONPATH``) is stamped file
    by file, like a plugin folder. After the TTL every file is checked.
    """

    framework = ""

    # -- what the hub asks of a framework beyond its plugins (no scan needed) ---------------
    install_hint = ""  # how to install the framework, for "not installed" messages
    prepares: tuple[str, ...] = ()  # module prefixes to prepare() the framework for

    @classmethod
    def prepare(cls) -> None:
        """Make the framework usable in this process before a module in ``prepares`` imports."""

    @classmethod
    def serves(cls, spec: PluginSpec, obj: object) -> bool:
        """Whether ``obj`` is what this framework registers as ``spec`` (checked before it is
        served, whatever an index says): a ``Transformation`` subclass for a transform."""
        if spec.type != "transform":
            return False
        from qonnx.transformation.base import Transformation

        return isinstance(obj, type) and issubclass(obj, Transformation)

    @classmethod
    def target_problems(cls, part: str | None, board: str | None) -> list[TargetProblem]:
        """Why a build's ``fpga_part`` or ``board`` is not one this framework builds for."""
        return []

    @classmethod
    def layer_loaded(cls, registry: Any, spec: PluginSpec, obj: object) -> None:
        """A kernel or backend class was served: register it where the framework looks
        (``registry``: the process's ``Registry``, a layer above this contract)."""

    # -- facts shipped for a known release: its files need no parsing -----------------------
    known_facts_file = ""  # JSON written by ``write_known_facts`` (brainsmith/frameworks/known)

    @classmethod
    def scanner_digest(cls) -> str:
        """Changes whenever the code that extracts per-file facts changes: facts shipped by
        another scanner are never used."""
        digest = hashlib.sha256()
        for path in (__file__, pyscan.__file__, sys.modules[cls.__module__].__file__ or ""):
            with open(path, "rb") as handle:
                digest.update(handle.read())
        return digest.hexdigest()

    @classmethod
    def known_facts(cls) -> KnownFacts:
        """``{relpath: [sha256, facts]}`` shipped for a release of the framework; a file whose
        content has that digest is not parsed (empty when none is shipped or it is stale)."""
        if not cls.known_facts_file:
            return {}
        try:
            with open(cls.known_facts_file, encoding="utf-8") as handle:
                shipped = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(shipped, dict) or shipped.get("scanner") != cls.scanner_digest():
            return {}
        files = shipped.get("files")
        return files if isinstance(files, dict) else {}

    def write_known_facts(self) -> int:
        """Write the facts of every file of the installed tree to ``known_facts_file``
        (parsed afresh); returns the number of files."""
        if self.root is None:
            raise FileNotFoundError(f"{self.framework} is not installed")
        files, _ = scan_folder(self.root, self.framework, None, self.extract)
        known = {}
        for rel, entry in sorted(files.items()):
            facts = facts_of(entry)
            if "error" not in facts:
                with open(os.path.join(self.root, rel), "rb") as handle:
                    known[rel] = [hashlib.sha256(handle.read()).hexdigest(), facts]
        shipped = {"framework": self.framework, "scanner": self.scanner_digest(), "files": known}
        os.makedirs(os.path.dirname(self.known_facts_file), exist_ok=True)
        with open(self.known_facts_file, "w", encoding="utf-8") as handle:
            json.dump(shipped, handle, separators=(",", ":"), sort_keys=True)
            handle.write("\n")
        return len(known)

    def __init__(self) -> None:
        self.root = locate_package(self.framework)

    def is_available(self) -> bool:
        return self.root is not None

    def scan(
        self, previous: State | None, full: bool = True, scan_data: StoredScan = lambda: None
    ) -> State:
        """Rescan the framework's tree; files whose stamp is unchanged reuse ``scan_data()``."""
        previous = previous if previous and previous.get("root") == self.root else None
        if previous and not full and unchanged(previous.get("stamp")):
            return previous  # only sys.path changed, and the framework resolves as before
        if self.root is None:
            return {"root": None, "files": {}, "specs": [], "problems": [], "stamp": [],
                    "checked": time.time()}  # fmt: skip
        return self._scanned(self.root, scan_data() if previous is not None else None)

    def _scanned(self, root: str, old: object) -> State:
        """The state of the tree at ``root``, reusing the facts of ``old`` scan data."""
        files, walked = scan_folder(root, self.framework, old, self.extract, self.known_facts())
        owner = owner_of(root)
        editable = owner is None or is_editable(owner)
        stamp = stamp_paths([root, *(stamped_files(owner) if owner else [])])
        if editable:
            stamp += folder_stamps(root, files, walked)
        return {
            "root": root,
            "editable": editable,
            "files": files,
            "specs": [],
            "problems": [],
            "stamp": stamp,
            "checked": time.time(),
        }

    def extract(self, tree: ast.Module, module: str, is_package: bool) -> ModuleFacts:
        """Per-file facts: classes, functions and imports (a framework adds its registrations)."""
        return scan_tree(tree, module, is_package)

    def index(self, states: list[State]) -> ClassIndex:
        index = ClassIndex()
        for state in states:
            for *_, data in state.get("files", {}).values():
                if "error" not in data:
                    index.add_module(data["module"], data)
        return index

    def specs(self, state: State, index: ClassIndex) -> tuple[list[Row], list[Row]]:
        """Spec records and problem records for this framework."""
        specs: list[Row] = []
        problems: list[Row] = []
        for rel, (*_, data) in sorted(state.get("files", {}).items()):
            if "error" in data:
                problems.append([self.framework, rel, data["error"]])
                continue
            module = data["module"]
            source = os.path.join(state["root"] or "", rel)
            for name, (_, line, doc) in data["classes"].items():
                if index.is_subclass(f"{module}.{name}"):
                    stage = stage_of(module, rel.endswith("__init__.py"))
                    meta = {"stage": stage, "description": doc, "line": line}
                    specs.append(
                        ["transform", name, self.framework, f"{module}:{name}", meta, source]
                    )
        specs.extend(self.extra_specs(state, index))
        return specs, problems

    def extra_specs(self, state: State, index: ClassIndex) -> list[Row]:
        return []
