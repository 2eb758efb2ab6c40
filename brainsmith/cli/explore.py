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
    help="Expected outputs (.npy) for --input.",
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
@click.option("--quiet", "-q", is_flag=True, help="No progress display; only the summary.")
def explore(
    model: str,
    blueprint: str,
    output_dir: str | None,
    workers: int | None,
    scheduler: str | None,
    resume: bool,
    force: bool,
    input_npy: str | None,
    expected_npy: str | None,
    metrics_port: int | None,
    variant_timeout: float | None,
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
    from brainsmith.builder.errors import command_line_names
    from brainsmith.dse import ExploreError
    from brainsmith.dse import explore as run_explore

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
    """The exploration in a few lines: counts, reuse, the best variants, the files."""
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
    for v in [v for v in variants if v["pareto"]][:10]:
        choices = " ".join(f"{k}={_text(x)}" for k, x in v["choices"].items())
        same = f" (same design: {', '.join(v['same_design'])})" if v.get("same_design") else ""
        out.print(f"  pareto      {v['id']}{same}  {_metrics(v)}  {choices}", markup=False)
    for effect in data.get("effects") or []:
        if effect["changed_nothing"]:
            out.print(
                f"  no effect   {effect['dimension']}: the variants that differ only there "
                "built the same design",
                markup=False,
            )
    feasible = sum(v["feasible"] for v in ok)
    if data["constraints"]:
        out.print(
            f"  constraints {feasible} of {len(ok)} built variants meet "
            + ", ".join(data["constraints"]),
            markup=False,
        )
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


def _metrics(v: dict) -> str:
    m = v["metrics"] or {}
    fps = f"{m['fps']:,.0f} fps" if m.get("fps") else "- fps"
    return fps + "".join(
        f", {k} {m[k]:,}" for k in ("LUT", "DSP", "BRAM_18K") if m.get(k) is not None
    )


def _text(value: object) -> str:
    from brainsmith.dse.tree import show

    return show(value)
