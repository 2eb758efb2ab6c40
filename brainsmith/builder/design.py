"""The build's one description of its stitched accelerator (``design.json``,
``brainsmith.hardware.design``): made for the bitstream while the build runs, and written
beside report.json when it ends, with the pipelined interval its report gives."""

from __future__ import annotations

import os

from brainsmith.builder.lattice import recorded_part

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
    out, a listed file outside the build and FINN's library."""
    from brainsmith.hardware.board.description import describe
    from brainsmith.hardware.board.top import TopError
    from brainsmith.hardware.listing import FILES
    from brainsmith.hardware.synthesis.layer_sources import MissingSources

    if not os.path.isfile(os.path.join(run.output_dir, FILES)):
        return "its FIFOs were not sized by simulation (build.size_fifos), which stitches it"
    options = run.plan.build
    try:
        return describe(
            run.output_dir, model, part=recorded_part(options) or "", clock=options.clock,
            interval=interval,
        )  # fmt: skip
    except (MissingSources, TopError) as exc:
        return str(exc)


def write_design_of(run: BuildRun, model: ModelWrapper, report: BuildReport) -> None:
    """design.json, where ``run`` stitched a whole accelerator, its interval ``report``'s."""
    from brainsmith.hardware.board.description import interval_of, write_design

    design = described(run, model, interval_of(report.get("performance")))
    if not isinstance(design, str):
        write_design(run.output_dir, design)


__all__ = ["described", "write_design_of"]
