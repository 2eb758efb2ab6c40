"""``brainsmith build MODEL BLUEPRINT``: the blueprint-driven FINN build."""

from __future__ import annotations

import click

from brainsmith.blueprint.choices import (
    DEFAULT_FPS,
    PREFERENCES,
    VERIFY_MODES,
    boards_by_family,
)
from brainsmith.cli.output import console, echo
from brainsmith.cli.shared import (
    exit_now,
    output_option,
    override_flag,
    quiet_option,
    vector_options,
)
from brainsmith.clock import Clock
from brainsmith.hardware.place_route.parts import packing_families, part_examples

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from brainsmith.builder import BuildResult
    from brainsmith.report_schema import (
        BuildReport,
        FinnWarning,
        StepEntry,
        Tolerance,
        Utilisation,
        Verification,
    )


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("blueprint", type=click.Path(dir_okay=False), required=False)
@output_option(
    "Output folder (default: the blueprint's build.output_dir, else build-out/<name>-<timestamp>)."
)
@vector_options("Input vectors (.npy) to check at every verification, with --expected.")
@click.option(
    "--verify",
    type=click.Choice(VERIFY_MODES),
    help="Override the blueprint's build.verify (rtlsim: final, then simulate every RTL "
    "layer with Verilator).",
)
@click.option(
    "--part",
    "fpga_part",
    metavar="PART",
    help="FPGA part: an AMD part such as xcvc1902-vsva2197-2MP-e-S, or "
    f"{part_examples()} (every layer RTL, folded and costed for the part) (overrides the "
    "blueprint's build.fpga_part or board).",
)
@click.option(
    "--board",
    "board",
    metavar="BOARD",
    help="A board instead of a part (build.board): one of FINN's (Pynq-Z1, U250, ...) or "
    f"one of brainsmith's: {boards_by_family()} (every layer RTL).",
)
@click.option(
    "--clock-ns",
    type=float,
    help="Target clock period in ns, 0.1 to 1,000,000 (build.clock_ns).",
)
@click.option(
    "--target-fps",
    type=int,
    help="Throughput to fold for, frames per second, 1 to 10**12 (build.target_fps); "
    f"without one, {DEFAULT_FPS:,} where the unfolded design is slower.",
)
@click.option(
    "--target-latency",
    "target_latency_ns",
    type=float,
    metavar="NS",
    help="The most time one frame may take through the accelerator, in ns: folds further "
    "until FINN's latency estimate (layer cycles summed on the slowest path) meets it "
    "(build.target_latency_ns).",
)
@override_flag(
    "--synth",
    "After the last step, synthesise every RTL layer with Yosys (out of context; "
    "7-series, UltraScale, UltraScale+ parts) and report its counts beside the estimates "
    "(build.synth).",
)
@override_flag(
    "--bitstream",
    "After the last step, make the board's bitstream behind brainsmith's UART host link "
    "with Yosys and its family's nextpnr at the build's clock: BUILD/bitstream/BOARD.bit "
    f"(build.bitstream; needs --board with a board of brainsmith's, or --part with a part "
    f"whose pins it places alone ({packing_families()}): BUILD/bitstream/PART.bit).",
)
@click.option(
    "--refold-rounds",
    "refold_rounds",
    type=int,
    metavar="N",
    help="With --bitstream: when nextpnr misses the clock, build again folded for a clock "
    "5 % below the Fmax it reached, at most N times (build.refold_rounds; default 2, 0: never).",
)
@click.option(
    "--size-fifos/--no-size-fifos",
    default=None,
    help="Size the FIFOs of an all-RTL design by simulating it in Verilator (the default), "
    "or keep FINN's depths (build.size_fifos).",
)
@override_flag(
    "--allow-over-part",
    "Build a design estimated to need more of a resource than the part has, with a "
    "warning; without it the estimates step fails (build.allow_over_part).",
)
@click.option(
    "--prefer",
    type=click.Choice(PREFERENCES),
    help="Backend type for layers that can have either (hw_compiler.prefer; auto: chosen per "
    "layer by datatypes and part).",
)
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="KERNEL",
    help="Never use this kernel (repeatable; adds to the blueprint's hw_compiler.exclude): "
    "its layers stay on the host or another kernel takes them.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Move a previous build's output folder aside to <folder>.old-<time> and build "
    "there (only folders brainsmith build made).",
)
@click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False),
    help="Also write the build's metrics here in Prometheus' text format (for "
    "node_exporter's textfile collector), whether the build succeeds or fails at a step.",
)
@quiet_option()
def build(
    model: str,
    blueprint: str | None,
    output_dir: str | None,
    input_npy: str | None,
    expected_npy: str | None,
    verify: str | None,
    fpga_part: str | None,
    board: str | None,
    clock_ns: float | None,
    target_fps: int | None,
    target_latency_ns: float | None,
    synth: bool | None,
    bitstream: bool | None,
    refold_rounds: int | None,
    size_fifos: bool | None,
    allow_over_part: bool | None,
    prefer: str | None,
    exclude: tuple[str, ...],
    force: bool,
    metrics_file: str | None,
    quiet: bool,
) -> None:
    """Build a QONNX MODEL into a FINN dataflow design as BLUEPRINT says.

    Without BLUEPRINT, the default blueprint is used: every installed kernel, the backend
    of each layer chosen by rule, a Versal part at 5 ns (see `brainsmith check MODEL`
    for what each node will become).

    \b
    Exit codes: 0 built (with --bitstream also when the clock is still missed after its
    refold rounds: the summary says so first); 1 a step, verification or the bitstream's tools failed; 2 bad model,
    blueprint, vectors or output folder (or a full disk); 130 interrupted (SIGINT), 143
    (SIGTERM).

    \b
    Example:
      brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml -o out/mlp
      brainsmith build model.onnx --target-fps 100000 --input x.npy --expected y.npy
      brainsmith build model.onnx --prefer rtl --part xczu7ev-ffvc1156-2-e --synth
      brainsmith build examples/models/mlp_4bit.onnx --board ulx3s-85f --bitstream
      brainsmith build examples/models/mlp_4bit.onnx --part LIFCL-40-9BG400C --bitstream
    """
    from brainsmith import interrupts
    from brainsmith.builder import build as run_build
    from brainsmith.planning.errors import command_line_names

    if metrics_file:
        _check_metrics_file(metrics_file)
    options: dict[str, object] = {
        "fpga_part": fpga_part,
        "board": board,
        "clock_ns": clock_ns,
        "target_fps": target_fps,
        "target_latency_ns": target_latency_ns,
        "synth": synth,
        "bitstream": bitstream,
        "refold_rounds": refold_rounds,
        "size_fifos": size_fifos,
        "allow_over_part": allow_over_part,
    }
    with interrupts.handled(), command_line_names():
        result = _built(
            metrics_file,
            lambda: run_build(
                model,
                blueprint,
                output_dir,
                input_npy=input_npy,
                expected_npy=expected_npy,
                force=force,
                verify=verify,
                options=options,
                prefer=prefer,
                progress=not quiet,
                exclude=exclude,
                started=process_started(),
            ),
        )
        if result.report["status"] != "stopped":  # (never: the command has no stop_after)
            print_summary(result.report)
        if metrics_file:
            _write_metrics(metrics_file, result.report_path)
        if interrupts.late_signals():
            click.echo(
                "note: a signal arrived while the finished build wrote its report; "
                "the build is complete and was not interrupted",
                err=True,
            )
    exit_now(0)


def process_started() -> float | None:
    """``time.perf_counter()`` when this process started, where the process is the
    ``brainsmith`` command itself (its ``argv[0]``; Linux: its start time in
    ``/proc/self/stat`` against ``/proc/uptime``), so a build's time is the command's; None
    otherwise (a caller in its own process: the build times itself from the call)."""
    import os
    import sys
    import time

    entry = os.path.basename(sys.argv[0] if sys.argv else "")
    command = entry == "brainsmith" or sys.argv[0].endswith(
        os.path.join("brainsmith", "__main__.py")
    )
    now = time.perf_counter()
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return now - age if command and 0.0 <= age < 600.0 else None


def _check_metrics_file(path: str) -> None:
    """Exit 2 before building when the metrics could not be written to ``path``."""
    from brainsmith.metrics import textfile_problem

    problem = textfile_problem(path)
    if problem:
        echo(f"error: --metrics-file {path}: {problem}", err=True)
        exit_now(2)


def _built(metrics_file: str | None, work: Callable[[], BuildResult]) -> BuildResult:
    """``work()``'s build; a BuildError (its metrics written when it has a report) or an
    interrupt before the build began is printed, and exits."""
    from brainsmith.builder import BuildError

    try:
        return work()
    except BuildError as exc:
        echo(f"error: {exc.message()}", err=True)
        if metrics_file and exc.report:
            _write_metrics(metrics_file, exc.report)
        exit_now(exc.exit_code)
    except KeyboardInterrupt as exc:  # before the build began: nothing was written
        signum = getattr(exc, "signum", 2)
        name = getattr(exc, "name", "SIGINT")
        click.echo(f"error: build interrupted by {name} before it began; nothing was written",
                   err=True)  # fmt: skip
        exit_now(128 + signum)


def _write_metrics(path: str, report_json: str) -> None:
    """The build's metrics from its report.json; a problem is a warning, never a failure."""
    import json

    from brainsmith.metrics import write_textfile

    try:
        with open(report_json) as handle:
            write_textfile(path, json.load(handle))
    except (OSError, ValueError) as exc:
        echo(f"warning: metrics not written to {path}: {exc}", err=True)


def print_summary(report: BuildReport) -> None:
    """The build's outcome in a few lines: warnings first, then performance, resources,
    verification and files."""
    from brainsmith.frameworks.finn.facts import step_label
    from brainsmith.report.text import warning_lines

    out = console()
    out.soft_wrap = True
    skipped = [s for s in report["steps"] if s["status"] == "skipped"]
    _print_outcome(out, report, warning_lines(report), len(skipped))
    _print_performance(out, report)
    _print_resources(out, report)
    _print_verification(
        out, report["steps"], report.get("verify_tolerance"), report.get("verify", "final")
    )
    _print_finn_warnings(out, report.get("warnings", []))
    rtlsim = report.get("rtlsim")
    if rtlsim:
        out.print(f"  RTL sim     {rtlsim['summary']} ({rtlsim['tool']})", markup=False)
    for step in skipped:
        name = step_label(step["name"])
        out.print(f"  skipped     {name}: {step.get('reason', '')}", markup=False)
    if report.get("stitched_rtl"):
        folder = report["output_dir"]
        out.print(f"  design      {folder}/finn/stitched_rtl/: the whole accelerator in RTL; "
                  f"brainsmith export {folder} DEST takes it off this machine", markup=False)  # fmt: skip
    out.print(f"  report      {report['output_dir']}/report.html", markup=False)


def _print_outcome(out: Console, report: BuildReport, warnings: list[str], skipped: int) -> None:
    """``built NAME in S s (...)``, then the warnings and the notes."""
    ran = [s for s in report["steps"] if s["status"] == "ok"]
    setup = report.get("setup_seconds") or 0.0
    flag = f" [bold yellow]with {len(warnings)} warning(s)[/bold yellow]" if warnings else ""
    out.print(
        f"[bold green]built[/bold green] {report['name']}{flag} in {report['seconds']:.1f} s "
        f"({setup:.1f} s loading FINN and the model; {len(ran)} steps run, "
        f"{skipped} skipped)"
    )
    for line in warnings:
        out.print(f"  [yellow]warning[/yellow]     {escape(line)}")
    for line in report.get("notes", []):
        out.print(f"  note        {line}", markup=False)


def _print_performance(out: Console, report: BuildReport) -> None:
    """The throughput (at the clock nextpnr reached, when a bitstream was made, then the
    estimate at the clock asked), whether it meets the target, latency, the bottleneck."""
    from brainsmith.report.text import bottleneck_line, clocked_lines, latency_text, side_by_side

    fps, latency = report.get("performance", {}).get("estimated_fps"), latency_text(report)
    clocked = clocked_lines(report)
    if clocked:
        out.print(f"  throughput  {clocked[0]}", markup=False)
        if clocked[1]:
            out.print(f"  latency     {clocked[1]}", markup=False)
        paces = side_by_side(report)
        if paces:
            out.print(f"  paces       {paces}", markup=False)
    if fps:
        out.print(_estimate(report, fps, bool(clocked)))
    if latency:
        out.print(f"  {'' if clocked else 'latency':<11} {latency}", markup=False)
    bottleneck = bottleneck_line(report.get("target"))
    if bottleneck:
        out.print(f"  bottleneck  {bottleneck}", markup=False)


def _estimate(report: BuildReport, fps: float, clocked: bool) -> str:
    """FINN's estimated throughput, and whether it meets the target (rich markup)."""
    from brainsmith.report.text import number

    goal = report.get("target")
    verdict = ""
    if goal:
        state = "met" if goal["met"] else "[bold red]MISSED[/bold red]"
        verdict = f"; target {number(goal['target_fps'])} fps {state}"
    if clocked:
        asked = str(Clock.from_ns(report["clock_ns"]))
        return f"  estimated   {number(fps)} fps at the {asked} asked (FINN's estimate{verdict})"
    return f"  throughput  {number(fps)} fps (estimated, clock {report['clock_ns']} ns{verdict})"


def _print_resources(out: Console, report: BuildReport) -> None:
    """The estimated resources with their share of the part, and what they leave out; a
    Lattice build's in its part's own resources (FINN's for the stand-in are in report.html's
    details)."""
    from brainsmith.report.text import family_line

    totals, family = report.get("totals", {}), report.get("family_resources")
    if not totals and not family:
        return
    for line in [*_measured_lines(report), *_bitstream_lines(report)]:
        out.print(line, markup=False)
    label = "estimated" if report.get("synthesis") or report.get("bitstream") else "resources"
    if family:
        out.print(f"  {label:<11} {family_line(family)} ({family['source']})", markup=False)
    else:
        partial = report.get("incomplete") or {}
        out.print(f"  {label:<11} " + _resources(totals, report.get("utilisation"), partial))
    for line in _left_out_lines(report):
        out.print(line, markup=False)


def _left_out_lines(report: BuildReport) -> list[str]:
    """What the estimates leave out, and what was not checked."""
    from brainsmith.report.measured import unchecked
    from brainsmith.report.text import incomplete_line

    family = report.get("family_resources")
    if family:  # a Lattice build: its figures are the family's, not FINN's for the stand-in
        left_out = family.get("incomplete") or []
        missing = (f"no {family['family']} model, so not in these totals: " + ", ".join(left_out)
                   if left_out else None)  # fmt: skip
    else:
        missing = incomplete_line(report)
    note = unchecked(report)
    return [*([f"              {missing}"] if missing else []),
            *([f"  unchecked   {note}"] if note else [])]  # fmt: skip


def _measured_lines(report: BuildReport) -> list[str]:
    """Yosys' counts, their error, the layers not synthesised."""
    section = report.get("synthesis")
    if not section:
        return []
    from brainsmith.report.measured import error_line, measured_line, unsynthesised

    error = error_line(section)
    return [
        f"  measured    {measured_line(section)}",
        *([f"              {error}"] if error else []),
        *(f"              not synthesised: {line}" for line in unsynthesised(section)),
    ]


def _bitstream_lines(report: BuildReport) -> list[str]:
    bitstream = report.get("bitstream")
    if not bitstream:
        return []
    from brainsmith.report.text import bitstream_lines

    family = report.get("family_resources")
    lines = bitstream_lines(
        bitstream, family.get("placed") if family else None, report.get("seconds")
    )
    return [f"  {'' if index else 'bitstream':<11} {line}" for index, line in enumerate(lines)]


def _print_verification(
    out: Console, steps: list[StepEntry], tolerance: Tolerance | None, mode: str
) -> None:
    """What was verified in words (the final model, or each step run), the largest error
    found, and the rounding ties."""
    checks = [s["verification"] for s in steps if s.get("verification")]
    if not checks:
        out.print("  verified    no (verify: none)")
        return
    generated = [c for c in checks if "samples" in c]
    text = _verified(checks, generated, mode)
    if tolerance and tolerance.get("atol") is not None:
        text += f" (atol {tolerance['atol']:g}, rtol {tolerance['rtol']:g})"
    elif generated:
        text += "; 0 errors in quantizer steps"
    out.print(text)
    for line in _tie_lines(steps):
        out.print(line, markup=False)


def _verified(checks: list[Verification], generated: list[Verification], mode: str) -> str:
    """``  verified    the final model: max error 0 on 64 generated inputs, 0 on your 8
    vectors``."""
    mine, worst_mine = _user_vectors(checks)
    if not generated:
        return f"  verified    the final model against {mine} only (verify: none): max error {worst_mine}"
    unchanged = sum(1 for c in checks if c.get("unchanged"))
    rerun = f" ({unchanged} unchanged, not re-run)" if unchanged else ""
    what = f"each of {len(checks)} steps run{rerun}" if mode == "each" else "the final model"
    worst = max(c.get("max_error", 0.0) for c in generated)
    text = (
        f"  verified    {what}: max error {worst:.2g} on "
        f"{generated[-1].get('samples', 0)} generated inputs"
    )
    return text + (f", {worst_mine} on {mine}" if mine else "")


def _user_vectors(checks: list[Verification]) -> tuple[str, str]:
    """``your 8 vectors`` and the largest error on them; empty without --input."""
    user = [c["user"] for c in checks if "user" in c]
    if not user:
        return "", ""
    return (
        f"your {user[-1].get('samples', 0)} vectors",
        f"{max(u.get('max_error', 0.0) for u in user):.2g}",
    )


def _tie_lines(steps: list[StepEntry]) -> list[str]:
    """The steps whose check met rounding ties (not those left unchanged)."""
    tied = [(s["name"], s["verification"]) for s in steps if s.get("verification", {}).get("ties")]
    return [
        f"              {name}: {check['ties']} rounding tie(s) in "
        f"{check.get('tie_samples', 0)} input(s), worst {check.get('worst_tie', '')}"
        for name, check in tied
        if not check.get("unchanged")
    ]


def _print_finn_warnings(out: Console, warnings: list[FinnWarning]) -> None:
    """The first five of FINN's own warnings in build.log (not Python's ``...Warning``s)."""
    finn = [w for w in warnings if not w["source"].endswith("Warning")]
    for entry in finn[:5]:
        times = f" ({entry['count']}x)" if entry["count"] > 1 else ""
        out.print(f"  FINN        {entry['message']}{times}", markup=False)
    if len(finn) > 5:
        out.print(f"  FINN        ... {len(finn) - 5} more in report.html", markup=False)


def _resources(
    totals: dict[str, float], use: Utilisation | None, incomplete: dict[str, list[str]]
) -> str:
    from brainsmith.report.text import total_text
    from brainsmith.report.units import percent

    shares = (use.get("percent") if use else None) or {}
    parts = []
    for key, value in totals.items():
        share = shares.get(key)
        shown = f" ({percent(share, value)})" if share is not None else ""
        parts.append(f"{total_text(key, value, incomplete)}{shown}")
    where = f" of {use['part']}" if use and shares else ""
    return ", ".join(parts) + where


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
