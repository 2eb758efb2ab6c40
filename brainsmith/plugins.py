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


__all__ = [
    "backends",
    "get_plugin_manager",
    "kernels",
    "reset_plugin_system",
    "steps",
    "transforms",
]
