"""``target_fps`` to a folding: brainsmith's search or FINN's SetFolding, and a record of
what limits the throughput, handed to the build (its context) and written as
``folding.json`` in FINN's report folder."""

from __future__ import annotations

import json
import os
from typing import cast

from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.frameworks.finn.resolvers import cycles_per_frame, fpga_part

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.blueprint.options import FoldingOptions
    from brainsmith.frameworks.finn.folding.search import FoldingRecord

RECORD = "folding.json"
FOLDING_ATTRIBUTES = (
    "PE", "SIMD", "parallel_window", "mem_mode", "ram_style", "resType",
    "depth_trigger_bram", "depth_trigger_uram",
)  # fmt: skip


def fold_for_target(
    model, cfg, options: FoldingOptions | None, latency_ns: float | None = None
) -> tuple[ModelWrapper, FoldingRecord | None]:
    """Fold ``model`` for ``cfg.target_fps`` as ``options`` say (None: the defaults, as in
    FINN's own builder), then further where a frame must take at most ``latency_ns``
    (brainsmith's search); the model and the record (unchanged, and None, without a target)."""
    from brainsmith.blueprint.options import FoldingOptions

    options = options or FoldingOptions()
    latency = int(latency_ns // cfg.synth_clk_period_ns) if latency_ns else None
    throughput = cycles_per_frame(cfg)
    if throughput is None and latency is None:
        return model, None
    # a latency alone: no layer may take longer than the whole frame
    target = throughput if throughput is not None else max(1, cast(int, latency))
    from brainsmith.frameworks.finn.folding.search import layer_cycles

    if options.search == "finn" and throughput is not None:
        from finn.builder.build_dataflow_steps import step_target_fps_parallelization

        record = finn_record(model, target, options.mvau_wwidth_max)
        model = step_target_fps_parallelization(model, cfg)
        final = layer_cycles(model)  # after FINN's relaxation pass
        limits = {name: entry["limit"] for name, entry in record["layers"].items()}
        record["layers"] = {
            name: {"cycles": value, "limit": limits.get(name)} for name, value in final.items()
        }
        record["cycles"] = max(final.values(), default=0)
    else:
        from brainsmith.frameworks.finn.folding.search import fold
        from brainsmith.frameworks.finn.parts import part_resources

        part = fpga_part(cfg)
        found = part_resources(part)
        record = fold(model, target, part, found[0] if found else None,
                      options.max_utilisation).to_dict()  # fmt: skip
    if latency is not None:
        record = _fold_for_latency(model, cfg, record, latency, target)
    if options.search != "finn" or throughput is None or latency is not None:
        write_json(os.path.join(cfg.output_dir, "auto_folding_config.json"), folding_config(model))
    write_json(os.path.join(cfg.output_dir, "report", RECORD), record)
    return model, record


def _fold_for_latency(
    model, cfg, record: FoldingRecord, latency: int, budget: int
) -> FoldingRecord:
    """``record`` after folding ``model`` further (brainsmith's search, whichever folded
    first) so that a frame takes at most ``latency`` cycles through the pipeline."""
    from brainsmith.frameworks.finn.folding.search import fold_for_latency, layer_cycles
    from brainsmith.frameworks.finn.parts import part_resources

    part = fpga_part(cfg)
    found = part_resources(part)
    reached = fold_for_latency(model, latency, part, found[0] if found else None, budget)
    cycles = layer_cycles(model)
    limits = {name: entry["limit"] for name, entry in record["layers"].items()}
    return {
        **record,
        "latency": reached,
        "cycles": max(cycles.values(), default=0),
        "layers": {name: {"cycles": c, "limit": limits.get(name)} for name, c in cycles.items()},
    }


def follow_decomposition(model, cfg, record: FoldingRecord | None) -> FoldingRecord | None:
    """``record`` with each layer a later step decomposed (a ``Shuffle`` into Inner and
    OuterShuffle layers, which FINN marks with ``original_node_name``) replaced by its parts
    under their final names and cycles; the slowest part takes the original's limit, and
    the bottleneck's place. Written again as ``folding.json``."""
    from qonnx.custom_op.registry import getCustomOp

    if record is None:
        return None
    parts: dict[str, dict[str, int]] = {}
    for node in model.graph.node:
        original = _original_name(node)
        if original in record["layers"] and is_hardware(node):
            parts.setdefault(original, {})[node.name] = int(getCustomOp(node).get_exp_cycles())
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


def _original_name(node) -> str | None:
    for attribute in node.attribute:
        if attribute.name == "original_node_name":
            return attribute.s.decode()
    return None


def finn_record(model, target: int, wwidth_max: int) -> FoldingRecord:
    """What FINN's SetFolding reaches for ``target`` (run on a copy without its relaxation
    pass, which slows other layers down to the slowest): each layer's cycles, the slowest
    and what stops it."""
    import copy

    from finn.transformation.fpgadataflow.set_folding import SetFolding
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.folding.search import MATRIX_LAYERS, layer_cycles, other_limit

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
    node = folded.get_node_from_name(slowest)
    layer = getCustomOp(node)
    limit = other_limit(layer)
    if node.op_type in MATRIX_LAYERS:
        bits = layer.get_input_datatype(1).bitwidth()
        simd, mw = layer.get_nodeattr("SIMD"), layer.get_nodeattr("MW")
        wider = next((d for d in range(simd + 1, mw + 1) if mw % d == 0), None)
        if wider is not None and wider * bits > wwidth_max:
            limit = (
                f"weight width per PE: SIMD {wider} would take {wider * bits} bits of "
                f"{bits}-bit weights, over FINN's mvau_wwidth_max {wwidth_max} (raise "
                "build.folding.mvau_wwidth_max, or use build.folding.search: brainsmith)"
            )
    record["bottleneck"], record["limit"] = slowest, limit
    record["layers"][slowest]["limit"] = limit
    return record


def folding_config(model) -> dict[str, Any]:
    """The chosen folding as a FINN folding configuration (``folding_config``)."""
    from qonnx.custom_op.registry import getCustomOp

    config: dict[str, Any] = {"Defaults": {}}
    for node in model.graph.node:
        if not is_hardware(node):
            continue
        layer = getCustomOp(node)
        known = layer.get_nodeattr_types()
        config[node.name] = {
            name: layer.get_nodeattr(name) for name in FOLDING_ATTRIBUTES if name in known
        }
    return config


def read_record(report_dir: str) -> tuple[FoldingRecord | None, str | None]:
    """``folding.json`` left in ``report_dir`` by the folding step (of a checkpoint this
    build continues): ``(None, None)`` without one, ``(None, problem)`` when it cannot be
    read or has another shape."""
    path = os.path.join(report_dir, RECORD)
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({exc}); the bottleneck's cause is not shown"
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, dict) or not all(isinstance(v, dict) for v in layers.values()):
        return None, (
            f"{path} has no 'layers' object of layer entries; the bottleneck's cause is not shown"
        )
    return cast("FoldingRecord", data), None


def write_json(path: str, data: Mapping[str, Any]) -> None:
    """``data`` as JSON at ``path``, written whole or not at all."""
    from brainsmith.files import write_atomically

    def dump(temporary: str) -> None:
        with open(temporary, "w") as handle:
            json.dump(data, handle, indent=1, default=str)

    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, dump)
