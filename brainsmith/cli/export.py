"""``brainsmith export BUILD_DIR DEST``: a build's whole accelerator as a folder that works
without the build, brainsmith or the machine it was built on."""

from __future__ import annotations

import click

from brainsmith.cli.shared import build_dir_argument, error_exit, exit_now


@click.command("export")
@build_dir_argument
@click.argument("dest", type=click.Path(file_okay=False))
@click.option(
    "--frames",
    type=click.IntRange(min=1, max=10_000),
    default=8,
    show_default=True,
    help="Generated inputs (seed 0, from the input's data type) replayed by sim.sh.",
)
@click.option("--input", "input_npy", default=None, help="Replay these inputs (.npy) instead.")
def export(build_dir: str, dest: str, frames: int, input_npy: str | None) -> None:
    """Export the whole accelerator of the all-RTL build in BUILD_DIR to the new folder DEST:
    every RTL source copied (FINN's text), rtl/files.f with relative paths, a clean top
    (ap_clk, ap_rst_n, the AXI streams in0_V and out0_V), the layers' weight and threshold
    files, a Verilator testbench replaying the build's vectors (./sim.sh prints PASS or the
    first difference) and, for an AMD part, a Vivado script that packages the IP (untested:
    no Vivado here).

    \b
    A build with a board's bitstream (--board ulx3s-85f --bitstream, or brainsmith
    bitstream) is exported board-shaped instead: the .bit, the board's .lpf, the RTL
    Yosys read for it (the accelerator as a Lattice part reads it, the host link,
    board_top.sv), driver.py (Python, numpy and pyserial: runs it over the board's
    UART), README.md (flash, run, simulate) and ./sim.sh, the board top behind a
    bit-level UART in Verilator.

    \b
    DEST must not exist; it appears complete or not at all.

    \b
    Exit codes: 0 exported; 2 BUILD_DIR is not an all-RTL build, DEST exists, or --input
    cannot be read; 130/143 interrupted (nothing is left behind).

    \b
    Example:
      brainsmith build examples/models/conv_pad.onnx --prefer rtl -o out/conv
      brainsmith export out/conv handoff/conv && handoff/conv/sim.sh
    """
    import os
    import shlex

    from brainsmith import interrupts
    from brainsmith.cli.output import console, echo
    from brainsmith.commands.run import load_array
    from brainsmith.export import ExportError, export_build
    from brainsmith.hardware.board.streams import DriverError

    try:
        with interrupts.handled():
            x = load_array(input_npy, "--input", finite=True) if input_npy else None
            done = export_build(build_dir, dest, frames=frames, x=x)
    except (DriverError, ExportError) as exc:
        error_exit(exc.reason, exc.hint, 2)
    except interrupts.BuildInterrupted as exc:
        echo(f"error: export interrupted ({exc.name}); {dest} was not written", err=True)
        exit_now(128 + exc.signum)
    changed = f"; Verilator reads {len(done.changes)} changed" if done.changes else ""
    sim_sh = shlex.quote(os.path.join(done.folder, "sim.sh"))  # commands to paste in a shell
    if done.board:
        folder = shlex.quote(done.folder)
        said = (
            f"exported {done.board}'s bitstream and {done.top} to {done.folder}: "
            f"{done.bitstream}, {done.sources} sources, {done.parameter_files} parameter files, "
            f"{done.frames} frames of vectors{changed}\n"
            f"  flash: cd {folder} && {done.flash}\n"
            f"  run: python3 {shlex.quote(os.path.join(done.folder, 'driver.py'))} --port "
            f"/dev/ttyUSB0   simulate: {sim_sh}"
        )
    else:
        vivado = ""
        if done.vivado:
            tcl = shlex.quote(os.path.join(done.folder, "vivado", "package_ip.tcl"))
            vivado = f"   package for Vivado (untested here): vivado -mode batch -source {tcl}"
        said = (
            f"exported {done.top} to {done.folder}: {done.sources} sources, "
            f"{done.parameter_files} parameter files, {done.frames} frames of vectors{changed}\n"
            f"  simulate: {sim_sh}{vivado}"
        )
    console().print(said, markup=False, soft_wrap=True)
    exit_now(0)
