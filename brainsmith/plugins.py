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

# The plugin lifecycle API (docs/lifecycle.md), served lazily from brainsmith.plugin.
LIFECYCLE = (
    "VersionInfo",
    "Plugin",
    "PluginBuilder",
    "PluginInfo",
    "PluginRegistry",
    "load_plugin",
    "unload_plugin",
    "reload_plugin",
    "list_plugins",
    "get_plugin_info",
    "is_plugin_loaded",
    "is_available",
    "auto_select",
    "switch_backend",
    "backend_preferences",
    "priority",
    "KernelBuilder",
    "register_example_kernels",
    "list_custom_kernels",
    "is_custom_kernel_registered",
    "execute_kernel",
)


def __getattr__(name: str):
    if name not in LIFECYCLE:
        raise AttributeError(f"module 'brainsmith.plugins' has no attribute {name!r}")
    import brainsmith.plugin as hub

    value = getattr(hub, name)
    globals()[name] = value
    return value


__all__ = [
    "backends",
    "get_plugin_manager",
    "kernels",
    "reset_plugin_system",
    "steps",
    "transforms",
    *sorted(LIFECYCLE),
]
