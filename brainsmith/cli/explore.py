"""``brainsmith explore MODEL BLUEPRINT``: build every variant of a design space on Dask."""

from __future__ import annotations

import signal

import click

from brainsmith.blueprint.choices import board_examples
from brainsmith.cli.output import console
from brainsmith.cli.shared import (
    FiniteRange,
    exit_now,
    output_option,
    quiet_option,
    vector_options,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("blueprint", type=click.Path(dir_okay=False))
@output_option("Output folder (default: build-out/<name>-explore-<timestamp>).")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    help="Processes of the local Dask cluster (default: one per core, at most one per "
    "variant); 0 runs every variant in this process, without Dask.",
)
@click.option(
    "--scheduler",
    metavar="tcp://HOST:PORT",
    help="Run on an existing Dask cluster: its scheduler's address (or scheduler JSON file). "
    "Workers must see the output folder at the same path.",
)
@click.option(
    "--scheduler-timeout",
    type=FiniteRange(min=0, max=3600, min_open=True),
    metavar="SECONDS",
    help="Seconds to reach the --scheduler and hear it answer before giving up  [default: 10].",
)
@click.option("--resume", is_flag=True, help="Keep what an earlier run into OUTPUT finished.")
@click.option(
    "--force", is_flag=True, help="Use a non-empty output folder by moving it aside first."
)
@vector_options("Input vectors (.npy) every variant's verification checks, with --expected.")
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve Prometheus metrics (variants done and failed, segment times) on "
    "127.0.0.1:PORT while exploring.",
)
@click.option(
    "--variant-timeout",
    type=FiniteRange(min=0, max=7 * 24 * 3600, min_open=True),
    metavar="SECONDS",
    help="Stop a variant (or a segment variants share) that runs longer (at most a week), "
    "record it as timed out and go on; needs worker processes (not --workers 0).",
)
@click.option(
    "--part",
    "fpga_part",
    metavar="PART",
    help="Build every variant for this FPGA part instead of the blueprint's (as for build).",
)
@click.option(
    "--board",
    metavar="BOARD",
    help="Build every variant for this board instead (as for build): one of FINN's or one "
    f"brainsmith makes bitstreams for ({board_examples()}, ...; every layer RTL).",
)
@quiet_option()
def explore(
    model: str,
    blueprint: str,
    output_dir: str | None,
    workers: int | None,
    scheduler: str | None,
    scheduler_timeout: float | None,
    resume: bool,
    force: bool,
    input_npy: str | None,
    expected_npy: str | None,
    metrics_port: int | None,
    variant_timeout: float | None,
    fpga_part: str | None,
    board: str | None,
    quiet: bool,
) -> None:
    """Build every variant of BLUEPRINT's design_space on MODEL; rank them and draw the
    Pareto front. Steps that variants share run once.

    \b
    Exit codes: 0 explored (some variants may have failed: see explore.json); 1 no
    variant built; 2 bad model, blueprint, output folder (or one another exploration
    uses) or cluster; 130 interrupted by SIGINT, 143 by SIGTERM (continue with --resume).

    \b
    Examples:
      brainsmith explore examples/models/mlp_4bit.onnx blueprints/mlp_explore.yaml -o out/dse
      brainsmith explore MODEL BLUEPRINT -o /shared/dse --scheduler tcp://10.0.0.5:8786
      brainsmith explore MODEL BLUEPRINT -o out/dse --resume
    """
    from brainsmith.dse import ExploreError
    from brainsmith.dse import explore as run_explore
    from brainsmith.planning.errors import command_line_names

    try:
        with command_line_names():
            result = run_explore(
                model,
                blueprint,
                output_dir,
                workers=workers,
                scheduler=scheduler,
                resume=resume,
                force=force,
                input_npy=input_npy,
                expected_npy=expected_npy,
                progress=not quiet,
                metrics_port=metrics_port,
                variant_timeout=variant_timeout,
                scheduler_timeout=scheduler_timeout,
                fpga_part=fpga_part,
                board=board,
            )
    except ExploreError as exc:
        click.echo(f"error: {exc.message()}", err=True)
        exit_now(exc.exit_code)
    except KeyboardInterrupt as exc:  # before the exploration began: nothing ran
        signum = getattr(exc, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        click.echo(f"error: exploration interrupted by {name} before it began", err=True)
        exit_now(128 + signum)
    print_summary(result.data)
    exit_now(0 if any(v["status"] == "ok" for v in result.variants) else 1)


def print_summary(data: Json) -> None:
    """The exploration in a few lines: counts, reuse, how the variants were counted where
    they differ, the best variants, the files."""
    out = console()
    out.soft_wrap = True
    variants = data["variants"]
    ok = [v for v in variants if v["status"] == "ok"]
    failed = [v for v in variants if v["status"] == "failed"]
    seconds = data["timings"]["seconds"] or 0.0
    out.print(
        f"[bold green]explored[/bold green] {data['name']}: {len(ok)} of {len(variants)} "
        f"variants built, {len(failed)} failed, in {seconds:.1f} s",
        highlight=False,
    )
    for line in _summary_lines(data, ok, failed):
        out.print(line, markup=False)


def _summary_lines(data: Json, ok: list[Json], failed: list[Json]) -> list[str]:
    counting = data.get("counting") or {}
    unlike = counting.get("alike") is False
    return [
        f"  segments    {data['segments_run']} run, {data['segments_reused']} reused "
        f"({data['steps_run']} step runs instead of {data['steps_without_reuse']})",
        *([f"  counted     {counting['differs']}"] if unlike else []),
        *_ranking_lines(data["variants"], ok, unlike),
        *_no_effect_lines(data.get("effects") or []),
        *(
            [f"  constraints {_constraints(ok, data['constraints'])}"]
            if data["constraints"]
            else []
        ),
        *_failed_lines(failed[:5]),
        f"  results     {data['output_dir']}/explore.json",
        f"  report      {data['output_dir']}/report.html",
    ]


def _ranking_lines(variants: list[Json], ok: list[Json], unlike: bool) -> list[str]:
    """The Pareto front (at most ten), or why there is none; the variants not ranked."""
    pareto = [v for v in variants if v["pareto"]]
    lines = [_pareto_line(v, unlike) for v in pareto[:10]]
    unranked = _unranked(ok)
    if unranked and not pareto:
        lines.append(
            "  pareto      none: no variant that meets every constraint has a number for every "
            "objective"
        )
    lines += [f"  not ranked  {_ids(sorted(ids))}: {why}" for why, ids in unranked.items()]
    return lines


def _unranked(built: list[Json]) -> dict[str, list[str]]:
    """The variants not ranked (each design once), by reason."""
    found: dict[str, list[str]] = {}
    for v in built:
        if v.get("unranked") and not v.get("same_design_as"):
            found.setdefault(v["unranked"], []).append(v["id"])
    return found


def _pareto_line(v: Json, unlike: bool) -> str:
    choices = " ".join(f"{k}={_text(x)}" for k, x in v["choices"].items())
    same = f" (same design: {', '.join(v['same_design'])})" if v.get("same_design") else ""
    shown = _metrics(v, unlike)
    if unlike and v.get("counting"):
        shown += f" [{v['counting']['tag']}]"
    return f"  pareto      {v['id']}{same}  {shown}  {choices}"


def _no_effect_lines(effects: list[Json]) -> list[str]:
    return [
        f"  no effect   {effect['dimension']}: the variants that differ only there built the "
        "same design"
        for effect in effects
        if effect["changed_nothing"]
    ]


def _failed_lines(failed: list[Json]) -> list[str]:
    from brainsmith.frameworks.finn.facts import step_label

    lines = []
    for v in failed:
        error = v["error"] or {}
        where = f" (shared segment {v['failed_in']})" if v["failed_in"] else ""
        step = step_label(str(error.get("step")))
        lines.append(f"  failed      {v['id']}: {step}{where}: {error.get('reason')}")
    return lines


def _metrics(v: Json, compute: bool = False) -> str:
    """``1,250,000 fps, LUT 1,469, DSP 7, BRAM_18K 0``; with ``compute``, each resource's
    compute layers beside its total where they differ: ``LUT 1,469 (compute 1,174)``."""
    m, bounds = v["metrics"] or {}, v.get("lower_bounds") or {}
    layers = ((v.get("counting") or {}).get("compute") or {}) if compute else {}
    fps = f"{m['fps']:,.0f} fps" if m.get("fps") else "- fps"
    shown = [k for k in ("LUT", "DSP", "BRAM_18K") if m.get(k) is not None]
    return fps + "".join(_resource(k, m[k], k in bounds, layers.get(k)) for k in shown)


def _resource(name: str, total: float, bound: bool, compute: float | None) -> str:
    """``, LUT ≥ 1,469 (compute 1,174)``: the compute layers' figure where it differs."""
    beside = f" (compute {compute:,})" if compute not in (None, total) else ""
    return f", {name} {'≥ ' if bound else ''}{total:,}{beside}"


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _constraints(built: list[Json], constraints: list[str]) -> str:
    """How the built variants fare against the constraints, e.g. "4 of 12 built variants meet
    LUT <= 20000; 2 miss one; 6 not judged: their LUT is a lower bound"."""
    met = sum(v["feasible"] is True for v in built)
    text = f"{met} of {len(built)} built variants meet " + ", ".join(constraints)
    missed = sum(v["feasible"] is False for v in built)
    if missed:
        text += f"; {missed} miss one"
    unjudged = [v for v in built if v["feasible"] is None]
    if unjudged:
        text += f"; {len(unjudged)} not judged: {_unjudged(unjudged)}"
    return text


def _unjudged(unjudged: list[Json]) -> str:
    """``their LUT is a lower bound``: the metrics of the constraints not judged."""
    metrics = {c["constraint"].split()[0]: None for v in unjudged for c in v["constraints"]
               if c["ok"] is None}  # fmt: skip
    bound = "are lower bounds" if len(metrics) > 1 else "is a lower bound"
    return f"their {' and '.join(metrics)} {bound}"


def _text(value: object) -> str:
    from brainsmith.dse.tree import show

    return show(value)
