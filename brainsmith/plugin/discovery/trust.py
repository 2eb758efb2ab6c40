"""Whether an index record is one its source could have written.

The persisted index lives in the user's own cache directory, but it is data, and data is
checked: a record may only name a module of its own source (a file under that source's
folders, or a package an installed distribution declares), under that source's framework
name, with ``plugin_dir`` only for a configured plugin folder. What is then imported is
checked again before it is served (``loading.not_this_plugin``). These checks are string
comparisons, cheap enough for every warm start.
"""

from __future__ import annotations

import os

from brainsmith.plugin.config import PluginConfig
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


BUILTIN_FRAMEWORKS = ("brainsmith", "user", "qonnx", "finn")
OWN_PACKAGES = ("transforms", "kernels", "backends", "steps")  # brainsmith's plugin packages


def from_source(spec: PluginSpec, source: str, state: dict[str, Any], config: PluginConfig) -> bool:
    """True when ``source`` (whose index state is ``state``) could have written ``spec``;
    a plugin folder's source is ``user:<folder>``."""
    if source.startswith("user:"):
        return _in_plugin_folder(spec, source[5:], config)
    if "plugin_dir" in spec.metadata:
        return False  # only configured plugin folders are imported as folder packages
    if source == "entry_points":
        return _declared_by_a_distribution(spec, state)
    if spec.framework != source:
        return False
    if source == "brainsmith":
        return bool(spec.source) and _file_of_module(spec, brainsmith_roots())
    root = state.get("root")  # QONNX and FINN: the installed package folder
    if not isinstance(root, str) or not spec.module.startswith(source + "."):
        return False
    return not spec.source or _file_of_module(spec, [(root, source)])


def brainsmith_roots() -> list[tuple[str, str]]:
    """(folder, dotted package) of brainsmith's own plugin packages."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [(os.path.join(package, sub), f"brainsmith.{sub}") for sub in OWN_PACKAGES]


def _file_of_module(spec: PluginSpec, roots: list[tuple[str, str]]) -> bool:
    """The record's source file is the file its module is read from, under one of ``roots``.

    (String operations only: this runs for every record of every warm start.)"""
    module, source = spec.module, spec.source
    for folder, prefix in roots:
        if module == prefix:
            return source == f"{folder}{os.sep}__init__.py"
        if prefix and not module.startswith(prefix + "."):
            continue
        base = folder + os.sep + module[len(prefix) :].lstrip(".").replace(".", os.sep)
        if source in (base + ".py", f"{base}{os.sep}__init__.py"):
            return True
    return False


def _in_plugin_folder(spec: PluginSpec, folder: str, config: PluginConfig) -> bool:
    """A user plugin's module is a file of a configured plugin folder, named after its path
    inside the folder's package."""
    from brainsmith.plugin.discovery.folders import module_of

    if folder not in config.plugin_dirs or spec.framework != "user":
        return False
    if spec.metadata.get("plugin_dir") != folder:
        return False
    rel = os.path.relpath(spec.source, folder) if spec.source else os.pardir
    if rel.startswith(os.pardir) or os.path.isabs(rel) or not rel.endswith(".py"):
        return False
    return module_of(folder, rel) == spec.module and os.path.isfile(spec.source)


def _declared_by_a_distribution(spec: PluginSpec, state: dict[str, Any]) -> bool:
    """A pip package's module belongs to a package an entry point of the distribution whose
    name is the record's framework declares (a built-in framework's name is never one)."""
    from brainsmith.plugin.names import normalise

    if spec.framework in BUILTIN_FRAMEWORKS:
        return False
    top = spec.module.partition(".")[0]
    for row in state.get("listing", []):
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(f, str) for f in row)):
            continue
        dist, _version, name, value = row
        declared = value.partition(":")[0].strip().partition(".")[0]
        if declared == top and normalise(dist or name) == spec.framework:
            return True
    return False
