"""Cologne Chip GateMate as Yosys maps it (``synth_gatemate``): the commands, shared by one
layer's synthesis for the GateMate cost models (``python -m benchmarks.synth_fit --family
gatemate``) and the whole accelerator's place and route, and the cells counted as
nextpnr-himbaechel-gatemate counts the part's resources.

Counts (``CELLS``): ``LUT4`` are the halves of programmable elements (CPE) nextpnr counts as
``CPE_LT``: a LUT, a LUT tree ``CC_L2T4`` or a 2:1 multiplexer one, a five-input tree
``CC_L2T5``, a 4:1 multiplexer or a full adder ``CC_ADDF`` two (the shipped MLP: 3,329 so
counted, 3,311 placed); ``FF`` the flip-flops and latches; ``MULT18`` the multipliers
``CC_MULT``, which nextpnr builds of whole CPEs in multiplier mode (a GateMate has no hard
multipliers, so no folding is costed on them); ``EBR`` the 20 Kbit halves of the 40 Kbit
block RAMs (``RAM_HALF``).
"""

from __future__ import annotations

from brainsmith.hardware.synthesis.cells import counts as counted_as
from brainsmith.hardware.synthesis.cells import memories_by_cost

CELLS: dict[str, dict[str, int]] = {
    "LUT4": {
        **{f"CC_LUT{inputs}": 1 for inputs in range(1, 5)},
        "CC_L2T4": 1,
        "CC_L2T5": 2,
        "CC_MX2": 1,
        "CC_MX4": 2,
        "CC_MX8": 4,
        "CC_ADDF": 2,
    },
    "FF": {"CC_DFF": 1, "CC_DLT": 1},
    "MULT18": {"CC_MULT": 1},
    "EBR": {"CC_BRAM_20K": 1, "CC_BRAM_40K": 2, "CC_FIFO_40K": 2},
}
# LUT trees, which nextpnr-himbaechel-gatemate places, and no 8:1 multiplexers
SYNTH = "synth_gatemate -top {top} -luttree -nomx8"

# the block RAM a layer's memories take (CC_BRAM_20K: half a 40 Kbit block, 40 bits wide at
# most); no distributed RAM (0), written with the fitted models
BLOCK_RAM_SHAPES: tuple[tuple[int, int], ...] = (
    (16384, 1),
    (8192, 2),
    (4096, 5),
    (2048, 10),
    (1024, 20),
    (512, 40),
)
DISTRIBUTED_RAM_LUTS: int = 0


def synthesis(top: str, netlist: str = "") -> list[str]:
    """``synth_gatemate`` with every memory's asked style cleared before block RAMs are
    mapped (a GateMate has no distributed RAM: each memory goes to block RAM or flip-flops by
    its cost), writing the JSON ``netlist`` nextpnr reads (none when empty)."""
    return memories_by_cost(SYNTH.format(top=top), "map_bram", netlist)


def counts(cells: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(LUT4, FF, MULT18, EBR as ``CELLS`` counts them, other cells by type) of Yosys'
    ``cells`` by type."""
    return counted_as(cells, CELLS)


__all__ = ["BLOCK_RAM_SHAPES", "CELLS", "DISTRIBUTED_RAM_LUTS", "SYNTH", "counts", "synthesis"]
