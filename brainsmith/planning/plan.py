"""BuildPlan: what a build takes from a blueprint — kernels with their allowed backends,
phased transforms, steps and options — as one small object the steps read from the FINN
``DataflowBuildConfig`` (see ``brainsmith.planning.context``).

A blueprint without ``steps:`` gets brainsmith's standard flow, followed by FINN's
hardware steps (IP generation, FIFO sizing, stitched IP, synthesis; with a board also
bitfile, driver and deployment package), which run when Vivado is found and are listed as
skipped otherwise.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, cast

from brainsmith.blueprint import load_blueprint
from brainsmith.blueprint.options import BuildOptions
from brainsmith.blueprint.schema import DEFAULT_STEPS
from brainsmith.errors import BrainsmithError, SkippedKernelWarning
from brainsmith.frameworks.finn.tables import (
    AUTO_SKIPPED,
    INFER_ORDER,
    INFER_TRANSFORMS,
    infer_order,
)
from brainsmith.plugin import get_registry
from brainsmith.plugin.names import short_name, suggest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from brainsmith.blueprint import Blueprint
    from brainsmith.files import Json
    from brainsmith.plugin.spec import PluginSpec

# What `brainsmith build MODEL` uses without a blueprint (the same as blueprints/base.yaml).
STANDARD_STEPS: tuple[str, ...] = DEFAULT_STEPS  # a blueprint's flow when it lists no steps
HARDWARE_STEPS: tuple[str, ...] = (
    "finn:step_hw_ipgen",
    "finn:step_set_fifo_depths",
    "finn:step_create_stitched_ip",
    "finn:step_out_of_context_synthesis",
)
BOARD_STEPS: tuple[str, ...] = (
    "finn:step_synthesize_bitfile",
    "finn:step_make_driver",
    "finn:step_deployment_package",
)


STANDALONE_FIRST = ("InferRequantLayer", "InferThresholdingLayer")


class PlanError(BrainsmithError, ValueError):
    """A blueprint the build cannot use; the message says what to change and ``plugin``
    names the plugin at fault (empty when the blueprint as a whole is)."""

    def __init__(self, message: str, plugin: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin


@dataclass
class PlannedKernel:
    """A kernel of the plan, resolved once from the blueprint's ``KernelChoice`` (or added by
    ``kernels: auto``) and kept by qualified names, so a plan can travel to Dask workers and
    into checkpoints: the op type it produces, how to infer it, its allowed backends."""

    name: str
    op_type: str
    infer_transforms: list[str]
    backends: list[str] = field(default_factory=list)
    backend_types: list[str] = field(default_factory=list)  # empty: any backend
    pinned: bool = True  # listed in the blueprint (False: added by kernels: auto)
    rewrites: list[str] = field(default_factory=list)  # transforms exposing its pattern
    infer_order: str = "last"  # where its own infer transforms run among FINN's

    @classmethod
    def of(cls, spec: PluginSpec, names: list[str], **given: Any) -> PlannedKernel:
        """The kernel ``spec`` converting with ``names``, with its declared ``rewrites`` and
        ``infer_order`` (PlanError when the order names no FINN infer transform)."""
        order = str(spec.metadata.get("infer_order", "last"))
        anchor = order.partition(":")[2]
        if anchor and anchor not in INFER_ORDER:
            raise PlanError(
                f"kernel {spec.qualified_name} has infer_order={order!r}, but {anchor} is not one "
                f"of FINN's infer transforms{suggest(anchor, list(INFER_ORDER))}; use 'first', "
                f"'last' or one of: {', '.join(INFER_ORDER)}",
                spec.qualified_name,
            )
        op_type = op_type_of(spec)
        rewrites = [str(name) for name in spec.metadata.get("rewrites", ())]
        made = cls(spec.qualified_name, op_type, names, rewrites=rewrites, infer_order=order)
        return replace(made, **given) if given else made

    def position(self, transform: str) -> float:
        """Where ``transform`` (one of this kernel's) runs in FINN's order: FINN's own keep
        their place, the kernel's own go where ``infer_order`` says."""
        if short_name(transform) in INFER_ORDER or self.infer_order == "last":
            return infer_order(transform)
        if self.infer_order == "first":
            return -1
        where, _, anchor = self.infer_order.partition(":")
        return infer_order(anchor) + (-0.5 if where == "before" else 0.5)


@dataclass
class TransformRef:
    """A transform to apply: plugin name (short or qualified) and constructor arguments."""

    name: str
    args: dict[str, object] = field(default_factory=dict)


@dataclass
class BuildPlan:
    """Everything the steps need to know about the blueprint."""

    name: str = "default"
    path: str = ""  # the blueprint file
    kernels: list[PlannedKernel] | None = None  # None: every kernel FINN can infer
    prefer: str = "auto"  # auto | rtl | hls, for layers the blueprint does not pin
    excluded: list[str] = field(default_factory=list)  # kernels the blueprint excludes
    # why a kernel is excluded when the blueprint did not say so (a Lattice board's)
    exclusions: dict[str, str] = field(default_factory=dict)
    pre_hw: list[TransformRef] = field(default_factory=list)
    post_hw: list[TransformRef] = field(default_factory=list)
    steps: list[str] = field(default_factory=lambda: standard_steps())
    options: BuildOptions | None = None  # None: the blueprint has no build: section
    blueprint: Json = field(default_factory=dict)  # the resolved blueprint, for the report
    notes: list[str] = field(default_factory=list)  # what shaping the plan changed, for the report
    # brainsmith chose the clock, none being named (``builder.lattice.board_clock``)
    clock_chosen: bool = False
    # "type:name" of each plugin the plan names -> the spec resolved when it was made
    resolved: dict[str, PluginSpec] = field(default_factory=dict, compare=False, repr=False)

    def spec(self, plugin_type: str, name: str) -> PluginSpec:
        """The plugin the plan names ``name``: resolved with the blueprint; for a plan made by
        hand (names only) or received from another process, looked up once, here."""
        key = f"{plugin_type}:{name}"
        found = self.resolved.get(key)
        if found is None:
            found = self.resolved[key] = get_registry().find(plugin_type, name)
        return found

    def __getstate__(self) -> dict[str, object]:
        """Pickled (to a Dask worker) by names: specs hold imported objects of this process."""
        return {**self.__dict__, "resolved": {}}

    @property
    def build(self) -> BuildOptions:
        """The ``build:`` options; a build refuses a blueprint without them before it starts."""
        if self.options is None:
            raise PlanError(f"blueprint {self.name} has no build: section")
        return self.options

    def infer_transforms(self, standalone_thresholds: bool = False) -> list[str]:
        """Transform names converting to this plan's kernels, in FINN's order, deduplicated.

        With ``standalone_thresholds`` (FINN's option of that name), thresholds become
        Thresholding layers before matrix layers could absorb them.
        """
        places: dict[str, float] = {}
        if self.kernels is None:
            for names in INFER_TRANSFORMS.values():
                places.update({f"finn:{t}": infer_order(t) for t in names})
        else:
            for kernel in self.kernels:
                for t in kernel.infer_transforms:
                    places.setdefault(t, kernel.position(t))
        unique = list(places)
        first = STANDALONE_FIRST if standalone_thresholds else ()

        def position(name: str) -> tuple[int, float, int]:
            short = short_name(name)
            head = first.index(short) if short in first else len(first)
            return head, places[name], unique.index(name)

        return sorted(unique, key=position)

    def rewrites(self) -> list[str]:
        """The transforms the selected kernels declare to expose their patterns, in the
        kernels' order, each once: ``hardware_inference`` runs them before converting."""
        return list(dict.fromkeys(t for k in self.kernels or () for t in k.rewrites))

    def needs_standalone_thresholds(self) -> bool:
        """True when thresholds must stay separate layers: a matrix kernel allows only RTL
        backends (FINN's RTL MVAU/VVAU have no built-in activation) and Thresholding is
        selected to take them."""
        kernels = self.kernels or []
        rtl_only = self.prefer == "rtl" or any(
            k.op_type in ("MVAU", "VVAU") and k.backend_types == ["rtl"] for k in kernels
        )
        return rtl_only and any(k.op_type == "Thresholding" for k in kernels)

    def elementwise_ops(self) -> set[str] | None:
        """ONNX operations the selected ``Elementwise*`` kernels implement (None: all)."""
        if self.kernels is None:
            return None
        prefix = "Elementwise"
        return {k.op_type[len(prefix) :] for k in self.kernels if k.op_type.startswith(prefix)}

    def style_for(self, op_type: str) -> str:
        """The backend type to ask FINN for on ``op_type`` layers: the one type a kernel
        allows, else the blueprint's ``prefer`` among the allowed types; "" lets FINN's
        rule choose (RTL where FINN's RTL layer supports the layer's datatypes and the
        part, HLS for matrix layers below 4 bits, where LUTs beat DSPs)."""
        kernel = self.kernel_for(op_type)
        allowed = kernel.backend_types if kernel is not None else []
        if len(set(allowed)) == 1:
            return allowed[0]
        if self.prefer != "auto" and (not allowed or self.prefer in allowed):
            return self.prefer
        return ""

    def kernel_for(self, op_type: str) -> PlannedKernel | None:
        for kernel in self.kernels or ():
            if kernel.op_type == op_type:
                return kernel
        return None


if TYPE_CHECKING:
    # What a build takes as its blueprint: a path, a resolved Blueprint or a BuildPlan
    BlueprintSource = str | os.PathLike[str] | Blueprint | BuildPlan


def standard_steps(board: str | None = None) -> list[str]:
    """The standard flow and the hardware steps (with a board: bitfile, driver, package)."""
    return [*STANDARD_STEPS, *HARDWARE_STEPS, *(BOARD_STEPS if board else ())]


def plan_from_blueprint(blueprint: Blueprint) -> BuildPlan:
    """Adapt a resolved ``Blueprint`` (``brainsmith.blueprint``) to a BuildPlan."""

    space = getattr(blueprint, "design_space", None)
    if space is not None:
        raise PlanError(
            f"{blueprint.name} describes a design space of {len(space.indices())} variants, "
            "not one design; build them all with brainsmith explore MODEL BLUEPRINT -o OUT"
        )
    kernels = [_planned(spec, backends) for spec, backends in blueprint.kernels]
    if blueprint.auto_kernels:
        kernels += auto_kernels(kernels, blueprint.exclude)
    phased = blueprint.transforms_phased
    options = blueprint.build
    steps, resolved = _steps_of(blueprint)
    resolved.update(_phased_transforms(phased))
    return BuildPlan(
        name=blueprint.name,
        path=blueprint.path,
        kernels=kernels,
        prefer=blueprint.prefer,
        excluded=[spec.qualified_name for spec in blueprint.exclude],
        pre_hw=[TransformRef(s.qualified_name) for s in phased.get("pre_hw", ())],
        post_hw=[TransformRef(s.qualified_name) for s in phased.get("post_hw", ())],
        steps=steps,
        options=options,
        blueprint=blueprint.to_dict(),
        resolved=resolved,
    )


def _phased_transforms(phased: Mapping[str, Sequence[PluginSpec]]) -> dict[str, PluginSpec]:
    """The blueprint's ``pre_hw`` and ``post_hw`` transforms by ``transform:name``."""
    return {
        f"transform:{s.qualified_name}": s
        for phase in ("pre_hw", "post_hw")
        for s in phased.get(phase, ())
    }


def _steps_of(blueprint: Blueprint) -> tuple[list[str], dict[str, PluginSpec]]:
    """(the blueprint's steps, "step:name" -> spec): the standard flow gets the hardware
    steps after it (with a board: bitfile, driver, package)."""
    steps = [s.qualified_name for s in blueprint.steps]
    resolved = {f"step:{s.qualified_name}": s for s in blueprint.steps}
    if [s.name for s in blueprint.steps] == list(STANDARD_STEPS):
        options = blueprint.build
        steps = standard_steps(options.board if options else None)
        resolved.update({f"step:{s.name}": s for s in blueprint.steps})
    return steps, resolved


def _planned(spec: PluginSpec, backend_specs: Sequence[PluginSpec]) -> PlannedKernel:
    """The blueprint's kernel ``spec`` with its allowed ``backend_specs``; PlanError for a
    kernel with no infer transform."""
    names = infer_transforms_of(spec)
    if not names:
        raise PlanError(
            f"kernel {spec.qualified_name} has no infer_transform, so the build cannot "
            f"convert ONNX nodes to it; give its @kernel an infer_transform= "
            f"(a transform plugin name) or remove it from the blueprint",
            spec.qualified_name,
        )
    return PlannedKernel.of(
        spec,
        names,
        backends=[b.qualified_name for b in backend_specs],
        backend_types=list(
            dict.fromkeys(b.metadata.get("backend_type", "") for b in backend_specs)
        ),
    )


def op_type_of(spec: PluginSpec) -> str:
    """The op type the layers of kernel ``spec`` have: its declared ``op_type``, else its name."""
    return str(spec.metadata.get("op_type") or spec.name)


def infer_transforms_of(spec: PluginSpec) -> list[str]:
    """The transforms that convert ONNX nodes into kernel ``spec``'s layers (qualified)."""
    infer = spec.metadata.get("infer_transform")
    if infer:
        return [str(infer)]
    if spec.framework != "finn":
        return []
    return [f"finn:{t}" for t in INFER_TRANSFORMS.get(spec.name, ())]


def auto_kernels(
    listed: list[PlannedKernel], exclude: Collection[PluginSpec] = ()
) -> list[PlannedKernel]:
    """``kernels: auto``: every installed kernel with an infer transform and a backend,
    besides the ``listed`` ones and the ``exclude``d; one choice per op type (the
    transforms of kernels building the same layers are merged), any backend allowed."""
    found: dict[str, PlannedKernel] = {}
    for op_type, spec, names in _auto_taken(listed, exclude):
        planned = _auto_planned(spec, names)
        if planned is None:
            continue
        merged = found.setdefault(op_type, planned)
        if merged is not planned:  # kernels building the same layers: their transforms merged
            _merge(merged, planned)
    return list(found.values())


def _auto_taken(
    listed: list[PlannedKernel], exclude: Collection[PluginSpec]
) -> list[tuple[str, PluginSpec, list[str]]]:
    """(op type, spec, infer transforms) of each installed kernel ``kernels: auto`` takes,
    in the registry's order: none for an op type ``listed`` or ``exclude``d kernels build."""
    registry = get_registry()
    excluded = {spec.qualified_name for spec in exclude}
    closed = {k.op_type for k in listed} | {op_type_of(spec) for spec in exclude}
    with_backend = {str(b.metadata.get("kernel", "")) for b in registry.specs("backend")}
    taken = []
    for spec in registry.specs("kernel"):
        op_type, names = op_type_of(spec), infer_transforms_of(spec)
        if op_type not in closed and _auto_takes(spec, names, excluded, with_backend):
            taken.append((op_type, spec, names))
    return taken


def _merge(kernel: PlannedKernel, other: PlannedKernel) -> None:
    """``other``'s transforms and rewrites added to ``kernel``'s (both build the same layers)."""
    kernel.infer_transforms = list(
        dict.fromkeys([*kernel.infer_transforms, *other.infer_transforms])
    )
    kernel.rewrites = list(dict.fromkeys([*kernel.rewrites, *other.rewrites]))


def _auto_planned(spec: PluginSpec, names: list[str]) -> PlannedKernel | None:
    """Kernel ``spec`` as ``kernels: auto`` adds it; None, with a SkippedKernelWarning, for
    one whose declarations the plan cannot use (one broken package does not stop every
    build)."""
    try:
        return PlannedKernel.of(spec, names, pinned=False)
    except PlanError as exc:
        # stacklevel 3: the line that asked for the plan, as when auto_kernels warned itself
        warnings.warn(f"kernels: auto leaves out {exc}", SkippedKernelWarning, stacklevel=3)
        return None


def _auto_takes(
    spec: PluginSpec, names: list[str], excluded: set[str], with_backend: set[str]
) -> bool:
    """Whether ``kernels: auto`` takes kernel ``spec`` (converting with ``names``): loaded,
    not ``excluded`` nor one FINN's own flow leaves out, with a backend of its own or
    decomposing into other layers."""
    skipped = spec.framework == "finn" and spec.name in AUTO_SKIPPED
    if not names or skipped or spec.error or spec.qualified_name in excluded:
        return False
    own = {spec.name, spec.qualified_name} & with_backend
    return bool(own or spec.metadata.get("decomposes_into"))


def without_kernels(plan: BuildPlan, names: Collection[str]) -> BuildPlan:
    """``plan`` with the kernels ``names`` excluded as the blueprint's ``exclude`` would:
    gone if listed, and no kernel added by ``kernels: auto`` builds their op types.
    PluginNotFoundError (with a suggestion) for a name no installed kernel has."""
    specs = [get_registry().find("kernel", name) for name in names]
    gone = {spec.qualified_name for spec in specs}
    ops = {op_type_of(spec) for spec in specs}
    kept = None if plan.kernels is None else [k for k in plan.kernels if _kept(k, gone, ops)]
    excluded = list(dict.fromkeys([*plan.excluded, *sorted(gone)]))
    return replace(plan, kernels=kept, excluded=excluded, blueprint=_recorded(plan, gone))


def _recorded(plan: BuildPlan, gone: set[str]) -> Json:
    """``plan``'s recorded blueprint with the kernels ``gone`` added to its exclude."""
    recorded = dict(plan.blueprint)
    compiler = dict(recorded.get("hw_compiler") or {})
    compiler["exclude"] = list(dict.fromkeys([*compiler.get("exclude", ()), *sorted(gone)]))
    recorded["hw_compiler"] = compiler
    return recorded


def _kept(kernel: PlannedKernel, gone: set[str], ops: set[str]) -> bool:
    """Whether ``kernel`` stays when the kernels ``gone`` are excluded: not one of them, and
    listed by the blueprint or building none of their ``ops``."""
    return kernel.name not in gone and (kernel.pinned or kernel.op_type not in ops)


def load_plan(blueprint: BlueprintSource) -> BuildPlan:
    """A BuildPlan from a blueprint path, a resolved ``Blueprint`` or a BuildPlan."""
    if isinstance(blueprint, BuildPlan):
        return blueprint
    if hasattr(blueprint, "kernels") and hasattr(blueprint, "to_dict"):
        return plan_from_blueprint(cast("Blueprint", blueprint))  # recognised by its attributes

    return plan_from_blueprint(load_blueprint(str(blueprint)))
