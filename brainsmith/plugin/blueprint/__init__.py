"""Blueprints: YAML files that select the plugins and options of a build, validated like a
compiler validates code (every problem reported as ``file:line:column: error: ...``).

    from brainsmith.plugin.blueprint import load_blueprint

    blueprint = load_blueprint("blueprints/mlp.yaml")
    for kernel, backends in blueprint.kernels: ...

The resolved object is documented in ``brainsmith.plugin.blueprint.model``; the file format in
``docs/blueprints.md``.
"""

from __future__ import annotations

from brainsmith.plugin.blueprint.errors import BlueprintError, Problem
from brainsmith.plugin.blueprint.loader import load_blueprint, load_blueprint_plugins
from brainsmith.plugin.blueprint.model import Blueprint, KernelChoice, SkippedPlugin
from brainsmith.plugin.blueprint.options import BuildOptions
from brainsmith.plugin.blueprint.schema import DEFAULT_STEPS

__all__ = [
    "DEFAULT_STEPS",
    "Blueprint",
    "BlueprintError",
    "BuildOptions",
    "KernelChoice",
    "Problem",
    "SkippedPlugin",
    "load_blueprint",
    "load_blueprint_plugins",
]
