"""Cologne Chip GateMate as a target family: Yosys ``synth_gatemate`` and nextpnr's Himbächel
architecture for GateMate (``yowasp-nextpnr-himbaechel-gatemate``, with Project Peppercorn's
``gmpack`` and ``gmunpack``), all from PyPI.

nextpnr-himbaechel-gatemate has no out-of-context mode, so the accelerator is placed behind
brainsmith's host link: on a board (the Olimex GateMateA1-EVB, ``board.platforms``) in its
board top, its pins in the board's CCF (``--vopt ccf=``), clocked by the CC_PLL
(``board.gatemate_pll``); on a part alone in a part-level top (``linked.behind_link``), whose
three I/O nextpnr places itself (``--vopt allow-unconstrained``). nextpnr writes the routed
design as configuration text (``--vopt out=``), ``gmpack`` packs it into a bitstream and
``gmunpack`` reads it back, naming the device (``.device CCGM1A1``), which must be the part.

Part names are the devices nextpnr-himbaechel-gatemate has a chip database of
(``parts.GATEMATE_PARTS``) but those it does not route here (``NOT_ROUTED``: the two-die
CCGM1A2).
"""

from __future__ import annotations

import re

from brainsmith.hardware.place_route.default_clocks import clock_mhz
from brainsmith.hardware.place_route.linked import behind_link
from brainsmith.hardware.place_route.packing import Packing
from brainsmith.hardware.place_route.parts import (
    GATEMATE_PREFIXES,
    GateMatePart,
    gatemate_part,
    known_gatemate_parts,
)
from brainsmith.hardware.place_route.staging import NETLIST
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import (
    Family,
    Placed,
    flip_flop_probe,
    nextpnr_arguments,
)
from brainsmith.hardware.synthesis.gatemate import synthesis as gatemate_synthesis
from brainsmith.hardware.synthesis.layer_sources import MOUNT

FASTEST_BAUD = 3_000_000
CELLS = "/share/gatemate/cells_bb.v"  # Yosys' GateMate blackboxes: a board top's CC_PLL


class GateMateFamily(Family):
    """GateMate: ``synth_gatemate`` with its LUT trees (``-luttree``, which
    nextpnr-himbaechel-gatemate places) and no 8-input multiplexers, FINN's memory styles
    left to Yosys, the accelerator placed behind the host link on pins nextpnr chooses."""

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        """``synth_gatemate``, each memory mapped by its cost (a GateMate has no distributed
        RAM)."""
        return gatemate_synthesis(top, netlist)

    def prepare(
        self, design: StitchedDesign, part: GateMatePart, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        linked = behind_link(design, part.name, mhz, frame, self.link_baud)
        arguments = nextpnr_arguments([*part.arguments(), "--vopt", "allow-unconstrained"], mhz)
        placed = (f"behind the host link ({linked.baud} baud), its pins placed by "
                  "nextpnr-himbaechel-gatemate")  # fmt: skip
        return Placed(linked.design, {}, arguments, placed)


class GateMatePacking(Packing):
    """nextpnr writes the configuration through its Himbächel option ``out=``."""

    def nextpnr_arguments(self) -> list[str]:
        return ["--vopt", f"out={MOUNT}/{self.routed}"]


def unpacked_device(text: str) -> str:
    """The device gmunpack's read-back names (``.device CCGM1A1``)."""
    found = re.search(r"^\.device (\S+)", text, re.M)
    return found[1] if found else ""


def _device(part: str) -> str:
    return gatemate_part(part).name


# a GateMate bitstream starts with its command CMD_PATH (0xD9 ... per gmpack)
PACKING = GateMatePacking(
    "design.config", "--vopt", "gmpack", b"\xd9", unpacked_device,
    packer=("gmpack",), reader=("gmunpack",), part_device=_device,
)  # fmt: skip

# What nextpnr-himbaechel-gatemate counts of a part, by the names users see: LT (CPE_LT, a
# LUT tree: two a programmable element, CPE), FF (CPE_FF, two a CPE), RAM (RAM_HALF: half a
# 40 Kbit block RAM). A build's folding is costed on them in the models fitted to
# synth_gatemate (``costs/gatemate.json``: LT as the models' LUT4, RAM as their EBR).
# GateMate has no hard multipliers: the CPEs nextpnr builds multipliers of (CC_MULT, the
# models' MULT18) have no capacity of their own and are not costed.
RESOURCES = {"LT": "CPE_LT", "FF": "CPE_FF", "RAM": "RAM_HALF"}
MODELS = (
    "models fitted to Yosys synth_gatemate (LUT trees and full adders as the CPE halves "
    "nextpnr counts, 20 Kbit block RAM halves; its multipliers, built of CPEs, not costed)"
)
COST_MODELS = "gatemate"  # brainsmith/hardware/synthesis/costs/gatemate.json
COST_NAMES = {"LT": "LUT4", "RAM": "EBR"}
# The CPEs nextpnr also takes for multipliers, the routing bridges and the block RAMs' ports
# (the shipped MLP: 21, 543 and 315 beside its 3,311 LT) are not in the LT the models count:
# a folding fills half the part's LT at most
FILL = 0.5
# One flip-flop with no ports: nextpnr's report gives the part's capacities
PROBE = flip_flop_probe(
    "CC_DFF",
    ("CLK", "D", "Q"),
    tied={"EN": "1", "SR": "0"},
    parameters=dict.fromkeys(("CLK_INV", "EN_INV", "SR_INV", "SR_VAL"), "0"),
)

GATEMATE = GateMateFamily(
    name="GateMate", prefixes=GATEMATE_PREFIXES, parse=gatemate_part, known=known_gatemate_parts,
    synth="synth_gatemate", package="yowasp-nextpnr-himbaechel-gatemate",
    tool="nextpnr_himbaechel_gatemate", logic="CPE_LT", packing=PACKING,
    resources=RESOURCES, probe=PROBE, models=MODELS, cost_models=COST_MODELS,
    cost_names=COST_NAMES, fill=FILL, link_baud=FASTEST_BAUD, clock_mhz=clock_mhz("GateMate"),
    pins_argument=("--vopt", "ccf={}"), gate_level=True, cell_library=CELLS,
)  # fmt: skip

__all__ = [
    "GATEMATE",
    "PACKING",
    "PROBE",
    "RESOURCES",
    "GateMateFamily",
    "GateMatePacking",
    "unpacked_device",
]
