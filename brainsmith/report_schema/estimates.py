"""The estimates as types: the records ``frameworks.finn.estimation``'s ``estimates``,
``layer_facts`` and ``host`` return, which report.json holds as they are.

TypedDicts for the type checker only: every module names them under ``TYPE_CHECKING``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

# The node attributes a layer's entry copies (``layer_facts.LAYER_ATTRIBUTES``)
LayerAttribute = Literal["PE", "SIMD", "mem_mode", "ram_style", "resType", "depth"]
# A layer's data types and their bit widths (``layer_facts.DATATYPE_BITS``)
DatatypeKey = Literal["input_datatype", "weight_datatype", "output_datatype"]
BitsKey = Literal["input_bits", "weight_bits", "output_bits"]

# A stream a layer reads: from which layer (None: the accelerator's input), how many bits
Read = TypedDict("Read", {"from": str | None, "bits": int | None})


class _Described(TypedDict):
    """What the graph says about a layer (``layer_facts.layer_attributes``); without a model
    only ``op_type`` and ``backend``, both empty."""

    op_type: str  # the kernel, without its backend suffix
    backend: str  # hls | rtl | ""
    input_datatype: NotRequired[str | None]
    output_datatype: NotRequired[str | None]
    PE: NotRequired[int]
    SIMD: NotRequired[int]
    mem_mode: NotRequired[str]
    ram_style: NotRequired[str]
    resType: NotRequired[str]
    depth: NotRequired[int]
    weight_datatype: NotRequired[str]
    input_bits: NotRequired[int | None]
    weight_bits: NotRequired[int | None]
    output_bits: NotRequired[int | None]
    reads: NotRequired[list[Read]]
    code: NotRequired[str]  # its generated code, relative to the output folder


class LayerFacts(_Described):
    """``layer_facts.layer_attributes``' entry of a node; a plugin's layer also names the
    resources it leaves to FINN's placeholder estimate."""

    not_estimated: NotRequired[list[str]]


class Layer(_Described):
    """One of ``layers``: the facts, then the estimates (None where there is none): FINN's,
    or brainsmith's (``frameworks/finn/rtl_costs.py``) where FINN has none."""

    name: str
    estimated: bool  # FINN estimated its resources or cycles
    LUT: float | None
    BRAM_18K: float | None
    URAM: float | None
    DSP: float | None
    not_estimated: list[str]  # the resources neither FINN nor brainsmith estimates
    estimated_by: dict[str, str]  # per resource estimated: "finn" or "brainsmith"
    cycles: float | None
    MACs: float | None  # per frame, from op_and_param_counts.json
    params: float | None


class Counts(TypedDict):
    """A layer's multiply-accumulates per frame and parameters (``finn_reports.counts``)."""

    MACs: float | None
    params: float | None


class Performance(TypedDict):
    """``performance``: FINN's estimate_network_performance.json (None where it has none),
    led by the figures at the clock nextpnr reached when a bitstream was made."""

    fps: NotRequired[float]
    fps_source: NotRequired[str]
    latency_ns: NotRequired[float | None]
    latency_source: NotRequired[str]
    clock_mhz: NotRequired[float]
    clock_source: NotRequired[str]
    cycles_per_frame: NotRequired[float]
    cycles_source: NotRequired[str]
    latency_cycles: NotRequired[float | None]
    clock_note: NotRequired[str | None]
    counted_fps: NotRequired[float]
    counted_source: NotRequired[str]
    link_fps: NotRequired[float]
    link_source: NotRequired[str]

    estimated_fps: float | None
    estimated_latency_ns: float | None
    max_cycles: int | None
    max_cycles_layer: str | None
    critical_path_cycles: int | None


class Estimates(TypedDict):
    """What ``estimation.estimates.estimates`` reads from FINN's reports: every layer, the
    totals (empty without estimates), per resource the layers its total leaves out,
    performance."""

    layers: list[Layer]
    totals: dict[str, float]
    incomplete: dict[str, list[str]]
    performance: Performance


class CpuNode(TypedDict):
    """A node outside the accelerator, before or after it."""

    name: str
    op_type: str
    side: Literal["before", "after"]


class CpuNodes(TypedDict):
    """``cpu_nodes``: the nodes of the dataflow parent graph, and how many of each type."""

    count: int
    op_types: dict[str, int]
    nodes: list[CpuNode]
    model: str  # final_parent.onnx
    output_scaling: NotRequired[bool]  # only the output's constant scale and bias, after it
    host_macs: NotRequired[int]  # multiply-accumulates a frame costs the host
    host_share: NotRequired[float | None]  # of the network's (FINN's count in hardware)
