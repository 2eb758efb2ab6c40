"""Blueprints: YAML files that select the plugins and options of a build, validated like a
compiler validates code (every problem reported as ``file:line:column: error: ...``).

    from brainsmith.blueprint import load_blueprint

    blueprint = load_blueprint("blueprints/mlp.yaml")
    for kernel, backends in blueprint.kernels: ...

The resolved object is documented in ``brainsmith.blueprint.resolved``; the file format in
``docs/blueprints.md``.
"""

from __future__ import annotations

from brainsmith.plugin.lazy import lazy_attributes

# name -> module; imported on first use, so ``load_blueprint_plugins`` on a remembered
# selection imports neither YAML nor the blueprint checker.
_EXPORTS = {
    "DEFAULT_STEPS": "brainsmith.blueprint.schema",
    "Blueprint": "brainsmith.blueprint.resolved",
    "BlueprintError": "brainsmith.blueprint.errors",
    "BuildOptions": "brainsmith.blueprint.options",
    "KernelChoice": "brainsmith.blueprint.resolved",
    "Problem": "brainsmith.blueprint.errors",
    "SkippedPlugin": "brainsmith.blueprint.resolved",
    "load_blueprint": "brainsmith.blueprint.loader",
    "load_blueprint_plugins": "brainsmith.blueprint.selection",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.errors import BlueprintError as BlueprintError
    from brainsmith.blueprint.errors import Problem as Problem
    from brainsmith.blueprint.loader import load_blueprint as load_blueprint
    from brainsmith.blueprint.options import BuildOptions as BuildOptions
    from brainsmith.blueprint.resolved import Blueprint as Blueprint
    from brainsmith.blueprint.resolved import KernelChoice as KernelChoice
    from brainsmith.blueprint.resolved import SkippedPlugin as SkippedPlugin
    from brainsmith.blueprint.schema import DEFAULT_STEPS as DEFAULT_STEPS
    from brainsmith.blueprint.selection import (
        load_blueprint_plugins as load_blueprint_plugins,
    )


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

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, __all__)
