"""brainsmith's estimates of RTL layers' resources, fitted to Yosys.

Two kinds of model, each a linear model of a layer's folding and bit widths,
``sum(coefficient * term)``, whose terms are ``TERMS`` and whose coefficients
``benchmarks/synth_fit.py`` fits by least squares to Yosys' counts of single-layer designs
(UltraScale+), shipped in ``rtl_costs.json`` with each fit's error:

- what FINN does not estimate in its RTL layers: ``MVAU_rtl``'s LUTs (FINN counts a fixed
  0), the DSPs of ``Thresholding_rtl``, ``ConvolutionInputGenerator_rtl`` and
  ``StreamingFIFO_rtl`` (FINN has no DSP model for them; the fit is 0), the block RAM,
  UltraRAM and DSPs of ``StreamingDataWidthConverter_rtl`` and everything of
  ``FMPadding_rtl`` (FINN has no model for it). ``estimate`` gives these; the report and the
  folding search add them to FINN's estimates. It also gives the LUTs of
  ``Thresholding_rtl``, ``ConvolutionInputGenerator_rtl``, ``StreamingFIFO_rtl`` and
  ``StreamingDataWidthConverter_rtl``, which the report gives in place of FINN's
  (``REPORT_ONLY``).
- the LUTs of brainsmith's own RTL layers (``DuplicateStreams_rtl``, ``Pool_rtl``,
  ``IntAdd_rtl``, ``GlobalAccPool_rtl``, ``LabelSelect_rtl``, ``WidthConverter_rtl``,
  ``StreamingDepthToSpace_rtl``), which
  replaced their hand-written estimates where the fit's error on held-out layers was lower
  (benchmarks/RESULTS.md). Their backends' ``lut_estimation`` is ``fitted(layer, "LUT")``, so
  FINN's own estimate step reports them.

Elsewhere FINN's estimates stay where FINN has a model. The terms:

- ``PE``, ``SIMD``, ``K``: the folding (1 where a layer has no such attribute) and
  LabelSelect's K; ``in_bits``, ``w_bits``, ``acc_bits``, ``out_bits``: the input, weight,
  accumulator and output widths; ``in_width``, ``out_width``: the input and output stream
  widths; ``channels``: the channel (or label) count; ``window``, ``kernel``: the kernel's
  size and first dimension; ``ifm_width``: the input's width in pixels; ``streams``: the
  output streams; ``row_bits``: the bits of one input row (pixels x channels x input bits),
  ``element_row_bits`` the same where a DepthToSpace reads them by element (else 0),
  ``tree_nodes`` the registered nodes of the adder tree over SIMD products (``add_multi``);
- a threshold layer's binary search (``thresholding.sv``): ``t_bits`` the thresholds' width,
  a comparator per output bit against a memory of one or two words (``constant_stages``) or
  more (``memory_stages``), ``memory_bits`` and ``deep_bits`` the bits of the deeper memories
  that differ between their words (read from the layer's thresholds), once and once per
  further 64 words, ``saturated`` thresholds narrower than the input;
- a FIFO's storage as ``fifo.sv`` picks it by depth, width and ``ram_style``: the indicators
  ``srl`` (shift register), ``lutram`` (LUT-RAM) and ``bram`` (block RAM or UltraRAM), so that
  each storage has its own constant and slope; ``fifo_width`` the stream's width padded to
  bytes, ``fifo_words`` the words the storage holds, ``bram_split`` a memory split in two;
- a width converter's (``vpc.sv``) ``dwc_buffer`` (input plus output width) and
  ``dwc_rotation`` (the multiplexers rotating a wide input's lanes);
- products such as ``PE*SIMD`` (multiply lanes) multiply those names; ``1`` is a constant.

A matrix layer whose weights are kept in distributed RAM also has its weights in LUTs
(``lutram_luts``), added to the fit of the compute unit alone (the sweep synthesises the
unit without its weight memory): the weight memory (``MW * MH / (SIMD * PE)`` words of
``SIMD * PE`` weights) is built as Yosys builds it, a single-port RAM of 64 bits per LUT per
bit of the word, in banks of 512 words (256 on 7-series) with a multiplexer choosing the bank.

For a Lattice family a set of its own (``brainsmith/hardware/synthesis/costs/<name>.json``,
named by the family's ``cost_models``; ``family_estimate``): the LUT4, FF, MULT18 and EBR of
every kind above (``FAMILY_KINDS``) fitted the same way to the family's Yosys synthesis
(``python -m benchmarks.synth_fit --family <name>``; ``FAMILY_TERMS``), which the folding
search of a Lattice build costs in; a matrix layer's weight memory, which the sweep streams
in, as Yosys maps it (``family_weight_memory``).

One count replaces FINN's estimate (``REPLACED``): the DSP slices of ``MVAU_rtl`` on a DSP48
part, which FINN estimates as ``ceil(PE / 4) * SIMD`` whatever the bit widths, while its RTL
(``mvu.sv``) packs as many PEs into one DSP as its datapath holds lanes of the product's width
(``mvau_dsps``): 9 for 2-bit weights and activations, 2 for 8-bit ones. The count is exact on
every MVAU_rtl point of the Yosys sweep (``benchmarks/results/synth_fit.json``).
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib.resources import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypedDict

    import numpy as np
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.datatype import BaseDataType
    from qonnx.core.modelwrapper import ModelWrapper

    class FittedModel(TypedDict):
        """One resource's linear model of a layer kind (``rtl_costs.json``)."""

        terms: list[str]
        coefficients: list[float]
        mean_error: float
        max_error: float
        held_out_max_error: float

    Factor = Callable[[HWCustomOp, str, ModelWrapper | None], float]  # one factor of a term

ESTIMATED_BY = "brainsmith"

# kind -> resource -> the model's terms: resources FINN has no model for (FINN's layers), and
# the LUTs of brainsmith's own RTL layers where the fit beats their hand-written estimate
TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "MVAU_rtl": {"LUT": ("PE*SIMD", "PE*SIMD*w_bits", "PE*SIMD*in_bits", "PE*acc_bits", "1")},
    "Thresholding_rtl": {
        "DSP": ("1",),
        "LUT": (
            "PE*t_bits*constant_stages",
            "PE*t_bits*memory_stages",
            "memory_bits",
            "deep_bits",
            "PE*t_bits*saturated",
            "1",
        ),
    },
    "ConvolutionInputGenerator_rtl": {
        "DSP": ("1",),
        "LUT": ("SIMD*in_bits", "kernel*ifm_width*channels*in_bits", "1"),
    },
    "StreamingFIFO_rtl": {
        "DSP": ("1",),
        "LUT": (
            "srl",
            "srl*fifo_width",
            "srl*fifo_width*fifo_words",
            "lutram",
            "lutram*fifo_width*fifo_words",
            "bram",
            "bram_split*fifo_width",
        ),
    },
    "StreamingDataWidthConverter_rtl": {
        "BRAM_18K": ("1",),
        "URAM": ("1",),
        "DSP": ("1",),
        "LUT": ("dwc_rotation", "dwc_buffer", "1"),
    },
    "FMPadding_rtl": {
        "LUT": ("SIMD*in_bits", "1"),
        "BRAM_18K": ("1",),
        "URAM": ("1",),
        "DSP": ("1",),
    },
    "DuplicateStreams_rtl": {"LUT": ("streams", "1")},
    "Pool_rtl": {"LUT": ("PE*in_bits", "PE*out_bits", "1")},
    "IntAdd_rtl": {"LUT": ("PE*in_bits", "1")},
    "GlobalAccPool_rtl": {"LUT": ("PE*out_bits", "channels*out_bits", "1")},
    "LabelSelect_rtl": {"LUT": ("PE*K*in_bits", "PE*K")},
    "WidthConverter_rtl": {"LUT": ("in_width", "out_width", "1")},
    "StreamingDepthToSpace_rtl": {"LUT": ("row_bits", "element_row_bits", "SIMD*in_bits", "1")},
}


# kind -> resources whose count brainsmith gives in place of FINN's estimate, and those of them
# the report replaces but the folding search does not yet (FINN's LUT estimates of these kinds
# are off by 50 % to 20x on the Yosys sweep: a float input's thresholds, a converter's
# rotation, a FIFO's shift register)
REPLACED: dict[str, tuple[str, ...]] = {
    "MVAU_rtl": ("DSP",),
    "Thresholding_rtl": ("LUT",),
    "ConvolutionInputGenerator_rtl": ("LUT",),
    "StreamingDataWidthConverter_rtl": ("LUT",),
    "StreamingFIFO_rtl": ("LUT",),
}
REPORT_ONLY: frozenset[str] = frozenset(
    (
        "Thresholding_rtl",
        "ConvolutionInputGenerator_rtl",
        "StreamingDataWidthConverter_rtl",
        "StreamingFIFO_rtl",
    )
)


# A Lattice family's models (``costs/<name>.json``, fitted to its Yosys synthesis by
# ``python -m benchmarks.synth_fit --family <name>``): every kind ``TERMS`` has
# (``FAMILY_KINDS``), their LUT4 and FF with the terms of their LUT model, MULT18 and EBR a
# constant, but where the kind has more to count (``FAMILY_OWN_TERMS``): a matrix layer's
# products, each a MULT18X18D of brainsmith's core (``brainsmith/hardware/synthesis/rtl/mvu_lattice.sv``)
# unless a factor has at most SOFT_PRODUCT_BITS bits (then LUTs: ``hard_products``,
# ``soft_products``), and its activations, registered once for every PE.
FAMILY_RESOURCES = ("LUT4", "FF", "MULT18", "EBR")
FAMILY_KINDS = tuple(TERMS)
WEIGHTED = ("MVAU_rtl", "VVAU_rtl")  # kinds whose weights ``family_weight_memory`` adds
# kinds costed on a family with another kind's models: a depthwise layer's vector core
# (``hardware/synthesis/rtl/vvu_lattice.sv``) is the matrix core's lanes, PE x SIMD products
# summed per PE and accumulated, without the matrix core's registered tree (an estimate by
# analogy, not fitted: no sweep of it yet)
COSTED_AS = {"VVAU_rtl": "MVAU_rtl"}
SOFT_PRODUCT_BITS = 2  # the family's synthesis (brainsmith.hardware.synthesis) keeps narrower products out of MULT18X18D
FAMILY_OWN_TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "MVAU_rtl": {
        "LUT4": (*TERMS["MVAU_rtl"]["LUT"], "PE*SIMD*soft_products"),
        # brainsmith's core on a Lattice part: a weight and a product per lane, an activation
        # per SIMD lane, the adder tree's registered nodes and the accumulators of each PE
        "FF": (
            "PE*SIMD*w_bits",
            "PE*SIMD*in_bits",
            "SIMD*in_bits",
            "PE*tree_nodes",
            "PE*acc_bits",
            "1",
        ),
        "MULT18": ("PE*SIMD*hard_products",),
    },
    # the memories: a block-RAM FIFO's DP16KD, counted by shape; a window's and a row
    # buffer's, which Yosys puts in block RAM, LUT-RAM or flip-flops by their size
    "StreamingFIFO_rtl": {"EBR": ("fifo_ebr",)},
    "ConvolutionInputGenerator_rtl": {"EBR": ("kernel*ifm_width*channels*in_bits", "1")},
    "StreamingDepthToSpace_rtl": {"EBR": ("row_bits", "1")},
}
FAMILY_TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    kind: {
        "LUT4": TERMS[kind]["LUT"],
        "FF": TERMS[kind]["LUT"],
        "MULT18": ("1",),
        "EBR": ("1",),
        **FAMILY_OWN_TERMS.get(kind, {}),
    }
    for kind in FAMILY_KINDS
}
# the models of a family whose products are all logic (``--family ice40``: synth_ice40 maps
# none to the UP5K's eight SB_MAC16): ECP5's terms, but a matrix layer's products in LUT4,
# a wide product's about its factors' bits
LOGIC_PRODUCT_TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    **FAMILY_TERMS,
    "MVAU_rtl": {
        **FAMILY_TERMS["MVAU_rtl"],
        "LUT4": (*FAMILY_TERMS["MVAU_rtl"]["LUT4"], "PE*SIMD*hard_products*w_bits*in_bits"),
        "MULT18": ("1",),
    },
}
# DP16KD's shapes (words, bits): 18 Kbit, 36 bits wide with one read and one write port (the
# block RAM of a family's models that name none of their own: ``family_memories``)
EBR_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
DPRAM_WORDS, DPRAM_BITS = 16, 4  # TRELLIS_DPR16X4 (Gowin: RAM16SDP4), distributed RAM
DPRAM_LUTS = 6  # LUT4s the family's nextpnr counts for one TRELLIS_DPR16X4 (slices A, B and C)


@cache
def coefficients() -> dict[str, dict[str, FittedModel]]:
    """The fitted models from ``rtl_costs.json`` (read once): kind -> resource -> model."""
    return _shipped("rtl_costs.json")


@cache
def family_coefficients(name: str) -> dict[str, dict[str, FittedModel]]:
    """A family's models ``name`` (its ``cost_models``) from its fitted file (read once);
    {} before they are fitted."""
    try:
        kinds: dict[str, dict[str, FittedModel]] = _family_file(name)["kinds"]
    except FileNotFoundError:
        return {}
    return kinds


def _shipped(name: str) -> dict[str, dict[str, FittedModel]]:
    kinds: dict[str, dict[str, FittedModel]] = _shipped_file(name)["kinds"]
    return kinds


def _shipped_file(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        files("brainsmith.frameworks.finn").joinpath(name).read_text()
    )
    return found


def _family_file(name: str) -> dict[str, Any]:
    """A family's fitted models, ``brainsmith/hardware/synthesis/costs/<name>.json``: the
    family's data, beside its synthesis module, read here where FINN's layers are costed."""
    found: dict[str, Any] = json.loads(
        files("brainsmith.hardware.synthesis").joinpath("costs", f"{name}.json").read_text()
    )
    return found


def family_estimate(
    layer: HWCustomOp, cost_models: str, graph: ModelWrapper | None = None
) -> dict[str, float] | None:
    """``layer``'s LUT4, FF, MULT18 and EBR on a Lattice part from its family's models
    ``cost_models``, with a matrix layer's weight memory (``family_weight_memory``); None for
    a kind without one."""
    kind = layer.onnx_node.op_type
    models = family_coefficients(cost_models).get(COSTED_AS.get(kind, kind))
    if models is None:
        return None
    found = {resource: _predict(models[resource], layer, graph) for resource in FAMILY_RESOURCES}
    if layer.onnx_node.op_type in WEIGHTED and layer.get_nodeattr("mem_mode") in (
        "internal_decoupled",
        "internal_embedded",
    ):
        for resource, value in family_weight_memory(layer, cost_models).items():
            found[resource] += value
    return {resource: float(round(value)) for resource, value in found.items()}


@cache
def family_memories(name: str) -> tuple[tuple[tuple[int, int], ...], int]:
    """(the block RAM shapes, words and bits; the LUT4s a 16x4 distributed RAM takes, 0
    without one) of the family whose models are ``name``, as its fitted models name them
    (its fitted file's ``memories``, from the family's synthesis module); ECP5's where they
    name none."""
    try:
        found = _family_file(name).get("memories") or {}
    except FileNotFoundError:
        found = {}
    shapes = tuple((int(words), int(bits)) for words, bits in found.get("block_ram", ()))
    return shapes or EBR_SHAPES, int(found.get("distributed_ram_luts", DPRAM_LUTS))


def family_weight_memory(layer: HWCustomOp, cost_models: str = "ecp5") -> dict[str, float]:
    """A matrix or depthwise layer's weights on an open family's part (``family_memories``),
    ``weight_count / (SIMD * PE)`` words of ``SIMD * PE`` weights: in distributed RAM
    (``ram_style: distributed``, where the family has it) 16x4 RAMs of the family's LUT4s
    each, with a LUT4 per bit for every two further banks of 16 words (the read
    multiplexer); else in block RAM, the family's shape that takes fewest. Not swept (the sweep streams a matrix layer's weights in): as Yosys
    maps such memories."""
    simd, pe = layer.get_nodeattr("SIMD"), layer.get_nodeattr("PE")
    depth = weight_count(layer) // (simd * pe)
    width = simd * pe * _bits(layer, "w_bits")
    shapes, dpram_luts = family_memories(cost_models)
    if dpram_luts and layer.get_nodeattr("ram_style") == "distributed":
        banks = math.ceil(depth / DPRAM_WORDS)
        rams = banks * math.ceil(width / DPRAM_BITS)
        return {"LUT4": float(dpram_luts * rams + width * (banks // 2))}
    return {"EBR": float(ebr_blocks(depth, width, shapes))}


def weight_count(layer: HWCustomOp) -> int:
    """A matrix layer's weights (``MW * MH``), a depthwise one's (channels x kernel)."""
    if layer.onnx_node.op_type.startswith("VVAU"):
        return int(layer.get_nodeattr("Channels")) * int(math.prod(layer.get_nodeattr("Kernel")))
    return int(layer.get_nodeattr("MW")) * int(layer.get_nodeattr("MH"))


def ebr_blocks(words: int, width: int, shapes: tuple[tuple[int, int], ...] = EBR_SHAPES) -> int:
    """Block RAMs (DP16KD, or ``shapes``) holding ``words`` words of ``width`` bits: the
    fewest of any shape."""
    return min(math.ceil(words / deep) * math.ceil(width / wide) for deep, wide in shapes)


def kinds() -> tuple[str, ...]:
    return tuple(coefficients())


def features(
    layer: HWCustomOp, extra: tuple[str, ...] = (), model: ModelWrapper | None = None
) -> dict[str, float]:
    """The terms of ``layer``'s kind (and ``extra`` terms), from its attributes and types
    (and ``model``'s initializers: whether thresholds are shared by every channel)."""
    kind = layer.onnx_node.op_type
    wanted = {term for terms in TERMS.get(kind, {}).values() for term in terms} | set(extra)
    return {term: _term(term, layer, model) for term in sorted(wanted)}


def fitted(layer: HWCustomOp, resource: str, graph: ModelWrapper | None = None) -> float | None:
    """The fitted model's count of ``resource`` in ``layer`` (of ``graph``, where known);
    None without a model."""
    model = coefficients().get(layer.onnx_node.op_type, {}).get(resource)
    return None if model is None else _predict(model, layer, graph)


def _predict(model: FittedModel, layer: HWCustomOp, graph: ModelWrapper | None) -> float:
    """``model``'s count for ``layer`` (of ``graph``, where known)."""
    found = {term: _term(term, layer, graph) for term in model["terms"]}
    value = sum(c * found[t] for c, t in zip(model["coefficients"], model["terms"], strict=True))
    return float(round(max(0.0, value)))  # a count of cells


def estimate(
    layer: HWCustomOp,
    part: str | None = None,
    model: ModelWrapper | None = None,
    report: bool = False,
) -> dict[str, float]:
    """brainsmith's estimate of each resource FINN does not estimate in ``layer`` (a FINN
    CustomOp), and on ``part`` the counts that replace FINN's (``REPLACED``); empty for a kind
    without a model and for brainsmith's own layers, whose estimation methods give their
    fitted models themselves (``fitted``). ``model`` (the layer's graph) tells whether a
    matrix layer's weights are narrow range, as FINN's code generation does, and whether
    thresholds are shared by every channel; ``report``: also the LUT models the report
    gives in place of FINN's (``REPORT_ONLY``)."""
    if own(layer):
        return {}
    kind = layer.onnx_node.op_type
    result: dict[str, float] = {}
    for resource in coefficients().get(kind, {}):
        if resource == "LUT" and kind in REPORT_ONLY and not report:
            continue
        value = fitted(layer, resource, model)
        if value is not None:
            result[resource] = value
    if "LUT" in result and _weights_in_luts(layer):
        result["LUT"] += _weight_memory_luts(layer, part)
    dsps = _matrix_dsps(layer, part, model)
    if dsps is not None:
        result["DSP"] = dsps
    return result


def _matrix_dsps(layer: HWCustomOp, part: str | None, model: ModelWrapper | None) -> float | None:
    """An RTL matrix layer's DSPs on ``part`` (``mvau_dsps``); None for any other layer,
    or without a part."""
    if not part or layer.onnx_node.op_type != "MVAU_rtl":
        return None
    return mvau_dsps(layer, part, narrow_weights(layer, model))


def _weight_memory_luts(layer: HWCustomOp, part: str | None) -> float:
    """The LUTs of a matrix layer's weights in LUT-RAM (``lutram_luts``)."""
    simd, pe = layer.get_nodeattr("SIMD"), layer.get_nodeattr("PE")
    depth = weight_count(layer) // (simd * pe)
    width = simd * pe * _bits(layer, "w_bits")
    return lutram_luts(depth, width, seven_series=(part or "").startswith("xc7"))


def lutram_luts(depth: int, width: int, seven_series: bool = False) -> float:
    """LUTs of the weight memory, ``depth`` words of ``width`` bits in LUT-RAM, as Yosys maps
    it: the weight streamer reads and writes at one address, so each bit is a single-port RAM
    of 64 bits per LUT (RAM64X1S up to RAM512X1S, 8 LUTs; on 7-series up to RAM256X1S),
    whose depth rounds up to a power of two, in banks of the largest, with a multiplexer per
    bit choosing the bank (half a LUT per bank past the first)."""
    bank = 256 if seven_series else 512
    banks = math.ceil(depth / bank)
    words = bank if banks > 1 else max(64, 2 ** math.ceil(math.log2(max(depth, 1))))
    return float(width * (banks * words // 64 + math.ceil((banks - 1) / 2)))


def mvau_dsps(layer: HWCustomOp, part: str, narrow: bool = False) -> float | None:
    """The DSP slices FINN's RTL matrix unit instantiates on ``part`` (``mvu.sv``): per SIMD
    lane a chain of ``ceil(PE / lanes)`` DSPs, where one DSP's A input (25 bits on DSP48E1,
    27 on DSP48E2) holds the weight and ``lanes - 1`` further products of ``w + a - 1`` bits,
    less one bit unless the weights are ``narrow`` range (``NARROW_WEIGHTS``: the lane count
    differs on DSP48E1, e.g. 4-bit weights and activations: 3 lanes full range, 4 narrow).
    None where this is not the unit FINN instantiates: Versal's DSP58 and a tiled unit."""
    from finn.util.basic import get_dsp_block

    block = get_dsp_block(part)
    if block == "DSP58" or layer.get_nodeattr("TH") > 1:
        return None
    datapath = 27 if block == "DSP48E2" else 25
    weight, activation = _bits(layer, "w_bits"), _bits(layer, "in_bits")
    room = datapath - (0 if narrow else 1) - weight
    lanes = 1 if datapath == weight else 1 + max(0, room) // (weight + activation - 1)
    simd, pe = layer.get_nodeattr("SIMD"), layer.get_nodeattr("PE")
    if layer.get_nodeattr("pumpedCompute"):
        simd = (simd + simd % 2) // 2  # an odd SIMD is padded to even, then halved
    return float(simd * math.ceil(pe / lanes))


def narrow_weights(layer: HWCustomOp, model: ModelWrapper | None) -> bool:
    """Whether FINN generates ``layer``'s matrix unit for narrow-range weights (no weight is
    its type's minimum; constant weights in the layer): as FINN's ``generate_hdl`` decides.
    False (full range: never fewer DSPs than FINN builds) without the model's weights."""
    import numpy as np

    if model is None or layer.get_nodeattr("mem_mode") in ("dynamic", "external_mem"):
        return False
    weights = model.get_initializer(layer.onnx_node.input[1])
    if weights is None:
        return False
    return bool(np.min(weights) != layer.get_input_datatype(1).min())


def own(layer: HWCustomOp) -> bool:
    """Whether ``layer`` is one of brainsmith's own layers (not FINN's)."""
    return type(layer).__module__.split(".")[0] == "brainsmith"


def _weights_in_luts(layer: HWCustomOp) -> bool:
    types = layer.get_nodeattr_types()
    return (
        "mem_mode" in types
        and layer.get_nodeattr("mem_mode") == "internal_decoupled"
        and layer.get_nodeattr("ram_style") == "distributed"
    )


def _name(layer: HWCustomOp, name: str, graph: ModelWrapper | None = None) -> float:
    """One factor of a term (see the module's docstring)."""
    factor = _FACTORS.get(name)
    if factor is None:
        raise KeyError(f"no term factor {name!r}")
    return factor(layer, name, graph)


def _one(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    return 1.0


def _folding(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """``PE``, ``SIMD`` or ``K``: the attribute, 1 for a layer without it."""
    return float(layer.get_nodeattr(name)) if name in layer.get_nodeattr_types() else 1.0


def _tree_nodes(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """The registered nodes of FINN's adder tree (``add_multi``) over SIMD products: every
    node above the deepest level, leaves of a shallower level included."""
    simd = int(_folding(layer, "SIMD", graph))
    return float(min(2 * simd - 1, 2 ** math.ceil(math.log2(simd)) - 1)) if simd > 1 else 0.0


def _width_bits(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    return float(_bits(layer, name))


def _channels(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    types = layer.get_nodeattr_types()
    found = next(a for a in ("NumChannels", "IFMChannels", "Channels", "Labels") if a in types)
    return float(layer.get_nodeattr(found))


def _window(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """``window``: the sliding window's positions; ``kernel``: its first dimension."""
    types = layer.get_nodeattr_types()
    found = next(a for a in ("ConvKernelDim", "KernelSize") if a in types)
    dims = [int(x) for x in layer.get_nodeattr(found)]
    return float(math.prod(dims) if name == "window" else dims[0])


def _row_bits(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    *_, width, channels = layer.get_normal_input_shape()
    return float(width * channels * _bits(layer, "in_bits"))


def _element_row_bits(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """Row buffers read by element: CRD lanes r*r apart."""
    by_element = layer.get_nodeattr("Mode") == "CRD" and layer.get_nodeattr("SIMD") > 1
    return _row_bits(layer, "row_bits", None) if by_element else 0.0


def _attribute(attribute: str, index: int | None = None) -> Factor:
    """A factor that is ``attribute`` (its ``index``-th value)."""

    def factor(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
        value = layer.get_nodeattr(attribute)
        return float(value if index is None else value[index])

    return factor


def _stream_width(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """``fifo_width``: the stream padded to whole bytes, as fifo.sv stores it; ``in_width``
    and ``out_width``: the streams' widths."""
    if name == "fifo_width":
        return float(layer.get_instream_width_padded())
    if name == "in_width":
        return float(layer.get_instream_width(0))
    return float(layer.get_outstream_width(0))


def _threshold_factor(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    return _threshold_memories(layer, graph, name)


def _fifo_factor(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    return _fifo(layer, name)


def _fifo_ebr(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """``fifo_ebr``: the DP16KD blocks of a block-RAM FIFO's memories (none for another)."""
    if not _fifo(layer, "bram"):
        return 0.0
    width = int(_stream_width(layer, "fifo_width", graph))
    low, high = _memory_bits(int(layer.get_nodeattr("depth")))
    return float(ebr_blocks(2**low, width) + (ebr_blocks(2**high, width) if high else 0))


def _dwc_factor(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    return _dwc(layer, name)


def _products(layer: HWCustomOp, name: str, graph: ModelWrapper | None) -> float:
    """``soft_products``: 1 where a product's narrower factor has at most SOFT_PRODUCT_BITS
    bits (LUTs on a Lattice part), else 0; ``hard_products`` the other way round (a MULT18X18D)."""
    soft = min(_bits(layer, "w_bits"), _bits(layer, "in_bits")) <= SOFT_PRODUCT_BITS
    return float(soft if name == "soft_products" else not soft)


_FACTORS: dict[str, Factor] = {
    "1": _one,
    **dict.fromkeys(
        ("constant_stages", "memory_stages", "memory_bits", "deep_bits", "saturated"),
        _threshold_factor,
    ),
    **dict.fromkeys(("PE", "SIMD", "K"), _folding),
    "tree_nodes": _tree_nodes,
    **dict.fromkeys(("in_bits", "w_bits", "acc_bits", "out_bits", "t_bits"), _width_bits),
    "channels": _channels,
    "window": _window,
    "kernel": _window,
    "ifm_width": _attribute("IFMDim", -1),
    "streams": _attribute("NumOutputStreams"),
    "row_bits": _row_bits,
    "element_row_bits": _element_row_bits,
    **dict.fromkeys(("srl", "lutram", "bram", "bram_split", "fifo_words"), _fifo_factor),
    "fifo_ebr": _fifo_ebr,
    **dict.fromkeys(("fifo_width", "in_width", "out_width"), _stream_width),
    **dict.fromkeys(("dwc_rotation", "dwc_buffer"), _dwc_factor),
    **dict.fromkeys(("soft_products", "hard_products"), _products),
}


def _fifo(layer: HWCustomOp, name: str) -> float:
    """fifo.sv's storage (FINN's ``get_ram_style``: ``srl``, ``distributed``, ``block`` or
    ``ultra``) as indicators, ``bram_split`` where the block RAM's depth is split in two
    memories (a power of two and a smaller one), and ``fifo_words``: the words the storage
    holds (the shift register's ``depth - 1``, at least 4; LUT-RAM's ``depth - 1`` rounded up
    to a power of two; the block RAMs' words)."""
    style, depth = layer.get_ram_style(), int(layer.get_nodeattr("depth"))
    memory = style in ("block", "ultra")
    if name in ("srl", "lutram", "bram"):
        wanted = {"srl": ("srl",), "lutram": ("distributed",), "bram": ("block", "ultra")}
        return float(style in wanted[name])
    low, high = _memory_bits(depth)
    if name == "bram_split":
        return float(memory and high > 0)
    if style == "srl":
        return float(max(depth - 1, 4))
    if style == "distributed":
        return float(2 ** math.ceil(math.log2(max(depth - 1, 1))))
    return float(2**low + (2**high if high else 0))


def _threshold_memories(layer: HWCustomOp, graph: ModelWrapper | None, name: str) -> float:
    """thresholding.sv's binary search: a stage per output bit (``clog2(N + 1)`` for N
    thresholds), each a comparator of the thresholds' width (``t_bits``) and a memory per
    PE of the thresholds the stage compares with, ``2**stage`` words per channel the PE
    serves (one row where every channel shares one, which FINN builds as PE channels). A
    memory of one or two words is a constant or a bit of the address (``constant_stages``;
    ``memory_stages`` the others), and a bit the same in every word a constant:
    ``memory_bits`` are the bits of the deeper memories that differ between their words (a
    LUT each up to 64 words), ``deep_bits`` those bits once per further 64 words; without the
    thresholds (``graph``), every bit differs. ``saturated``: integer thresholds narrower than
    the input, to whose range the RTL saturates the input."""
    from qonnx.core.datatype import DataType

    steps = int(layer.get_nodeattr("numSteps"))
    stages = math.ceil(math.log2(steps + 1))
    pe, channels = layer.get_nodeattr("PE"), layer.get_nodeattr("NumChannels")
    kind = DataType[layer.get_nodeattr("weightDataType")]
    bits = kind.bitwidth()
    if name == "saturated":
        return float(kind.is_integer() and _bits(layer, "in_bits") > bits)
    rows = _threshold_rows(layer, graph, pe)
    fold = channels // pe if rows is None else rows.shape[0] // pe
    deeper = sum(fold * 2**stage > 2 for stage in range(stages))
    if name in ("constant_stages", "memory_stages"):
        return float(deeper if name == "memory_stages" else stages - deeper)
    return float(
        sum(_stage_luts(name, rows, fold, stage, stages, kind, pe) for stage in range(stages))
    )


def _stage_luts(
    name: str,
    rows: np.ndarray | None,
    fold: int,
    stage: int,
    stages: int,
    kind: BaseDataType,
    pe: int,
) -> int:
    """One stage's ``memory_bits`` or ``deep_bits`` (none for a constant stage)."""
    depth = fold * 2**stage
    if depth <= 2:
        return 0
    luts = 1 if name == "memory_bits" else math.ceil(depth / 64) - 1
    if rows is None:
        return int(pe * kind.bitwidth() * luts)
    return _differing_bits(rows, stage, stages, kind, pe) * luts


def _threshold_rows(layer: HWCustomOp, graph: ModelWrapper | None, pe: int) -> np.ndarray | None:
    """The thresholds, a row per channel (a shared row repeated per PE); None without
    ``graph`` or its initializer."""
    import numpy as np

    found = None if graph is None else graph.get_initializer(layer.onnx_node.input[1])
    rows = None if found is None else np.asarray(found).reshape(-1, found.shape[-1])
    if rows is not None and rows.shape[0] == 1:  # shared: one row per PE
        rows = np.repeat(rows, pe, axis=0)
    return rows


def _differing_bits(rows: np.ndarray, stage: int, stages: int, kind: BaseDataType, pe: int) -> int:
    """Per PE, the bits that differ between the words of the stage's memory, summed."""
    import numpy as np

    # the thresholds the stage compares with: the midpoints of its 2**stage intervals
    columns = [(2 * j + 1) * 2 ** (stages - 1 - stage) - 1 for j in range(2**stage)]
    words = rows[:, [c for c in columns if c < rows.shape[1]]]
    if kind.is_integer():
        words = words.astype(np.int64) & ((1 << kind.bitwidth()) - 1)
    else:
        words = words.astype(np.float32).view(np.uint32).astype(np.int64)
    total = 0
    for lane in range(pe):  # a PE's channels: every PE-th row
        mine = words[lane::pe].reshape(-1)
        differing = int(np.bitwise_or.reduce(mine ^ mine[0]))
        total += bin(differing).count("1")
    return total


def _memory_bits(depth: int) -> tuple[int, int]:
    """fifo.sv's address bits of a block RAM FIFO's memories (``INIT_ABITS``): ``depth - 1``
    words, split into a power of two and a smaller power of two where that saves a primitive
    (the second is 0 where not split)."""
    words = max(depth - 1, 2)
    low, high = math.ceil(math.log2(words)), 0
    if low > 9:
        rest = math.ceil(math.log2(words - 2 ** (low - 1)))
        if rest < low - 1:
            low, high = low - 1, max(rest, 1)
    return low, high


def _dwc(layer: HWCustomOp, name: str) -> float:
    """The RTL converter's (``vpc.sv``) cost terms, for input and output widths ``i`` and
    ``o`` whose greatest common divisor is ``g``: ``dwc_buffer``, its buffer of ``i + o``
    bits; ``dwc_rotation``, the barrel rotating the input's ``i / g`` lanes where there are
    more than one (a narrowing converter), ``i`` multiplexers of that many inputs and their
    select bits, each a tree of LUT6s."""
    in_width, out_width = layer.get_instream_width(0), layer.get_outstream_width(0)
    if name == "dwc_buffer":
        return float(in_width + out_width)
    lanes = in_width // math.gcd(in_width, out_width)
    if lanes <= 1:
        return 0.0
    inputs = lanes + math.ceil(math.log2(lanes)) + 1  # data and signed select bits
    return float(in_width * math.ceil((inputs - 1) / 5))


def _bits(layer: HWCustomOp, name: str) -> int:
    from qonnx.core.datatype import DataType

    types = layer.get_nodeattr_types()
    if name == "in_bits":
        return int(layer.get_input_datatype(0).bitwidth())
    if name == "w_bits":
        return int(layer.get_input_datatype(1).bitwidth()) if "weightDataType" in types else 0
    if name == "t_bits":
        return int(DataType[layer.get_nodeattr("weightDataType")].bitwidth())
    if name == "acc_bits" and "accDataType" in types:
        return int(DataType[layer.get_nodeattr("accDataType")].bitwidth())
    if name == "acc_bits" and hasattr(layer, "accumulator_bits"):
        return int(layer.accumulator_bits())
    return int(layer.get_output_datatype().bitwidth())


def _term(term: str, layer: HWCustomOp, graph: ModelWrapper | None = None) -> float:
    return math.prod(_name(layer, name, graph) for name in term.split("*"))
