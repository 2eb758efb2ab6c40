"""The step loop: run each step with FINN's output contained, save its model, verify it,
and turn any failure into a BuildError that names the step (reports written first)."""

from __future__ import annotations

import os
import time
import traceback

from brainsmith import interrupts
from brainsmith.builder.blame import (
    Earlier,
    failing_transform,
    measure_rtl_arithmetic,
    verify_step,
)
from brainsmith.builder.failure import OUTPUT_ERRORS, fail, fail_output
from brainsmith.builder.lattice import family_resources
from brainsmith.builder.state import BuildRun
from brainsmith.errors import StepError
from brainsmith.files import DiskFull, disk_full, save_model
from brainsmith.frameworks.finn.env import contain_finn_output
from brainsmith.frameworks.finn.estimation.estimates import estimates
from brainsmith.frameworks.finn.estimation.finn_reports import RESOURCE_FILE
from brainsmith.frameworks.finn.facts import allowed_cycles
from brainsmith.frameworks.finn.layers import stamp
from brainsmith.frameworks.finn.tables import already_done, missing_tool
from brainsmith.metrics import span
from brainsmith.planning.shaping import Step
from brainsmith.planning.wiring import streams, wiring_error
from brainsmith.plugin.containment import PluginExit, contained
from brainsmith.report.contents import chart_resources, chart_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.wiring import Streams
    from brainsmith.verification.verifier import Verifier


def run_steps(
    run: BuildRun, steps: list[Step], model: ModelWrapper, verifier: Verifier | None
) -> ModelWrapper:
    """Run ``steps`` on ``model``; returns the last model."""
    last = _last_verifiable(steps)
    try:
        os.makedirs(run.path("intermediate_models"), exist_ok=True)
    except OSError as exc:
        fail_output(run, model, None, exc, "creating intermediate_models/")
    partitioned: dict[int, bool] = {}  # step index -> its model is the dataflow partition
    for index in _to_run(run, steps):
        step = steps[index]
        if _skipped(run, step, index, model):
            continue
        model = _run_step(run, step, index, model)
        partitioned[index] = run.context.dataflow_parent is not None
        detail = ""
        if verifier is not None and _verified(run, step, index, last):
            earlier = Earlier(steps, partitioned)
            detail = _verify_after(run, verifier, model, index, earlier, final=index == last)
        _finish_step(run, model, index, detail)
    return model


def _last_verifiable(steps: list[Step]) -> int:
    """The index of the last step the plan runs that can be verified; -1 if none."""
    runnable = [i for i, s in enumerate(steps) if not s.skip_reason and s.verifiable]
    return runnable[-1] if runnable else -1


def _to_run(run: BuildRun, steps: list[Step]) -> range:
    """The indices of the steps this run runs: after a checkpoint's, up to ``stop_after``."""
    first = len(run.resumed_from.records) if run.resumed_from is not None else 0
    stop = len(steps) if run.stop_after is None else min(run.stop_after, len(steps))
    return range(first, stop)


def _verified(run: BuildRun, step: Step, index: int, last: int) -> bool:
    """Whether the model after step ``index`` is verified: each verifiable step's with
    ``verify: each``, else the last verifiable step's (``last``)."""
    return step.verifiable and (run.verify == "each" or index == last)


def _skipped(run: BuildRun, step: Step, index: int, model: ModelWrapper) -> bool:
    """Record step ``index`` as skipped if it is: the plan skips it, or it is a FINN
    hardware step whose work is done or whose tool is needed and missing."""
    if not step.verifiable:  # a FINN hardware step: done, or its tool needed and missing?
        step.skip_reason = (
            step.skip_reason or already_done(step.name, model) or missing_tool(step.name, model)
        )
    if not step.skip_reason:
        return False
    record = run.records[index]
    record.status, record.reason = "skipped", step.skip_reason
    run.progress.finish(index, "skipped", detail=step.skip_reason)
    return True


def _run_step(run: BuildRun, step: Step, index: int, model: ModelWrapper) -> ModelWrapper:
    """Run one step with FINN's output in build.log; record its time and save its model.
    Any failure of the step fails the build, naming the step."""
    interrupts.check()
    run.progress.start(index)
    run.current = index
    run.build_log.step_started(index + 1, step.name)
    had_parent = run.context.dataflow_parent is not None
    before = streams(model, run.context.dataflow_parent)  # the step may change it in place
    began = time.perf_counter()
    try:  # contained(): a step calling sys.exit() fails like any other step
        traced = span(f"brainsmith.step {step.name}", step=step.name, index=index + 1)
        with interrupts.signal_first(), traced, contained(), contain_finn_output(run.build_log):
            function = step.function()
            model = function(model, run.cfg) if function is not None else model
    except StepError as exc:
        _step_refused(run, step, index, model, exc, had_parent)
    except DiskFull as exc:  # a disk the step's tools wrote to, named
        fail(run, model, index, exc.reason, exc.hint, exit_code=2)
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRORS and not disk_full(run.output_dir):
            _step_crashed(run, model, index, exc)
        fail_output(run, model, index, exc, "writing this step's files")
    except Exception as exc:  # any step failure becomes a BuildError
        _step_crashed(run, model, index, exc)
    record = run.records[index]
    record.seconds = round(time.perf_counter() - began, 4)
    if not had_parent:
        _adopt_finn_parent(run)
    record.model = _save_model(run, model, index, step.name, had_parent)
    _require_wiring(run, step, index, model, before)
    return model


def _step_refused(
    run: BuildRun, step: Step, index: int, model: ModelWrapper, exc: StepError, had_parent: bool
) -> NoReturn:
    """Fail step ``index`` with the reason it gave, its failing model saved if it has one."""
    hint = exc.hint
    if exc.model is not None:
        saved = _save_model(run, exc.model, index, f"{step.name}_failed", had_parent)
        hint += f"; the node names are those in {saved}"
    fail(run, model, index, exc.reason, hint)


def _require_wiring(
    run: BuildRun, step: Step, index: int, model: ModelWrapper, before: Streams
) -> None:
    """Fail step ``index`` if it left the model or the graph around the accelerator wired
    wrongly (``before``: where the hardware layers streamed before it)."""
    broken = wiring_error(step.name, model, run.context.dataflow_parent, before)
    if broken:
        hint = (
            f"the graph the step left is {run.records[index].model}; the step (a plugin's) or "
            "a blueprint transform in it may be the cause (remove it to see), else report it "
            "with the model"
        )
        fail(run, model, index, broken, hint)


def _verify_after(
    run: BuildRun,
    verifier: Verifier,
    model: ModelWrapper,
    index: int,
    earlier: Earlier,
    final: bool,
) -> str:
    """Verify the model after step ``index`` (``final``: the last step that can be verified,
    also simulated as RTL with verify: rtlsim); the detail the progress display shows."""
    detail = verify_step(run, verifier, model, index, earlier)
    if final:
        detail = "; ".join(
            filter(None, (detail, measure_rtl_arithmetic(run, verifier, model, index)))
        )
    if run.verify == "rtlsim" and final:
        from brainsmith.builder.rtl_check import rtl_check

        try:
            detail += "; " + rtl_check(run, verifier, model, index)
        except StepError as exc:
            fail(run, model, index, exc.reason, exc.hint)
        except DiskFull as exc:
            fail(run, model, index, exc.reason, exc.hint, exit_code=2)
    return detail


def _finish_step(run: BuildRun, model: ModelWrapper, index: int, detail: str) -> None:
    """Record step ``index`` as ok, once build.log took all of its output and no interrupt
    is pending; then hand the layers to the charts if the estimates are there."""
    if run.build_log.error is not None:
        fail_output(run, model, index, run.build_log.error, "writing build.log")
    interrupts.check()
    run.records[index].status = "ok"
    run.latest_model = model
    run.current = None
    run.progress.finish(index, "ok", run.records[index].seconds, detail)
    _start_charts(run, model)


def _step_crashed(run: BuildRun, model: ModelWrapper, index: int, exc: Exception) -> NoReturn:
    traceback.print_exc(file=run.build_log)
    reason = f"the step {exc}" if isinstance(exc, PluginExit) else f"{type(exc).__name__}: {exc}"
    transform, node = failing_transform(exc)
    if transform:
        reason = f"transform {transform} failed" + (f" on node {node}" if node else "")
        reason += f": {type(exc).__name__}: {exc}"
    fail(
        run,
        model,
        index,
        reason,
        f"see {run.path('build.log')} for FINN's output and the traceback; check the "
        "blueprint's kernels and options for this step"
        + (f" ({transform} does not handle the node as it is here)" if transform else ""),
    )


def _save_model(run: BuildRun, model: ModelWrapper, index: int, name: str, had_parent: bool) -> str:
    path = run.path("intermediate_models", f"{index + 1:02d}_{name}.onnx")
    stamp(model)  # which plugin provides each layer FINN does not have, for fresh processes
    try:
        save_model(model, path)
        if not had_parent and run.context.dataflow_parent is not None:
            parent = run.path("intermediate_models", "dataflow_parent.onnx")
            save_model(run.context.dataflow_parent, parent)
    except OSError as exc:
        fail_output(run, model, index, exc, f"writing {os.path.relpath(path, run.output_dir)}")
    return os.path.relpath(path, run.output_dir)


def _adopt_finn_parent(run: BuildRun) -> None:
    """FINN's own ``step_create_dataflow_partition`` returns the partition and saves the
    graph around it; take that graph as the build's dataflow parent, so later steps verify
    from the model's real (NCHW) inputs instead of the partition's (NHWC) ones."""
    from qonnx.core.modelwrapper import ModelWrapper

    if run.context.dataflow_parent is not None:
        return
    saved = os.path.join(str(run.cfg.get_intermediate_models_directory()), "dataflow_parent.onnx")
    if os.path.isfile(saved):
        run.context.dataflow_parent = ModelWrapper(saved)


def _start_charts(run: BuildRun, model: ModelWrapper) -> None:
    """Hand the layers to the chart worker as soon as the estimates exist."""
    resources = os.path.join(run.report_dir, RESOURCE_FILE)
    if run.charts is not None and run.charts.layers is None and os.path.isfile(resources):
        layers = estimates(run.report_dir, model)["layers"]
        options = run.plan.build
        allowed = allowed_cycles(options.target_fps, options.period_ns)
        family = family_resources(options, run.context.costed_part, model, layers, None)
        run.charts.submit(chart_rows(layers, family), allowed, chart_resources(family))
