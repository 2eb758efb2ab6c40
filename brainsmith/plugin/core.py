"""Seed-compatible home of the decorators and the registry accessor."""

from __future__ import annotations

from brainsmith.plugin.decorators import backend, kernel, step, transform
from brainsmith.plugin.registry import Registry


def get_registry() -> Registry:
    """The process-wide registry (discovering plugins on first use)."""
    from brainsmith.plugin.manager import get_plugin_manager

    return get_plugin_manager().registry()


__all__ = ["backend", "get_registry", "kernel", "step", "transform"]
