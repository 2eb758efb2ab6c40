"""Cologne Chip GateMate as a target family: Yosys ``synth_gatemate`` and nextpnr's Himbächel
architecture for GateMate (``yowasp-nextpnr-himbaechel-gatemate``, with Project Peppercorn's
``gmpack`` and ``gmunpack``), all from PyPI.

nextpnr-himbaechel-gatemate has no out-of-context mode, so the accelerator is placed behind
brainsmith's host link in a part-level top (``linked.behind_link``), whose three I/O nextpnr
places itself (``--vopt allow-unconstrained``: no board in amaranth-boards has a GateMate, so
no pins are known). nextpnr writes the routed design as configuration text (``--vopt
out=``), ``gmpack`` packs it into a bitstream and ``gmunpack`` reads it back, naming the
device (``.device CCGM1A1``), which must be the part.

Part names are the devices nextpnr-himbaechel-gatemate has a chip database of (``PARTS``) but
those it does not route here (``NOT_ROUTED``: the two-die CCGM1A2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brainsmith.hardware.place_route.linked import behind_link
from brainsmith.hardware.place_route.packing import Packing
from brainsmith.hardware.place_route.parts import UnknownPart
from brainsmith.hardware.place_route.staging import NETLIST
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import (
    Family,
    Placed,
    flip_flop_probe,
    memories_by_cost,
    nextpnr_arguments,
)
from brainsmith.hardware.synthesis.layer_sources import MOUNT

PREFIXES = ("CCGM",)
# the devices of nextpnr-himbaechel-gatemate's chip databases (share/himbaechel/gatemate/
# chipdb-<device>.bin; tests/test_place_route_gatemate.py reads them)
PARTS = ("CCGM1A1", "CCGM1A2")
# the devices nextpnr-himbaechel-gatemate 0.11.1 has a database of but does not route here
NOT_ROUTED = {
    "CCGM1A2": "its two dies stop nextpnr-himbaechel-gatemate 0.11.1 as router2 sets up (a "
    "thrown WebAssembly exception, the shipped MLP placed on it)",
}
FASTEST_BAUD = 3_000_000


@dataclass(frozen=True)
class GateMatePart:
    """One GateMate device, as nextpnr-himbaechel-gatemate names it."""

    name: str  # "CCGM1A1"
    speed: int = 0  # none a board build asks a clock by

    def arguments(self) -> list[str]:
        return ["--device", self.name]


def known_gatemate_parts() -> str:
    """What a GateMate part name is, for an error message."""
    placed = [part for part in PARTS if part not in NOT_ROUTED]
    left = "".join(f", {part} not yet" for part in NOT_ROUTED)
    return f"GateMate parts are {' and '.join(placed)}{left}; e.g. {placed[0]}"


def gatemate_part(name: str) -> GateMatePart:
    """``name`` (any case) as nextpnr-himbaechel-gatemate places it; UnknownPart listing the
    known parts otherwise."""
    key = name.strip().upper()
    if key in NOT_ROUTED:
        raise UnknownPart(f"{key} is not placed by brainsmith: {NOT_ROUTED[key]}; "
                          f"{known_gatemate_parts()}")  # fmt: skip
    if key not in PARTS:
        raise UnknownPart(f"{name!r} is not a GateMate part; {known_gatemate_parts()}")
    return GateMatePart(key)


class GateMateFamily(Family):
    """GateMate: ``synth_gatemate`` with its LUT trees (``-luttree``, which
    nextpnr-himbaechel-gatemate places) and no 8-input multiplexers, FINN's memory styles
    left to Yosys, the accelerator placed behind the host link on pins nextpnr chooses."""

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        """``synth_gatemate``, each memory mapped by its cost (a GateMate has no distributed
        RAM)."""
        return memories_by_cost(f"synth_gatemate -top {top} -luttree -nomx8", "map_bram", netlist)

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
# 40 Kbit block RAM). GateMate has no hard multipliers. No folding is costed for GateMate
# yet: these are the capacities its place and route reads.
RESOURCES = {"LT": "CPE_LT", "FF": "CPE_FF", "RAM": "RAM_HALF"}
MODELS = "no folding costed for GateMate: its capacities only"
# One flip-flop with no ports: nextpnr's report gives the part's capacities
PROBE = flip_flop_probe(
    "CC_DFF",
    ("CLK", "D", "Q"),
    tied={"EN": "1", "SR": "0"},
    parameters=dict.fromkeys(("CLK_INV", "EN_INV", "SR_INV", "SR_VAL"), "0"),
)

GATEMATE = GateMateFamily(
    name="GateMate", prefixes=PREFIXES, parse=gatemate_part, known=known_gatemate_parts,
    synth="synth_gatemate", package="yowasp-nextpnr-himbaechel-gatemate",
    tool="nextpnr_himbaechel_gatemate", logic="CPE_LT", packing=PACKING,
    resources=RESOURCES, probe=PROBE, models=MODELS, link_baud=FASTEST_BAUD,
)  # fmt: skip

__all__ = [
    "GATEMATE",
    "NOT_ROUTED",
    "PACKING",
    "PARTS",
    "PROBE",
    "RESOURCES",
    "GateMateFamily",
    "GateMatePacking",
    "GateMatePart",
    "gatemate_part",
    "known_gatemate_parts",
    "unpacked_device",
]
