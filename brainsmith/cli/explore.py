"""``brainsmith explore MODEL BLUEPRINT``: build every variant of a design space on Dask."""

from __future__ import annotations

import signal
import sys

import click

from brainsmith.cli.output import console


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("blueprint", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    "output_dir",
    type=click.Path(file_okay=False),
    help="Output folder (default: build-out/<name>-explore-<timestamp>).",
)
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
    type=click.FloatRange(min=0, max=3600, min_open=True),
    metavar="SECONDS",
    help="Seconds to reach the --scheduler and hear it answer before giving up  [default: 10].",
)
@click.option("--resume", is_flag=True, help="Keep what an earlier run into OUTPUT finished.")
@click.option(
    "--force", is_flag=True, help="Use a non-empty output folder by moving it aside first."
)
@click.option(
    "--input",
    "input_npy",
    type=click.Path(dir_okay=False),
    help="Input vectors (.npy) every variant's verification checks, with --expected.",
)
@click.option(
    "--expected",
    "expected_npy",
    type=click.Path(dir_okay=False),
    help="Expected outputs for --input: an .npy, or for a model with several outputs an .npz "
    "of one array per output (in the model's order, or keyed by output name).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve Prometheus metrics (variants done and failed, segment times) on "
    "127.0.0.1:PORT while exploring.",
)
@click.option(
    "--variant-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Stop a variant (or a segment variants share) that runs longer, record it as timed "
    "out and go on; needs worker processes (not --workers 0).",
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
    help="Build every variant for this board instead (as for build): one of FINN's or a "
    "Lattice ECP5 board (ulx3s-85f, ...; every layer RTL).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress display; only the summary.")
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
        _exit(exc.exit_code)
    except KeyboardInterrupt as exc:  # before the exploration began: nothing ran
        signum = getattr(exc, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        click.echo(f"error: exploration interrupted by {name} before it began", err=True)
        _exit(128 + signum)
    print_summary(result.data)
    _exit(0 if any(v["status"] == "ok" for v in result.variants) else 1)


def _exit(code: int) -> None:
    from brainsmith.frameworks.finn.env import fast_exit

    fast_exit(code)
    sys.exit(code)


def print_summary(data: dict) -> None:
    """The exploration in a few lines: counts, reuse, how the variants were counted where
    they differ, the best variants, the files."""
    from brainsmith.frameworks.finn.facts import step_label

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
    out.print(
        f"  segments    {data['segments_run']} run, {data['segments_reused']} reused "
        f"({data['steps_run']} step runs instead of {data['steps_without_reuse']})",
        markup=False,
    )
    counting = data.get("counting") or {}
    unlike = counting.get("alike") is False
    if unlike:
        out.print(f"  counted     {counting['differs']}", markup=False)
    pareto = [v for v in variants if v["pareto"]]
    for v in pareto[:10]:
        choices = " ".join(f"{k}={_text(x)}" for k, x in v["choices"].items())
        same = f" (same design: {', '.join(v['same_design'])})" if v.get("same_design") else ""
        shown = _metrics(v, unlike)
        if unlike and v.get("counting"):
            shown += f" [{v['counting']['tag']}]"
        out.print(f"  pareto      {v['id']}{same}  {shown}  {choices}", markup=False)
    unranked: dict[str, list[str]] = {}
    for v in ok:
        if v.get("unranked") and not v.get("same_design_as"):
            unranked.setdefault(v["unranked"], []).append(v["id"])
    if unranked and not pareto:
        out.print(
            "  pareto      none: no variant that meets every constraint has a number for every "
            "objective",
            markup=False,
        )
    for reason, ids in unranked.items():
        out.print(f"  not ranked  {_ids(sorted(ids))}: {reason}", markup=False)
    for effect in data.get("effects") or []:
        if effect["changed_nothing"]:
            out.print(
                f"  no effect   {effect['dimension']}: the variants that differ only there "
                "built the same design",
                markup=False,
            )
    if data["constraints"]:
        out.print(f"  constraints {_constraints(ok, data['constraints'])}", markup=False)
    for v in failed[:5]:
        error = v["error"] or {}
        where = f" (shared segment {v['failed_in']})" if v["failed_in"] else ""
        step = step_label(str(error.get("step")))
        out.print(
            f"  failed      {v['id']}: {step}{where}: {error.get('reason')}",
            markup=False,
        )
    out.print(f"  results     {data['output_dir']}/explore.json", markup=False)
    out.print(f"  report      {data['output_dir']}/report.html", markup=False)


def _metrics(v: dict, compute: bool = False) -> str:
    """``1,250,000 fps, LUT 1,469, DSP 7, BRAM_18K 0``; with ``compute``, each resource's
    compute layers beside its total where they differ: ``LUT 1,469 (compute 1,174)``."""
    m, bounds = v["metrics"] or {}, v.get("lower_bounds") or {}
    layers = ((v.get("counting") or {}).get("compute") or {}) if compute else {}
    fps = f"{m['fps']:,.0f} fps" if m.get("fps") else "- fps"
    return fps + "".join(
        f", {k} {'≥ ' if k in bounds else ''}{m[k]:,}"
        + (f" (compute {layers[k]:,})" if layers.get(k) not in (None, m[k]) else "")
        for k in ("LUT", "DSP", "BRAM_18K")
        if m.get(k) is not None
    )


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _constraints(built: list[dict], constraints: list[str]) -> str:
    """How the built variants fare against the constraints, e.g. "4 of 12 built variants meet
    LUT <= 20000; 2 miss one; 6 not judged: their LUT is a lower bound"."""
    met = sum(v["feasible"] is True for v in built)
    text = f"{met} of {len(built)} built variants meet " + ", ".join(constraints)
    missed = sum(v["feasible"] is False for v in built)
    if missed:
        text += f"; {missed} miss one"
    unjudged = [v for v in built if v["feasible"] is None]
    if unjudged:
        metrics = {c["constraint"].split()[0]: None for v in unjudged for c in v["constraints"]
                   if c["ok"] is None}  # fmt: skip
        named = " and ".join(metrics)
        bound = "are lower bounds" if len(metrics) > 1 else "is a lower bound"
        text += f"; {len(unjudged)} not judged: their {named} {bound}"
    return text


def _text(value: object) -> str:
    from brainsmith.dse.tree import show

    return show(value)
