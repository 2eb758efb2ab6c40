"""The accelerator behind brainsmith's host link in a part-level top, for a family whose
nextpnr has no out-of-context mode (Nexus, iCE40, Gowin, GateMate): the top
(``brainsmith.hardware.board.top.part_top``: a clock pin, the UART's two pins) clocks the
accelerator straight from its pin, and the link's few hundred cells are counted with the
accelerator's. Where amaranth-boards describes a board with the part, the three pins can be
that board's clock and USB UART (``link_pins``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from brainsmith.hardware.board.constraints import CLOCK, UART_RX, UART_TX
from brainsmith.hardware.board.link import rtl_files
from brainsmith.hardware.board.top import AcceleratorPorts, Link, TopError, baud_rate, part_top
from brainsmith.hardware.place_route.errors import BitstreamError, PlaceRouteError
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign

TOP = "board_top"


def link_sources() -> list[tuple[str, str]]:
    """brainsmith's host link RTL (``brainsmith.hardware.board.link.rtl_files``) as (name,
    text); BitstreamError when it is not installed."""
    try:
        return [(entry.name, entry.read_text()) for entry in rtl_files()]
    except FileNotFoundError as exc:
        raise BitstreamError(str(exc), "reinstall brainsmith (pip install -e .)") from None


def accelerator_ports(design: StitchedDesign) -> AcceleratorPorts:
    """The ports of ``design``'s accelerator; BitstreamError when they are not known."""
    if design.ports is None:
        raise BitstreamError(
            "the stitched design's ports are not known (they come from the build's final model)",
            "make the bitstream of a build folder",
        )
    return design.ports


@dataclass(frozen=True)
class Linked:
    """A design behind the link: what Yosys reads (the accelerator, the link, the top) and
    the link's UART rate."""

    design: StitchedDesign
    baud: int


def behind_link(
    design: StitchedDesign, part: str, mhz: float, frame: tuple[int, int], fastest: int
) -> Linked:
    """``design`` behind the host link in a part-level top for ``part`` at ``mhz``, the
    link at the fastest standard rate up to ``fastest`` baud the clock makes (``frame``: its
    input and output words per frame); PlaceRouteError when the top cannot be made."""
    try:
        ports = accelerator_ports(design)
        baud = baud_rate(mhz, fastest)
        top = part_top(part, mhz, ports, Link(baud, *frame, design.digest()))
    except TopError as exc:
        raise PlaceRouteError(str(exc), exc.hint) from None
    sources = [*design.sources, *link_sources(), (f"{TOP}.sv", top)]
    return Linked(StitchedDesign(TOP, sources, design.data, design.primitives,
                                 list(design.fixes), instances=dict(design.instances)),
                  baud)  # fmt: skip


def link_pins(module: str, platform_class: str) -> dict[str, tuple[str, dict[str, str]]]:
    """The top's clock and UART pins (port -> (pin, attributes)) on the board
    amaranth-boards describes as ``platform_class`` of its ``module``: the board's own clock
    and USB UART, read from the platform, never typed; PlaceRouteError when it cannot be
    read."""
    from brainsmith.hardware.board.boards import INSTALL_HINT, platform_pin

    try:
        found = getattr(importlib.import_module(f"amaranth_boards.{module}"), platform_class)
        platform: Any = found()
    except (ImportError, AttributeError) as exc:
        raise PlaceRouteError(f"amaranth-boards cannot be read ({exc})", INSTALL_HINT) from None
    uart = platform.lookup("uart", 0)
    pins = {
        CLOCK: platform_pin(platform, platform.lookup(platform.default_clk, 0)),
        UART_RX: platform_pin(platform, uart, "rx"),
        UART_TX: platform_pin(platform, uart, "tx"),
    }
    return {port: (pin.site, pin.attrs) for port, pin in pins.items()}


__all__ = ["TOP", "Linked", "accelerator_ports", "behind_link", "link_pins", "link_sources"]
