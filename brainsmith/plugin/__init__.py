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
    "load_blueprint_plugins": "brainsmith.plugin.blueprint",
    "load_blueprint": "brainsmith.plugin.blueprint",
    "Blueprint": "brainsmith.plugin.blueprint",
    "BlueprintError": "brainsmith.plugin.blueprint",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        return _moved(name)
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def _moved(name: str) -> object:
    """A lifecycle name imported from here, as before it moved: served, with a warning."""
    import importlib

    lifecycle = importlib.import_module("brainsmith.plugin.lifecycle")
    if name not in lifecycle.__all__:
        raise AttributeError(f"module 'brainsmith.plugin' has no attribute {name!r}")
    import warnings

    warnings.warn(
        f"brainsmith.plugin.{name} moved to brainsmith.plugin.lifecycle.{name}",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(lifecycle, name)
