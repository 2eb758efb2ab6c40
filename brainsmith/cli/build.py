"""``brainsmith build MODEL BLUEPRINT``: the blueprint-driven FINN build."""

from __future__ import annotations

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
    help="Output folder (default: the blueprint's build.output_dir, else "
    "build-out/<name>-<timestamp>).",
)
@click.option(
    "--input",
    "input_npy",
    type=click.Path(dir_okay=False),
    help="Input vectors (.npy) to check at every verification, with --expected.",
)
@click.option(
    "--expected",
    "expected_npy",
    type=click.Path(dir_okay=False),
    help="Expected outputs (.npy) for --input.",
)
@click.option(
    "--verify",
    type=click.Choice(["each", "final", "rtlsim", "none"]),
    help="Override the blueprint's build.verify (rtlsim: final, then simulate every RTL "
    "layer with Verilator).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Use a non-empty output folder by moving it aside to <folder>.old-<time>.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress display; only the summary.")
def build(
    model: str,
    blueprint: str,
    output_dir: str | None,
    input_npy: str | None,
    expected_npy: str | None,
    verify: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Build a QONNX MODEL into a FINN dataflow design as BLUEPRINT says.

    \b
    Exit codes: 0 built; 1 a step or verification failed; 2 bad model, blueprint or
    output folder; 130 interrupted.

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml -o out/mlp
    """
    from brainsmith.builder import BuildError
    from brainsmith.builder import build as run_build

    try:
        result = run_build(
            model,
            blueprint,
            output_dir,
            input_npy=input_npy,
            expected_npy=expected_npy,
            force=force,
            verify=verify,
            progress=not quiet,
        )
    except BuildError as exc:
        click.echo(f"error: {exc.message()}", err=True)
        _exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        _exit(130)
    print_summary(result.report)
    _exit(0)


def _exit(code: int) -> None:
    from brainsmith.frameworks.finn_env import fast_exit

    fast_exit(code)  # skips the slow interpreter teardown after FINN when run as a program
    sys.exit(code)


def print_summary(report: dict) -> None:
    """The build's outcome in a few lines: performance, resources, verification, files."""
    out = console()
    out.soft_wrap = True
    perf, totals = report.get("performance", {}), report.get("totals", {})
    fps, latency = perf.get("estimated_fps"), perf.get("estimated_latency_ns")
    ran = [s for s in report["steps"] if s["status"] == "ok"]
    skipped = [s for s in report["steps"] if s["status"] == "skipped"]
    checks = [s["verification"] for s in report["steps"] if s.get("verification")]
    setup = report.get("setup_seconds") or 0.0
    out.print(
        f"[bold green]built[/bold green] {report['name']} in {report['seconds']:.1f} s "
        f"({setup:.1f} s loading FINN and the model; {len(ran)} steps run, "
        f"{len(skipped)} skipped)"
    )
    if fps:
        out.print(f"  throughput  {fps:,.0f} fps (estimated, clock {report['clock_ns']} ns)")
    if latency:
        out.print(f"  latency     {latency / 1000:,.2f} µs (estimated)")
    if totals:
        out.print("  resources   " + ", ".join(f"{k} {v:,}" for k, v in totals.items()))
    if checks:
        worst = max(c["max_error"] for c in checks)
        user = [c["user"]["max_error"] for c in checks if "user" in c]
        text = (
            f"  verified    {len(checks)} step(s), max error {worst:.2g} on "
            f"{checks[-1]['samples']} inputs"
        )
        if user:
            text += f"; your vectors max error {max(user):.2g}"
        tolerance = report.get("verify_tolerance")
        if tolerance:
            text += f" (atol {tolerance['atol']:g}, rtol {tolerance['rtol']:g})"
        out.print(text)
    else:
        out.print("  verified    no (verify: none)")
    rtlsim = report.get("rtlsim")
    if rtlsim:
        out.print(f"  RTL sim     {rtlsim['summary']} ({rtlsim['tool']})", markup=False)
    for step in skipped:
        out.print(f"  skipped     {step['name']}: {step.get('reason', '')}", markup=False)
    out.print(f"  report      {report['output_dir']}/report.html", markup=False)
