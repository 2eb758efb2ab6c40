"""Gowin GW1N and GW2A as Yosys maps one layer (``synth_gowin``), for the Gowin cost models
(``python -m benchmarks.synth_fit --family gowin``), and the cells counted as
nextpnr-himbaechel-gowin counts the part's resources.

Counts (``CELLS``): ``LUT4`` are the LUT cells (LUT1 to LUT4), a 16x4 LUT-RAM ``RAM16SDP4``
as the four LUTs of the slices it takes, and each flip-flop once more: nextpnr gives a
flip-flop whose input no LUT of its slice drives a pass-through LUT, and six Tang Primer 20K
and Tang Nano 9K builds placed the LUT cells, four a RAM16SDP4 and 0.73 to 0.97 LUT4 a
flip-flop (``benchmarks.board_families``, 30 November), so one a flip-flop bounds them;
``FF`` the flip-flops (DFF*); ``MULT18`` the 9x9 multipliers nextpnr counts (``MULT9X9``, an
18x18 block as two, a 36x36 as eight); ``EBR`` the 18 Kbit block RAMs (BSRAM: SP, SDPB, DPB,
their 9-bit forms and ROMs). The carry cells (ALU), which nextpnr places in their own
sites, and the wide multiplexers (MUX2_LUT5 to MUX2_LUT8), which take no LUT, are listed
under ``other``.
"""

from __future__ import annotations

from brainsmith.frameworks.finn.rtl_costs import EBR_SHAPES
from brainsmith.hardware.synthesis.cells import counts as counted_as

# DFF with its enable (E), a synchronous reset or set (R, S), an asynchronous clear or
# preset (C, P) and a negative clock edge (N), as synth_gowin maps them
FLIP_FLOPS = tuple(
    f"DFF{edge}{reset}{enable}"
    for edge in ("", "N")
    for reset in ("", "R", "S", "C", "P")
    for enable in ("", "E")
)
BLOCK_RAMS = ("SP", "SPX9", "SDPB", "SDPX9B", "DPB", "DPX9B", "pROM", "pROMX9")
PASS_THROUGH = 1  # LUT4s a flip-flop is counted as beside itself (see above)
CELLS: dict[str, dict[str, int]] = {
    "LUT4": {
        **{f"LUT{inputs}": 1 for inputs in range(1, 5)},
        **{f"RAM16SDP{bits}": 4 for bits in (1, 2, 4)},
        **dict.fromkeys(FLIP_FLOPS, PASS_THROUGH),
    },
    "FF": dict.fromkeys(FLIP_FLOPS, 1),
    "MULT18": {"MULT9X9": 1, "MULT18X18": 2, "MULT36X36": 8},
    "EBR": dict.fromkeys(BLOCK_RAMS, 1),
}

# the block RAM a layer's memories take (BSRAM: 18 Kbit, shaped as ECP5's DP16KD) and the
# LUT4s of a 16x4 LUT-RAM (RAM16SDP4, as ``CELLS`` counts it), written with the fitted models
BLOCK_RAM_SHAPES: tuple[tuple[int, int], ...] = EBR_SHAPES
DISTRIBUTED_RAM_LUTS: int = 4


def synthesis(top: str, netlist: str = "") -> list[str]:
    """``synth_gowin`` (writing the JSON ``netlist`` nextpnr reads, none when empty)."""
    return [f"synth_gowin -top {top}" + (f" -json {netlist}" if netlist else "")]


def counts(cells: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(LUT4, FF, MULT18, EBR as ``CELLS`` counts them, other cells by type) of Yosys'
    ``cells`` by type."""
    return counted_as(cells, CELLS)


__all__ = [
    "BLOCK_RAMS",
    "BLOCK_RAM_SHAPES",
    "CELLS",
    "DISTRIBUTED_RAM_LUTS",
    "FLIP_FLOPS",
    "PASS_THROUGH",
    "counts",
    "synthesis",
]
