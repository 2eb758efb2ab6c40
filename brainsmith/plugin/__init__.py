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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'brainsmith.plugin' has no attribute {name!r}")
    import sys

    __import__(module)  # importlib.import_module without loading importlib and warnings
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
