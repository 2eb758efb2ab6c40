"""The plugin lifecycle API (docs/lifecycle.md): versions, plugin bundles, loading plugins
from paths, backend availability and switching, and the custom-kernel builder.

    from brainsmith.plugin.lifecycle import load_plugin, PluginBuilder, switch_backend

Names are imported on first use, so ``import brainsmith.plugin.lifecycle`` stays cheap.
"""

from __future__ import annotations

_EXPORTS = {
    "VersionInfo": "brainsmith.plugin.versions",
    "PluginInfo": "brainsmith.plugin.packages",
    "PluginBuilder": "brainsmith.plugin.packages",
    "Plugin": "brainsmith.plugin.packages",
    "PluginRegistry": "brainsmith.plugin.packages",
    "PluginLifecycleError": "brainsmith.plugin.packages",
    "load_plugin": "brainsmith.plugin.pathload",
    "unload_plugin": "brainsmith.plugin.pathload",
    "reload_plugin": "brainsmith.plugin.pathload",
    "get_plugin_info": "brainsmith.plugin.pathload",
    "is_plugin_loaded": "brainsmith.plugin.pathload",
    "list_plugins": "brainsmith.plugin.pathload",
    "is_available": "brainsmith.plugin.availability",
    "auto_select": "brainsmith.plugin.availability",
    "switch_backend": "brainsmith.plugin.availability",
    "backend_preferences": "brainsmith.plugin.availability",
    "priority": "brainsmith.plugin.availability",
    "PluginUnavailableError": "brainsmith.plugin.availability",
    "KernelBuilder": "brainsmith.plugin.kernel_builder",
    "register_example_kernels": "brainsmith.plugin.kernel_builder",
    "list_custom_kernels": "brainsmith.plugin.kernel_builder",
    "is_custom_kernel_registered": "brainsmith.plugin.kernel_builder",
    "execute_kernel": "brainsmith.plugin.kernel_builder",
    "KernelInputError": "brainsmith.plugin.kernel_builder",
    "KernelExecutionError": "brainsmith.plugin.kernel_builder",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'brainsmith.plugin.lifecycle' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
