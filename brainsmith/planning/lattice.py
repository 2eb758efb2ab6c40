"""The plan of a build for a Lattice part: a Lattice board's (``build.board:
ulx3s-85f``) or one named itself (``build.fpga_part: LIFCL-40-9BG400C``, a part of a family
brainsmith places, ``hardware/place_route/parts.py``). FINN, which decides for AMD parts only, makes the
layers and estimates for a stand-in AMD part, while the folding search costs the Lattice
part's own resources (``builder/lattice.py``); every layer is RTL (Lattice parts have no HLS
flow), kernels without an RTL backend for a Lattice part are left out; ``build.bitstream``
needs a Lattice board with a USB UART or a Lattice part (``builder/lattice.py`` refuses one
whose family makes no bitstream without a board)."""

from __future__ import annotations

from dataclasses import replace

from brainsmith.blueprint.choices import (
    BOARD_FAMILIES,
    LINKED_BOARDS,
    NO_UART_BOARDS,
    QUICK_START_BOARD,
    board_families,
    lattice_board,
)
from brainsmith.hardware.place_route.parts import NEXUS_EXAMPLES
from brainsmith.planning.errors import BuildError, option
from brainsmith.planning.plan import without_kernels
from brainsmith.plugin.errors import PluginError
from brainsmith.plugin.lifecycle.availability import backends_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.options import BuildOptions
    from brainsmith.planning.plan import BuildPlan, PlannedKernel

# FINN's kernels whose integer layers brainsmith's specialize step makes its own RTL layers
# (steps/dataflow.py; on a Lattice board only those are inferred, frameworks/finn/recipe/networks.py)
INTEGER_RTL = frozenset({"finn:ElementwiseAdd"})  # two integer streams: IntAdd
# The 7-series part nearest the largest Lattice boards' part: DSP48E1 slices for FINN's
# choices of multiplier, 53,200 LUT6 and 140 BRAM36 beside its 83,640 LUT4, 156 MULT18 and
# 208 EBR
STAND_IN_PART = "xc7z020clg400-1"
# FINN's RTL backends that need a Versal part (DSP58, DSPFP32): FINN gives the stand-in part
# their HLS variant instead, which no Lattice part can have.
VERSAL_ONLY_RTL = frozenset(
    f"finn:{op}_rtl"
    for op in ("ElementwiseAdd", "ElementwiseSub", "ElementwiseMul", "LayerNorm", "HWSoftmax",
               "PWPolyF")
)  # fmt: skip


def check_part_and_board(part: str | None, board: str | None) -> None:
    """A setup BuildError when an AMD ``part`` is given beside a Lattice ``board``."""
    name = lattice_board(board)
    if name and part:
        raise BuildError.setup(
            f"the board {name} and the part {part} are both set: the board's part is its own "
            f"{BOARD_FAMILIES[name]} part (FINN folds for the stand-in "
            f"{STAND_IN_PART})",
            f"drop {option('part')} to build for {name}, or name no board of brainsmith's",
        )


def lattice_plan(plan: BuildPlan) -> BuildPlan:
    """``plan`` for its Lattice board or part (none: as it is): every layer RTL, with notes
    saying so and what FINN folds for; a setup BuildError for ``build.bitstream`` without a
    Lattice board with a USB UART or a Lattice part."""
    options = plan.build
    name = options.lattice
    if name is None:
        _refuse_bitstream(options)
        return plan
    board = lattice_board(options.board)
    if options.bitstream and board in NO_UART_BOARDS:
        raise BuildError.setup(
            f"build.bitstream: {name} has no USB UART (its USB port is the FPGA's own), so the "
            "host link that carries the frames cannot reach it",
            "use a board with one: " + ", ".join(LINKED_BOARDS) + f" (--board {QUICK_START_BOARD})",
        )
    whose = f"{name}'s {BOARD_FAMILIES[board]} part" if board else name
    notes = [
        f"FINN made the layers for {STAND_IN_PART}, a stand-in for {whose}, and its estimates "
        f"are for the stand-in (LUT6); the {name} figures placed are nextpnr's"
    ]
    recorded = plan.blueprint
    if plan.prefer != "rtl":
        if plan.prefer == "hls":
            notes.append(f"prefer: hls became rtl: {name} has no HLS flow")
        recorded = {**recorded, "hw_compiler": {**recorded.get("hw_compiler", {}), "prefer": "rtl"}}
    named = replace(options, board=name) if board else replace(options, fpga_part=name)
    plan = replace(plan, options=named, prefer="rtl", blueprint=recorded)
    return _without_hls_only_kernels(replace(plan, notes=[*plan.notes, *notes]), name)


def _refuse_bitstream(options: BuildOptions) -> None:
    """A setup BuildError when ``options`` ask for a bitstream (not for a Lattice part)."""
    if options.bitstream:
        target = (
            f"not the FINN board {options.board}" if options.board
            else f"not the AMD part {options.fpga_part}" if options.fpga_part
            else "and none is set"
        )  # fmt: skip
        raise BuildError.setup(
            f"build.bitstream needs an {board_families(LINKED_BOARDS)} board with a USB "
            f"UART (build.board) or a part of those families or Nexus (build.fpga_part), "
            f"{target}",
            "set one of " + ", ".join(LINKED_BOARDS) + f" (--board {QUICK_START_BOARD}), or a part "
            f"(--part {NEXUS_EXAMPLES[0]}, --part CCGM1A1)",
        )


def _has_lattice_rtl(kernel: PlannedKernel) -> bool:
    """Whether ``kernel`` has an RTL backend a Lattice part can have (not FINN's Versal-only
    ones), among those the blueprint allows, or needs none."""
    if kernel.name in INTEGER_RTL:
        return True
    try:
        backends = backends_of(kernel.name)
    except PluginError:  # none of its own: a build step replaces its layers (Shuffle)
        return True
    return any(
        backend.metadata.get("backend_type") == "rtl"
        and backend.qualified_name not in VERSAL_ONLY_RTL
        and (not kernel.backends or backend.qualified_name in kernel.backends)
        for backend in backends
    )


def _without_hls_only_kernels(plan: BuildPlan, target: str) -> BuildPlan:
    """``plan`` without its kernels that have no RTL backend a Lattice part can have (none,
    or only FINN's Versal-only ones): their layers stay on the host, before or after the
    accelerator, instead of becoming HLS layers that end the build at its bitstream."""
    hls_only = [kernel.name for kernel in plan.kernels or () if not _has_lattice_rtl(kernel)]
    if not hls_only:
        return plan
    kept = without_kernels(plan, hls_only)
    why = f"{target} has no HLS flow and it has no RTL backend but FINN's Versal-only ones"
    kept = replace(kept, exclusions={**kept.exclusions, **dict.fromkeys(hls_only, why)})
    note = (
        f"{target} has no HLS flow: {len(hls_only)} kernel(s) with no RTL backend but FINN's "
        "Versal-only ones are excluded, their layers left to the host (brainsmith check shows "
        "which)"
    )
    return replace(kept, notes=[*kept.notes, note])


def finn_target(options: BuildOptions) -> tuple[str | None, str | None]:
    """(fpga_part, board) FINN is given: the stand-in part for a Lattice board or part."""
    if options.lattice:
        return STAND_IN_PART, None
    return options.fpga_part, options.board
