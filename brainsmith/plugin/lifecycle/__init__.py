"""The plugin lifecycle API (docs/lifecycle.md): versions, plugin bundles, loading plugins
from paths, backend availability and switching, and the custom-kernel builder.

    from brainsmith.plugin.lifecycle import load_plugin, PluginBuilder, switch_backend

Names are imported on first use, so ``import brainsmith.plugin.lifecycle`` stays cheap.
"""

from __future__ import annotations

from brainsmith.plugin import LIFECYCLE_EXPORTS as _EXPORTS

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
