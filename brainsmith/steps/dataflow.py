"""brainsmith's standard FINN dataflow flow as eight ``@step`` plugins.

Each is ``fn(model, cfg) -> model`` with ``cfg`` a FINN ``DataflowBuildConfig``, so the
steps also run inside FINN's own builder. The blueprint's selection (kernels, backends,
phased transforms) reaches them through ``brainsmith.planning.context.context_of(cfg)``;
without one they behave like FINN's defaults.

    cleanup → qonnx_to_finn → streamline (+ pre_hw transforms) → hardware_inference
    (+ dataflow partition) → specialize → folding (+ bit widths, post_hw transforms)
    → estimates → codegen
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from qonnx.transformation.base import Transformation

from brainsmith.errors import StepError
from brainsmith.frameworks.finn.env import prepare_finn
from brainsmith.frameworks.finn.execution import HOST_ADVICE, HOST_EXECUTOR, host_problems
from brainsmith.frameworks.finn.facts import BACKEND_STYLES, HW_DOMAIN, is_hardware
from brainsmith.frameworks.finn.layers import (
    LayerPluginError,
    load_plan_layers,
    register_finn_layers,
    registered_layers,
    require_layers,
)
from brainsmith.frameworks.finn.recipe import steps as finn_steps
from brainsmith.frameworks.finn.recipe.steps import (
    estimate_reports,
    hw_codegen,
    minimize_bit_width,
    unfinished_streamlining,
)
from brainsmith.frameworks.finn.resolvers import fpga_part, hls_clock_ns
from brainsmith.frameworks.finn.tables import INFER_TRANSFORMS
from brainsmith.frameworks.finn.vector_layers import generate_vector_layers, vector_layers_in_rtl
from brainsmith.planning.advice import blocking_nodes, explain_blocking, fork_hint, fork_problems
from brainsmith.planning.backend_reason import asked_reason, backend_reason, finn_refusals
from brainsmith.planning.context import context_of
from brainsmith.planning.host_tail import split_host_tail
from brainsmith.planning.wiring import cycle, describe
from brainsmith.plugin import get_registry, step
from brainsmith.plugin.errors import PluginError
from brainsmith.plugin.metadata import PRIORITY_LEVELS
from brainsmith.plugin.names import short_name
from brainsmith.plugins import transforms as tfm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.folding.search import FoldingRecord
    from brainsmith.planning.plan import BuildPlan


prepare_finn()


@step(name="cleanup", description="QONNX clean-up: shapes, constants, unique readable names")
def cleanup(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """QONNX clean-up: shapes, constant folding, unique node and readable tensor names."""
    from qonnx.util.cleanup import cleanup_model

    return cleanup_model(model)


@step(name="qonnx_to_finn", description="Convert QONNX quantizers to FINN-ONNX and tidy up")
def qonnx_to_finn(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Convert Quant/BipolarQuant/Trunc nodes to FINN-ONNX (MultiThreshold), then tidy up;
    average pools keep the truncation Brevitas exported (``fix_average_pools``)."""
    from brainsmith.frameworks.finn.recipe.networks import average_pool_widths, fix_average_pools

    model = model.transform(tfm.TruncAvgPoolToThresholds())
    widths = average_pool_widths(model)
    return finn_steps.tidy_up(fix_average_pools(finn_steps.qonnx_to_finn(model, cfg), widths))


@step(name="streamline", description="Blueprint pre_hw transforms, then FINN streamlining")
def streamline(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Apply the blueprint's ``pre_hw`` transforms, make 1D networks 2D, move scales past
    depthwise convolutions (refusing zero-padded binarized ones, which FINN computes wrongly),
    then FINN's streamlining (lowering convolutions to matrix products), then move scales
    past residual forks and joins and layout changes before the thresholds feeding them,
    and bring concatenations and nearest-neighbour upsampling to integers channels-last."""
    from brainsmith.frameworks.finn.recipe.networks import (
        channels_last,
        lift_1d,
        refuse_padded_bipolar,
        streamline_depthwise,
        streamline_joins,
        streamline_residuals,
    )

    model = apply_transforms(model, context_of(cfg).plan, "pre_hw")
    model = streamline_depthwise(lift_1d(model))
    refuse_padded_bipolar(model)
    model = finn_steps.streamline(model).transform(tfm.AveragePoolToSumPool())
    model = streamline_residuals(model)
    return channels_last(streamline_joins(model))


@step(
    name="hardware_inference",
    description="Convert to the blueprint's kernels only, then split off the dataflow partition",
)
def hardware_inference(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Run each selected kernel's infer transform, then create the dataflow partition.

    Thresholds stay separate Thresholding layers when ``cfg.standalone_thresholds`` is set
    or a matrix kernel allows only RTL backends (which have no built-in activation).

    A node that cannot be a hardware layer between hardware layers (a floating-point
    attention product, say) and everything after it stay on the host, after the
    accelerator (``host_tail``), named in a note and the report's ``cpu_nodes``. A node
    left on the host that the host's executor cannot run fails the step, naming it.

    A model not streamlined as the ``streamline`` step leaves it (FINN's ``Streamline``
    transform alone, in a hand-written FINN flow, keeps convolutions and bipolar matrix
    products) gets the rest of that step first.

    Returns the partition (the accelerator); the graph around it is kept as
    ``context_of(cfg).dataflow_parent``.
    """
    unfinished = unfinished_streamlining(model)
    if unfinished:
        model = streamline(model, cfg)
        context_of(cfg).notes.append(
            f"hardware_inference streamlined the model first ({unfinished}): run the "
            "streamline step before it to choose where that happens"
        )
    converted = infer_hardware(model, cfg)
    head, tail = split_host_tail(model, converted, cfg)
    if tail:  # the accelerator is what comes before the first node that cannot be hardware
        converted = infer_hardware(head, cfg)
    _check_converted(head, converted, cfg)
    converted = minimize_bit_width(converted, cfg)  # FINN's first pass, before folding
    partition = _partition(converted, cfg)
    context = context_of(cfg)
    if tail:
        context.dataflow_parent = tail.attach(context.dataflow_parent)
        context.notes.append(tail.note)
    _check_host_nodes(context.dataflow_parent)
    return partition


def infer_hardware(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """The selected kernels' rewrites, their infer transforms in FINN's order (each kernel's
    own where its ``infer_order`` puts them), and FINN's layout fix-ups."""
    from qonnx.transformation.infer_shapes import InferShapes

    from brainsmith.frameworks.finn.recipe.networks import convert_to_hw, transform_args

    plan = context_of(cfg).plan
    load_layers(plan)
    standalone = cfg.standalone_thresholds or plan.needs_standalone_thresholds()

    def make(name: str) -> Transformation:
        made = _transform_class(plan, name)(**transform_args(name, cfg, plan))
        return LoopChecked(made, f"transform {name}", "the kernel that declares it")

    names = plan.infer_transforms(standalone)
    return convert_to_hw(model, names, make, plan.rewrites()).transform(InferShapes())


def _check_converted(before: ModelWrapper, model: ModelWrapper, cfg: DataflowBuildConfig) -> None:
    """Fail naming every node that would split the accelerator, with what would take it."""
    plan = context_of(cfg).plan
    selected = ", ".join(k.name for k in plan.kernels) if plan.kernels is not None else "all"
    if not any(is_hardware(n) for n in model.graph.node):
        ops = ", ".join(sorted({n.op_type for n in model.graph.node}))
        raise StepError(
            f"no node was converted to hardware: the kernels ({selected}) match none of the "
            f"model's operations ({ops})",
            "add a kernel for these operations to the blueprint's kernels (or use kernels: "
            "auto); brainsmith check MODEL shows what each node would become",
            model,
        )
    blocking = blocking_nodes(model)
    if blocking:
        lines = explain_blocking(before, blocking, cfg, converted=model)
        raise StepError(
            f"{len(blocking)} node(s) sit between hardware layers but were not converted to "
            "hardware: " + "; ".join(lines),
            "follow the advice for each node (brainsmith check MODEL [BLUEPRINT] lists every "
            "node), or add a pre_hw transform that removes them",
            model,
        )


def _check_host_nodes(parent: ModelWrapper) -> None:
    """Fail naming every node around the accelerator that the host cannot run."""
    problems = host_problems(parent)
    if problems:
        raise StepError(
            f"{len(problems)} node(s) stay on the host, which runs them with {HOST_EXECUTOR}, "
            "but it cannot run them: " + "; ".join(problems),
            HOST_ADVICE,
            parent,
        )


def _partition(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    from finn.analysis.fpgadataflow.unsupported_layers import unsupported_layers
    from finn.transformation.fpgadataflow.create_dataflow_partition import (
        CreateDataflowPartition,
    )
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    plan = context_of(cfg).plan
    supported, culprit = model.analysis(unsupported_layers)
    if not supported:  # blocking_nodes found none, FINN's own analysis still objects
        raise StepError(
            f"node {culprit.name} ({culprit.op_type}) sits between hardware layers but was not "
            "converted to hardware",
            f"add a kernel that implements {culprit.op_type} to the blueprint, or a pre_hw "
            "transform that removes it",
            model,
        )
    _check_forks(model, plan)
    folder = cfg.get_intermediate_models_directory() / "supported_op_partitions"
    parent = model.transform(CreateDataflowPartition(partition_model_dir=str(folder)))
    partitions = parent.get_nodes_by_op_type("StreamingDataflowPartition")
    if len(partitions) != 1:
        raise StepError(
            f"the hardware layers form {len(partitions)} separate dataflow partitions; "
            "FINN builds exactly one",
            "convert the layers between them to hardware too (add their kernels)",
            parent,
        )
    context_of(cfg).dataflow_parent = parent
    return ModelWrapper(getCustomOp(partitions[0]).get_nodeattr("model"))


def _check_forks(model: ModelWrapper, plan: BuildPlan) -> None:
    """A hardware layer's output read by several hardware layers needs a DuplicateStreams."""
    problems = [f"layer {name}'s {problem}" for name, problem in fork_problems(model).items()]
    if problems:
        raise StepError("; ".join(problems), fork_hint(plan), model)


@step(
    name="specialize",
    description="Choose HLS or RTL per layer from the blueprint's allowed backends",
)
def specialize(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Set ``preferred_impl_style`` per layer (``BuildPlan.style_for``), then FINN's
    SpecializeLayers.

    A kernel allowing exactly one backend type gets that type; otherwise the blueprint's
    ``prefer`` applies, and with ``prefer: auto`` FINN's rule picks by datatypes and part.
    A layer that ends up with a backend type the blueprint does not allow fails the step.
    """
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from finn.transformation.general import ApplyConfig
    from qonnx.transformation.general import GiveUniqueNodeNames
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes

    plan = context_of(cfg).plan
    load_layers(plan, model)
    styles = set_backend_styles(model, plan)
    asked = {
        n.output[0]: (n.name, n.op_type, styles[n.name], asked_reason(n, styles[n.name], plan))
        for n in model.graph.node
        if n.name in styles and n.output
    }
    rtl_before_finn(model, styles, cfg)
    if cfg.specialize_layers_config_file is not None:
        model = model.transform(ApplyConfig(str(cfg.specialize_layers_config_file)))
    with finn_refusals() as refused:
        model = model.transform(SpecializeLayers(fpga_part(cfg)))
    for transform in (GiveUniqueNodeNames(), InferShapes(), InferDataTypes()):
        model = model.transform(transform)
    _check_backends(model, plan)
    specialised = Specialised(asked, refused, fpga_part(cfg))
    _say_backends(model, cfg, specialised)
    _check_board_has_hls(model, cfg, specialised)
    return model


@dataclass(frozen=True)
class Specialised:
    """What specialisation was given: per layer's output tensor, what was ``asked`` of it
    before (name, op type, style, who asked), what FINN ``refused``, and the ``part``."""

    asked: dict[str, tuple[str, str, str, str]]
    refused: dict[str, str]
    part: str

    def reason(self, node: onnx.NodeProto) -> tuple[str, str]:
        """(layer name, why ``node`` got its backend), as ``brainsmith check`` says it."""
        default = (node.name, node.op_type, "", "")
        name, op_type, style, why = self.asked.get(node.output[0], default)
        refused = self.refused.get(name, "")
        return name, backend_reason(op_type, style, why, node.op_type, self.part, refused)


def _check_board_has_hls(
    model: ModelWrapper, cfg: DataflowBuildConfig, specialised: Specialised
) -> None:
    """A StepError naming every HLS layer when the build is for a Lattice board or part: it
    has no HLS flow, so such a layer would stop the bitstream after every later step."""
    board = _lattice_board(cfg)
    hls = [n for n in model.graph.node if BACKEND_STYLES.get(n.domain) == "hls"]
    if board is None or not hls:
        return
    layers: dict[str, list[str]] = {}  # why -> the layers it holds for
    for node in hls:
        name, reason = specialised.reason(node)
        layers.setdefault(reason, []).append(name)
    raise StepError(
        f"{board} has no HLS flow, but {len(hls)} layer(s) can only be HLS: "
        + "; ".join(f"{', '.join(names)}: {reason}" for reason, names in layers.items()),
        "a Lattice part needs every layer in RTL: change these layers' data types as FINN "
        "says, or build for an AMD part (--part) instead",
        model,
    )


def _lattice_board(cfg: DataflowBuildConfig) -> str | None:
    """The build's Lattice board or part (None: none, or FINN's own builder with a plain
    config)."""
    options = context_of(cfg).plan.options
    return options.lattice if options is not None else None


def _say_backends(model: ModelWrapper, cfg: DataflowBuildConfig, specialised: Specialised) -> None:
    """Each layer's backend and why to build.log (``backend_reason``, as ``brainsmith check``
    says it); a note for each layer that did not get the style the blueprint asked for."""
    log = logging.getLogger("brainsmith.specialize")
    asked = specialised.asked
    for node in model.graph.node:
        if node.domain not in BACKEND_STYLES or not node.output or node.output[0] not in asked:
            continue
        style = asked[node.output[0]][2]
        name, reason = specialised.reason(node)
        log.info("%s is %s: %s", name, node.op_type, reason)
        if style and BACKEND_STYLES[node.domain] != style:
            context_of(cfg).notes.append(f"{name}: {reason}")


def load_layers(plan: BuildPlan, model: ModelWrapper | None = None) -> None:
    """Load the plan's kernels and their backends (and the plugins ``model``'s layers
    record), so QONNX and FINN know their layers before conversion and specialisation."""
    try:
        load_plan_layers(plan)
        kernels = plan.kernels
        register_finn_layers(INFER_TRANSFORMS if kernels is None else [k.op_type for k in kernels])
        if model is not None:
            require_layers(model, "the model")
    except (PluginError, LayerPluginError) as exc:
        raise StepError(
            f"a hardware layer plugin cannot be loaded: {exc}",
            "install or fix the plugin package named above, or exclude its kernel in the "
            "blueprint (hw_compiler.exclude)",
        ) from exc


def set_backend_styles(model: ModelWrapper, plan: BuildPlan) -> dict[str, str]:
    """Set each hardware layer's ``preferred_impl_style`` as ``plan.style_for`` says;
    returns layer name -> the style set ("" where FINN's rule chooses)."""
    from qonnx.custom_op.registry import getCustomOp

    styles: dict[str, str] = {}
    for node in model.graph.node:
        if node.domain == HW_DOMAIN:
            styles[node.name] = plan.style_for(node.op_type) or _unasked(node.op_type, plan)
            if styles[node.name]:
                getCustomOp(node).set_nodeattr("preferred_impl_style", styles[node.name])
    return styles


def rtl_before_finn(model: ModelWrapper, styles: dict[str, str], cfg: DataflowBuildConfig) -> None:
    """The layers to be RTL that brainsmith specialises before FINN does: integer adds
    (``IntAdd``) and, on a Lattice part, the depthwise layers FINN keeps for Versal parts
    (``frameworks/finn/vector_layers.py``)."""
    integer_adds_in_rtl(model, styles)
    if _lattice_board(cfg):
        vector_layers_in_rtl(model, styles)


def integer_adds_in_rtl(model: ModelWrapper, styles: dict[str, str]) -> list[str]:
    """ElementwiseAdd layers to be RTL whose operands are integer streams (FINN's RTL adder
    takes floats, so FINN would make them HLS) become brainsmith's ``IntAdd``; returns their
    names."""
    changed = [n.name for n in model.graph.node if _integer_rtl_add(n, styles)]
    if changed:
        get_registry().get("backend", "brainsmith:IntAddRTL")  # registers IntAdd(_rtl)
        for node in model.graph.node:
            if node.name in changed:
                node.op_type = "IntAdd"
    return changed


def _integer_rtl_add(node: onnx.NodeProto, styles: dict[str, str]) -> bool:
    """Whether ``node`` is an ElementwiseAdd to be RTL that ``IntAdd`` takes."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.kernels.int_add import IntAdd

    wanted = node.domain == HW_DOMAIN and node.op_type == "ElementwiseAdd"
    return wanted and styles.get(node.name) == "rtl" and IntAdd.takes(getCustomOp(node))


def _unasked(op_type: str, plan: BuildPlan) -> str:
    """``"hls"`` where the RTL layer of ``op_type`` is a plugin's alternative (a backend below
    NORMAL priority, such as brainsmith's RTL for FINN's HLS-only layers) that the blueprint
    neither lists nor prefers; ``""`` lets FINN's rule choose (RTL wherever it exists)."""
    spec = registered_layers().get(f"{op_type}_rtl")
    if spec is None or spec.metadata.get("priority", 50) >= PRIORITY_LEVELS["NORMAL"]:
        return ""
    kernel = plan.kernel_for(op_type)
    return "" if kernel is not None and spec.qualified_name in kernel.backends else "hls"


def _check_backends(model: ModelWrapper, plan: BuildPlan, decomposed_later: bool = True) -> None:
    """Every hardware layer has an allowed HLS/RTL backend (or, with ``decomposed_later``,
    is a kernel a later step replaces, such as FINN's Shuffle)."""
    for node in model.graph.node:
        if node.domain == HW_DOMAIN:
            _check_implemented(node, decomposed_later, model)
        style = BACKEND_STYLES.get(node.domain)
        if style is not None:
            _check_allowed(node, style, plan, model)


def _check_allowed(node: onnx.NodeProto, style: str, plan: BuildPlan, model: ModelWrapper) -> None:
    """A StepError when the blueprint does not allow ``style`` (hls/rtl) for the kernel of
    ``node``, a specialised layer."""
    kernel = plan.kernel_for(node.op_type.rpartition("_")[0])
    if kernel is None or not kernel.backend_types or style in kernel.backend_types:
        return
    allowed = ", ".join(kernel.backends) or "/".join(kernel.backend_types)
    raise StepError(
        f"layer {node.name} could only be specialised as {node.op_type} ({style}), but "
        f"the blueprint allows {allowed} for kernel {kernel.name}",
        f"allow a {style} backend for {kernel.name} in the blueprint, or change the "
        "layer so FINN can implement it with the allowed backend",
        model,
    )


def _check_implemented(node: onnx.NodeProto, decomposed_later: bool, model: ModelWrapper) -> None:
    registry = get_registry()
    kernel = next(iter(registry.candidates("kernel", node.op_type)), None)
    if decomposed_later and kernel is not None and kernel.metadata.get("decomposes_into"):
        return
    backends = [
        b.qualified_name
        for b in registry.specs("backend")
        if short_name(str(b.metadata.get("kernel", ""))) == node.op_type
    ]
    would = ", ".join(backends) if backends else "none is installed"
    raise StepError(
        f"layer {node.name} ({node.op_type}) has no HLS or RTL implementation, so no hardware "
        f"would be generated for it (backends that implement {node.op_type}: {would})",
        f"allow one of these backends for the kernel that produced {node.op_type} in the "
        "blueprint, or remove that kernel so the operation stays on the host",
        model,
    )


@step(
    name="folding",
    description="Fold to target_fps, apply a folding config, minimise bit widths, post_hw",
)
def folding(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Parallelise to ``cfg.target_fps`` at the configured clock (brainsmith's folding
    search, or FINN's SetFolding with ``build.folding.search: finn``; with no target named,
    brainsmith's default, which a design meeting it unfolded is left at) and, with
    ``build.target_latency_ns``, further until a frame's estimated latency meets it; apply a folding
    config file if given, minimise bit widths, decompose Shuffle layers into implementable
    ones (FINN's transpose decomposition), then the blueprint's ``post_hw`` transforms;
    every layer must then have a backend."""
    from brainsmith.frameworks.finn.folding.search import layer_cycles
    from brainsmith.frameworks.finn.folding.target import fold_for_target, follow_decomposition
    from brainsmith.frameworks.finn.resolvers import cycles_per_frame

    context = context_of(cfg)
    plan = context.plan
    _check_backends(model, plan)  # FINN's folding fails obscurely on unspecialised layers
    options = plan.options
    allowed = cycles_per_frame(cfg)
    # brainsmith's default target (none named): a design that meets it unfolded stays so
    default = options is not None and options.target_fps is None and allowed is not None
    slowest = max(layer_cycles(model).values(), default=0) if default else 0
    context.folding = None
    if not default or slowest > (allowed or 0):
        model, context.folding = fold_for_target(
            model,
            cfg,
            options.folding if options else None,
            options.target_latency_ns if options else None,
            context.costed_part,
        )
        if default:
            context.notes.append(default_target_note(cfg.target_fps, slowest, context.folding))
    model = finn_steps.apply_folding_config(model, cfg)
    model = legal_folding(model)
    model = finn_steps.minimize_bit_width(model, cfg)
    model = finn_steps.transpose_decomposition(  # Shuffle -> Inner/OuterShuffle
        model, cfg, styles=lambda decomposed: set_backend_styles(decomposed, plan)
    )
    context.folding = follow_decomposition(model, cfg, context.folding)
    model = apply_transforms(model, plan, "post_hw")
    _check_backends(model, plan, decomposed_later=False)
    return model


def default_target_note(fps: int, slowest: int, record: FoldingRecord | None) -> str:
    """What a build that names no target, slower unfolded than ``fps``, was folded for (and,
    where the part stopped it short, why: the folding ``record``'s limit)."""
    allowed = f"; {record['target_cycles']:,} allowed at the clock" if record else ""
    note = (
        f"no target: folded for {fps:,} fps, brainsmith's default (unfolded, its slowest layer "
        f"took {slowest:,} cycles a frame{allowed}); set build.target_fps (--target-fps) for "
        "another, 1 for the smallest design"
    )
    if record and record["cycles"] > record["target_cycles"] and record.get("limit"):
        note += f"; short of it at {record['cycles']:,} cycles a frame: {record['limit']}"
    return note


def legal_folding(model: ModelWrapper) -> ModelWrapper:
    """Raise SIMD where FINN's code generation would refuse the folding: an HLS matrix
    layer needs SIMD >= MW / 1024 (its input buffer), which a build without target_fps (or
    a hand-written folding config) can miss on wide layers. SIMD becomes the smallest
    divisor of MW that satisfies it."""
    from qonnx.custom_op.registry import getCustomOp

    for node in model.get_nodes_by_op_type("MVAU_hls"):
        layer = getCustomOp(node)
        width, simd = layer.get_nodeattr("MW"), layer.get_nodeattr("SIMD")
        if simd * 1024 < width:
            wanted = -(-width // 1024)
            layer.set_nodeattr("SIMD", next(d for d in range(wanted, width + 1) if width % d == 0))
    return model


@step(name="estimates", description="Per-layer resource and cycle estimates, fps and latency")
def estimates(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Write FINN's analytical estimate reports (resources, cycles, performance) to the
    report folder of ``cfg.output_dir``."""
    from brainsmith.frameworks.finn.folding.search import fits_folded_smallest, over_the_part

    model = estimate_reports(model, cfg)
    context = context_of(cfg)
    costed = context.costed_part
    part = (  # a Lattice board's part in its own resources, or an AMD part in FINN's table
        (costed.name, costed.available, costed.cost_models)
        if costed
        else (fpga_part(cfg), None, "")
    )
    over = over_the_part(model, *part)
    larger = "a board with a larger part (--board)" if costed else "a larger part (--part)"
    if over and context.plan.build.allow_over_part:
        context.notes.append(f"{over} (accepted: build.allow_over_part)")
    elif over:
        smallest = not fits_folded_smallest(model, *part)
        slower = "" if smallest else "lower build.target_fps (--target-fps), "
        raise StepError(
            f"{over}, with every layer folded as far as it goes" if smallest else over,
            f"{slower}choose {larger}, or set build.allow_over_part: true (--allow-over-part) "
            "to build it anyway",
            model,
        )
    return model


@step(name="codegen", description="Generate HLS C++ and fill RTL templates for every layer")
def codegen(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Generate each layer's HLS code and RTL sources (no Xilinx tools needed); on a
    Lattice part, the depthwise RTL layers' as for a Versal part first (``vector_layers``)."""
    if _lattice_board(cfg):
        from finn.transformation.qonnx.give_unique_node_names_recursive import (
            GiveUniqueNodeNamesRecursive,
        )

        model = model.transform(GiveUniqueNodeNamesRecursive())
        generate_vector_layers(model, hls_clock_ns(cfg))
    return hw_codegen(model, cfg)


def apply_transforms(model: ModelWrapper, plan: BuildPlan, phase: str) -> ModelWrapper:
    """Apply the plan's transforms of ``phase`` (``pre_hw``, ``post_hw``) in order."""
    for ref in getattr(plan, phase):
        try:
            instance = _transform_class(plan, ref.name)(**ref.args)
        except TypeError as exc:
            raise StepError(
                f"{phase} transform {ref.name} cannot be created with {ref.args}: {exc}",
                f"check the arguments of {ref.name} in the blueprint",
            ) from exc
        where = f"the blueprint's transforms_phased.{phase}"
        model = model.transform(LoopChecked(instance, f"{phase} transform {ref.name}", where))
    return model


class LoopChecked(Transformation):  # type: ignore[misc]
    """A plugin's transform whose every pass is followed by the loop check: a loop it
    makes fails the step, naming it, before the passes after it in the same step (and
    qonnx's clean-up of its result) spin on the graph."""

    def __init__(self, inner: Transformation, label: str, origin: str) -> None:
        super().__init__()
        self.inner, self.label, self.origin = inner, label, origin

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        model, changed = self.inner.apply(model)
        loop = cycle(model.graph)
        if loop is not None:
            raise StepError(
                f"{self.label} left a loop in the graph: {describe(loop)} (the passes "
                "after it would never finish)",
                f"the transform comes from {self.origin}: remove it to see, or fix it",
            )
        return model, changed


def _transform_class(plan: BuildPlan, name: str) -> Callable[..., Transformation]:
    """The transform the plan names ``name`` (resolved with the plan, imported on first use)."""
    loaded = get_registry().load(plan.spec("transform", name))
    return cast("Callable[..., Transformation]", loaded)
