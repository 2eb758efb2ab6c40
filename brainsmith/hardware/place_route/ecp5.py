"""Lattice ECP5 as a target family: Yosys ``synth_ecp5`` (with narrow products kept out of the
multiplier blocks) and ``nextpnr-ecp5`` place the stitched accelerator out of context (its
stream ports need no pins), so the part's resources and the accelerator's own Fmax are what
is reported. The rest is the tool chain every family shares
(``brainsmith.hardware.place_route.toolchain``).
"""

from __future__ import annotations

from brainsmith.hardware.place_route.default_clocks import clock_mhz
from brainsmith.hardware.place_route.packing import Packing
from brainsmith.hardware.place_route.parts import ECP5_PREFIXES, ecp5_part, known_parts
from brainsmith.hardware.place_route.staging import LATTICE_CELLS, NETLIST
from brainsmith.hardware.place_route.toolchain import Family, flip_flop_probe
from brainsmith.hardware.synthesis import ecp5


class Ecp5Family(Family):
    """ECP5: ``synth_ecp5`` with products whose narrower factor has at most
    ``SOFT_PRODUCT_BITS`` bits made of LUTs (``brainsmith.hardware.synthesis.ecp5``)."""

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        return ecp5.synthesis(top, netlist)


# What a build for an ECP5 part costs its folding in (the models fitted to synth_ecp5): the
# name users see -> nextpnr-ecp5's cell. LUT4 (a carry cell CCU2C takes two), FF, MULT18 (an
# 18x18 multiplier), EBR (an 18 Kbit block RAM).
RESOURCES = {"LUT4": "TRELLIS_COMB", "FF": "TRELLIS_FF", "MULT18": "MULT18X18D", "EBR": "DP16KD"}
# Where a build's figures per layer in RESOURCES come from (frameworks/finn/rtl_costs.py)
MODELS = "models fitted to Yosys synth_ecp5"
# ... by name: brainsmith/hardware/synthesis/costs/ecp5.json (python -m benchmarks.synth_fit
# --family ecp5)
COST_MODELS = "ecp5"
# One flip-flop from an input to an output, as synth_ecp5 writes it: placed out of context,
# nextpnr-ecp5's report gives the part's capacities (``capacities.part_capacities``)
PROBE = flip_flop_probe("TRELLIS_FF", ("CLK", "DI", "Q"), ported=True)

# The clock a board build asks for when it names none, per speed grade (MHz), and where each
# figure was measured: brainsmith.hardware.place_route.default_clocks
CLOCK_MHZ = clock_mhz("ECP5")


def unpacked_device(text: str) -> str:
    """The device ecpunpack's text configuration names (``.device LFE5U-85F``; "" when none)."""
    head = text.split()
    return head[1] if len(head) > 1 and head[0] == ".device" else ""


# How a board's design, placed on its pins, becomes a bitstream: nextpnr-ecp5's text
# configuration packed by ecppack (compressed), read back by ecpunpack. ECP5 packs only a
# board's design (``brainsmith.hardware.place_route.bitstream``), so it is not the family's
# ``packing`` (a design placed out of context has no pins to pack).
BOARD_PACKING = Packing(
    routed="design.config", argument="--textcfg", tool="ecppack",
    header=b"\xff\x00",  # a comment block, then the sync word
    device=unpacked_device, packer=("ecppack", "--compress"), reader=("ecpunpack",),
)  # fmt: skip
ECP5 = Ecp5Family.of_nextpnr(
    "ECP5", ECP5_PREFIXES, (ecp5_part, known_parts), "TRELLIS_COMB", clock_mhz=CLOCK_MHZ,
    costed=(RESOURCES, PROBE, ("--out-of-context",), MODELS), cost_models=COST_MODELS,
    gate_level=True, pins_argument=("--lpf", "{}"), board_packing=BOARD_PACKING,
    cell_library=LATTICE_CELLS,
)  # fmt: skip


__all__ = [
    "BOARD_PACKING",
    "CLOCK_MHZ",
    "COST_MODELS",
    "ECP5",
    "MODELS",
    "PROBE",
    "RESOURCES",
    "Ecp5Family",
]
