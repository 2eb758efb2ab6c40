"""Load plugins from a path on request: a ``.py`` file, a package folder or a compiled
extension module (``.so``). Nothing is loaded from a path unless ``load_plugin`` is called.

Decorated plugins and ``KernelBuilder`` kernels defined while the path is imported are
registered under framework = the plugin's name (the file or folder name, or ``name=``),
e.g. ``tfm.my_ops.FoldBias``. An optional module attribute ``BRAINSMITH_PLUGIN`` is either
a dict (``version``, ``description``, ``author``, ``min_brainsmith_version``,
``max_brainsmith_version``, ``brainsmith_version``) or a ``PluginBundle`` from ``BundleBuilder``,
whose initialize, custom operations and cleanup then run too.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass, replace

from brainsmith.plugin.containment import PluginExit, contained, origin
from brainsmith.plugin.errors import PluginError, PluginLoadError
from brainsmith.plugin.lifecycle import oplock
from brainsmith.plugin.lifecycle.bundles import (
    BundleInfo,
    PluginBundle,
    PluginLifecycleError,
    check_name,
    claim,
    contribute,
    framework_name,
    install,
    not_found,
    run_hook,
    withdraw,
)
from brainsmith.plugin.lifecycle.versions import PACKAGE_ATTRIBUTE, VersionInfo, package_metadata
from brainsmith.plugin.manager import RESET_HOOKS, get_plugin_manager, report_problem
from brainsmith.plugin.registry import Source
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType, ModuleType
    from typing import Any

    from typing_extensions import Buffer

    from brainsmith.plugin.registry import Registry


@dataclass
class LoadedPlugin:
    """One path loaded by ``load_plugin``."""

    info: BundleInfo
    kind: str  # file | package | extension
    module_name: str
    modules: dict[str, ModuleType]
    specs: list[PluginSpec]
    plugin: PluginBundle | None

    @property
    def framework(self) -> str:
        return self.info.framework


def load_plugin(path: str | os.PathLike[str], name: str | None = None) -> BundleInfo:
    """Import the plugin at ``path`` and register what it defines; returns its info."""
    path = os.path.abspath(os.fspath(path))
    kind, stem = _kind(path)
    name = name or stem
    check_name(name)
    framework = framework_name(name)
    with oplock.operation(framework):
        loaded = _loaded(framework)
        if loaded is not None:
            raise PluginLoadError(
                f"plugin '{name}' is already loaded from {loaded.info.path}; "
                f"use reload_plugin('{name}') or unload_plugin('{name}') first"
            )
        module_name = stem if kind == "extension" else re.sub(r"\W", "_", name)
        declared = _static_metadata(path, kind, name)
        return _info_of(_load(path, kind, name, module_name, declared))


def unload_plugin(name: str) -> None:
    """Remove the plugin's plugins from the hub, run its cleanup and forget its modules."""
    with oplock.operation(framework_name(name)):
        failure = _deactivate(_record(name))
    if failure is not None:
        raise failure


def reload_plugin(name: str) -> BundleInfo:
    """Load the plugin again from its path after its files changed.

    The new code is served through ``tfm.X`` and the registry; cached instances are dropped.
    When the new version fails to load, the previous one stays loaded."""
    with oplock.operation(framework_name(name)):
        old = _record(name)
        if old.kind == "extension":
            raise PluginLoadError(
                f"plugin '{old.info.name}' is a compiled extension ({old.info.path}); a loaded "
                "shared library cannot be replaced in a running process: restart it to use "
                "the new build"
            )
        kept = f"the previous version of '{old.info.name}' stays loaded"
        try:
            declared = _static_metadata(old.info.path, old.kind, old.info.name)
        except PluginError as exc:
            raise PluginLoadError(f"{exc}; {kept}") from exc
        _deactivate(old)  # a failing cleanup is reported and does not stop the reload
        try:
            record = _load(old.info.path, old.kind, old.info.name, old.module_name, declared)
        except BaseException as exc:  # a real Ctrl-C too: the previous version comes back
            _restore(old)
            if isinstance(exc, PluginError):
                raise PluginLoadError(f"{exc}; {kept}") from exc
            raise
        return _info_of(record)


def list_plugins() -> list[BundleInfo]:
    """Info of every plugin loaded from a path."""
    return [_info_of(record) for record in _records()]


def get_plugin_info(name: str) -> BundleInfo:
    return _info_of(_record(name))


def is_plugin_loaded(name: str) -> bool:
    return _loaded(framework_name(name)) is not None


def _info_of(record: LoadedPlugin) -> BundleInfo:
    return replace(record.info, provides=tuple(s.qualified_name for s in record.specs))


# -- loading -------------------------------------------------------------------------------
def _kind(path: str) -> tuple[str, str]:
    import importlib.machinery

    base = os.path.basename(path.rstrip(os.sep))
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "__init__.py")):
            return "package", base
        raise PluginLoadError(f"cannot load plugin from {path}: a package folder needs __init__.py")
    if not os.path.isfile(path):
        raise PluginLoadError(f"cannot load plugin from {path}: no such file or folder")
    if base.endswith(".py"):
        return "file", base[:-3]
    if base.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return "extension", base.partition(".")[0]
    raise PluginLoadError(
        f"cannot load plugin from {path}: expected a .py file, a package folder or a compiled "
        f"extension ({', '.join(importlib.machinery.EXTENSION_SUFFIXES)})"
    )


def _source_file(path: str, kind: str) -> str:
    return os.path.join(path, "__init__.py") if kind == "package" else path


def _static_metadata(path: str, kind: str, name: str) -> dict[str, str] | None:
    """A literal ``BRAINSMITH_PLUGIN`` dict, checked before the code runs (Python only)."""
    if kind == "extension":
        return None
    import ast

    source_file = _source_file(path, kind)
    with open(source_file, "rb") as handle:
        source = handle.read()
    try:
        tree = ast.parse(source, source_file)
    except SyntaxError as exc:
        raise PluginLoadError(
            f"cannot load plugin '{name}': syntax error in {exc.filename}:{exc.lineno}: {exc.msg}"
        ) from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == PACKAGE_ATTRIBUTE
        ):
            try:
                declared = ast.literal_eval(node.value)
            except ValueError:
                return None  # built at import time (e.g. a PluginBundle); checked after import
            return _checked(name, declared, f"{source_file}:{node.lineno}")
    return None


def _checked(name: str, declared: object, where: str) -> dict[str, str]:
    metadata, problems = package_metadata(declared, where)
    if problems:
        raise PluginLoadError(f"cannot load plugin '{name}': " + "; ".join(problems))
    info = _info(name, metadata, "", where)
    reason = info.incompatibility()
    if reason:
        report_problem(info.framework, f"plugin {name}", f"unavailable: {reason}")
        raise PluginLoadError(f"plugin '{name}' ({where}) is unavailable: {reason}; not loaded")
    return metadata


def _info(name: str, metadata: dict[str, str], path: str, where: str = "") -> BundleInfo:
    try:
        fields: dict[str, Any] = {
            k: VersionInfo.parse(v) if k.endswith("version") and k != "brainsmith_version" else v
            for k, v in metadata.items()
        }
    except ValueError as exc:
        raise PluginLoadError(f"cannot load plugin '{name}' ({where or path}): {exc}") from None
    return BundleInfo(name=name, path=path, **fields)


def _installed(
    module: ModuleType, name: str, path: str, source: str, declared: dict[str, str] | None
) -> tuple[BundleInfo, PluginBundle | None]:
    """The info of a plugin run from ``path`` as ``module``, and its bundle (installed as
    ``source``) if it defines one; else its info is what it (or ``declared``) states."""
    attribute = getattr(module, PACKAGE_ATTRIBUTE, None)
    plugin = attribute if isinstance(attribute, PluginBundle) else None
    if plugin is not None:
        info = replace(plugin.info, name=name, path=path)
        install(plugin, framework_name(name), source)
    else:
        if declared is None and attribute is not None:
            declared = _checked(name, attribute, f"{path}: {PACKAGE_ATTRIBUTE}")
        info = _info(name, declared or {}, path)
    if not info.description:
        info = replace(info, description=(module.__doc__ or "").strip().partition("\n")[0])
    return info, plugin


def _import_failure(exc: Exception) -> str:
    """Why importing a plugin failed, as a problem says it."""
    if isinstance(exc, PluginExit):
        return f"importing it {exc}"
    where = "" if isinstance(exc, PluginError) else f" ({origin(exc)})"
    return f"importing it raised {type(exc).__name__}: {exc}{where}"


def _load(
    path: str, kind: str, name: str, module_name: str, declared: dict[str, str] | None
) -> LoadedPlugin:
    framework = framework_name(name)
    source = f"path:{framework}"
    manager = get_plugin_manager()
    module = _new_module(path, kind, module_name)
    try:
        claim(Source(source, f"plugin {name} loaded from {path}", framework))
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    manager.module_frameworks[module_name] = framework
    try:
        with contained():
            _run_module(module)
            info, plugin = _installed(module, name, path, source, declared)
    except BaseException as exc:  # undone whatever happened, a real Ctrl-C included
        withdraw(manager.registry().specs(framework=framework))
        _forget_modules(module_name)
        manager.module_frameworks.pop(module_name, None)
        manager.release_source(source)
        if not isinstance(exc, Exception) or isinstance(
            exc, PluginLoadError | PluginLifecycleError
        ):
            raise
        reason = _import_failure(exc)
        report_problem(framework, f"plugin {name}", reason)
        raise PluginLoadError(f"cannot load plugin '{name}' from {path}: {reason}") from exc
    specs = manager.registry().specs(framework=framework)
    for spec in specs:
        if not os.path.isfile(spec.source):
            spec.source = path  # defined by compiled code
    manager.replace_source(source, specs)
    modules = {k: m for k, m in list(sys.modules.items()) if k.partition(".")[0] == module_name}
    record = LoadedPlugin(info, kind, module_name, modules, specs, plugin)
    _enter(record)
    return record


def _new_module(path: str, kind: str, module_name: str) -> ModuleType:
    """The plugin's empty module, entered in ``sys.modules`` under a name no other module has."""
    import importlib.util

    location = _source_file(path, kind)
    search = [path] if kind == "package" else None
    loader = None if kind == "extension" else SourceOnlyLoader(module_name, location)
    spec = importlib.util.spec_from_file_location(
        module_name, location, loader=loader, submodule_search_locations=search
    )
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot load plugin from {path}: not an importable module")
    module = importlib.util.module_from_spec(spec)
    with oplock.LOCK:  # checked and taken at once: two plugins never share a module name
        if module_name in sys.modules:
            raise PluginLoadError(
                f"cannot load plugin '{module_name}' from {path}: a module named "
                f"'{module_name}' is already imported"
                + ("" if kind == "extension" else "; load it under another name=")
            )
        sys.modules[module_name] = module
    return module


def _run_module(module: ModuleType) -> None:
    from brainsmith.plugin.discovery.sources.entry_points import invalidate_import_caches

    spec = module.__spec__
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot load plugin module {module.__name__}: it has no loader")
    spec.loader.exec_module(module)
    invalidate_import_caches()  # importlib's own raises KeyError when another thread races it


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Imports a plugin file from its source every time: never from cached bytecode (a reload
    sees every edit, even one that keeps the file's size and mtime) and never writing any."""

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_data(self.path), self.path)

    def set_data(self, path: str, data: Buffer, *, _mode: int = 0o666) -> None:
        """No ``__pycache__`` beside plugin files."""


def _deactivate(record: LoadedPlugin) -> PluginLifecycleError | None:
    """Undo a load; a failing cleanup is returned (already reported), never half-done."""
    manager = get_plugin_manager()
    live = manager.registry().specs(framework=record.framework)
    withdraw(list({id(s): s for s in [*record.specs, *live]}.values()))
    _forget_modules(record.module_name)
    manager.module_frameworks.pop(record.module_name, None)
    manager.release_source(f"path:{record.framework}")
    if record.plugin is not None and record.plugin.cleanup_fn is not None:
        try:
            run_hook(record.plugin, "cleanup", record.plugin.cleanup_fn, manager.registry())
        except PluginLifecycleError as exc:
            return exc
    return None


def _restore(record: LoadedPlugin) -> None:
    manager = get_plugin_manager()
    source = f"path:{record.framework}"
    claim(
        Source(
            source, f"plugin {record.info.name} loaded from {record.info.path}", record.framework
        )
    )
    manager.module_frameworks[record.module_name] = record.framework
    sys.modules.update(record.modules)
    contribute(source, record.specs, [])
    _enter(record)
    if record.plugin is not None and record.plugin.initialize_fn is not None:
        # A failure is reported for health_check; the reload failure is what the caller sees.
        with contextlib.suppress(PluginError):
            run_hook(record.plugin, "initialize", record.plugin.initialize_fn, manager.registry())


def _forget_modules(module_name: str) -> None:
    for key in list(sys.modules):  # list() copies at once; other threads may be importing
        if key.partition(".")[0] == module_name:
            sys.modules.pop(key, None)


# -- the loaded paths: the hub's ``path:`` sources, each with its LoadedPlugin record -------
def _records(registry: Registry | None = None) -> list[LoadedPlugin]:
    sources = (registry or get_plugin_manager().registry()).sources("path")
    return [s.record for s in sources if isinstance(s.record, LoadedPlugin)]


def _loaded(framework: str) -> LoadedPlugin | None:
    return next((r for r in _records() if r.framework == framework), None)


def _record(name: str) -> LoadedPlugin:
    record = _loaded(framework_name(name))
    if record is None:
        raise not_found(name, [r.info.name for r in _records()], "loaded plugin")
    return record


def _enter(record: LoadedPlugin) -> None:
    with oplock.LOCK:
        source = get_plugin_manager().registry().source(f"path:{record.framework}")
        if source is not None:
            source.record = record


def _reset(registry: Registry) -> None:
    """``reset_plugin_system()`` forgets loaded paths (without running their cleanup)."""
    for record in _records(registry):
        _forget_modules(record.module_name)


RESET_HOOKS.append(_reset)

__all__ = [
    "LoadedPlugin",
    "get_plugin_info",
    "is_plugin_loaded",
    "list_plugins",
    "load_plugin",
    "reload_plugin",
    "unload_plugin",
]
