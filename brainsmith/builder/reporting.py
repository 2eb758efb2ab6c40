"""The build writes its report: report.json first and last (``status: running`` when the
build starts, then ``ok``, ``failed`` or ``interrupted``), report.html beside it."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

from brainsmith.builder.bitstream import performance_at_clock
from brainsmith.builder.design import write_design_of
from brainsmith.builder.lattice import estimate_part, family_resources, recorded_part
from brainsmith.files import write_text
from brainsmith.frameworks.finn.build_log import finn_warnings
from brainsmith.frameworks.finn.estimation.estimates import estimates
from brainsmith.frameworks.finn.estimation.finn_reports import accelerator_macs
from brainsmith.frameworks.finn.estimation.host import cpu_nodes
from brainsmith.report.contents import (
    latency_target,
    reassess_warnings,
    scaling_note,
    target,
    to_json,
    utilisation,
    versions,
    write_html,
)
from brainsmith.report.measured import compare

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.state import BuildRun
    from brainsmith.planning.errors import BuildError
    from brainsmith.report_schema import (
        BuildErrorEntry,
        BuildReport,
        Estimates,
        FinnWarning,
        ShortReport,
        Status,
        Target,
    )


# The whole accelerator in RTL (the FIFO sizing writes it; brainsmith export copies it out)
STITCHED_RTL = "finn/stitched_rtl/files.f"


def assemble(
    run: BuildRun,
    model: ModelWrapper | None,
    status: Status,
    error: BuildError | None = None,
    setup_seconds: float | None = None,
) -> BuildReport:
    """The report of ``run`` (a ``BuildRun``) as written to report.json."""
    options = run.plan.build
    part = estimate_part(options)  # FINN's, or its stand-in for a Lattice board
    found = estimates(run.report_dir, model, run.output_dir, part)
    _add_performance_at_clock(run, found)
    parent = run.context.dataflow_parent
    if run.log is not None:
        run.log.flush()
    goal = target(
        found["performance"],
        options.target_fps,
        options.period_ns,
        found["layers"],
        run.context.folding,
    )
    warnings = _warnings(run, goal)
    cpu = cpu_nodes(parent, accelerator_macs(run.report_dir)) if model is not None else None
    family = family_resources(
        options, run.context.costed_part, model, found["layers"], run.bitstream
    )
    return {
        "name": run.plan.name,
        "status": status,
        "error": _error_entry(error),
        "model": os.path.abspath(run.model_path) if run.model_path else "",
        "blueprint_path": run.plan.path,
        "output_dir": run.output_dir,
        "moved_aside": run.folder.moved_aside,
        "fpga_part": recorded_part(options),
        "board": options.board,
        "clock_ns": options.period_ns,
        "target_fps": options.target_fps,
        "verify": run.verify,
        "verify_samples": options.verify_samples,
        "verify_tolerance": {"atol": options.verify_atol, "rtol": options.verify_rtol},
        "seconds": round(time.perf_counter() - run.started_at, 3),
        "setup_seconds": round(setup_seconds, 3) if setup_seconds is not None else None,
        "notes": [
            *run.plan.notes,
            *run.notes,
            *run.context.notes,
            *scaling_note(cpu),
        ],
        "steps": [r.as_dict() for r in run.records],
        **found,
        "target": goal,
        "latency_target": latency_target(
            found["performance"], options.target_latency_ns, run.rtlsim, options.period_ns
        ),
        "cpu_nodes": cpu,
        "utilisation": utilisation(part, found["totals"]),
        "family_resources": family,
        "warnings": warnings,
        "generated_code": "finn/build",
        "stitched_rtl": STITCHED_RTL if os.path.isfile(run.path(STITCHED_RTL)) else None,
        "rtlsim": run.rtlsim,
        "synthesis": compare(found["layers"], run.synthesis) if run.synthesis else None,
        "bitstream": run.bitstream,
        "blueprint": run.plan.blueprint,
        "versions": versions(),
    }


def _add_performance_at_clock(run: BuildRun, found: Estimates) -> None:
    """Add to ``found`` the network's figures at the clock the bitstream reached, if any."""
    if run.bitstream is None:
        return

    clocked = performance_at_clock(run.bitstream, found["performance"], run.rtlsim, run.report_dir)
    if clocked is not None:
        found["performance"] = {**clocked, **found["performance"]}


def _warnings(run: BuildRun, goal: Target | None) -> list[FinnWarning]:
    """FINN's warnings in build.log the final estimates do not supersede; ``goal`` records
    how many they do."""
    warnings, superseded = reassess_warnings(finn_warnings(run.path("build.log")), goal)
    if goal is not None:
        goal["finn_warnings_superseded"] = superseded
    return warnings


def _error_entry(error: BuildError | None) -> BuildErrorEntry | None:
    """Where and why a build stopped, and what to try; None for one that did not fail."""
    return {"step": error.step, "reason": error.reason, "hint": error.hint} if error else None


def write_reports(
    run: BuildRun,
    model: ModelWrapper | None,
    status: Status,
    error: BuildError | None = None,
    setup_seconds: float | None = None,
    before_verdict: Callable[[], None] | None = None,
) -> BuildReport:
    """Write report.json and report.html; raises OSError when report.json cannot be written.

    For an ``ok`` build report.html comes first, then ``before_verdict()``, then report.json,
    the verdict (a failing write raises). Otherwise report.json comes first; report.html follows if it can.
    When the disk is full, the folder's reserve is given up for a short report.json.
    """
    report = assemble(run, model, status, error, setup_seconds)
    run.report = report
    if status == "ok":
        if model is not None:
            write_design_of(run, model, report)
        _write_html(run, report)
        if before_verdict is not None:
            before_verdict()
        _write_json(run, report)
        run.folder.release_reserve()
        return report
    _write_json(run, report)
    if status != "running":
        with contextlib.suppress(OSError):  # report.json holds the verdict; no page cut off
            _write_html(run, report)
        run.folder.release_reserve()
    return report


def _write_json(run: BuildRun, report: BuildReport) -> None:
    try:
        write_text(run.path("report.json"), to_json(report))
    except OSError:
        if not run.folder.release_reserve():
            raise
        short: ShortReport = {
            "name": report["name"],
            "status": report["status"],
            "error": report["error"],
            "output_dir": report["output_dir"],
            "steps": [{"name": s["name"], "status": s["status"]} for s in report["steps"]],
        }
        write_text(run.path("report.json"), to_json(short))


def _write_html(run: BuildRun, report: BuildReport) -> None:
    write_html(run.output_dir, report, run.charts, run.log)
