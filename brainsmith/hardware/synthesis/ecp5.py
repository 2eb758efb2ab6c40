"""Lattice ECP5 as Yosys maps it (``synth_ecp5``): the commands, the fixes FINN's RTL needs
for a Lattice part, and the cells counted as the part's resources as nextpnr counts them.
Shared by one layer's synthesis (``run.synthesise_layer`` with family ``ecp5``) and the
whole accelerator's place and route (``brainsmith.hardware.place_route``).

Counts (``CELLS``): ``LUT4`` are LUT4 cells, a carry cell ``CCU2C`` as the two LUT4s it
occupies and a 16x4 distributed RAM ``TRELLIS_DPR16X4`` as the LUT4s nextpnr-ecp5 places it
in (``DPRAM_LUTS``); ``FF`` are ``TRELLIS_FF``; ``MULT18`` the 18x18 multipliers
``MULT18X18D``; ``EBR`` the 18 Kbit block RAMs ``DP16KD``. Every other cell (the slice
multiplexers ``PFUMX`` and ``L6MUX21``, which take no LUT) is listed under ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from importlib.resources import files as package_files

# a product with a factor this narrow is made of LUTs, not a MULT18X18D; LUT4s nextpnr-ecp5
# counts for one TRELLIS_DPR16X4 (the cost models count them alike)
from brainsmith.frameworks.finn.rtl_costs import DPRAM_LUTS, EBR_SHAPES, SOFT_PRODUCT_BITS
from brainsmith.hardware.synthesis.cells import counts as counted_as
from brainsmith.hardware.synthesis.sliding_window import sign_compared_window

CELLS: dict[str, dict[str, int]] = {
    "LUT4": {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": DPRAM_LUTS},
    "FF": {"TRELLIS_FF": 1},
    "MULT18": {"MULT18X18D": 1},
    "EBR": {"DP16KD": 1},
}

# the block RAM a layer's memories take (DP16KD: 18 Kbit, its shapes in words and bits) and
# the LUT4s of a 16x4 distributed RAM, as the cost models count them, written with them
BLOCK_RAM_SHAPES: tuple[tuple[int, int], ...] = EBR_SHAPES
DISTRIBUTED_RAM_LUTS: int = DPRAM_LUTS


def synthesis(top: str, netlist: str = "") -> list[str]:
    """``synth_ecp5`` with products whose narrower factor has at most SOFT_PRODUCT_BITS bits
    kept out of the MULT18X18D blocks: synth_ecp5 gives every product of two factors of 2 bits
    or more one of the part's 156 (ECP5-85F), so a layer of many 2-bit lanes (a TFC-w2a2's)
    ran out of them, where a 2-bit factor is a shift and an add in LUTs. Such products are
    marked ``$__soft_mul`` before the multiplier mapping, which turns them back to ``$mul``
    for the LUT mapping (as it does with products too narrow for a block). ``netlist``: the
    JSON netlist written, none when empty."""
    narrow = f"r:A_WIDTH<={SOFT_PRODUCT_BITS} r:B_WIDTH<={SOFT_PRODUCT_BITS} %u"
    return [
        f"synth_ecp5 -top {top} -run begin:coarse",
        "proc",
        "flatten",
        "opt_expr",
        "opt_clean",
        "wreduce",
        f"chtype -set $__soft_mul t:$mul {narrow} %i",
        f"synth_ecp5 -top {top} -run coarse:" + (f" -json {netlist}" if netlist else ""),
    ]


ULTRA_BY_DEPTH = '/* else */                        "ultra";'
ULTRA_BY_STYLE = 'RAM_STYLE != "auto"?              RAM_STYLE :'


def block_ram_for_ultra(text: str) -> str:
    """UltraRAM FIFOs (deeper than 2,028 words, or asked for) kept in block RAM (fifo.sv)."""
    if text.count(ULTRA_BY_DEPTH) != 1 or text.count(ULTRA_BY_STYLE) != 1:
        return text  # not the code this was written for: read it as it is
    return text.replace(ULTRA_BY_DEPTH, '/* else */ "block"; // no UltraRAM here').replace(
        ULTRA_BY_STYLE,
        'RAM_STYLE == "ultra"? "block" : RAM_STYLE != "auto"? RAM_STYLE :',
    )


BEHAVIORAL_DEFAULT = re.compile(r"(\bbit\s+FORCE_BEHAVIORAL\s*=\s*)0\b")


def behavioural_by_default(text: str) -> str:
    """FINN's behavioural datapath where an instance does not choose (a layer's wrapper
    chooses it only in simulation): its AMD DSP and LUT primitives exist on no Lattice part."""
    return BEHAVIORAL_DEFAULT.sub(r"\g<1>1", text)


FINN_CORE = re.compile(r"^module mvu #\((?P<parameters>.*?)\)\((?P<ports>.*?)\);", re.S | re.M)
CORE_PARAMETERS = ("VERSION", "PE", "SIMD", "WEIGHT_WIDTH", "ACTIVATION_WIDTH", "ACCU_WIDTH",
                   "SIGNED_ACTIVATIONS", "NARROW_WEIGHTS", "FORCE_BEHAVIORAL")  # fmt: skip
CORE_PORTS = ("clk", "rst", "en", "last", "zero", "w", "a", "vld", "p")
FINN_VECTOR_CORE = re.compile(
    r"^module mvu_vvu_8sx9_dsp58 #\((?P<parameters>.*?)\)\s*\((?P<ports>.*?)\);", re.S | re.M
)
VECTOR_CORE_PARAMETERS = ("IS_MVU", "PE", "SIMD", "WEIGHT_WIDTH", "ACTIVATION_WIDTH",
                          "ACCU_WIDTH", "SIGNED_ACTIVATIONS", "SEGMENTLEN", "FORCE_BEHAVIORAL",
                          "ACTIVATION_ELEMENTS", "WEIGHT_ELEMENTS")  # fmt: skip


def _names(declarations: str) -> set[str]:
    """The names declared in a module header's list (comments dropped)."""
    plain = re.sub(r"//[^\n]*", "", declarations)
    return set(re.findall(r"(\w+)\s*(?:=[^,]*)?(?:,|$)", plain.strip()))


def _replaced(text: str, header: re.Pattern[str], parameters: tuple[str, ...], own: str) -> str:
    """brainsmith's core ``rtl/<own>`` in place of FINN's ``text`` when its module header
    declares exactly ``parameters`` and ``CORE_PORTS`` (else ``text``: not the code it was
    written for)."""
    found = header.search(text)
    if found is None or (_names(found["parameters"]), _names(found["ports"])) != (
        set(parameters),
        set(CORE_PORTS),
    ):
        return text
    return package_files("brainsmith.hardware.synthesis").joinpath("rtl", own).read_text()


def pipelined_core(text: str) -> str:
    """FINN's matrix-vector core (mvu.sv) replaced by brainsmith's (``rtl/mvu_lattice.sv``):
    the same module, parameters, ports and latency, with a registered product per weight in
    place of FINN's 27x18 product packing several lanes, which Yosys splits over two 18x18
    multipliers and adds in the same cycle, every matrix layer's slowest path on a Lattice
    part."""
    return _replaced(text, FINN_CORE, CORE_PARAMETERS, "mvu_lattice.sv")


def pipelined_vector_core(text: str) -> str:
    """FINN's vector-vector core (mvu_vvu_8sx9_dsp58.sv, a depthwise layer's) replaced by
    brainsmith's (``rtl/vvu_lattice.sv``): the same module, parameters, ports and latency,
    with a registered product per weight in place of three 8x9 products packed into one
    DSP58's wide product, which a Lattice part's 18x18 multipliers can only split."""
    return _replaced(text, FINN_VECTOR_CORE, VECTOR_CORE_PARAMETERS, "vvu_lattice.sv")


THRESHOLD_AUTO = 'DEPTH_TRIGGER_BRAM? "distributed" : "auto";'
LUT_RAM_DEPTH = 256  # threshold memories this deep or less: LUTs


def threshold_memories_in_lut_ram(text: str) -> str:
    """Threshold memories of up to LUT_RAM_DEPTH words in LUTs where FINN leaves the choice
    to the tool (thresholding.sv): distributed RAM when the thresholds can be written, else
    logic (a Lattice part has no LUT-ROM, so Yosys finds no distributed mapping for a ROM).
    Yosys put a 256x9 one in a DP16KD, whose 5.6 ns from clock to data, with the compare
    after it in the same cycle, was the MLP's slowest path on an LFE5U-85F once its matrix
    layers were pipelined (98.8 MHz; 109.6 MHz in LUTs)."""
    if text.count(THRESHOLD_AUTO) != 1:
        return text  # not the code this was written for: read it as it is
    in_luts = 'USE_CONFIG? "distributed" : "logic"'
    return text.replace(
        THRESHOLD_AUTO, f'DEPTH_TRIGGER_BRAM || DEPTH <= {LUT_RAM_DEPTH}? ({in_luts}) : "auto";'
    )


# (FINN's text, the registered read's) in thresholding.sv, each to be found once
REGISTERED_READS = (
    (
        "MAX_PENDING = (DEEP_PIPELINE+1)*M + 3;",
        "MAX_PENDING = (DEEP_PIPELINE+2)*M + 3;  // a read register in any stage",
    ),
    (
        "\t\t\tuwire  cs = (p.ptr[SN:0] == 2**SN-1);\n",
        "\t\t\tuwire  cs = (p.ptr[SN:0] == 2**SN-1);\n"
        '\t\t\tlocalparam bit  READ_REG = (RAM_STYLE != "distributed") && (RAM_STYLE != "logic")\n'
        "\t\t\t\t&& !((SETS == 1) && (CF == 1) && (stage == 0));\n"
        "\t\t\tpipe_t  pd;\t// p when its threshold is read\n"
        "\t\t\tlogic  csd;\n"
        "\t\t\tif(READ_REG) begin : genReadDelay\n"
        "\t\t\t\tpipe_t  PD = '{ op: NOP, default: 'x };\n"
        "\t\t\t\tlogic  CSD = 'x;\n"
        "\t\t\t\talways_ff @(posedge clk) begin\n"
        "\t\t\t\t\tif(rst)  PD <= '{ op: NOP, default: 'x };\n"
        "\t\t\t\t\telse     PD <= p;\n"
        "\t\t\t\t\tCSD <= cs;\n"
        "\t\t\t\tend\n"
        "\t\t\t\tassign  pd = PD;\n"
        "\t\t\t\tassign  csd = CSD;\n"
        "\t\t\tend : genReadDelay\n"
        "\t\t\telse begin\n"
        "\t\t\t\tassign  pd = p;\n"
        "\t\t\t\tassign  csd = cs;\n"
        "\t\t\tend\n",
    ),
    (
        "\t\t\t\t\talways_ff @(posedge clk) begin\n"
        "\t\t\t\t\t\tThresh <= Threshs[addr];\n"
        "\t\t\t\t\tend\n",
        "\t\t\t\t\tif(READ_REG) begin : genReadReg\n"
        "\t\t\t\t\t\tval_t  ThreshRead;\n"
        "\t\t\t\t\t\talways_ff @(posedge clk)  ThreshRead <= Threshs[addr];\n"
        "\t\t\t\t\t\talways_ff @(posedge clk)  Thresh <= ThreshRead;\n"
        "\t\t\t\t\tend : genReadReg\n"
        "\t\t\t\t\telse begin\n"
        "\t\t\t\t\t\talways_ff @(posedge clk)  Thresh <= Threshs[addr];\n"
        "\t\t\t\t\tend\n",
    ),
    ("\t\t\t\t\tP <= p;\n", "\t\t\t\t\tP <= pd;\n"),
    ("Reval <= (p.op ==? RB) && cs;", "Reval <= (pd.op ==? RB) && csd;"),
    ("Scope <= (SCOPE_REDUCE == 0)? 1 : p.ptr[", "Scope <= (SCOPE_REDUCE == 0)? 1 : pd.ptr["),
)


def block_ram_reads_registered(text: str) -> str:
    """A threshold memory left in block RAM read through one more register, the stage's
    state delayed to meet it (thresholding.sv): a DP16KD takes 5.6 ns from clock to data,
    and FINN compares it in the same cycle, the jet tagger's slowest path on an LFE5U-85F
    (12.0 ns) once its shallower memories were in LUTs. The pipeline's guard counts one more
    cycle a stage, so the output FIFO still holds every frame in flight."""
    if any(text.count(finn) != 1 for finn, _ in REGISTERED_READS):
        return text  # not the code this was written for: read it as it is
    for finn, registered in REGISTERED_READS:
        text = text.replace(finn, registered)
    return text


# file name (a shell pattern) -> the fixes a Lattice part needs
# (place_route/stitched_sources.py says why)
LATTICE_FIXES: dict[str, tuple[Callable[[str], str], ...]] = {
    "fifo.sv": (block_ram_for_ultra,),
    "*_impl.sv": (sign_compared_window,),  # a sliding window layer's own file
    "mvu.sv": (pipelined_core,),
    "mvu_vvu_8sx9_dsp58.sv": (pipelined_vector_core,),
    "thresholding.sv": (threshold_memories_in_lut_ram, block_ram_reads_registered),
    **dict.fromkeys(
        ("mvu_vvu_axi.sv", "binopf.sv", "accuf.sv", "rsqrtf.sv"), (behavioural_by_default,)
    ),
}


def lattice_ready(name: str, text: str, fixes: list[str]) -> str:
    """``text`` of the RTL file ``name`` with each Lattice fix that changes it applied (its
    name added to ``fixes``)."""
    named = [group for pattern, group in LATTICE_FIXES.items() if fnmatchcase(name, pattern)]
    for fix in (fix for group in named for fix in group):
        fixed = fix(text)
        if fixed != text:
            fixes.append(f"{name}: {fix.__name__}")
        text = fixed
    return text


def counts(cells: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(LUT4, FF, MULT18, EBR as ``CELLS`` counts them, other cells by type) of Yosys'
    ``cells`` by type."""
    return counted_as(cells, CELLS)


__all__ = [
    "BLOCK_RAM_SHAPES",
    "CELLS",
    "DISTRIBUTED_RAM_LUTS",
    "DPRAM_LUTS",
    "LATTICE_FIXES",
    "SOFT_PRODUCT_BITS",
    "behavioural_by_default",
    "block_ram_for_ultra",
    "counts",
    "lattice_ready",
    "synthesis",
]
