"""``brainsmith place-route BUILD_DIR --part PART``: a whole all-RTL build placed and routed for
a part of a family brainsmith places, with Yosys and nextpnr; ``brainsmith bitstream
BUILD_DIR --board BOARD``: the same for a board, behind brainsmith's UART host link, packed
into its bitstream."""

from __future__ import annotations

import click

from brainsmith.blueprint.choices import LINKED_BOARDS, boards_by_family
from brainsmith.cli.shared import (
    FiniteRange,
    build_dir_argument,
    finish_timed,
    json_option,
    on_build_folder,
    status_note,
)
from brainsmith.clock import MEETABLE_MHZ, Clock
from brainsmith.hardware.place_route.parts import part_examples

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.console import Console

    from brainsmith.files import Json


@click.command("place-route")
@build_dir_argument
@click.option(
    "--part",
    required=True,
    help=f"The part: {part_examples()}.",
)
@click.option(
    "--mhz",
    type=FiniteRange(min=MEETABLE_MHZ[0], max=MEETABLE_MHZ[1]),
    default=None,
    help="The clock to meet, 1 to 1000 MHz (default: the build's clock).",
)
@json_option("Print the result as JSON.")
def place_route(build_dir: str, part: str, mhz: float | None, as_json: bool) -> None:
    """Synthesise the whole accelerator of the all-RTL build in BUILD_DIR with Yosys for
    PART's family and place and route it with the family's nextpnr at the build's own clock;
    show the Fmax reached, whether the clock is met, and the resources used of the part's.
    An ECP5 part is placed out of context (its bitstream needs a board: brainsmith
    bitstream); any other part behind brainsmith's host link, its clock and UART on pins of
    the package, packed into a bitstream and read back before it is kept:
    BUILD_DIR/place_route/PART.bit, its pins those the summary names.

    \b
    The build must have every layer in RTL (brainsmith build --prefer rtl) for an AMD part
    other than Versal, so that its stitched accelerator (finn/stitched_rtl/) exists. Results
    are cached by content. They go to BUILD_DIR/place_route/report.json; the tools' run
    (sources, script, logs) to BUILD_DIR/place_route/run/.

    \b
    Exit codes: 0 placed and routed, the clock met; 3 placed and routed, the clock missed;
    1 Yosys or nextpnr failed (its first error and log are shown); 2 BUILD_DIR, the part or
    the tools cannot be used; 130/143 interrupted (its tool runs are stopped).

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx --part LIFCL-40-9BG400C -o out/mlp
      brainsmith place-route out/mlp --part LIFCL-40-9BG400C
      brainsmith place-route out/mlp --part LFE5U-85F-6BG381C
    """
    from brainsmith.commands.place_route import place_route_build_folder

    note = status_note(as_json)
    data = on_build_folder(
        build_dir,
        "place and route",
        "its runs were stopped",
        lambda: place_route_build_folder(
            build_dir,
            part,
            mhz=mhz,
            note=note,
        ),
    )
    finish_timed(data, as_json, print_routed)


def print_routed(data: Json) -> None:
    """Fmax per clock against the constraint, then each resource used of the part's."""
    from brainsmith.cli.output import console

    out = console()
    constraint = Clock.from_mhz(data["constraint_mhz"])
    for clock, mhz in sorted(data["fmax_mhz"].items()):
        verdict = "met" if mhz >= constraint.mhz else "NOT met"
        out.print(
            f"{clock}: {mhz:.1f} MHz reached, {constraint} asked "
            f"({constraint.ns:.3g} ns): {verdict}",
            markup=False,
        )
    print_critical_path(out, data)
    timing = print_resources(out, data)
    cached = " (cached)" if data["cached"] else ""
    out.print(
        f"{data['part']}, {data.get('placed', 'out of context')}; {timing}{cached}; "
        f"{data['tools']['nextpnr']}",
        markup=False,
        soft_wrap=True,
    )
    if data.get("bitstream"):
        out.print(
            f"bitstream {data['bitstream']}, packed by {data['tools']['packer']} and read "
            f"back, sha256 {data['sha256'][:16]}...",
            markup=False,
            soft_wrap=True,
        )


@click.command("bitstream")
@build_dir_argument
@click.option(
    "--board",
    "board_name",
    required=True,
    help=f"The board: {boards_by_family(LINKED_BOARDS)}.",
)
@click.option(
    "--mhz",
    type=FiniteRange(min=3.125, max=400.0),
    default=None,
    help="The design clock (the PLL makes the nearest it can); default: the build's clock.",
)
@json_option("Print the result as JSON.")
def bitstream(build_dir: str, board_name: str, mhz: float | None, as_json: bool) -> None:
    """Make the whole accelerator of the all-RTL build in BUILD_DIR into a bitstream for
    BOARD, behind brainsmith's UART host link: Yosys and nextpnr for the board's family, with
    the board's pins and its PLL, then the family's packer. Shows the clock the PLL makes,
    the Fmax reached and the resources used.

    \b
    The board's pins and oscillator come from its platform (amaranth-boards, or brainsmith's
    own for a board amaranth-boards lacks); the link's words per frame from the build's
    model. Results and bitstreams are cached by content. The report goes to
    BUILD_DIR/bitstream/report.json, the bitstream to BUILD_DIR/bitstream/BOARD.bit, the
    tools' run to BUILD_DIR/bitstream/run/. `brainsmith build --board BOARD --bitstream`
    does the same as part of the build.

    \b
    Exit codes: 0 bitstream written, the clock met; 3 bitstream written, the clock missed
    (ask a lower --mhz); 1 a tool failed (its first error and log are shown); 2 BUILD_DIR,
    the board, the clock or the tools cannot be used; 130/143 interrupted.

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx --board tang-primer-20k -o out/mlp
      brainsmith bitstream out/mlp --board tang-primer-20k --mhz 50
    """
    from brainsmith.commands.place_route import bitstream_build_folder

    note = status_note(as_json)
    data = on_build_folder(
        build_dir,
        "make a bitstream",
        "its runs were stopped",
        lambda: bitstream_build_folder(
            build_dir,
            board_name,
            mhz,
            note=note,
        ),
    )
    finish_timed(data, as_json, print_bitstream)


def print_bitstream(data: Json) -> None:
    """The bitstream, the clock against the Fmax reached, the resources used."""
    from brainsmith.cli.output import console

    out = console()
    out.print(
        f"{data['bitstream']} (sha256 {data['sha256'][:16]}...)", markup=False, soft_wrap=True
    )
    clock = Clock.from_mhz(data["clock_mhz"])
    for name, mhz in sorted(data["fmax_mhz"].items()):
        verdict = "met" if mhz >= clock.mhz else "NOT met: ask a lower --mhz"
        out.print(f"{name}: {mhz:.1f} MHz reached, {clock} made: {verdict}", markup=False)
    print_critical_path(out, data)
    timing = print_resources(out, data)
    out.print(
        f"{data['board']} ({data['part']}), UART {data['baud']} baud, "
        f"{data['in_words']} words in and {data['out_words']} out a frame; {timing}"
        + (" (cached)" if data["cached"] else ""),
        markup=False,
        soft_wrap=True,
    )


def print_critical_path(out: Console, data: Json) -> None:
    """The slowest clock's critical path, named by layer, when nextpnr reported one."""
    from brainsmith.hardware.place_route.critical_path import path_text

    if data.get("critical_path"):
        out.print(f"critical path {path_text(data['critical_path'])}", markup=False)


def print_resources(out: Console, data: Json) -> str:
    """Each resource the router counts used, of the part's; returns the seconds per stage as
    one line's text."""
    for name, counts in sorted(data["resources"].items()):
        if counts["used"]:
            share = 100.0 * counts["used"] / counts["available"] if counts["available"] else 0.0
            out.print(
                f"  {name:<16} {counts['used']:>8,} of {counts['available']:>8,} ({share:.1f} %)",
                markup=False,
            )
    return ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in data["seconds"].items())
