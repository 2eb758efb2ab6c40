"""What ``brainsmith check`` says of a model's way to a board: a bitstream (``--bitstream``,
``place-route``), ``run --simulate`` and ``export`` take a design whose every hardware layer
is RTL. A check for a Lattice board or part says its layers are; a check for an AMD part
with HLS layers converts the model again as a Lattice board's build would and says whether
``--board`` makes every layer RTL."""

from __future__ import annotations

import copy
from typing import Protocol, TypeVar

from brainsmith.blueprint.choices import QUICK_START_BOARD, family_board
from brainsmith.hardware.place_route.parts import family_parts
from brainsmith.planning.context import BuildContext, running
from brainsmith.planning.errors import BuildError
from brainsmith.planning.shaping import finn_config, shape_plan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.plan import BlueprintSource, BuildPlan
    from brainsmith.planning.shaping import BuildOverrides

# Where check places a node that stops the build: left between hardware layers, a hardware
# layer whose output forks without DuplicateStreams, one whose only backend the blueprint
# forbids, a node left on the host that the host's executor cannot run; and where it places
# a node the host runs.
BLOCKING = ("between", "fork", "backend", "unrunnable")
ON_HOST = ("before", "after", "host", "tail")

BOARD = QUICK_START_BOARD  # the board check points a network to
# What takes a design whose every layer is RTL, with no vendor tool
OPEN_ROAD = "a bitstream, run --simulate and export"


class Verdict(Protocol):
    """What check says of one node (``brainsmith.commands.check_model.NodeVerdict``)."""

    name: str
    placement: str
    backend: str
    reason: str


V = TypeVar("V", bound=Verdict)


def hls_layers(nodes: Sequence[V]) -> list[V]:
    """The hardware layers of ``nodes`` that become HLS layers."""
    return [n for n in nodes if n.placement == "hardware" and n.backend.endswith("_hls")]


def road(
    nodes: Sequence[V],
    plan: BuildPlan,
    again: Callable[[BuildPlan], list[V] | str],
    shaped: Callable[[], BuildPlan],
) -> str:
    """One sentence: whether ``nodes`` (a model ready to build with ``plan``) reach a board.
    ``again(plan)`` judges the model anew with another plan (or says why it cannot);
    ``shaped()`` is the check's plan for ``BOARD`` (a setup BuildError when it cannot be)."""
    lattice = plan.build.lattice
    hls = hls_layers(nodes)
    if lattice is not None:  # an HLS layer blocks there: only all-RTL designs get here
        return f"every hardware layer is RTL, as {lattice} needs: {_open_road(plan)}"
    if not hls:
        return (
            f"every hardware layer is RTL: {OPEN_ROAD} take it "
            f"(--board {BOARD} --bitstream makes the board's bitstream)"
        )
    named = ", ".join(f"{n.name} ({n.reason})" for n in hls)
    verb = "is" if len(hls) == 1 else "are"
    head = f"{named} {verb} HLS, and {OPEN_ROAD} need every layer RTL"
    try:
        board_plan = shaped()
    except BuildError as exc:
        return f"{head}; --board {BOARD} is refused here: {exc.reason}"
    judged = again(board_plan)
    if isinstance(judged, str):
        return f"{head}, and with --board {BOARD} the check fails: {judged}"
    return f"{head}: {_with_board(nodes, judged)}"


def _with_board(nodes: Sequence[V], judged: list[V]) -> str:
    """What ``--board BOARD`` makes of the model: ``judged`` against the check's ``nodes``;
    ``--prefer rtl`` is named too when the board leaves no more nodes on the host (its
    kernels without an RTL backend took none of them)."""
    blocking = [n for n in judged if n.placement in BLOCKING]
    if blocking:
        names = ", ".join(n.name for n in blocking)
        return f"with --board {BOARD} the build would stop at {names} (check --board {BOARD})"
    layers = [n for n in judged if n.placement == "hardware"]
    more = sum(n.placement in ON_HOST for n in judged) - sum(n.placement in ON_HOST for n in nodes)
    if more > 0:
        return (
            f"with --board {BOARD} all {len(layers)} hardware layers are RTL, {more} node(s) "
            f"more on the host (check --board {BOARD})"
        )
    return (
        f"with --board {BOARD} (or --prefer rtl) all {len(layers)} hardware layers are RTL "
        f"(check --board {BOARD})"
    )


def _open_road(plan: BuildPlan) -> str:
    """What a build for ``plan``'s Lattice board or part goes on to: a board's bitstream, or
    a part's place and route (a bitstream where the part alone has pins: not an ECP5's)."""
    board, part = plan.build.board, plan.build.fpga_part
    if board:
        return (
            f"build --bitstream makes {board}'s bitstream; run --simulate and export take the build"
        )
    row = family_parts(part or "")
    if row is None or row.packs_alone:
        return f"place-route BUILD_DIR --part {part} makes its bitstream"
    return (
        f"place-route BUILD_DIR --part {part} places and routes it out of context; a bitstream "
        f"needs a board of its family, such as --board {family_board(row.family)}"
    )


def judge_again(
    model: ModelWrapper,
    scratch: str,
    verdicts: Callable[[ModelWrapper, DataflowBuildConfig], list[V]],
) -> Callable[[BuildPlan], list[V] | str]:
    """A function judging a copy of ``model`` (after the front end) with another plan, its
    FINN output in ``scratch``; a failure is said, not raised."""
    from qonnx.core.modelwrapper import ModelWrapper

    def again(plan: BuildPlan) -> list[V] | str:
        with running(BuildContext(plan)):
            cfg = finn_config(plan, scratch)
            try:
                return verdicts(ModelWrapper(copy.deepcopy(model.model)), cfg)
            except Exception as exc:  # said in the sentence, as check says a failed step
                return f"{type(exc).__name__}: {exc}"

    return again


def board_shaper(
    blueprint: BlueprintSource | None,
    options: BuildOverrides | None,
    prefer: str | None,
    exclude: Sequence[str],
) -> Callable[[], BuildPlan]:
    """The check's plan, for ``BOARD`` instead of its part or board."""

    def shaped() -> BuildPlan:
        given = {**(options or {}), "fpga_part": None, "board": BOARD}
        return shape_plan(blueprint or None, "none", given, prefer, exclude)

    return shaped
