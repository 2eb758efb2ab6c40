"""The plugin hub's contract: decorators, the manager, specs and the registry, errors and
blueprint loading. The lifecycle API lives in ``brainsmith.plugin.lifecycle``; everything
else in this package is internal.

Attributes are imported lazily so ``import brainsmith.plugin`` stays cheap.
"""

from __future__ import annotations

_EXPORTS = {
    "get_plugin_manager": "brainsmith.plugin.manager",
    "reset_plugin_system": "brainsmith.plugin.manager",
    "PluginManager": "brainsmith.plugin.manager",
    "get_registry": "brainsmith.plugin.core",
    "transform": "brainsmith.plugin.decorators",
    "kernel": "brainsmith.plugin.decorators",
    "backend": "brainsmith.plugin.decorators",
    "step": "brainsmith.plugin.decorators",
    "PluginSpec": "brainsmith.plugin.spec",
    "Registry": "brainsmith.plugin.registry",
    "PluginError": "brainsmith.plugin.errors",
    "PluginNotFoundError": "brainsmith.plugin.errors",
    "PluginLoadError": "brainsmith.plugin.errors",
    "PluginMetadataError": "brainsmith.plugin.errors",
    "ConfigError": "brainsmith.plugin.errors",
    "load_blueprint_plugins": "brainsmith.blueprint.selection",
    "load_blueprint": "brainsmith.blueprint",
    "Blueprint": "brainsmith.blueprint",
    "BlueprintError": "brainsmith.blueprint",
}
__all__ = sorted(_EXPORTS)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the lazy names, for type checkers
    from brainsmith.blueprint import Blueprint as Blueprint
    from brainsmith.blueprint import BlueprintError as BlueprintError
    from brainsmith.blueprint import load_blueprint as load_blueprint
    from brainsmith.blueprint import load_blueprint_plugins as load_blueprint_plugins
    from brainsmith.plugin.core import get_registry as get_registry
    from brainsmith.plugin.decorators import backend as backend
    from brainsmith.plugin.decorators import kernel as kernel
    from brainsmith.plugin.decorators import step as step
    from brainsmith.plugin.decorators import transform as transform
    from brainsmith.plugin.errors import ConfigError as ConfigError
    from brainsmith.plugin.errors import PluginError as PluginError
    from brainsmith.plugin.errors import PluginLoadError as PluginLoadError
    from brainsmith.plugin.errors import PluginMetadataError as PluginMetadataError
    from brainsmith.plugin.errors import PluginNotFoundError as PluginNotFoundError
    from brainsmith.plugin.manager import PluginManager as PluginManager
    from brainsmith.plugin.manager import get_plugin_manager as get_plugin_manager
    from brainsmith.plugin.manager import reset_plugin_system as reset_plugin_system
    from brainsmith.plugin.registry import Registry as Registry
    from brainsmith.plugin.spec import PluginSpec as PluginSpec

# The lifecycle API, served by brainsmith.plugin.lifecycle (and, deprecated, from here).
LIFECYCLE_EXPORTS = {
    "VersionInfo": "brainsmith.plugin.lifecycle.versions",
    "BundleInfo": "brainsmith.plugin.lifecycle.bundles",
    "BundleBuilder": "brainsmith.plugin.lifecycle.bundles",
    "PluginBundle": "brainsmith.plugin.lifecycle.bundles",
    "BundleRegistry": "brainsmith.plugin.lifecycle.bundles",
    "PluginLifecycleError": "brainsmith.plugin.lifecycle.bundles",
    "load_plugin": "brainsmith.plugin.lifecycle.pathload",
    "unload_plugin": "brainsmith.plugin.lifecycle.pathload",
    "reload_plugin": "brainsmith.plugin.lifecycle.pathload",
    "get_plugin_info": "brainsmith.plugin.lifecycle.pathload",
    "is_plugin_loaded": "brainsmith.plugin.lifecycle.pathload",
    "list_plugins": "brainsmith.plugin.lifecycle.pathload",
    "is_available": "brainsmith.plugin.lifecycle.availability",
    "auto_select": "brainsmith.plugin.lifecycle.availability",
    "switch_backend": "brainsmith.plugin.lifecycle.availability",
    "backend_preferences": "brainsmith.plugin.lifecycle.availability",
    "priority": "brainsmith.plugin.lifecycle.availability",
    "PluginUnavailableError": "brainsmith.plugin.lifecycle.availability",
    "KernelBuilder": "brainsmith.plugin.lifecycle.kernel_builder",
    "register_example_kernels": "brainsmith.plugin.lifecycle.kernel_builder",
    "list_custom_kernels": "brainsmith.plugin.lifecycle.kernel_builder",
    "is_custom_kernel_registered": "brainsmith.plugin.lifecycle.kernel_builder",
    "execute_kernel": "brainsmith.plugin.lifecycle.kernel_builder",
    "KernelInputError": "brainsmith.plugin.lifecycle.kernel_builder",
    "KernelExecutionError": "brainsmith.plugin.lifecycle.kernel_builder",
}

# Lifecycle names that called a bundle of plugins a plugin: old -> new, served with a warning.
RENAMED_LIFECYCLE = {
    "Plugin": "PluginBundle",
    "PluginBuilder": "BundleBuilder",
    "PluginInfo": "BundleInfo",
    "PluginRegistry": "BundleRegistry",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        return moved_lifecycle_name("brainsmith.plugin", name)
    import sys

    __import__(module)  # importlib.import_module without loading importlib and warnings
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def moved_lifecycle_name(module: str, name: str, renamed_only: bool = False) -> object:
    """A lifecycle name imported from ``module`` as before it moved to
    ``brainsmith.plugin.lifecycle`` or was renamed (only the latter with ``renamed_only``):
    served, with a warning."""
    new = RENAMED_LIFECYCLE.get(name, name)
    if new not in LIFECYCLE_EXPORTS or (renamed_only and new == name):  # (and submodules)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    import importlib
    import warnings

    from brainsmith.version import REMOVED_IN

    also = (
        " (it lists plugins loaded from paths; registered plugins: transforms.list_plugins() "
        "and the other collections of brainsmith.plugins)"
        if name == "list_plugins"
        else ""
    )
    change = "was renamed" if new != name else "moved to"
    warnings.warn(
        f"{module}.{name} {change} brainsmith.plugin.lifecycle.{new}{also}; the old name "
        f"will be removed in brainsmith {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,  # the importing line
    )
    return getattr(importlib.import_module("brainsmith.plugin.lifecycle"), new)
