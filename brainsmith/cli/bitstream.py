"""``brainsmith bitstream BUILD_DIR --board BOARD``: a whole all-RTL build made into an ECP5
board's bitstream behind brainsmith's UART host link."""

from __future__ import annotations

import click

from brainsmith.cli.shared import (
    build_dir_argument,
    finish_timed,
    json_option,
    on_build_folder,
    status_note,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json


@click.command("bitstream")
@build_dir_argument
@click.option(
    "--board",
    "board_name",
    required=True,
    help="An ECP5 board from amaranth-boards: ulx3s-12f/25f/45f/85f, versa-ecp5, "
    "versa-ecp5-5g, ecp5-5g-evn.",
)
@click.option(
    "--mhz",
    type=click.FloatRange(min=3.125, max=400.0),
    default=None,
    help="The design clock (the PLL makes the nearest it can); default: the build's clock.",
)
@json_option("Print the result as JSON.")
def bitstream(build_dir: str, board_name: str, mhz: float | None, as_json: bool) -> None:
    """Make the whole accelerator of the all-RTL build in BUILD_DIR into a bitstream for an
    ECP5 BOARD, behind brainsmith's UART host link: Yosys synth_ecp5, nextpnr-ecp5 with the
    board's pins, ecppack. Shows the clock the PLL makes, the Fmax reached and the resources
    used.

    \b
    The board's pins and oscillator come from amaranth-boards; the link's words per frame
    from the build's model. Results and bitstreams are cached by content. The report goes to
    BUILD_DIR/bitstream/report.json, the bitstream to BUILD_DIR/bitstream/BOARD.bit, the
    tools' run to BUILD_DIR/bitstream/run/. `brainsmith build --board BOARD --bitstream`
    does the same as part of the build.

    \b
    Exit codes: 0 bitstream written, the clock met; 3 bitstream written, the clock missed
    (ask a lower --mhz); 1 a tool failed (its first error and log are shown); 2 BUILD_DIR,
    the board, the clock or the tools cannot be used; 130/143 interrupted.

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml --prefer rtl \\
          --part xczu7ev-ffvc1156-2-e -o out/mlp
      brainsmith bitstream out/mlp --board ulx3s-85f --mhz 50
    """
    from brainsmith.commands.bitstream import bitstream_build_folder

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
    finish_timed(data, as_json, print_result)


def print_result(data: Json) -> None:
    """The bitstream, the clock against the Fmax reached, the resources used."""
    from brainsmith.cli.output import console
    from brainsmith.cli.place_route import print_critical_path, print_resources

    out = console()
    out.print(
        f"{data['bitstream']} (sha256 {data['sha256'][:16]}...)", markup=False, soft_wrap=True
    )
    clock = data["clock_mhz"]
    for name, mhz in sorted(data["fmax_mhz"].items()):
        verdict = "met" if mhz >= clock else "NOT met: ask a lower --mhz"
        out.print(f"{name}: {mhz:.1f} MHz reached, {clock:.6g} MHz made: {verdict}", markup=False)
    print_critical_path(out, data)
    timing = print_resources(out, data)
    out.print(
        f"{data['board']} ({data['part']}), UART {data['baud']} baud, "
        f"{data['in_words']} words in and {data['out_words']} out a frame; {timing}"
        + (" (cached)" if data["cached"] else ""),
        markup=False,
        soft_wrap=True,
    )
