"""The resolved blueprint: what a build consumes. Immutable; every plugin is a registry spec
(nothing is imported until the build loads it with ``Registry.load(spec)``).

``Blueprint`` fields:

- ``name`` (str): the blueprint's ``name:``, or its file name without extension.
- ``description`` (str): its ``description:`` ("" when absent).
- ``path`` (str): absolute path of the blueprint file.
- ``chain`` (tuple[str, ...]): absolute paths of the file and the bases it ``extends``, in that
  order (``chain[0] == path``; the last one extends nothing).
- ``kernels`` (tuple[KernelChoice, ...]): in blueprint order; each is a pair
  ``(kernel spec, tuple of allowed backend specs)``, backends in preference order (as listed,
  or by type then name when the blueprint does not restrict them).
- ``auto_kernels`` (bool): ``kernels: auto`` (the default) or an ``auto`` entry: every
  installed kernel with an infer transform is used besides those listed (the build expands it).
- ``prefer`` (str): ``"auto"`` (backend chosen per layer by rule), ``"rtl"`` or ``"hls"``.
- ``exclude`` (tuple[PluginSpec, ...]): kernels never used; their layers stay on the host.
- ``transforms`` (tuple[PluginSpec, ...]): ``hw_compiler.transforms`` in order: transforms
  the blueprint makes available (``load_blueprint_plugins``, custom steps); the standard
  flow runs only the phased ones.
- ``transforms_phased`` (Mapping[str, tuple[PluginSpec, ...]]): always both ``"pre_hw"``
  (the standard ``streamline`` step runs them, in order, before FINN's streamlining) and
  ``"post_hw"`` (the ``folding`` step runs them after folding the hardware layers).
- ``steps`` (tuple[PluginSpec, ...]): the build flow in order; brainsmith's standard flow
  (``DEFAULT_STEPS``) when the blueprint has no ``steps:``.
- ``build`` (BuildOptions | None): typed ``build:`` options; None when the blueprint has no
  ``build:`` section (it can still select plugins). Fields: ``fpga_part`` / ``board``
  (exactly one is set), ``clock_ns`` (float, 5.0: FINN's; a Lattice board's own when no blueprint sets it), ``target_fps`` (int | None), ``verify``
  ("each" | "final" | "none", "final"), ``verify_samples`` (int, 16), ``folding_config``,
  ``specialize_config`` (existing files), ``output_dir`` (absolute paths or None).
- ``skipped`` (tuple[SkippedPlugin, ...]): optional ``~name`` entries that are not installed.
- ``design_space`` (DesignSpace | None): the ``design_space:`` and ``search:`` sections
  (``brainsmith.blueprint.space``); ``design_space.apply(blueprint, i)`` is variant i.

``backends`` is every allowed backend once; ``specs()`` the selected plugins by type
(``load_blueprint_plugins`` serves these); ``to_dict()`` is the blueprint after ``extends``
with every name qualified (``brainsmith:matmul``) — itself a valid blueprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from brainsmith.blueprint.options import BuildOptions
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.blueprint.space import DesignSpace
    from brainsmith.files import Json


class KernelChoice(NamedTuple):
    """A kernel and the backends the blueprint allows for it."""

    kernel: PluginSpec
    backends: tuple[PluginSpec, ...]


class SkippedPlugin(NamedTuple):
    """An optional (``~name``) plugin that is not installed, and where it was named."""

    type: str
    name: str
    reason: str
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return (
            f"{self.file}:{self.line}:{self.column}: note: optional {self.type} "
            f"'{self.name}' skipped: {self.reason}"
        )


@dataclass(frozen=True)
class Blueprint:
    """A validated blueprint with every plugin name resolved (see the module docstring)."""

    name: str
    description: str
    path: str
    chain: tuple[str, ...]
    kernels: tuple[KernelChoice, ...]
    transforms: tuple[PluginSpec, ...]
    transforms_phased: Mapping[str, tuple[PluginSpec, ...]]
    steps: tuple[PluginSpec, ...]
    build: BuildOptions | None
    skipped: tuple[SkippedPlugin, ...] = ()
    design_space: DesignSpace | None = None
    auto_kernels: bool = False
    prefer: str = "auto"
    exclude: tuple[PluginSpec, ...] = ()

    @property
    def backends(self) -> tuple[PluginSpec, ...]:
        """Every allowed backend of every kernel, once, in blueprint order."""
        return tuple(dict.fromkeys(b for choice in self.kernels for b in choice.backends))

    def specs(self) -> dict[str, tuple[PluginSpec, ...]]:
        """The selected plugins by type (transforms include both phases)."""
        phased = [s for phase in self.transforms_phased.values() for s in phase]
        return {
            "kernel": tuple(choice.kernel for choice in self.kernels),
            "backend": self.backends,
            "transform": tuple(dict.fromkeys([*self.transforms, *phased])),
            "step": tuple(dict.fromkeys(self.steps)),
        }

    def to_dict(self) -> Json:
        """The resolved blueprint as plain data: qualified names, absolute paths, no ``extends``."""
        data: Json = {"name": self.name}
        if self.description:
            data["description"] = self.description
        data["hw_compiler"] = self._hw_compiler()
        data["steps"] = [s.qualified_name for s in self.steps]
        if self.build is not None:
            data["build"] = self.build.to_dict()
        if self.design_space is not None:
            data.update(self.design_space.to_dict())
        return data

    def _hw_compiler(self) -> Json:
        """``hw_compiler``: the kernels, transforms, preference and exclusions."""
        kernels: list[Any] = [_kernel_entry(choice) for choice in self.kernels]
        section: Json = {
            "kernels": ["auto", *kernels] if self.auto_kernels else kernels,
            "transforms": [s.qualified_name for s in self.transforms],
            "transforms_phased": {
                phase: [s.qualified_name for s in specs]
                for phase, specs in self.transforms_phased.items()
            },
        }
        if self.prefer != "auto":
            section["prefer"] = self.prefer
        if self.exclude:
            section["exclude"] = [s.qualified_name for s in self.exclude]
        return section


def _kernel_entry(choice: KernelChoice) -> Json:
    entry: Json = {"kernel": choice.kernel.qualified_name}
    if choice.backends:  # a kernel without backends: nothing to restrict
        entry["backends"] = [b.qualified_name for b in choice.backends]
    return entry
