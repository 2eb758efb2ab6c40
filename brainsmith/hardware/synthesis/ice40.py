"""Lattice iCE40 as Yosys maps one layer (``synth_ice40``), for the iCE40 cost models
(``python -m benchmarks.synth_fit --family ice40``): every memory's asked style cleared, so
each goes to block RAM or logic by its cost (an iCE40 has no distributed RAM), products in
logic (the UP5K's eight SB_MAC16 are not used), and the cells counted as the folding costs
them.

Counts (``CELLS``): ``LUT4`` are SB_LUT4 cells (a carry SB_CARRY rides in a logic cell's
LUT, not counted); ``FF`` the flip-flops (SB_DFF*), each in a logic cell too; ``MULT18`` the
SB_MAC16 blocks; ``EBR`` the 4 Kbit block RAMs (SB_RAM40_4K). Every other cell is listed
under ``other``.
"""

from __future__ import annotations

from brainsmith.hardware.synthesis.cells import counts as counted_as
from brainsmith.hardware.synthesis.cells import memories_by_cost

# SB_DFF with its enable (E), reset or set (R, S), synchronous or not (SR, SS) and a negative
# clock edge (N), as synth_ice40 maps them
FLIP_FLOPS = tuple(
    f"SB_DFF{edge}{enable}{reset}"
    for edge in ("", "N")
    for enable in ("", "E")
    for reset in ("", "SR", "R", "SS", "S")
)
CELLS: dict[str, dict[str, int]] = {
    "LUT4": {"SB_LUT4": 1},
    "FF": dict.fromkeys(FLIP_FLOPS, 1),
    "MULT18": {"SB_MAC16": 1},
    "EBR": {"SB_RAM40_4K": 1, "SB_RAM40_4KNR": 1, "SB_RAM40_4KNW": 1, "SB_RAM40_4KNRNW": 1},
}

# the block RAM a layer's memories take (SB_RAM40_4K: 4 Kbit, 16 bits wide at most); no
# distributed RAM (0), written with the fitted models
BLOCK_RAM_SHAPES: tuple[tuple[int, int], ...] = ((2048, 2), (1024, 4), (512, 8), (256, 16))
DISTRIBUTED_RAM_LUTS: int = 0


def synthesis(top: str, netlist: str = "") -> list[str]:
    """``synth_ice40`` with every memory's asked style cleared before memories are mapped,
    writing the JSON ``netlist`` nextpnr reads (none when empty)."""
    return memories_by_cost(f"synth_ice40 -top {top}", "map_ram", netlist)


def counts(cells: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(LUT4, FF, MULT18, EBR as ``CELLS`` counts them, other cells by type) of Yosys'
    ``cells`` by type."""
    return counted_as(cells, CELLS)


__all__ = ["BLOCK_RAM_SHAPES", "CELLS", "DISTRIBUTED_RAM_LUTS", "FLIP_FLOPS", "counts", "synthesis"]
