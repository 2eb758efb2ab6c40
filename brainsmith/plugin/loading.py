"""Import the object behind a spec, turning every failure into a PluginLoadError that says why."""

from __future__ import annotations

import importlib
import os
import sys

from brainsmith.plugin.errors import PluginLoadError
from brainsmith.plugin.spec import PluginSpec

INSTALL_HINTS = {
    "finn": "FINN is not installed; install it with `scripts/bootstrap.sh` "
    "(or `pip install --no-deps finn-plus==1.6.1` plus `pip install 'brainsmith[finn]'`)",
    "qonnx": "QONNX is not installed; install it with `pip install qonnx==1.0.0`",
}


# Modules that import FINN at top level: FINN is prepared for this process first.
FINN_USERS = ("finn.", "brainsmith.kernels.", "brainsmith.backends.", "brainsmith.steps.")


class ImportTimeout(Exception):
    """An import that did not finish within the configured load timeout."""


def import_target(spec: PluginSpec, timeout: float = 0.0) -> object:
    """Import ``spec.target`` (``module:qualname``) and return the object.

    With ``timeout`` > 0 the import runs in a worker thread and a PluginLoadError is raised
    after that many seconds (``plugin_system.load_timeout``); Python cannot stop a thread, so
    the import goes on in the background and the plugin's module stays locked until it ends.
    """
    module_name, _, qualname = spec.target.partition(":")
    _check_declared(spec, module_name)
    if spec.metadata.get("plugin_dir"):
        from brainsmith.plugin import folders
        from brainsmith.plugin.manager import get_plugin_manager

        folders.activate(get_plugin_manager().config.plugin_dirs)  # a package per folder
    if module_name.startswith(FINN_USERS):
        from brainsmith.frameworks.finn_env import prepare_finn

        prepare_finn()
    try:
        module = _import(module_name, timeout)
    except ImportTimeout:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: importing {module_name} "
            f"({_where(spec)}) did not finish within {timeout:g} s (plugin_system.load_timeout); "
            "it goes on in the background and other plugins are unaffected",
            spec,
        ) from None
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        top = module_name.partition(".")[0]
        if missing == top and missing in INSTALL_HINTS:
            raise PluginLoadError(
                f"cannot load {spec.type} {spec.qualified_name}: {INSTALL_HINTS[missing]}", spec
            ) from exc
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PluginLoadError(
                f"cannot load {spec.type} {spec.qualified_name}: its module {module_name} "
                f"({_where(spec)}) is not installed or was deleted or renamed since discovery "
                "(a new discovery drops it; `brainsmith cache clear` forces one)",
                spec,
            ) from exc
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name} from {_where(spec)}: "
            f"it imports '{exc.name}', which is not installed (pip install {missing or exc.name})",
            spec,
        ) from exc
    except SyntaxError as exc:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: syntax error in "
            f"{exc.filename}:{exc.lineno}: {exc.msg}",
            spec,
        ) from exc
    except Exception as exc:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: importing {module_name} "
            f"({_where(spec)}) raised {type(exc).__name__}: {exc}",
            spec,
        ) from exc
    obj: object = module
    try:
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: module {module_name} has no "
            f"attribute {qualname!r} (was it renamed? run `brainsmith cache clear`)",
            spec,
        ) from None
    return obj


def _import(module_name: str, timeout: float) -> object:
    try:
        return _import_within(module_name, timeout)
    except BaseException:
        folders = sys.modules.get("brainsmith.plugin.folders")
        if folders is not None:
            folders.drop_dead_aliases()
        raise


def _import_within(module_name: str, timeout: float) -> object:
    """``importlib.import_module``, given up on after ``timeout`` seconds (0: wait forever)."""
    module = sys.modules.get(module_name)
    initializing = getattr(getattr(module, "__spec__", None), "_initializing", False)
    if timeout <= 0 or (module is not None and not initializing):
        return importlib.import_module(module_name)
    import threading

    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["module"] = importlib.import_module(module_name)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"brainsmith-import:{module_name}", daemon=True)
    worker.start()
    worker.join(min(timeout, threading.TIMEOUT_MAX))
    if worker.is_alive():
        raise ImportTimeout(module_name)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["module"]


def _check_declared(spec: PluginSpec, module_name: str) -> None:
    """A pip package's plugin is imported only from a package that declares brainsmith
    plugins, whatever a (stale or forged) discovery index says."""
    from brainsmith.plugin.discovery import BUILTIN_FRAMEWORKS

    if spec.framework in BUILTIN_FRAMEWORKS:
        return
    from brainsmith.plugin.sources.entry_points import declared_packages

    top = module_name.partition(".")[0]
    if top not in declared_packages():
        raise PluginLoadError(
            f"cannot load {spec.type} {spec.qualified_name}: no installed package declares "
            f"'{top}' in its brainsmith.plugins entry points; refusing to import {spec.target} "
            "(the discovery index is stale or was tampered with: run `brainsmith cache clear`)",
            spec,
        )


def _where(spec: PluginSpec) -> str:
    return os.path.relpath(spec.source) if spec.source else spec.module
