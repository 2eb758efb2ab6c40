"""The plugin lifecycle API (docs/lifecycle.md): versions, plugin bundles, loading plugins
from paths, backend availability and switching, and the custom-kernel builder.

    from brainsmith.plugin.lifecycle import load_plugin, BundleBuilder, switch_backend

Names are imported on first use, so ``import brainsmith.plugin.lifecycle`` stays cheap.
"""

from __future__ import annotations

from brainsmith.plugin.lazy import lazy_attributes

_EXPORTS = {
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

__all__ = sorted(_EXPORTS)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the lazy names, for type checkers
    from brainsmith.plugin.lifecycle.availability import (
        PluginUnavailableError as PluginUnavailableError,
    )
    from brainsmith.plugin.lifecycle.availability import auto_select as auto_select
    from brainsmith.plugin.lifecycle.availability import backend_preferences as backend_preferences
    from brainsmith.plugin.lifecycle.availability import is_available as is_available
    from brainsmith.plugin.lifecycle.availability import priority as priority
    from brainsmith.plugin.lifecycle.availability import switch_backend as switch_backend
    from brainsmith.plugin.lifecycle.bundles import BundleBuilder as BundleBuilder
    from brainsmith.plugin.lifecycle.bundles import BundleInfo as BundleInfo
    from brainsmith.plugin.lifecycle.bundles import BundleRegistry as BundleRegistry
    from brainsmith.plugin.lifecycle.bundles import PluginBundle as PluginBundle
    from brainsmith.plugin.lifecycle.bundles import PluginLifecycleError as PluginLifecycleError
    from brainsmith.plugin.lifecycle.kernel_builder import KernelBuilder as KernelBuilder
    from brainsmith.plugin.lifecycle.kernel_builder import (
        KernelExecutionError as KernelExecutionError,
    )
    from brainsmith.plugin.lifecycle.kernel_builder import KernelInputError as KernelInputError
    from brainsmith.plugin.lifecycle.kernel_builder import execute_kernel as execute_kernel
    from brainsmith.plugin.lifecycle.kernel_builder import (
        is_custom_kernel_registered as is_custom_kernel_registered,
    )
    from brainsmith.plugin.lifecycle.kernel_builder import (
        list_custom_kernels as list_custom_kernels,
    )
    from brainsmith.plugin.lifecycle.kernel_builder import (
        register_example_kernels as register_example_kernels,
    )
    from brainsmith.plugin.lifecycle.pathload import get_plugin_info as get_plugin_info
    from brainsmith.plugin.lifecycle.pathload import is_plugin_loaded as is_plugin_loaded
    from brainsmith.plugin.lifecycle.pathload import list_plugins as list_plugins
    from brainsmith.plugin.lifecycle.pathload import load_plugin as load_plugin
    from brainsmith.plugin.lifecycle.pathload import reload_plugin as reload_plugin
    from brainsmith.plugin.lifecycle.pathload import unload_plugin as unload_plugin
    from brainsmith.plugin.lifecycle.versions import VersionInfo as VersionInfo

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
