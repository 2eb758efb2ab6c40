"""``brainsmith synth BUILD_DIR``: synthesise a build's RTL layers with Yosys."""

from __future__ import annotations

import click

from brainsmith.cli.output import echo, print_json
from brainsmith.cli.shared import (
    build_dir_argument,
    exit_now,
    json_option,
    on_build_folder,
    print_layers,
    status_note,
    time_cell,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json


@click.command("synth")
@build_dir_argument
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Layers synthesised at once (one core each).",
)
@click.option(
    "--allow-changed-rtl",
    "allow_changed",
    is_flag=True,
    help="Synthesise HDL files that differ from the build's record of them (edited by hand) "
    "or that it has no record of, each named in a warning.",
)
@json_option("Print synthesis.json instead of a table.")
def synth(build_dir: str, jobs: int, allow_changed: bool, as_json: bool) -> None:
    """Synthesise every RTL layer of the build in BUILD_DIR with Yosys (synth_xilinx, out of
    context) and show its LUT, FF, CARRY, DSP, BRAM and URAM beside FINN's estimates.

    \b
    The family follows the build's part: 7-series, UltraScale or UltraScale+ (Yosys has no
    Versal family). No place and route: the counts are Yosys' technology mapping, with no
    timing. Results are cached by content, so a second run only looks them up. They go to
    BUILD_DIR/synthesis.json; each layer's Yosys run and log to BUILD_DIR/synthesis/LAYER/.
    A folder from elsewhere is checked first: its layer names, code paths, files and HDL
    must be what a build writes (finn/hdl_manifest.json records the HDL's hashes).

    \b
    Exit codes: 0 every RTL layer synthesised (HLS layers are listed, not synthesised);
    1 Yosys rejected a layer (its first error line is shown, its log kept); 2 BUILD_DIR,
    its part or Yosys cannot be used, it has no RTL layer, or another build or synthesis
    is using it; 130/143 interrupted (SIGINT/SIGTERM; its Yosys runs are stopped).

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml \\
          --part xczu7ev-ffvc1156-2-e -o out/mlp
      brainsmith synth out/mlp
    """
    from brainsmith.commands.synthesis import synthesise_build_folder

    note = status_note(as_json)
    data = on_build_folder(
        build_dir,
        "synthesis",
        "its Yosys runs were stopped",
        lambda: synthesise_build_folder(
            build_dir,
            jobs=jobs,
            allow_changed=allow_changed,
            warn=lambda text: echo(f"warning: {text}", err=True),
            note=note,
        ),
    )
    if as_json:
        print_json(data)
    else:
        print_table(data)
    exit_now(_outcome(data["layers"]))


def _outcome(layers: list[Json]) -> int:
    """Each failed layer on stderr; the exit code: 1 a layer failed, 2 none synthesised."""
    failed = [layer for layer in layers if layer["status"] == "failed"]
    for layer in failed:
        log = f" (log: {layer['log']})" if layer["log"] else ""
        echo(f"error: layer {layer['name']} ({layer['op_type']}): {layer['reason']}{log}", err=True)
    if failed:
        return 1
    if not any(layer["status"] == "synthesised" for layer in layers):
        echo("error: no layer was synthesised (the reasons are above)", err=True)
        return 2
    return 0


def _pair(estimate: float | None, count: int | None) -> str:
    left = "-" if estimate is None else f"{estimate:,.0f}"
    right = "-" if count is None else f"{count:,}"
    return f"{left} / {right}"


def print_table(data: Json) -> None:
    """One row per layer (FINN's estimate / Yosys' count), the totals, then the reasons."""
    from brainsmith.hardware.synthesis.yosys import COUNTS
    from brainsmith.terminal import table as data_table

    table = data_table(box=None, pad_edge=False)
    shown = [key for key in COUNTS if key != "BRAM_36K"]  # counted in BRAM_18K, as two
    for column in ("layer", "status", *shown, "time"):
        table.add_column(
            column, no_wrap=True, justify="left" if column in ("layer", "status") else "right"
        )
    notes = []
    for layer in data["layers"]:
        counts, finn = layer["counts"] or {}, layer["finn_estimate"] or {}
        table.add_row(
            layer["name"],
            layer["status"],
            *_cells(finn, counts if layer["counts"] else None, shown),
            time_cell(layer["seconds"], layer["cached"]),
        )
        if layer["status"] != "synthesised":
            notes.append(
                f"  {layer['name']} ({layer['op_type']}): {layer['status']}: {layer['reason']}"
            )
    table.add_row(
        "total", "", *_cells(data["finn_totals"], data["totals"], shown), f"{data['seconds']:.1f} s"
    )
    out = print_layers(table, notes)
    out.print(
        f"FINN estimate / Yosys count ({data['yosys']}, synth_xilinx -family {data['family']} "
        f"for {data['part']}, out of context, no place and route); BRAM_18K counts a "
        "RAMB36 as two",
        markup=False,
        soft_wrap=True,
    )


def _cells(finn: dict[str, float], counts: dict[str, int] | None, shown: list[str]) -> list[str]:
    """Per column: FINN's estimate / Yosys' count where FINN estimates it, else the count."""
    cells = []
    for key in shown:
        value = None if counts is None else counts[key]
        if counts is not None and key == "BRAM_18K":
            value = counts["BRAM_18K"] + 2 * counts["BRAM_36K"]
        if key in finn:
            cells.append(_pair(finn[key], value))
        else:
            cells.append("-" if value is None else f"{value:,}")
    return cells
