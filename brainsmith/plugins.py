"""The everyday plugin API.

from brainsmith.plugins import transforms as tfm, kernels as kn, backends as bk, steps

model = model.transform(tfm.ExpandNorms())
model = model.transform(tfm.finn.Streamline())
"""

from __future__ import annotations

from brainsmith.plugin.collections import PluginCollection
from brainsmith.plugin.manager import get_plugin_manager, reset_plugin_system

transforms = PluginCollection("transform")
kernels = PluginCollection("kernel")
backends = PluginCollection("backend")
steps = PluginCollection("step")

# Plugin lifecycle API (docs/lifecycle.md), imported on first use to keep this module lean.
_LIFECYCLE = {
    "brainsmith.plugin.versions": ("VersionInfo",),
    "brainsmith.plugin.packages": ("Plugin", "PluginBuilder", "PluginInfo", "PluginRegistry"),
    "brainsmith.plugin.pathload": (
        "load_plugin",
        "unload_plugin",
        "reload_plugin",
        "list_plugins",
        "get_plugin_info",
        "is_plugin_loaded",
    ),
    "brainsmith.plugin.availability": (
        "is_available",
        "auto_select",
        "switch_backend",
        "backend_preferences",
        "priority",
    ),
    "brainsmith.plugin.kernel_builder": (
        "KernelBuilder",
        "register_example_kernels",
        "list_custom_kernels",
        "is_custom_kernel_registered",
        "execute_kernel",
    ),
}
_LAZY = {name: module for module, names in _LIFECYCLE.items() for name in names}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'brainsmith.plugins' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "backends",
    "get_plugin_manager",
    "kernels",
    "reset_plugin_system",
    "steps",
    "transforms",
    *sorted(_LAZY),
]
