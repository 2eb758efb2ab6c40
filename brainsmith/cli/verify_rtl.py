"""``brainsmith verify-rtl BUILD_DIR``: simulate a build's RTL layers with Verilator."""

from __future__ import annotations

import sys

import click

from brainsmith.cli.output import print_json
from brainsmith.cli.shared import (
    build_dir_argument,
    error_exit,
    exit_now,
    json_option,
    print_layers,
    time_cell,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.rtlsim.layers import DesignResult


@click.command("verify-rtl")
@build_dir_argument
@click.option(
    "--samples",
    type=click.IntRange(1, 100_000),
    help="Frames per layer (default: the build's verify_samples).",
)
@click.option(
    "--input",
    "input_npy",
    type=click.Path(dir_okay=False),
    help="Model inputs (.npy) instead of the build's verification inputs.",
)
@click.option(
    "--layer",
    "layers",
    multiple=True,
    help="Simulate only this layer (repeatable); default every layer.",
)
@click.option(
    "--allow-changed-rtl",
    "allow_changed",
    is_flag=True,
    help="Simulate HDL files that differ from the build's record of them (edited by hand) "
    "or that it has no record of, each named in a warning. RTL that runs commands or writes "
    "files is refused regardless.",
)
@json_option("Print the results as JSON.")
def verify_rtl(
    build_dir: str,
    samples: int | None,
    input_npy: str | None,
    layers: tuple[str, ...],
    allow_changed: bool,
    as_json: bool,
) -> None:
    """Simulate every RTL layer of the build in BUILD_DIR with Verilator and compare its
    output bit for bit with the layer's Python execution.

    \b
    Each layer gets its own input tensors from a Python run of the design on the build's
    verification inputs. Compiled layers are cached (by content), so a second run only
    simulates. The results go into BUILD_DIR/report.json and report.html.

    \b
    Only the build's own files are simulated: each generated HDL file must match the hash
    the build recorded (finn/hdl_manifest.json), a moved or copied folder uses its own
    files, and RTL that runs commands or writes files on this machine is refused.

    \b
    Exit codes: 0 every simulated layer matches; 1 a layer differs, its simulation did not
    finish or its generated RTL is missing; 2 BUILD_DIR or the simulator cannot be used,
    its RTL is not what the build generated, or no layer could be simulated.

    \b
    Example:
      brainsmith verify-rtl build-out/mlp-20250101-120000
    """
    from brainsmith.commands.rtl_verification import verify_build_folder
    from brainsmith.intake.build_folder import FolderError
    from brainsmith.terminal import console

    status = console(file=sys.stderr, highlight=False)  # bound now: FINN's output is redirected
    try:
        result = verify_build_folder(
            build_dir,
            samples=samples,
            input_npy=input_npy,
            only=list(layers) or None,
            note=None if as_json else lambda text: status.print(text + " ...", markup=False),
            allow_changed=allow_changed,
            warn=lambda text: status.print(f"warning: {text}", markup=False, soft_wrap=True),
        )
    except FolderError as exc:
        error_exit(exc.reason, exc.hint, exc.exit_code)
    if as_json:
        print_json(result.as_dict())
    else:
        print_table(result)
    exit_now(_outcome(result))


def _outcome(result: DesignResult) -> int:
    """Each failed layer on stderr; the exit code: 1 a layer failed, 2 none simulated."""
    from brainsmith.report.rtl_tables import layer_problem

    for layer in result.layers:
        if layer.failed:
            click.echo(
                f"error: RTL simulation: layer {layer.name} ({layer.op_type}) "
                + layer_problem(layer),
                err=True,
            )
    if not result.simulated:
        click.echo(
            "error: no layer was simulated, so nothing was checked (the reasons are above)",
            err=True,
        )
        return 2
    return 0 if result.ok else 1


def print_table(result: DesignResult) -> None:
    """One row per layer, then a line for each layer that needs a word of explanation."""
    from brainsmith.report.rtl_tables import estimate_note, layer_problem, percent
    from brainsmith.terminal import table as data_table

    table = data_table(box=None, pad_edge=False)
    for column in ("layer", "result", "cycles/frame", "FINN estimate", "error", "latency",
                   "compile"):  # fmt: skip
        table.add_column(column, no_wrap=True)
    notes = []
    for layer in result.layers:
        table.add_row(
            layer.name,
            layer.status,
            _number(layer.cycles_per_frame),
            _number(layer.estimated_cycles),
            percent(layer.estimate_error),
            _number(layer.latency_cycles),
            time_cell(layer.compile_seconds, layer.compile_cached),
        )
        if layer.status != "match":
            note = layer_problem(layer) if layer.status == "mismatch" else layer.reason
            notes.append(f"  {layer.name} ({layer.op_type}): {layer.status}: {note}")
    out = print_layers(table, notes)
    stitched = result.stitched
    if stitched and stitched.get("status") == "match":
        fills = ", ".join(f"{f['name']} {f['max_occupancy']}" for f in stitched["fifos"])
        out.print(
            f"stitched partition ({stitched['layers']} layers with width converters and FIFOs): "
            f"match, {stitched['cycles_per_frame']:,.0f} cycles/frame "
            f"({stitched['fps']:,.0f} fps){estimate_note(stitched)}, latency "
            f"{stitched['latency_cycles']:,} cycles; largest FIFO fill at that rate: {fills}",
            markup=False,
            soft_wrap=True,
        )
    elif stitched:
        out.print(
            f"stitched partition: {stitched['status']}: {stitched.get('reason', '')}",
            markup=False,
            soft_wrap=True,
        )
    out.print(f"{result.summary()} ({result.tool}, {result.seconds:.1f} s)", markup=False)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
