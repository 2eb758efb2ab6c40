"""The build's one description of its stitched accelerator (``design.json``,
``brainsmith.hardware.design``): made for the bitstream while the build runs, and written
beside report.json when it ends, with the pipelined interval its report gives."""

from __future__ import annotations

import os

from brainsmith.builder.lattice import recorded_part

UNSTITCHED = "its FIFOs were not sized by simulation (build.size_fifos), which stitches it"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.state import BuildRun
    from brainsmith.hardware.design import Design
    from brainsmith.report_schema import BuildReport


def described(
    run: BuildRun, model: ModelWrapper, interval: tuple[float, str] | None = None
) -> Design | str:
    """The description of ``run``'s stitched accelerator (``model`` its final model), or
    why it has none: no file list (an HLS layer, no FIFO sizing), more than one stream in or
    out, a listed file outside the build and FINN's library, a layer (a plugin's) whose
    streams cannot be read."""
    from brainsmith.hardware.board.description import describe
    from brainsmith.hardware.listing import FILES

    if not os.path.isfile(os.path.join(run.output_dir, FILES)):
        return UNSTITCHED
    options = run.plan.build
    try:
        return describe(
            run.output_dir, model, part=recorded_part(options) or "", clock=options.clock,
            interval=interval,
        )  # fmt: skip
    except Exception as exc:  # a plugin's layer may fail its own way: the build still ends
        return str(exc) or type(exc).__name__


def write_design_of(run: BuildRun, model: ModelWrapper, report: BuildReport) -> None:
    """design.json, where ``run`` stitched a whole accelerator, its interval ``report``'s;
    where the stitched accelerator cannot be described, a note in ``report`` says why."""
    from brainsmith.hardware.board.description import UNDESCRIBED, interval_of, write_design

    design = described(run, model, interval_of(report.get("performance")))
    if isinstance(design, str):
        if design != UNSTITCHED:
            report["notes"].append(
                f"{UNDESCRIBED} ({design}): place-route, bitstream, run and export cannot "
                "take this build"
            )
        return
    write_design(run.output_dir, design)


__all__ = ["UNSTITCHED", "described", "write_design_of"]
