"""``brainsmith run BUILD_DIR --port PORT | --simulate``: a build's design run on a board (or a
simulated one) through brainsmith's UART host link."""

from __future__ import annotations

import sys

import click

from brainsmith.cli.shared import build_dir_argument, error_exit, exit_now
from brainsmith.clock import Clock
from brainsmith.report.pace import frames_per_second, microseconds, one_frame, streaming

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.commands.run import RunOutcome
    from brainsmith.hardware.board.driver import BenchFigures


@click.command("run")
@build_dir_argument
@click.option("--port", default=None, help="The board's serial port (its USB UART).")
@click.option(
    "--simulate",
    is_flag=True,
    help="Run on a simulated board instead: the link and the accelerator in Verilator behind "
    "a pseudo-terminal, driven as a port is.",
)
@click.option("--input", "input_npy", default=None, help="Inputs (.npy), one or several on axis 0.")
@click.option("--expected", "expected_npy", default=None, help="Expected outputs (.npy).")
@click.option("--output", "output_npy", default=None, help="Write the outputs here (.npy).")
@click.option(
    "--baud",
    type=click.IntRange(min=1_200, max=12_000_000),  # driver.BAUD_RANGE
    default=None,
    help="The port's rate; default: the build's bitstream's (bitstream/report.json), else 3000000.",
)
@click.option(
    "--bench",
    type=click.IntRange(min=1, max=2**32 - 1),  # link.MAX_BENCH_FRAMES
    default=None,
    metavar="N",
    help="Then run the first input N times back to back on the chip: frames per second by "
    "the design's own cycle counter, its checksum of every output checked against Python's.",
)
def run(
    build_dir: str,
    port: str | None,
    simulate: bool,
    input_npy: str | None,
    expected_npy: str | None,
    output_npy: str | None,
    baud: int | None,
    bench: int | None,
) -> None:
    """Run the design of the all-RTL build in BUILD_DIR on a board through brainsmith's UART
    host link: the board must hold this build's bitstream (IDENTIFY checks its design
    hash). The host nodes before and after the accelerator run in Python; each frame goes
    to the board as stream words; the outputs come back in the shape BuildResult.run gives.

    \b
    Without --input, 8 inputs are drawn from the input's data type. Shows frames per
    second over the link (wall clock) and the accelerator's throughput (frames streaming,
    one every pipelined interval) and latency (one frame), at the bitstream's PLL clock
    (else the build's). With --bench N, the frames per second the chip itself counted.

    \b
    Exit codes: 0 ran (and the outputs equal --expected); 1 the outputs differ, or the
    board stopped answering; 2 the build, the port or the board cannot be used (another
    design on it: flash this build); 130/143 interrupted.

    \b
    Examples:
      brainsmith run out/mlp --port /dev/ttyUSB0 --input x.npy --expected y.npy
      brainsmith run out/mlp --simulate --input x.npy
      brainsmith run out/mlp --simulate --bench 1000
    """
    from brainsmith import interrupts
    from brainsmith.cli.output import echo
    from brainsmith.commands.run import run_build_folder
    from brainsmith.hardware.board.streams import DriverError
    from brainsmith.terminal import console

    if (port is None) == (not simulate):
        echo("error: give either --port PORT or --simulate", err=True)
        exit_now(2)
    status = console(file=sys.stderr, highlight=False)
    try:
        with interrupts.handled():
            outcome = run_build_folder(
                build_dir, port=port, simulate=simulate, input_npy=input_npy,
                expected_npy=expected_npy, output_npy=output_npy, baud=baud, bench=bench,
                note=lambda text: status.print(text + " ...", markup=False),
            )  # fmt: skip
    except DriverError as exc:
        error_exit(exc.reason, exc.hint, exc.exit_code)
    except interrupts.BuildInterrupted as exc:
        echo(f"error: run interrupted ({exc.name}); the board was let go", err=True)
        exit_now(128 + exc.signum)
    print_outcome(outcome)
    exit_now(0)


def summary(outcome: RunOutcome) -> list[str]:
    """The run's lines: where, how fast over the link, the accelerator's throughput and
    latency in the report's words (``brainsmith.report.pace``), what the build's link (its
    rate) carries end to end."""
    from brainsmith.hardware.board.driver import DEFAULT_BAUD

    figures = outcome.figures
    where = (
        f"simulated board ({figures.port}, {outcome.clks_per_bit} clocks per bit)"
        if figures.simulated
        else f"{figures.port} at {figures.baud:,} baud"
    )
    frame = f"{one_frame(figures.cycles_per_frame)} (its own count)"
    if figures.clock_mhz:
        said = [f"latency {microseconds(figures.latency_us * 1000)}, {frame}"]
        if figures.throughput_fps:
            said.insert(0, f"throughput {frames_per_second(figures.throughput_fps)}, "
                           f"{streaming(figures.interval_cycles)} (the build's interval, "
                           f"{figures.interval_source or 'estimate'})")  # fmt: skip
        pace = f"at {Clock.from_mhz(figures.clock_mhz)} ({figures.clock}): " + "; ".join(said)
    else:
        pace = f"latency {frame}; the build names no clock"
    bits = "simulated, wall clock" if figures.simulated else "wall clock"
    baud = figures.baud or DEFAULT_BAUD  # the build's link, as its bitstream was made
    in_bytes, out_bytes = figures.in_bytes, figures.bytes_per_frame - figures.in_bytes
    return [
        f"{where}: design {outcome.design_hash[:16]}, this build's",
        f"{figures.frames} frames in {figures.seconds:.3f} s: {figures.fps:,.1f} frames/s "
        f"over the link ({bits})",
        f"accelerator {pace}",
        f"at {baud:,} baud the link carries {figures.link_fps(baud):,.0f} frames/s end to end, "
        f"two requests outstanding ({figures.bytes_per_frame} bytes a frame: {in_bytes} in, "
        f"{out_bytes} out)",
    ]


def benched(figures: BenchFigures) -> str:
    """What --bench measured, in one line."""
    frames = f"{figures.frames:,} frames back to back in {figures.cycles:,} cycles"
    if figures.clock_mhz:
        pace = (f"{frames_per_second(figures.fps)} at {Clock.from_mhz(figures.clock_mhz)} "
                f"({figures.clock})")  # fmt: skip
    else:
        pace = f"{figures.cycles_per_frame:,.1f} cycles a frame (the build names no clock)"
    return (f"on the chip: {frames} (its own counter): {pace}; checksum 0x{figures.crc32:08x} "
            "of every output word, equal to Python's")  # fmt: skip


def print_outcome(outcome: RunOutcome) -> None:
    from brainsmith.cli.output import console

    out = console()
    lines = summary(outcome)
    if outcome.compared:
        lines.append(f"outputs {outcome.compared}")
    if outcome.written:
        lines.append(f"outputs (shape {outcome.outputs.shape}) written to {outcome.written}")
    if outcome.bench:
        lines.append(benched(outcome.bench))
    for line in lines:
        out.print(line, markup=False, soft_wrap=True)
