"""``brainsmith flash BUILD_DIR``: a build's bitstream loaded onto its board with
openFPGALoader."""

from __future__ import annotations

import click

from brainsmith.cli.shared import build_dir_argument, exit_now, on_build_folder
from brainsmith.hardware.board.flash import loaders


@click.command("flash")
@build_dir_argument
@click.option(
    "--flash",
    "to_flash",
    is_flag=True,
    help="Write the configuration flash (kept at power off; takes minutes) instead of the "
    "FPGA's SRAM.",
)
@click.option(
    "--cable",
    default=None,
    help="openFPGALoader's cable (openFPGALoader --list-cables); default: the board's own.",
)
@click.option("--dry-run", is_flag=True, help="Print the openFPGALoader command; run nothing.")
def flash(build_dir: str, to_flash: bool, cable: str | None, dry_run: bool) -> None:
    """Load the bitstream of the build in BUILD_DIR (BUILD_DIR/bitstream/BOARD.bit) onto its
    board with openFPGALoader: into the FPGA's SRAM (lost at power off), or with --flash into
    its configuration flash. The file must be the one bitstream/report.json's SHA-256 names.

    Boards (openFPGALoader's name for each): {loaders}; any other board of brainsmith's has
    none there: load it by hand.

    \b
    Exit codes: 0 loaded (or, with --dry-run, the command printed); 1 openFPGALoader failed
    (its last lines are shown) or ran past 600 s; 2 BUILD_DIR has no bitstream, a changed one,
    or openFPGALoader is not installed; 130/143 interrupted (openFPGALoader is stopped).

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml \\
          --board ulx3s-85f --bitstream -o out/mlp
      brainsmith flash out/mlp
      brainsmith run out/mlp --port /dev/ttyUSB0
    """
    from brainsmith.cli.output import console
    from brainsmith.commands.flash import flash_build_folder
    from brainsmith.hardware.board.flash import shown

    done = on_build_folder(
        build_dir,
        "load the bitstream",
        "openFPGALoader was stopped (an interrupted flash write leaves the flash to write again)",
        lambda: flash_build_folder(build_dir, to_flash=to_flash, cable=cable, dry_run=dry_run),
    )
    out = console()
    if dry_run:
        out.print(shown(done["command"]), markup=False, soft_wrap=True)
    else:
        where = "configuration flash" if to_flash else "SRAM"
        loaded = f"{done['bitstream']} (sha256 {done['sha256'][:16]}...)"
        out.print(
            f"{loaded} loaded into the {done['board']}'s {where}: {shown(done['command'])}",
            markup=False,
            soft_wrap=True,
        )
    exit_now(0)


flash.help = (flash.help or "").replace("{loaders}", loaders())  # the boards, from their table
