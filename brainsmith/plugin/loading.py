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


def import_target(spec: PluginSpec) -> object:
    """Import ``spec.target`` (``module:qualname``) and return the object."""
    module_name, _, qualname = spec.target.partition(":")
    path_entry = spec.metadata.get("path_entry")
    if path_entry and path_entry not in sys.path:
        sys.path.append(path_entry)
    if spec.framework == "finn" or module_name.startswith("finn."):
        from brainsmith.frameworks.finn_env import prepare_finn

        prepare_finn()
    try:
        module = importlib.import_module(module_name)
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


def _where(spec: PluginSpec) -> str:
    return os.path.relpath(spec.source) if spec.source else spec.module
