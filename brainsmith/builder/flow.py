"""The step loop: run each step with FINN's output contained, save its model, verify it,
and turn any failure into a BuildError that names the step (reports written first)."""

from __future__ import annotations

import errno
import os
import time
import traceback
from typing import cast

from brainsmith.builder import interrupts
from brainsmith.builder.errors import BuildError
from brainsmith.builder.outdir import DISK_FULL, os_problem
from brainsmith.builder.state import BuildRun, Step
from brainsmith.errors import StepError
from brainsmith.files import save_model
from brainsmith.metrics import span
from brainsmith.plugin.containment import PluginExit, contained

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.records import Verification
    from brainsmith.builder.verify import Check, Verifier

    # Where an earlier step's saved model first differs: its index, and its failing checks
    # or the exception that stopped it from running
    Culprit = tuple[int, list[Check] | Exception]

OUTPUT_ERRORS = DISK_FULL | {errno.EROFS}  # the output folder's fault, not the step's


def run_steps(
    run: BuildRun, steps: list[Step], model: ModelWrapper, verifier: Verifier | None
) -> ModelWrapper:
    """Run ``steps`` on ``model``; returns the last model."""
    runnable = [i for i, s in enumerate(steps) if not s.skip_reason and s.verifiable]
    last = runnable[-1] if runnable else -1
    try:
        os.makedirs(run.path("intermediate_models"), exist_ok=True)
    except OSError as exc:
        fail_output(run, model, None, exc, "creating intermediate_models/")
    first = len(run.resumed_from.records) if run.resumed_from is not None else 0
    stop = len(steps) if run.stop_after is None else min(run.stop_after, len(steps))
    partitioned: dict[int, bool] = {}  # step index -> its model is the dataflow partition
    for index in range(first, stop):
        step = steps[index]
        if _skipped(run, step, index, model):
            continue
        model = _run_step(run, step, index, model)
        partitioned[index] = run.context.dataflow_parent is not None
        detail = ""
        if verifier is not None and step.verifiable and (run.verify == "each" or index == last):
            earlier = Earlier(steps, partitioned)
            detail = _verify_after(run, verifier, model, index, earlier, final=index == last)
        _finish_step(run, model, index, detail)
    return model


def _skipped(run: BuildRun, step: Step, index: int, model: ModelWrapper) -> bool:
    """Record step ``index`` as skipped if it is: the plan skips it, or it is a FINN
    hardware step whose tool is needed and missing."""
    from brainsmith.frameworks.finn.tables import missing_tool

    if not step.verifiable:  # a FINN hardware step: is its tool needed and missing?
        step.skip_reason = step.skip_reason or missing_tool(step.name, model)
    if not step.skip_reason:
        return False
    record = run.records[index]
    record.status, record.reason = "skipped", step.skip_reason
    run.progress.finish(index, "skipped", detail=step.skip_reason)
    return True


def _run_step(run: BuildRun, step: Step, index: int, model: ModelWrapper) -> ModelWrapper:
    """Run one step with FINN's output in build.log; record its time and save its model.
    Any failure of the step fails the build, naming the step."""
    from brainsmith.frameworks.finn.env import contain_finn_output

    interrupts.check()
    run.progress.start(index)
    run.current = index
    run.build_log.write(f"\n===== step {index + 1}: {step.name} =====\n")
    had_parent = run.context.dataflow_parent is not None
    began = time.perf_counter()
    try:  # contained(): a step calling sys.exit() fails like any other step
        traced = span(f"brainsmith.step {step.name}", step=step.name, index=index + 1)
        with interrupts.signal_first(), traced, contained(), contain_finn_output(run.build_log):
            function = step.function()
            model = function(model, run.cfg) if function is not None else model
    except StepError as exc:
        hint = exc.hint
        if exc.model is not None:
            saved = _save_model(run, exc.model, index, f"{step.name}_failed", had_parent)
            hint += f"; the node names are those in {saved}"
        fail(run, model, index, exc.reason, hint)
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
    return model


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
    detail = check(run, verifier, model, index, earlier)
    if run.verify == "rtlsim" and final:
        from brainsmith.builder.rtl_check import rtl_check

        try:
            detail += "; " + rtl_check(run, verifier, model, index)
        except StepError as exc:
            fail(run, model, index, exc.reason, exc.hint)
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


NODE_VARIABLES = ("node", "n", "consumer", "producer")


def failing_transform(exc: BaseException) -> tuple[str, str]:
    """The innermost graph transformation in ``exc``'s traceback and the node it was
    handling (read from its local variables), so a crash names both; ("", "") if none."""
    found = ("", "")
    frame_tb = exc.__traceback__
    while frame_tb is not None:
        scope = frame_tb.tb_frame.f_locals
        owner = scope.get("self")
        if owner is not None and any(
            c.__name__ == "Transformation" for c in type(owner).__mro__[1:]
        ):
            node = next(
                (scope[k] for k in NODE_VARIABLES if hasattr(scope.get(k), "op_type")), None
            )
            found = (type(owner).__name__, f"{node.name} ({node.op_type})" if node else "")
        frame_tb = frame_tb.tb_next
    return found


def _save_model(run: BuildRun, model: ModelWrapper, index: int, name: str, had_parent: bool) -> str:
    from brainsmith.frameworks.finn.layers import stamp

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
    from brainsmith.builder import report

    resources = os.path.join(run.report_dir, report.RESOURCE_FILE)
    if run.charts is not None and run.charts.layers is None and os.path.isfile(resources):
        layers = report.estimates(run.report_dir, model)["layers"]
        options = run.plan.build
        allowed = report.allowed_cycles(options.target_fps, options.clock_ns)
        run.charts.submit(report.chart_rows(layers), allowed)


class Earlier:
    """What ``check`` needs to trace a difference back: the steps, and which step indices
    of this run produced the dataflow partition rather than the whole graph."""

    def __init__(self, steps: list[Step], partitioned: dict[int, bool]) -> None:
        self.steps, self.partitioned = steps, partitioned

    def verifiable(self, index: int) -> bool:
        return index >= len(self.steps) or self.steps[index].verifiable


def check(
    run: BuildRun,
    verifier: Verifier,
    model: ModelWrapper,
    index: int,
    earlier: Earlier | None = None,
) -> str:
    """Verify the model after step ``index``; on a mismatch (or a model that cannot run),
    fail the first step whose saved model differs, traced back when earlier steps were not
    verified as they ran."""
    from brainsmith.builder.errors import option

    began = time.perf_counter()
    try:
        checks = _run_check(run, verifier, model, run.context.dataflow_parent)
    except OSError as exc:
        fail_output(run, model, index, exc, "writing the verification models")
    except Exception as exc:  # a model that cannot run fails its step
        traceback.print_exc(file=run.build_log)
        culprit = first_difference(run, verifier, index, earlier)
        _cannot_run(run, model, index, culprit, exc)
    generated, user = checks[0], checks[1:]
    result: Verification = {
        **generated.as_dict(),
        "seconds": round(time.perf_counter() - began, 4),
    }
    if user:
        result["user"] = user[0].as_dict()
    run.records[index].verification = result
    tolerance = f"tolerance atol {verifier.atol:g} + rtol {verifier.rtol:g}"
    if not generated.ok:
        culprit = first_difference(run, verifier, index, earlier)
        _differs(run, model, index, culprit, generated, tolerance)
    if user and not user[0].ok:
        expected = run.user_vectors[1] if run.user_vectors else ""
        fail(
            run,
            model,
            index,
            f"verification failed: outputs differ from {option('expected')} "
            f"{expected} by up to {user[0].max_error:.4g} ({tolerance}) on "
            f"{user[0].samples} user inputs",
            f"check that the {option('expected')} file was produced by this model from the "
            f"{option('input')} file (the model matched the cleaned QONNX model on generated "
            "inputs)",
        )
    if generated.unchanged:
        return "unchanged, not re-run"
    text = f"max err {generated.max_error:.2g} ({generated.samples} inputs)"
    return text + (f", user {user[0].max_error:.2g}" if user else "")


def _run_check(
    run: BuildRun, verifier: Verifier, model: ModelWrapper, parent: ModelWrapper | None
) -> list[Check]:
    from brainsmith.frameworks.finn.env import contain_finn_output

    workdir = run.path("finn", "verification")
    os.makedirs(workdir, exist_ok=True)
    with contain_finn_output(run.build_log):
        return verifier.check(model, parent, workdir)


def first_difference(
    run: BuildRun, verifier: Verifier, index: int, earlier: Earlier | None
) -> Culprit | None:
    """(index, checks or the exception) of the first earlier step whose saved model does
    not compute what the reference computes, found by bisection over the steps that were
    not verified as they ran; None when the steps before ``index`` all agree (or were all
    verified). A step that cannot run counts as differing."""
    if earlier is None:
        return None
    candidates = [
        i
        for i, r in enumerate(run.records[:index])
        if r.status == "ok" and r.model and r.verification is None and earlier.verifiable(i)
    ]
    found: Culprit | None = None
    low, high = 0, len(candidates) - 1
    while low <= high:
        middle = (low + high) // 2
        outcome = _check_saved(run, verifier, candidates[middle], earlier)
        if outcome is None:
            low = middle + 1
        else:
            found, high = (candidates[middle], outcome), middle - 1
    return found


def _check_saved(
    run: BuildRun, verifier: Verifier, index: int, earlier: Earlier
) -> list[Check] | Exception | None:
    """None when step ``index``'s saved model computes what the reference does; else the
    failing checks or the exception that stopped it from running."""
    from qonnx.core.modelwrapper import ModelWrapper

    try:
        model = ModelWrapper(run.path(run.records[index].model))
        parent = _parent_of(run, model, index, earlier)
        checks = _run_check(run, verifier, model, parent)
    except Exception as exc:  # it cannot run: the first difference is here or before
        traceback.print_exc(file=run.build_log)
        return exc
    return None if checks[0].ok else checks


def _parent_of(
    run: BuildRun, model: ModelWrapper, index: int, earlier: Earlier
) -> ModelWrapper | None:
    """The dataflow parent to run step ``index``'s model in, or None for a whole graph (a
    checkpoint's steps: the model is the partition when its inputs and outputs are the
    partition node's)."""
    parent = run.context.dataflow_parent
    if parent is None or index in earlier.partitioned:
        return parent if earlier.partitioned.get(index) else None
    for node in parent.get_nodes_by_op_type("StreamingDataflowPartition"):
        ins = [i.name for i in model.graph.input if model.get_initializer(i.name) is None]
        if ins == list(node.input) and [o.name for o in model.graph.output] == list(node.output):
            return parent
    return None


def _traced(run: BuildRun, index: int, culprit: Culprit | None) -> tuple[int, str]:
    """The step to blame and how it was found."""
    if culprit is None or culprit[0] == index:
        return index, ""
    found = run.records[index].name
    return culprit[0], (
        f"; found when the model after step '{found}' was verified (build.verify: "
        f"{run.verify}) and traced back to this step through the saved models"
    )


def _differs(
    run: BuildRun,
    model: ModelWrapper,
    index: int,
    culprit: Culprit | None,
    generated: Check,
    tolerance: str,
) -> NoReturn:
    blamed, how = _traced(run, index, culprit)
    worst = generated
    if blamed != index:  # blamed on an earlier step: there is a culprit
        outcome = cast("Culprit", culprit)[1]
        if isinstance(outcome, Exception):
            _cannot_run(run, model, index, culprit, outcome)
        worst = outcome[0]
        _also_failed(run, index, blamed)
        record = run.records[blamed]
        record.verification = worst.as_dict()
    fail(
        run,
        model,
        blamed,
        f"verification failed: outputs differ from the cleaned QONNX model by up to "
        f"{worst.max_error:.4g} ({tolerance}) on {worst.samples} generated inputs{how}",
        f"this step changed what the model computes: compare {run.records[blamed].model} "
        f"with {_previous_model(run, blamed)} and inspect the nodes this step added or "
        "changed, and the transforms and kernels of the blueprint it applies",
    )


def _cannot_run(
    run: BuildRun, model: ModelWrapper, index: int, culprit: Culprit | None, exc: BaseException
) -> NoReturn:
    blamed, how = _traced(run, index, culprit)
    if blamed != index:  # blamed on an earlier step: there is a culprit
        outcome = cast("Culprit", culprit)[1]
        if not isinstance(outcome, Exception):  # the first difference is a mismatch
            _differs(run, model, index, culprit, outcome[0], _tolerance(run))
        exc = outcome
        _also_failed(run, index, blamed)
    fail(
        run,
        model,
        blamed,
        f"the model after this step cannot be executed for verification: "
        f"{type(exc).__name__}: {exc}{how}",
        _inspect_hint(run, blamed, exc),
    )


def _tolerance(run: BuildRun) -> str:
    options = run.plan.build
    return f"tolerance atol {options.verify_atol:g} + rtol {options.verify_rtol:g}"


def _also_failed(run: BuildRun, index: int, blamed: int) -> None:
    """The step whose verification found the difference fails too, naming the culprit."""
    record = run.records[index]
    record.status = "failed"
    record.reason = f"its output differs because step '{run.records[blamed].name}' changed it"
    run.progress.finish(index, "failed", detail=f"differs since {run.records[blamed].name}")


def _inspect_hint(run: BuildRun, index: int, exc: BaseException) -> str:
    """What to look at when step ``index``'s model cannot run in Python."""
    saved = run.records[index].model or "the model after this step"
    text = str(exc)
    if "QONNX datatype" in text or "finn datatype" in text:
        tensor = text.rpartition(" for input ")[2] or "the tensor named above"
        return (
            f"tensor {tensor} in {saved} holds values its datatype annotation does not "
            "allow: inspect the node that produces it and the datatype this step set on it "
            f"(build.log has the traceback; the previous model is {_previous_model(run, index)})"
        )
    node = failing_node(exc)
    where = f"node {node} in {saved}" if node else saved
    return (
        f"inspect {where}: the layer cannot run in Python as it is there (build.log has "
        f"the traceback; the previous model is {_previous_model(run, index)})"
    )


def failing_node(exc: BaseException) -> str:
    """The innermost node (name and op type) a traceback frame of ``exc`` was handling."""
    found = ""
    frame_tb = exc.__traceback__
    while frame_tb is not None:
        scope = frame_tb.tb_frame.f_locals
        node = next((scope[k] for k in NODE_VARIABLES if hasattr(scope.get(k), "op_type")), None)
        if node is not None:
            found = f"{node.name} ({node.op_type})"
        frame_tb = frame_tb.tb_next
    return found


def _previous_model(run: BuildRun, index: int) -> str:
    for record in reversed(run.records[:index]):
        if record.model:
            return record.model
    return run.model_path or "the input model"


def disk_full(folder: str) -> bool:
    """Less than 1 MiB left where ``folder`` is (some writers report a full disk without
    an errno: "2048 requested and 992 written")."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 1024 * 1024


def fail_output(
    run: BuildRun, model: ModelWrapper | None, index: int | None, exc: OSError, what: str
) -> NoReturn:
    """Fail for an OSError of the output folder (a full disk, ...): exit code 2."""
    if exc.errno is None and disk_full(run.output_dir):
        exc = OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {exc}")
    reason, hint = os_problem(exc)
    fail(run, model, index, f"{what} in {run.output_dir}: {reason}", hint, exit_code=2)


def fail(
    run: BuildRun,
    model: ModelWrapper | None,
    index: int | None,
    reason: str,
    hint: str,
    exit_code: int = 1,
) -> NoReturn:
    """Record step ``index`` (None: after the steps) as failed, write the reports, raise."""
    from brainsmith.builder.report import write_reports

    name = "finish"
    if index is not None:
        record = run.records[index]
        record.status, record.reason, name = "failed", reason, record.name
        short = reason if len(reason) < 70 else reason[:67] + "..."
        run.progress.finish(index, "failed", detail=short)
    error = BuildError(name, reason, hint, exit_code=exit_code, report=run.path("report.json"))
    with interrupts.blocked():
        try:
            write_reports(run, model, "failed", error=error)
        except OSError as exc:
            error.report = None
            error.reason += f" (report.json could not be written either: {os_problem(exc)[0]})"
        interrupts.settled()
    raise error
