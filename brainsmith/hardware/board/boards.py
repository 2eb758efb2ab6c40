"""Boards read from amaranth-boards' platform descriptions (or brainsmith's own, in the same
form, of a board amaranth-boards does not describe: ``platforms``): the part, the oscillator,
the USB UART and, where the board has them, a reset button and an LED, with the clock
generator of the board's family (``families``). Nothing here types a pin: each comes from
the platform class's ``resources``, ``default_clk``, ``default_rst``, ``device``,
``package``, ``speed`` and ``part``. amaranth is imported only when a board is asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from brainsmith.blueprint.choices import BOARDS as TABLE
from brainsmith.blueprint.choices import LINKED_BOARDS
from brainsmith.errors import HintedError
from brainsmith.hardware.board.families import board_family

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.board.clocking import ClockGenerator

INSTALL_HINT = "pip install 'brainsmith[lattice]' (amaranth-boards; make setup installs it)"
# name -> (family, amaranth_boards module (or brainsmith's, named whole), platform class,
# USB UART's top baud rate): the
# rows of the one table of boards, ``brainsmith.blueprint.choices.BOARDS``
BOARDS: dict[str, tuple[str, str, str, int]] = {
    name: (family, module, platform, baud)
    for name, (family, module, platform, baud, _) in TABLE.items()
}
# name -> openFPGALoader's name for the board (its src/board.hpp,
# doc/board-compatibility-list.md); a board missing here has no entry of its own there, and
# brainsmith flash refuses it
LOADER_BOARDS: dict[str, str] = {name: row[4] for name, row in TABLE.items() if row[4]}


class BoardError(HintedError):
    """A board that is unknown, cannot be read, or lacks what the host link needs."""


@dataclass(frozen=True)
class Pin:
    """One board pin: its ball (``G2``), its attributes for the LPF (``IO_TYPE``,
    ``PULLMODE``...) and whether the signal is active low on the board."""

    site: str
    attrs: dict[str, str] = field(default_factory=dict)
    active_low: bool = False

    @property
    def io_type(self) -> str:
        return self.attrs.get("IO_TYPE", "")


@dataclass(frozen=True)
class Board:
    """What a board top needs of a board."""

    name: str
    part: str  # a part name of its family (``brainsmith.hardware.place_route.families``)
    clock: Pin
    clock_mhz: float
    uart_rx: Pin  # the FPGA's receive pin (the host sends on it)
    uart_tx: Pin
    baud: int  # the fastest rate the board's USB UART takes
    reset: Pin | None = None
    led: Pin | None = None
    family: str = "ECP5"  # "ECP5", "Gowin", "iCE40", "GateMate"
    die: str = ""  # a Gowin board's die ("GW2A-18C"), which sets its PLL's ranges

    def pll(self, mhz: float, at_most: bool = False) -> ClockGenerator:
        """The board's clock generator (its family's PLL: the ECP5's EHXPLLL, Gowin's rPLL,
        the iCE40's SB_PLL40_PAD) set to the clock nearest ``mhz`` its oscillator makes
        (``at_most``: not above it); PllError when none can."""
        return board_family(self.family).clock(self, mhz, at_most)


def known() -> str:
    return ", ".join(BOARDS)


def board(name: str, *, linked: bool = False) -> Board:
    """The board called ``name`` (see ``BOARDS``); BoardError listing the known names for an
    unknown one (``linked``: for a bitstream, those with a USB UART only, the boards a
    bitstream is made for), or naming what is missing."""
    key = name.strip().lower()
    if key not in BOARDS and linked:
        raise BoardError(
            f"{name!r} is not a board brainsmith makes bitstreams for; boards with a USB UART: "
            f"{', '.join(LINKED_BOARDS)}"
        )
    if key not in BOARDS:
        raise BoardError(f"{name!r} is not a known board; known boards: {known()}")
    family, module, cls, baud = BOARDS[key]
    where = module if "." in module else f"amaranth_boards.{module}"  # else brainsmith's own
    try:  # the package first: a module imported before is found without it (imports amaranth)
        importlib.import_module("amaranth_boards")
        found = importlib.import_module(where)
    except ImportError as exc:
        raise BoardError(f"amaranth-boards cannot be imported ({exc})", INSTALL_HINT) from None
    if not hasattr(found, cls):
        raise BoardError(f"{where} has no {cls}", INSTALL_HINT)
    return _read(key, family, getattr(found, cls)(), baud)


def _read(name: str, family: str, platform: Any, baud: int) -> Board:
    part, die = board_family(family).part(platform)
    clock_resource = platform.lookup(platform.default_clk, 0)
    if clock_resource.clock is None:
        raise BoardError(f"{name}: its clock {platform.default_clk} has no frequency")
    clock = platform_pin(platform, clock_resource)
    names = {resource.name for resource in platform.resources.values()}
    if "uart" not in names:
        raise BoardError(
            f"{name} has no UART in its amaranth-boards description (its USB port is the "
            "FPGA's own), so the host link cannot reach it",
            f"use a board with a USB UART: {', '.join(LINKED_BOARDS)}",
        )
    uart = platform.lookup("uart", 0)
    reset_name = getattr(platform, "default_rst", None) or ("button" if "button" in names else "")
    reset = platform_pin(platform, platform.lookup(reset_name, 0)) if reset_name else None
    led = platform_pin(platform, platform.lookup("led", 0)) if "led" in names else None
    return Board(
        name=name,
        part=part,
        clock=clock,
        clock_mhz=clock_resource.clock.frequency / 1e6,
        uart_rx=platform_pin(platform, uart, "rx"),
        uart_tx=platform_pin(platform, uart, "tx"),
        baud=baud,
        reset=reset,
        led=led,
        family=family,
        die=die,
    )


def platform_pin(platform: Any, resource: Any, subsignal: str = "") -> Pin:
    """The first pin of ``resource`` (of its ``subsignal``), attributes merged outer to
    inner as amaranth merges them (a callable attribute is asked of the platform)."""
    from amaranth.build.dsl import DiffPairs, Pins, Subsignal

    attrs = dict(resource.attrs)
    ios = resource.ios
    if subsignal:
        inner = next(io for io in ios if isinstance(io, Subsignal) and io.name == subsignal)
        attrs.update(inner.attrs)
        ios = inner.ios
    io = ios[0]
    if isinstance(io, DiffPairs):
        io = io.p  # the LPF places the P side; nextpnr pairs the N
    if not isinstance(io, Pins):
        raise BoardError(f"{resource.name} {subsignal} is not a pin amaranth-boards describes")
    values = {k: str(v(platform) if callable(v) else v) for k, v in attrs.items()}
    return Pin(io.names[0], values, bool(io.invert))


__all__ = ["BOARDS", "LOADER_BOARDS", "Board", "BoardError", "Pin", "board", "platform_pin"]
