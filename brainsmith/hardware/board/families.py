"""The families a board can be of, one row each: how amaranth-boards' platform names the
part, the family's clock generator and the format of the board top's pin constraints.

A board of a known family is a row of ``brainsmith.blueprint.choices.BOARDS``; a family is a
row here and its tool chain in ``brainsmith.hardware.place_route.families``. Each family's
PLL and constraints module is imported only when a board of it asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from brainsmith.hardware.board.constraints import ccf, cst, lpf, pcf, pin_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.board.boards import Board
    from brainsmith.hardware.board.clocking import ClockGenerator

GRADE = "C"  # amaranth names no ECP5 temperature grade; timing is the same for C and I
# a Gowin board's die as amaranth-boards names it -> the die whose rPLL ranges gowin_pll keeps
GOWIN_DIES = {"GW2A-18C": "GW2A-18C", "GW1NR-9C": "GW1N-9C", "GW1N-9C": "GW1N-9C"}


@dataclass(frozen=True)
class BoardFamily:
    """What a board of the family ``name`` needs of it."""

    name: str
    constraints_file: str  # the constraints' file name in a run folder
    part: Callable[[Any], tuple[str, str]]  # platform -> (part, die), as place and route names them
    clock: Callable[[Board, float, bool], ClockGenerator]  # (board, MHz, at_most) -> its PLL
    pins: Callable[[Board], str]  # the board top's constraints


def _ecp5_part(platform: Any) -> tuple[str, str]:
    return f"{platform.device}-{platform.speed}{platform.package}{GRADE}", ""


def _ecp5_clock(board: Board, mhz: float, at_most: bool) -> ClockGenerator:
    from brainsmith.hardware.board.pll import pll

    return pll(board.clock_mhz, mhz, at_most)


def _gowin_part(platform: Any) -> tuple[str, str]:  # "GW2A-LV18PG256C8/I7": the commercial name
    return platform.part.partition("/")[0], GOWIN_DIES.get(platform.family, platform.family)


def _gowin_clock(board: Board, mhz: float, at_most: bool) -> ClockGenerator:
    from brainsmith.hardware.board.gowin_pll import gowin_pll

    return gowin_pll(board.die, board.clock_mhz, mhz, at_most)


def _ice40_part(platform: Any) -> tuple[str, str]:
    return f"{platform.device}-{platform.package}", ""


def _ice40_clock(board: Board, mhz: float, at_most: bool) -> ClockGenerator:
    from brainsmith.hardware.board.ice40_pll import ice40_pll

    return ice40_pll(board.clock_mhz, mhz, at_most)


def _gatemate_part(platform: Any) -> tuple[str, str]:
    return platform.device, ""


def _gatemate_clock(board: Board, mhz: float, at_most: bool) -> ClockGenerator:
    from brainsmith.hardware.board.gatemate_pll import gatemate_pll

    return gatemate_pll(board.clock_mhz, mhz, at_most)


FAMILIES = {
    family.name: family
    for family in (
        BoardFamily("ECP5", "board.lpf", _ecp5_part, _ecp5_clock, lpf),
        BoardFamily(
            "Gowin", "board.cst", _gowin_part, _gowin_clock, lambda board: cst(*pin_table(board))
        ),
        BoardFamily(
            "iCE40", "board.pcf", _ice40_part, _ice40_clock, lambda board: pcf(*pin_table(board))
        ),
        BoardFamily(
            "GateMate",
            "board.ccf",
            _gatemate_part,
            _gatemate_clock,
            lambda board: ccf(*pin_table(board)),
        ),
    )
}


def board_family(name: str) -> BoardFamily:
    """The family called ``name``; KeyError naming the known ones for another."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"no board family {name!r}; known: {', '.join(FAMILIES)}") from None


def constraints(board: Board) -> tuple[str, str]:
    """(file name, text) of ``board``'s top constraints in its family's format."""
    family = board_family(board.family)
    return family.constraints_file, family.pins(board)


__all__ = ["FAMILIES", "GOWIN_DIES", "GRADE", "BoardFamily", "board_family", "constraints"]
