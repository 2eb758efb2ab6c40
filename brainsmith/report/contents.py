"""report.json and report.html: the whole truth about a build.

Status, steps (with their saved models and verification), every hardware layer (kernel,
backend, folding, data types, memory style, estimates — or that it has none — and its
generated code), the nodes left on the CPU, whether ``target_fps`` was met and which layer
limits it, utilisation of the FPGA part, FINN's warnings from build.log, notes from the
front door, the resolved blueprint and tool versions.

report.json is written first and last: ``status: running`` when the build starts (a build
whose process is killed leaves that), then ``ok``, ``failed`` or ``interrupted``.
"""

from __future__ import annotations

import io
import json
import os
import re
import traceback
from collections.abc import Mapping
from typing import cast

from brainsmith.files import write_text
from brainsmith.frameworks.finn.facts import ESTIMATION_METHODS, allowed_cycles
from brainsmith.frameworks.finn.rtl_costs import REPLACED
from brainsmith.report.units import RESOURCES, bits

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.base import CustomOp

    from brainsmith.files import Json
    from brainsmith.frameworks.finn.facts import Resource
    from brainsmith.frameworks.finn.folding.search import FoldingRecord
    from brainsmith.report.charts import ChartWorker
    from brainsmith.report.schema import (
        BitsKey,
        BuildReport,
        ChartRow,
        Counts,
        CpuNode,
        CpuNodes,
        DatatypeKey,
        Estimates,
        FinnWarning,
        LatencyTarget,
        Layer,
        LayerAttribute,
        LayerFacts,
        Performance,
        Read,
        RtlsimSection,
        Target,
        Utilisation,
    )

RESOURCE_FILE = "estimate_layer_resources.json"
BACKEND_SUFFIXES = {"_hls": "hls", "_rtl": "rtl"}
LAYER_ATTRIBUTES: tuple[LayerAttribute, ...] = (
    "PE", "SIMD", "mem_mode", "ram_style", "resType", "depth",
)  # fmt: skip
DATATYPE_BITS: tuple[tuple[DatatypeKey, BitsKey], ...] = (
    ("input_datatype", "input_bits"),
    ("weight_datatype", "weight_bits"),
    ("output_datatype", "output_bits"),
)
WEIGHTED = ("MVAU", "VVAU")  # Thresholding's "weightDataType" is its thresholds' type
LOG_LINE = re.compile(r"^(WARNING|ERROR|CRITICAL) ([\w.]+): (.*)$")
MAX_WARNINGS = 100
QUOTED_PATH = re.compile(r"'/[^']*'")
WARNED_AT = re.compile(r"\(([^()]+):\d+\)$")  # a Python warning's "(file:line)"

# What FINN does not estimate, per op type as it stands in the graph (kernel_backend), read
# from its classes in finn/custom_op/fpgadataflow/ (finn-plus 1.6): a class that does not
# override HWCustomOp.lut_estimation / bram_estimation / uram_estimation / dsp_estimation
# (hwcustomop.py: "must be implemented by every node") gets the base class's placeholder 0;
# MVAU_rtl.lut_estimation (rtl/matrixvectoractivation_rtl.py) and VVAU_rtl.lut_estimation
# (rtl/vectorvectoractivation_rtl.py) return a fixed 0 whatever the folding, though these
# units have LUT logic. A 0 that a model computes is an estimate (MVAU_hls DSP with resType
# lut; Pad1D BRAM and PWPolyF URAM, which those classes state as none).
_NO_MODEL = (
    "CheckSum_hls", "Crop_hls", "Crop_rtl", "DuplicateStreams_hls", "FINNLoop",
    "FMPadding_Pixel_hls", "FMPadding_rtl", "GlobalAccPool_hls", "HWSoftmax_hls",
    "HWSoftmax_rtl", "IODMA_hls", "InnerShuffle_rtl", "LabelSelect_hls", "LayerNorm_hls",
    "LayerNorm_rtl", "MergeMultiHeads_hls", "NodeContainer", "OuterShuffle_hls", "Pool_hls",
    "RemoveDataPath_rtl", "ReplicateStream_hls", "Requant_hls", "Requant_rtl", "Reshape_rtl",
    "ScaledDotProductAttention_hls", "SelectToken_rtl", "SplitMultiHeads_hls", "Squeeze_hls",
    "StreamingConcat_hls", "StreamingSplit_hls", "TLastMarker_hls", "Unsqueeze_hls",
    "UpsampleNearestNeighbour_hls",
)  # fmt: skip
_NO_DSP_MODEL = (
    "ConvolutionInputGenerator_rtl", "HWWhere_rtl", "Lookup_hls", "StreamingFIFO_hls",
    "StreamingFIFO_rtl", "Thresholding_hls", "Thresholding_rtl",
    *(f"Elementwise{op}_hls" for op in (
        "AbsDiff", "Add", "And", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div",
        "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mul", "Or", "Sub",
        "Xor",
    )),
    "ElementwiseAdd_rtl", "ElementwiseMul_rtl", "ElementwiseSub_rtl",
)  # fmt: skip
NOT_ESTIMATED: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_NO_MODEL, RESOURCES),
    **dict.fromkeys(_NO_DSP_MODEL, ("DSP",)),
    "StreamingDataWidthConverter_hls": ("BRAM_18K", "URAM", "DSP"),
    "StreamingDataWidthConverter_rtl": ("BRAM_18K", "URAM", "DSP"),
    "Pad1D_rtl": ("URAM", "DSP"),
    "MVAU_rtl": ("LUT",),
    "VVAU_rtl": ("LUT",),
}

# FINN's warnings from SetFolding, logged while it searches, before later steps (a folding
# config, a second pass) settle the folding: numbers of a folding that is not the final one,
# and the verdict on the target, which the final cycle estimates confirm or refute.
FOLDING_NUMBERS = re.compile(
    r"Estimated: \d+ \(cyc/frame\), Target: \d+ \(cyc/frame\)"
    r"|did not meet the target cycles|is bottleneck with \d+ cycles"
)
FOLDING_VERDICT = re.compile(
    r"did not reach the target throughput"
    r"|SIMD parallelization for at least one node was limited by mvau_wwidth_max"
)


def estimates(
    report_dir: str,
    model: ModelWrapper | None = None,
    output_dir: str = "",
    part: str | None = None,
) -> Estimates:
    """Every layer of ``model`` with FINN's estimates where they exist, totals, performance.
    A layer a step after FINN's estimates inserted (``size_fifos``' FIFOs and width
    converters) is estimated by FINN's own methods for ``part`` here."""
    resources = _read(report_dir, RESOURCE_FILE)
    cycles = _read(report_dir, "estimate_layer_cycles.json")
    if model is not None and part and resources:
        resources, cycles = with_late_layers(model, part, resources, cycles)
    counts = _read(report_dir, "op_and_param_counts.json")
    performance = _read(report_dir, "estimate_network_performance.json")
    described = layer_attributes(model, output_dir) if model is not None else {}
    names = list(described) or [n for n in resources if n != "total"] or list(cycles)
    names += [n for n in (*resources, *cycles) if n != "total" and n not in names]
    ours = brainsmith_estimates(model, part) if model is not None and resources else {}
    ours = {name: found for name, found in ours.items() if name in resources}
    layers: list[Layer] = []
    adjust: dict[str, float] = {}  # brainsmith's numbers less FINN's, per resource
    for name in names:
        facts: LayerFacts = described.get(name, {"op_type": "", "backend": ""})
        estimated = name in resources or name in cycles
        missing = not_estimated(facts) if name in resources else RESOURCES
        filled, source = ours.get(name, ({}, "finn"))
        kind = "_".join(part for part in (facts.get("op_type", ""), facts.get("backend")) if part)
        replaced = REPLACED.get(kind, ())
        filled = {k: v for k, v in filled.items() if k in missing or k in replaced}
        finn = resources.get(name, {})
        found = {**finn, **filled}
        for key, value in filled.items():  # FINN's total counts its own number, or a 0
            adjust[key] = adjust.get(key, 0.0) + value - float(_number(finn.get(key)) or 0)
        missing = tuple(key for key in missing if key not in filled)
        layer: Layer = {
            "name": name,
            **facts,
            "estimated": estimated,
            "LUT": _amount(found, "LUT", missing),
            "BRAM_18K": _amount(found, "BRAM_18K", missing),
            "URAM": _amount(found, "URAM", missing),
            "DSP": _amount(found, "DSP", missing),
            "not_estimated": list(missing),
            "estimated_by": {
                key: "brainsmith" if key in filled else source
                for key in RESOURCES
                if key not in missing and name in resources
            },
            "cycles": _number(cycles.get(name)) if estimated else None,
            **_counts(counts.get(name)),
        }
        layers.append(layer)
    totals: dict[str, float] = {
        key: _number(resources.get("total", {}).get(key, 0)) for key in RESOURCES
    }
    for key, value in adjust.items():
        totals[key] = _number(totals[key] + value)
    return {
        "layers": layers,
        "totals": totals if resources else {},
        "incomplete": incomplete(layers) if resources else {},
        "performance": {
            "estimated_fps": performance.get("estimated_throughput_fps"),
            "estimated_latency_ns": performance.get("estimated_latency_ns"),
            "max_cycles": performance.get("max_cycles"),
            "max_cycles_layer": performance.get("max_cycles_node_name"),
            "critical_path_cycles": performance.get("critical_path_cycles"),
        },
    }


def with_late_layers(
    model: ModelWrapper, part: str, resources: Json, cycles: Json
) -> tuple[Json, Json]:
    """``resources`` and ``cycles`` (FINN's estimate reports) with the hardware layers of
    ``model`` they do not list, estimated as FINN's estimate step does (the layer's
    ``node_res_estimation`` and ``get_exp_cycles``), and the total with them."""
    from qonnx.custom_op.registry import getCustomOp

    resources, cycles = dict(resources), dict(cycles)
    total = dict(resources.get("total", {}))
    for node in model.graph.node:
        if node.name in resources:
            continue
        try:
            op = getCustomOp(node)
            found = op.node_res_estimation(part)  # a hardware layer's (FINN's HWCustomOp)
            cycles[node.name] = op.get_exp_cycles()
        except Exception:  # a layer FINN cannot estimate stays not estimated
            continue
        resources[node.name] = found
        for key in RESOURCES:
            total[key] = total.get(key, 0) + found.get(key, 0)
    resources["total"] = total
    return resources, cycles


def brainsmith_estimates(
    model: ModelWrapper, part: str | None = None
) -> dict[str, tuple[dict[str, float], str]]:
    """Per hardware layer: brainsmith's estimates of what FINN does not estimate in it, or
    estimates as it does not build (``frameworks/finn/rtl_costs.py``), and who estimated the
    rest: "brainsmith" for brainsmith's own layers (their estimation methods), else "finn"."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn import rtl_costs

    found: dict[str, tuple[dict[str, float], str]] = {}
    for node in model.graph.node:
        try:
            op = getCustomOp(node)
        except Exception:  # a node without an op class: FINN did not estimate it either
            continue
        own = type(op).__module__.split(".")[0] == "brainsmith"
        estimated = rtl_costs.estimate(op, part, model, report=True)
        found[node.name] = (estimated, "brainsmith" if own else "finn")
    return found


def _amount(found: Json, key: Resource, missing: tuple[str, ...]) -> float | None:
    """A layer's estimate of resource ``key`` from ``found`` (its estimate_layer_resources.json
    entry): None where FINN has no estimate."""
    return None if key in missing else _number(found.get(key))


def _counts(found: object) -> Counts:
    """A layer's multiply-accumulates per frame and parameters, from FINN's
    op_and_param_counts.json (``op_mac_4bx8b``, ``param_weight_4b``, ... summed over types)."""
    if not isinstance(found, dict) or not found:
        return {"MACs": None, "params": None}
    numbers = {k: v for k, v in found.items() if isinstance(v, int | float)}
    return {
        "MACs": sum(v for k, v in numbers.items() if k.startswith("op_")) or None,
        "params": sum(v for k, v in numbers.items() if k.startswith("param_")) or None,
    }


def not_estimated(layer: Layer | LayerFacts) -> tuple[str, ...]:
    """The resources FINN has no estimate for in ``layer`` (see ``NOT_ESTIMATED``)."""
    kind = layer.get("op_type", "")
    if layer.get("backend"):
        kind += f"_{layer['backend']}"
    return tuple(dict.fromkeys((*NOT_ESTIMATED.get(kind, ()), *layer.get("not_estimated", ()))))


def inherited_estimates(op: CustomOp) -> tuple[str, ...]:
    """The resources whose estimation ``op`` leaves to FINN's ``HWCustomOp`` (which answers 0
    for every layer): a plugin's layer that does not estimate them."""
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

    return tuple(
        key
        for key, method in ESTIMATION_METHODS.items()
        if getattr(type(op), method, None) is getattr(HWCustomOp, method)
    )


def incomplete(layers: list[Layer]) -> dict[str, list[str]]:
    """Per resource whose total leaves layers out: the names of those layers."""
    found = {
        key: [layer["name"] for layer in layers if key in layer.get("not_estimated", ())]
        for key in RESOURCES
    }
    return {key: names for key, names in found.items() if names}


def chart_rows(layers: list[Layer]) -> list[ChartRow]:
    """What the charts draw: the estimated layers' resources and cycles."""
    return [
        {
            "name": layer["name"],
            "LUT": layer.get("LUT"),
            "BRAM_18K": layer.get("BRAM_18K"),
            "URAM": layer.get("URAM"),
            "DSP": layer.get("DSP"),
            "cycles": layer.get("cycles"),
            "not_estimated": layer.get("not_estimated"),
        }
        for layer in layers
        if layer.get("estimated")
    ]


def _read(folder: str, name: str) -> Json:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as handle:
            found: Json = json.load(handle)
            return found
    except (OSError, ValueError):
        return {}


def _number(value: float | str | None) -> float | int:
    number = float(value or 0)
    return int(number) if number.is_integer() else number


def layer_attributes(model: ModelWrapper, output_dir: str = "") -> dict[str, LayerFacts]:
    """Per node: kernel, backend, folding, data types and bit widths, memory style, code."""
    from qonnx.custom_op.registry import getCustomOp

    found = {}
    for node in model.graph.node:
        entry: LayerFacts = {"op_type": node.op_type, "backend": ""}
        for suffix, backend in BACKEND_SUFFIXES.items():
            if node.op_type.endswith(suffix):
                entry["op_type"], entry["backend"] = node.op_type[: -len(suffix)], backend
        entry["input_datatype"] = _datatype(model, node.input[0]) if node.input else None
        entry["output_datatype"] = _datatype(model, node.output[0]) if node.output else None
        try:
            op = getCustomOp(node)
            types = op.get_nodeattr_types()
        except Exception:  # attributes are decoration; a node may lack an op class
            op, types = None, {}
        for attr in LAYER_ATTRIBUTES:
            if attr in types:
                value = op.get_nodeattr(attr)
                entry[attr] = int(value) if attr in ("PE", "SIMD") else value
        if "weightDataType" in types and entry["op_type"] in WEIGHTED:
            entry["weight_datatype"] = op.get_nodeattr("weightDataType")
        for datatype, width in DATATYPE_BITS:
            if entry.get(datatype):
                entry[width] = bits(entry[datatype])
        if op is not None and type(op).__module__.split(".")[0] not in ("finn", "qonnx"):
            entry["not_estimated"] = list(inherited_estimates(op))  # a plugin's layer
        entry["reads"] = _reads(model, node, op)
        code = op.get_nodeattr("code_gen_dir_ipgen") if "code_gen_dir_ipgen" in types else ""
        if code and output_dir and os.path.isdir(code):
            entry["code"] = os.path.relpath(code, output_dir)
        found[node.name] = entry
    return found


def _reads(model: ModelWrapper, node: onnx.NodeProto, op: CustomOp | None) -> list[Read]:
    """The streams a layer reads: from which layer (None: the accelerator's input), how wide."""
    reads: list[Read] = []
    for index, tensor in enumerate(node.input):
        if not tensor or model.get_initializer(tensor) is not None:
            continue
        producer = model.find_producer(tensor)
        try:
            width = int(op.get_instream_width(index)) if op is not None else None
        except Exception:  # a layer without stream widths (or not for this input)
            width = None
        reads.append({"from": producer.name if producer else None, "bits": width})
    return reads


def _datatype(model: ModelWrapper, tensor: str) -> str | None:
    try:
        name: str = model.get_tensor_datatype(tensor).name
        return name
    except Exception:  # a tensor without shape or annotation
        return None


def cpu_nodes(parent: ModelWrapper | None, accelerator_macs: float = 0.0) -> CpuNodes | None:
    """The nodes outside the accelerator (the dataflow parent graph), by op type, and the
    host's share of the network's multiply-accumulates (``accelerator_macs``: FINN's count
    for the accelerator's layers)."""
    if parent is None:
        return None
    order = [n.op_type for n in parent.graph.node]
    split = (
        order.index("StreamingDataflowPartition") if "StreamingDataflowPartition" in order else 0
    )
    nodes: list[CpuNode] = [  # the first ``split`` nodes precede the partition
        {"name": n.name, "op_type": n.op_type, "side": "before" if position < split else "after"}
        for position, n in enumerate(
            n for n in parent.graph.node if n.op_type != "StreamingDataflowPartition"
        )
    ]
    by_type: dict[str, int] = {}
    for node in nodes:
        by_type[node["op_type"]] = by_type.get(node["op_type"], 0) + 1
    outside = [n for n in parent.graph.node if n.op_type != "StreamingDataflowPartition"]
    scaling = bool(nodes) and all(
        record["side"] == "after" and _output_scaling(parent, node)
        for node, record in zip(outside, nodes, strict=True)
    )
    host = sum(host_macs(parent, node) for node in outside)
    total = host + accelerator_macs
    return {
        "count": len(nodes),
        "op_types": by_type,
        "nodes": nodes,
        "model": "final_parent.onnx",
        "output_scaling": scaling,
        "host_macs": host,
        "host_share": round(host / total, 4) if total else None,
    }


MAC_OPS = ("MatMul", "Gemm", "Conv")


def host_macs(model: ModelWrapper, node: onnx.NodeProto) -> int:
    """Multiply-accumulates one frame costs ``node`` on the host (matrix products and
    convolutions; other nodes count 0)."""
    if node.op_type not in MAC_OPS:
        return 0
    shape_in, shape_out = (
        model.get_tensor_shape(node.input[0]),
        model.get_tensor_shape(node.output[0]),
    )
    weights = model.get_tensor_shape(node.input[1])
    if not shape_in or not shape_out or not weights:
        return 0
    outputs = 1
    for size in shape_out:
        outputs *= int(size)
    if node.op_type == "Conv":  # each output sums C_in / groups x kernel products
        per_output = 1
        for size in weights[1:]:
            per_output *= int(size)
        return outputs * per_output
    transposed = any(a.name == "transA" and a.i for a in node.attribute)
    return outputs * int(shape_in[-2] if transposed else shape_in[-1])


def accelerator_macs(report_dir: str) -> float:
    """FINN's multiply-accumulate count of the accelerator's layers (op_and_param_counts)."""
    try:
        with open(os.path.join(report_dir, "op_and_param_counts.json")) as f:
            counted = json.load(f)
    except (OSError, ValueError):
        return 0.0
    total = counted.get("total") if isinstance(counted, dict) else None
    if not isinstance(total, dict):
        return 0.0
    counts = [v for k, v in total.items() if k.startswith("op_mac") and isinstance(v, int | float)]
    return float(sum(counts))


SCALING_OPS = ("Mul", "Div", "Add", "Sub")


def _output_scaling(parent: ModelWrapper, node: onnx.NodeProto) -> bool:
    """A constant scale or bias applied to one computed tensor: the output's dequantisation,
    which FINN's flows leave on the host when it follows the accelerator."""
    computed = [name for name in node.input if parent.get_initializer(name) is None]
    return node.op_type in SCALING_OPS and len(computed) == 1 and len(node.input) == 2


def scaling_note(cpu: CpuNodes | None) -> list[str]:
    """The note for an accelerator followed only by its output's scale and bias."""
    if not cpu or not cpu.get("output_scaling"):
        return []
    kinds = ", ".join(cpu["op_types"])
    return [
        f"the output's floating-point scale and bias ({kinds}) are applied on the host after "
        f"the accelerator, as FINN's own flows leave them (see {cpu['model']})"
    ]


def target(
    performance: Performance,
    target_fps: int | None,
    clock_ns: float,
    layers: list[Layer] | None = None,
    folding: FoldingRecord | None = None,
) -> Target | None:
    """Whether the estimated throughput meets ``target_fps``; the layer that limits it, the
    layers slower than the target allows and, from the folding step's record, why."""
    fps = performance.get("estimated_fps")
    if not target_fps or not fps:
        return None
    allowed = cast(int, allowed_cycles(target_fps, clock_ns))
    goal: Target = {
        "target_fps": target_fps,
        "estimated_fps": fps,
        "met": fps >= target_fps,
        "bottleneck": performance.get("max_cycles_layer"),
        "bottleneck_cycles": performance.get("max_cycles"),
        "target_cycles": allowed,
        "over_target": None,
        "limit": None,
        "folding_search": None,
    }
    timed = [(x["name"], c) for x in layers or [] if (c := x.get("cycles")) is not None]
    recorded = folding.get("bottleneck") if folding else None
    if recorded and dict(timed).get(recorded) == goal["bottleneck_cycles"]:
        goal["bottleneck"] = recorded  # of layers tied at the slowest, the one folding names
    if layers and len(timed) == len(layers):
        slow = sorted(((n, c) for n, c in timed if c > allowed), key=lambda x: -x[1])
        goal["over_target"] = [{"name": name, "cycles": cycles} for name, cycles in slow]
    goal["limit"] = bottleneck_limit(folding, goal["bottleneck"], goal["bottleneck_cycles"])
    if goal["limit"] is not None and folding is not None:
        goal["folding_search"] = folding["search"]
    return goal


def latency_target(
    performance: Performance,
    target_ns: float | None,
    rtlsim: RtlsimSection | None = None,
    clock_ns: float = 0.0,
) -> LatencyTarget | None:
    """Whether a frame's latency meets ``target_ns``: as simulated when the whole design
    was (Verilator), else as FINN estimates it; None without a target or an estimate."""
    estimated, cycles = (
        performance.get("estimated_latency_ns"),
        performance.get("critical_path_cycles"),
    )
    if not target_ns or estimated is None or cycles is None:
        return None
    stitched = rtlsim["stitched"] if rtlsim else None
    simulated = stitched.get("latency_cycles") if stitched else None
    measured = simulated * clock_ns if simulated and clock_ns else None
    return {
        "target_latency_ns": target_ns,
        "estimated_latency_ns": estimated,
        "critical_path_cycles": cycles,
        "measured_latency_ns": measured,
        "met": (measured if measured is not None else estimated) <= target_ns,
    }


def bottleneck_limit(
    folding: FoldingRecord | None, name: str | None, cycles: float | None
) -> str | None:
    """Why layer ``name`` cannot go faster, as the folding search recorded it, if its record
    still describes the final layer (same cycles: no later step changed its folding)."""
    if not name or folding is None:
        return None
    entry = folding["layers"].get(name)
    limit, recorded = (entry.get("limit"), entry.get("cycles")) if entry else (None, None)
    if limit is None and folding.get("bottleneck") == name:
        limit, recorded = folding.get("limit"), recorded or folding.get("cycles")
    if not isinstance(limit, str) or not limit.strip():
        return None
    if recorded is not None and recorded != cycles:
        return None
    return " ".join(limit.split())


def reassess_warnings(
    warnings: list[FinnWarning], goal: Target | None
) -> tuple[list[FinnWarning], int]:
    """FINN's warnings without those the final cycle estimates supersede, and how many were
    left out: SetFolding's per-node numbers always (``goal["over_target"]`` has the final
    ones), its verdict on the target when every layer meets it."""
    if not goal or goal.get("over_target") is None:
        return warnings, 0
    missed = bool(goal["over_target"])

    def stale(entry: FinnWarning) -> bool:
        message = entry["message"]
        return bool(FOLDING_NUMBERS.search(message)) or (
            not missed and bool(FOLDING_VERDICT.search(message))
        )

    kept = [entry for entry in warnings if not stale(entry)]
    return kept, len(warnings) - len(kept)


def utilisation(part: str | None, totals: dict[str, float]) -> Utilisation:
    """Estimated use of the part's resources in percent (FF: FINN does not estimate it)."""
    from brainsmith.frameworks.finn.facts import PLATFORM_RESOURCES
    from brainsmith.frameworks.finn.parts import part_resources

    found = part_resources(part) if part else None
    if found is None:
        return {"part": part, "available": None, "percent": None, "source": None}
    available, source = found
    percent = {
        key: round(100 * totals[key] / available[key], 2)
        if key in totals and available[key]
        else None
        for key in PLATFORM_RESOURCES
    }
    return {"part": part, "available": available, "percent": percent, "source": source}


def finn_warnings(log_path: str) -> list[FinnWarning]:
    """Distinct warnings and errors logged to build.log, with how often each came (those that
    differ only in a quoted file path as one, ``same_warning``), but for the ResourceWarnings
    raised in FINN's and QONNX's code (files they leave open); a message that begins on the
    lines after its ``WARNING source:`` line is taken from there, one that goes on in indented
    lines (FINN's) is taken whole."""
    found: dict[tuple[str, str], FinnWarning] = {}
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip("\n") for line in handle]
    except OSError:
        return []
    quiet = framework_folders()
    for index, line in enumerate(lines):
        match = LOG_LINE.match(line)
        if match is None:
            continue
        level, source, message = match.groups()
        if source == "ResourceWarning" and _warned_in(message, quiet):
            continue  # Python's note of a file FINN or QONNX left open: build.log keeps it
        if not message.strip():
            message = " ".join(_continuation(lines, index + 1))
        else:  # a message of several lines (FINN's): its indented lines after the first
            message = " ".join([message, *_continuation(lines, index + 1, indented=True)])
        message = " ".join(message.split())
        if not message:
            continue
        key = (source, same_warning(message))
        entry = found.setdefault(
            key, {"level": level, "source": source, "message": message, "count": 0}
        )
        if entry["message"] != message:  # the same warning about another file
            entry["message"] = key[1]
        entry["count"] += 1
    return list(found.values())[:MAX_WARNINGS]


def framework_folders() -> tuple[str, ...]:
    """The folders of the installed FINN and QONNX packages, each ending in a separator."""
    import importlib.util

    found: list[str] = []
    for name in ("finn", "qonnx"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found += spec.submodule_search_locations or []
    return tuple(os.path.join(os.path.realpath(folder), "") for folder in found)


def _warned_in(message: str, folders: tuple[str, ...]) -> bool:
    """Whether the Python warning ``message`` (ending "(file:line)") came from ``folders``."""
    site = WARNED_AT.search(message)
    if site is None or not folders:
        return False
    return os.path.realpath(site[1]).startswith(folders)


def same_warning(message: str) -> str:
    """``message`` with its quoted absolute paths as '…': what a warning logged from one
    place once per file (a plugin's ``ResourceWarning: unclosed file``, say) says every
    time."""
    return QUOTED_PATH.sub("'…'", message)


def _continuation(lines: list[str], start: int, most: int = 5, indented: bool = False) -> list[str]:
    """The lines of a message logged after its level line: up to the next log line or blank
    (``indented``: or the first line not indented)."""
    taken: list[str] = []
    for line in lines[start : start + most]:
        if not line.strip() or LOG_LINE.match(line) or (indented and not line[:1].isspace()):
            break
        taken.append(line.strip())
    return taken


def write_html(
    folder: str,
    report: BuildReport,
    worker: ChartWorker | None = None,
    log: io.TextIOBase | None = None,
) -> None:
    """report.html (and dataflow.svg) of ``report`` in ``folder``, whole: the charts with the
    target's line, the dataflow picture, links to the files ``folder`` holds. ``worker``: a
    chart worker that may have drawn the charts already; ``log`` takes a chart's traceback."""
    from brainsmith.report.charts import render_charts
    from brainsmith.report.html import MALFORMED, render
    from brainsmith.report.picture import dataflow_svg

    goal = report.get("target")
    try:
        rows = chart_rows(report.get("layers", []))
        allowed = goal["target_cycles"] if goal else None
        charts = worker.charts(rows, allowed) if worker else render_charts(rows, allowed)
    except Exception:  # a chart problem must not hide the build's result
        charts = {}
        if log is not None:
            traceback.print_exc(file=log)
    try:
        picture = dataflow_svg(report)
    except MALFORMED:  # report.json's layers not as brainsmith writes them: no picture
        picture = None
    if picture:
        write_text(os.path.join(folder, "dataflow.svg"), picture)
    here: BuildReport = {**report, "output_dir": os.path.abspath(folder)}  # its files' links
    write_text(os.path.join(folder, "report.html"), render(here, charts, picture))


def to_json(report: Mapping[str, object]) -> str:
    return json.dumps(report, indent=2, default=str) + "\n"


def versions() -> dict[str, str]:
    """Versions of brainsmith, FINN, QONNX and Python."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from brainsmith.version import __version__

    found = {"brainsmith": __version__}
    for label, dist in (("finn", "finn-plus"), ("qonnx", "qonnx")):
        try:
            found[label] = version(dist)
        except PackageNotFoundError:
            found[label] = "not installed"
    found["python"] = platform.python_version()
    return found
