"""``target_fps`` to a folding: brainsmith's search or FINN's SetFolding, then further for a
latency target; the record of what limits the throughput is handed to the build (its
context) and written as ``folding.json`` (``record``). Reached once FINN is loaded."""

from __future__ import annotations

import copy
import os

from finn.transformation.fpgadataflow.set_folding import SetFolding
from qonnx.custom_op.registry import getCustomOp

from brainsmith.blueprint.options import FoldingOptions
from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.frameworks.finn.folding.record import RECORD, write_json
from brainsmith.frameworks.finn.folding.search import (
    MATRIX_LAYERS,
    fold,
    fold_for_latency,
    layer_cycles,
    other_limit,
)
from brainsmith.frameworks.finn.parts import part_resources
from brainsmith.frameworks.finn.resolvers import cycles_per_frame, fpga_part

TYPE_CHECKING = False
if TYPE_CHECKING:
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.folding.record import CostedPart
    from brainsmith.frameworks.finn.folding.search import FoldingRecord, LayerFolding

FOLDING_ATTRIBUTES = (
    "PE", "SIMD", "parallel_window", "mem_mode", "ram_style", "resType",
    "depth_trigger_bram", "depth_trigger_uram",
)  # fmt: skip
FoldingConfig = dict[str, dict[str, object]]  # FINN's folding_config: per layer its attributes


def fold_for_target(
    model: ModelWrapper,
    cfg: DataflowBuildConfig,
    options: FoldingOptions | None,
    latency_ns: float | None = None,
    costed: CostedPart | None = None,
) -> tuple[ModelWrapper, FoldingRecord | None]:
    """Fold ``model`` for ``cfg.target_fps`` as ``options`` say (None: the defaults, as in
    FINN's own builder), then further where a frame must take at most ``latency_ns``
    (brainsmith's search), costed on the build's part or on ``costed`` (a Lattice board's
    part, where FINN makes the layers for a stand-in); the model and the record (unchanged,
    and None, without a target)."""
    options = options or FoldingOptions()
    throughput, latency = _cycle_targets(cfg, latency_ns)
    if throughput is None and latency is None:
        return model, None
    # a latency alone: no layer may take longer than the whole frame
    target = throughput if throughput is not None else max(1, latency or 0)
    by_finn = options.search == "finn" and throughput is not None
    if by_finn:
        model, record = _finn_folding(model, cfg, target, options.mvau_wwidth_max)
    else:
        share = min(options.max_utilisation, costed.fill) if costed else options.max_utilisation
        record = _searched_folding(model, cfg, target, share, costed)
    if latency is not None:
        record = _fold_for_latency(model, cfg, record, latency, target, costed)
    _write(model, cfg, record, with_config=not by_finn or latency is not None)
    return model, record


def _cycle_targets(
    cfg: DataflowBuildConfig, latency_ns: float | None
) -> tuple[int | None, int | None]:
    """The cycles per frame ``target_fps`` allows and the cycles ``latency_ns`` takes at the
    synthesis clock (each None without its target)."""
    latency = int(latency_ns // cfg.synth_clk_period_ns) if latency_ns else None
    return cycles_per_frame(cfg), latency


def _write(
    model: ModelWrapper, cfg: DataflowBuildConfig, record: FoldingRecord, with_config: bool
) -> None:
    """The record as ``folding.json``; with ``with_config`` the folding as FINN's
    ``auto_folding_config.json`` (FINN's own step writes it otherwise)."""
    if with_config:
        write_json(os.path.join(cfg.output_dir, "auto_folding_config.json"), folding_config(model))
    write_json(os.path.join(cfg.output_dir, "report", RECORD), record)


def costed_on(
    cfg: DataflowBuildConfig, costed: CostedPart | None
) -> tuple[str, dict[str, int] | None, str]:
    """(part, its resources, the fitted cost models it is costed in) a folding is costed on:
    ``costed``'s, else the build's part, FINN's table of it (None when it has none) and
    none (FINN's estimates)."""
    if costed is not None:
        return costed.name, dict(costed.available), costed.cost_models
    part = fpga_part(cfg)
    found = part_resources(part)
    return part, found[0] if found else None, ""


def _searched_folding(
    model: ModelWrapper,
    cfg: DataflowBuildConfig,
    target: int,
    max_utilisation: float,
    costed: CostedPart | None,
) -> FoldingRecord:
    """brainsmith's search for ``target`` cycles on the build's part (or ``costed``), and
    its record."""
    part, available, cost_models = costed_on(cfg, costed)
    return fold(model, target, part, available, max_utilisation, cost_models).to_dict()


def _finn_folding(
    model: ModelWrapper, cfg: DataflowBuildConfig, target: int, wwidth_max: int
) -> tuple[ModelWrapper, FoldingRecord]:
    """FINN's own folding step, and its record: the limits of SetFolding without its
    relaxation pass, the cycles after it."""
    from finn.builder.build_dataflow_steps import step_target_fps_parallelization

    record = finn_record(model, target, wwidth_max)
    model = step_target_fps_parallelization(model, cfg)
    final = layer_cycles(model)  # after FINN's relaxation pass
    record["layers"] = _with_limits(final, record["layers"])
    record["cycles"] = max(final.values(), default=0)
    return model, record


def _with_limits(
    cycles: dict[str, int], before: dict[str, LayerFolding]
) -> dict[str, LayerFolding]:
    """Each layer's ``cycles`` with the limit it had ``before`` (None for a new layer)."""
    limits = {name: entry["limit"] for name, entry in before.items()}
    return {name: {"cycles": value, "limit": limits.get(name)} for name, value in cycles.items()}


def _fold_for_latency(
    model: ModelWrapper,
    cfg: DataflowBuildConfig,
    record: FoldingRecord,
    latency: int,
    budget: int,
    costed: CostedPart | None,
) -> FoldingRecord:
    """``record`` after folding ``model`` further (brainsmith's search, whichever folded
    first) so that a frame takes at most ``latency`` cycles through the pipeline."""
    part, available, cost_models = costed_on(cfg, costed)
    reached = fold_for_latency(model, latency, part, available, budget, cost_models)
    cycles = layer_cycles(model)
    return {
        **record,
        "latency": reached,
        "cycles": max(cycles.values(), default=0),
        "layers": _with_limits(cycles, record["layers"]),
    }


def follow_decomposition(
    model: ModelWrapper, cfg: DataflowBuildConfig, record: FoldingRecord | None
) -> FoldingRecord | None:
    """``record`` with each layer a later step decomposed (a ``Shuffle`` into Inner and
    OuterShuffle layers, which FINN marks with ``original_node_name``) replaced by its parts
    under their final names and cycles; the slowest part takes the original's limit, and
    the bottleneck's place. Written again as ``folding.json``."""
    if record is None:
        return None
    parts = _decomposed(model, record)
    if not parts:
        return record
    layers = dict(record["layers"])
    for original, cycles in parts.items():
        limit = layers.pop(original)["limit"]
        slowest = max(cycles, key=cycles.__getitem__)
        for name, value in cycles.items():
            layers[name] = {"cycles": value, "limit": limit if name == slowest else None}
        if record["bottleneck"] == original:
            record["bottleneck"] = slowest
    record["layers"] = layers
    if record["bottleneck"] is not None:
        record["cycles"] = layers[record["bottleneck"]]["cycles"]
    write_json(os.path.join(cfg.output_dir, "report", RECORD), record)
    return record


def _decomposed(model: ModelWrapper, record: FoldingRecord) -> dict[str, dict[str, int]]:
    """Per recorded layer that was decomposed, its parts' cycles."""
    parts: dict[str, dict[str, int]] = {}
    for node in model.graph.node:
        original = _original_name(node)
        if original in record["layers"] and is_hardware(node):
            parts.setdefault(original, {})[node.name] = int(getCustomOp(node).get_exp_cycles())
    return parts


def _original_name(node: NodeProto) -> str | None:
    for attribute in node.attribute:
        if attribute.name == "original_node_name":
            name: str = attribute.s.decode()
            return name
    return None


def finn_record(model: ModelWrapper, target: int, wwidth_max: int) -> FoldingRecord:
    """What FINN's SetFolding reaches for ``target`` (run on a copy without its relaxation
    pass, which slows other layers down to the slowest): each layer's cycles, the slowest
    and what stops it."""
    folded = copy.deepcopy(model).transform(
        SetFolding(target, mvau_wwidth_max=wwidth_max, two_pass_relaxation=False)
    )
    cycles = layer_cycles(folded)
    slowest = max(cycles, key=cycles.__getitem__) if cycles else None
    record: FoldingRecord = {
        "search": "finn",
        "target_cycles": target,
        "cycles": cycles.get(slowest, 0) if slowest else 0,
        "layers": {name: {"cycles": value, "limit": None} for name, value in cycles.items()},
        "bottleneck": None,
        "limit": None,
    }
    if slowest is None or cycles[slowest] <= target:
        return record
    limit = _finn_limit(folded.get_node_from_name(slowest), wwidth_max)
    record["bottleneck"], record["limit"] = slowest, limit
    record["layers"][slowest]["limit"] = limit
    return record


def _finn_limit(node: NodeProto, wwidth_max: int) -> str:
    """What stops SetFolding folding ``node`` further: a matrix layer's weight width per PE
    over ``mvau_wwidth_max``, else the layer's most parallel folding."""
    layer = getCustomOp(node)
    if node.op_type in MATRIX_LAYERS:
        bits = layer.get_input_datatype(1).bitwidth()
        simd, mw = layer.get_nodeattr("SIMD"), layer.get_nodeattr("MW")
        wider = next((d for d in range(simd + 1, mw + 1) if mw % d == 0), None)
        if wider is not None and wider * bits > wwidth_max:
            return (
                f"weight width per PE: SIMD {wider} would take {wider * bits} bits of "
                f"{bits}-bit weights, over FINN's mvau_wwidth_max {wwidth_max} (raise "
                "build.folding.mvau_wwidth_max, or use build.folding.search: brainsmith)"
            )
    return other_limit(layer)


def folding_config(model: ModelWrapper) -> FoldingConfig:
    """The chosen folding as a FINN folding configuration (``folding_config``)."""
    config: FoldingConfig = {"Defaults": {}}
    for node in model.graph.node:
        if not is_hardware(node):
            continue
        layer = getCustomOp(node)
        known = layer.get_nodeattr_types()
        config[node.name] = {
            name: layer.get_nodeattr(name) for name in FOLDING_ATTRIBUTES if name in known
        }
    return config
