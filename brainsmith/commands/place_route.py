"""``brainsmith place-route BUILD_DIR --part PART``: place and route a whole all-RTL build for
a Lattice part (out of context or behind the host link, as its family places it:
``brainsmith.hardware.place_route``'s families) with Yosys and nextpnr, at the build's own clock or ``mhz``. The result, with the
family and the resource that counts its logic cells (``logic``), goes to
BUILD_DIR/place_route/report.json (written whole or not at all); the tools' run folder
(sources, script, logs, nextpnr's report) to BUILD_DIR/place_route/run/.

``brainsmith bitstream BUILD_DIR --board BOARD``: the same build made into a board's bitstream
behind the host link (``brainsmith.hardware.place_route.board_run``, which ``build.bitstream``
uses too), to BUILD_DIR/bitstream/: report.json, <board>.bit and the tools' run folder run/.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable

from brainsmith.blueprint.choices import QUICK_START_BOARD, lattice_board
from brainsmith.files import FULL_DISKS, DiskFull, read_once
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.board.description import disagreement, why_undescribed
from brainsmith.hardware.board.top import TopError
from brainsmith.hardware.design import FILE as DESIGN
from brainsmith.hardware.place_route.board_run import BoardRunError, bitstream_of_build
from brainsmith.hardware.place_route.errors import NotUsable, PlaceRouteError
from brainsmith.hardware.place_route.families import target
from brainsmith.hardware.place_route.flow import place_route
from brainsmith.hardware.place_route.parts import UnknownPart, built_in_part_name
from brainsmith.hardware.place_route.stitched_sources import stitched_design
from brainsmith.hardware.synthesis import NotSynthesisable, YosysMissing, family_of, find_yosys
from brainsmith.hardware.synthesis.families import ULTRASCALE_PLUS_PART
from brainsmith.intake.build_folder import (
    CHANGED_HINT,
    FolderError,
    gated_folder,
    quiet,
    unrecorded_hdl,
)
from brainsmith.opened_folder import FolderChanged, OpenedFolder, staged

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.hardware.design import Design
    from brainsmith.hardware.place_route.parts import Part
    from brainsmith.hardware.place_route.toolchain import Family
    from brainsmith.report_schema import BuildReport

RESULT = "place_route/report.json"
WORKDIR = "place_route/run"
BITSTREAM_RESULT = "bitstream/report.json"
BITSTREAM = "place_route/{part}.bit"  # for a family that packs (Nexus)


def _target(part_name: str, mhz: float | None) -> tuple[Family, Part]:
    """The family and part ``part_name`` names; FolderError for an unknown part or a clock
    ``mhz`` that is not one."""
    try:
        family, part = target(part_name)
    except UnknownPart as exc:
        raise FolderError(str(exc), "--part as one of the forms named above") from None
    if mhz is not None and not (math.isfinite(mhz) and mhz > 0):
        raise FolderError(f"--mhz {mhz:g} is not a clock", "--mhz 100")
    return family, part


def _tool_error(exc: Exception) -> FolderError | None:
    """The FolderError for a place-and-route run that failed with ``exc`` (None for an
    unforeseen exception)."""
    if isinstance(exc, YosysMissing | NotUsable):
        return FolderError(str(exc), exc.hint)
    if isinstance(exc, PlaceRouteError):
        return FolderError(str(exc), exc.hint, exit_code=1)
    if isinstance(exc, NotSynthesisable):  # MissingSources: the stitched design cannot be read
        return FolderError(str(exc), "build the model again with --prefer rtl")
    if isinstance(exc, FolderChanged | DiskFull):
        return FolderError(str(exc), exc.hint)
    if isinstance(exc, TopError):  # no top behind the host link for this accelerator
        return FolderError(str(exc), exc.hint, exit_code=1)
    return None


def placeable_build(folder: str, verb: str, lattice: str) -> tuple[ModelWrapper, Design]:
    """(final model, its accelerator's description) of a build whose stitched accelerator
    Yosys can map to a Lattice part; FolderError when the folder fails the gate, its RTL is
    not what the build wrote, it has no whole accelerator in RTL (``design.json``), or it is
    for a part whose RTL names AMD primitives (the hint: a build with ``lattice``, the build
    option naming the target)."""
    opened = gated_folder(folder)  # before anything is read or written
    assert opened.model is not None  # gated_folder refuses a build without one
    for problem in unrecorded_hdl(opened.model, folder, None):
        raise FolderError(problem, CHANGED_HINT.format(verb=verb))
    if not _lattice_build(opened.report):
        _refuse_amd_primitives(str(opened.report.get("fpga_part") or ""), verb, lattice)
    if opened.design is None:
        raise FolderError(
            f"the build in {folder} has no whole accelerator in RTL ({DESIGN}): "
            + why_undescribed(folder, opened.report),
            "build the model again with --prefer rtl (every layer RTL) and leave "
            f"build.size_fifos on, and {verb} that folder",
        )
    if differs := disagreement(opened.design, opened.model):
        raise FolderError(
            f"the build in {folder} is not what it describes: {differs}",
            f"build the model again and {verb} that folder",
        )
    return opened.model, opened.design


def _refuse_amd_primitives(part: str, verb: str, lattice: str) -> None:
    """FolderError when Yosys cannot map FINN's RTL for ``part``: its matrix units instantiate
    AMD primitives. The hint: build for the Lattice target itself (``lattice``, the build
    option naming it), or for an UltraScale+ part with every layer RTL."""
    try:
        family_of(part)
    except NotSynthesisable:
        raise FolderError(
            f"the build is for {part!r}: FINN's matrix units for it "
            "instantiate AMD primitives with no model Yosys maps to another vendor's part",
            f"build the model for the Lattice target itself, brainsmith build MODEL {lattice} "
            f"(every layer RTL, folded for its part), or with --prefer rtl --part "
            f"{ULTRASCALE_PLUS_PART}, and {verb} that folder",
        ) from None


def _lattice_build(report: BuildReport) -> bool:
    """A build for a Lattice board or part (``build.board``, ``build.fpga_part``): FINN's
    RTL for its stand-in 7-series part, its ``fpga_part`` the Lattice part."""
    return lattice_board(report.get("board")) is not None or bool(
        built_in_part_name(report.get("fpga_part"))
    )


def place_route_build_folder(
    folder: str,
    part_name: str,
    *,
    mhz: float | None = None,
    note: Callable[[str], None] | None = None,
) -> Json:
    """Place and route ``folder``'s stitched accelerator for ``part_name`` at ``mhz`` (the
    build's clock when None); returns what it wrote to ``folder``/place_route/report.json.
    FolderError (``reason``, ``hint``) for an unknown part, a folder that fails the gate or
    has no stitched accelerator, a missing tool, or a failed run (its log named)."""
    family, part = _target(part_name, mhz)
    say = note or quiet
    try:
        with read_once(os.path.join(folder, "finn")):  # each file of the design read once
            _, described = placeable_build(folder, "place and route", f"--part {part.name}")
            clock = described.clock
            design = stitched_design(folder, described, linked=bool(family.link_baud))
        say("starting Yosys and nextpnr (the first runs after installing take minutes)")
        yosys, nextpnr = find_yosys(), family.find_nextpnr()
        say(f"synthesising ({family.synth}) and placing and routing for {part.name}")
        with staged(folder, WORKDIR) as stage:
            packed = os.path.join(stage.workdir, os.path.basename(BITSTREAM.format(part=part.name)))
            result = place_route(
                design, part, mhz or clock.mhz, stage.workdir, yosys, nextpnr, family=family,
                frame=(described.input.words, described.output.words), bitstream=packed,
            )  # fmt: skip
            stage.keep = result.cached  # no tool ran: the run folder's logs stay
            if result.bitstream:
                result.bitstream = stage.take(packed, BITSTREAM.format(part=part.name))
    except Exception as exc:
        error = _tool_error(exc)
        if error is None:
            raise
        raise error from exc
    data = {"clock_ns": clock.ns, "family": family.name, "logic": family.logic, **result.as_dict()}
    if result.bitstream:  # named from the build folder, as the export and the driver name files
        data["bitstream"] = os.path.relpath(result.bitstream, folder)
    return _written(data, folder, RESULT)


def bitstream_build_folder(
    folder: str,
    board_name: str,
    mhz: float | None = None,
    *,
    note: Callable[[str], None] | None = None,
) -> Json:
    """Make ``folder``'s stitched accelerator into a bitstream for ``board_name`` at ``mhz``
    (the build's clock when None); returns what it wrote to ``folder``/bitstream/report.json.
    FolderError (``reason``, ``hint``) for an unknown board, a clock the PLL cannot make, a
    folder that fails the gate or has no stitched accelerator, a missing tool, or a failed
    run (its log named)."""
    try:
        target = board(board_name, linked=True)
    except BoardError as exc:
        raise FolderError(str(exc), exc.hint or f"--board {QUICK_START_BOARD}") from None
    with read_once(os.path.join(folder, "finn")):  # each file of the design read once
        model, design = placeable_build(folder, "make a bitstream of", f"--board {board_name}")
        try:
            data = bitstream_of_build(folder, design, model, target, mhz or design.clock.mhz, note)
        except BoardRunError as exc:
            raise FolderError(str(exc), exc.hint, exit_code=1 if exc.failed else 2) from exc
    return _written(data, folder, BITSTREAM_RESULT)


def _written(data: Json, folder: str, relative: str) -> Json:
    """``data`` written to ``folder``/``relative`` as JSON, whole or not at all, through
    ``folder`` opened once; FolderError when a folder on the way is a link now."""
    try:
        with OpenedFolder(folder) as opened:
            opened.write(relative, (json.dumps(data, indent=2) + "\n").encode())
    except FolderChanged as exc:
        raise FolderError(str(exc), exc.hint) from None
    except OSError as exc:
        if exc.errno not in FULL_DISKS:
            raise
        full = DiskFull(folder, code=exc.errno)
        raise FolderError(str(full), full.hint) from None
    return data
