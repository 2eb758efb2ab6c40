"""``brainsmith.build()``: run a blueprint's steps on a QONNX model, verify, and report.

Output folder layout::

    report.json  report.html  build.log      status, steps, estimates; FINN's output
    final.onnx   final_parent.onnx           the accelerator; the whole graph around it
    intermediate_models/NN_<step>.onnx       the model after each step
    finn/                                    FINN's own reports and generated code
"""

from __future__ import annotations

import copy
import os
import shutil
import time
import traceback
from dataclasses import dataclass, field, replace

from brainsmith.build.context import BuildContext, attach
from brainsmith.build.errors import BuildError, StepError
from brainsmith.build.outdir import default_output_dir, prepare_output_dir
from brainsmith.build.plan import BuildPlan, PlanError, load_plan
from brainsmith.build.progress import Progress


@dataclass
class StepRecord:
    """What happened in one step, as written to report.json."""

    name: str
    plugin: str
    status: str = "pending"  # ok | skipped | failed | pending
    seconds: float | None = None
    verification: dict | None = None
    reason: str = ""
    model: str = ""

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class BuildResult:
    """A finished build: its folder, report (as in report.json) and final model."""

    output_dir: str
    report: dict
    model: object = None  # the final ModelWrapper
    report_path: str = ""
    html_path: str = ""

    @property
    def status(self) -> str:
        return self.report["status"]

    @property
    def performance(self) -> dict:
        return self.report.get("performance", {})

    @property
    def totals(self) -> dict:
        return self.report.get("totals", {})


@dataclass
class _Step:
    name: str
    plugin: str
    fn: object = None
    skip_reason: str = ""
    verifiable: bool = True


@dataclass
class _Run:
    plan: BuildPlan
    output_dir: str
    model_path: str
    progress: Progress
    verify: str
    user_vectors: tuple[str, str] | None
    moved_aside: str | None
    started: float = field(default_factory=time.perf_counter)
    records: list[StepRecord] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    log: object = None
    cfg: object = None
    context: BuildContext | None = None
    charts: object = None  # ChartWorker


def build(
    model,
    blueprint,
    output_dir: str | None = None,
    *,
    input_npy: str | None = None,
    expected_npy: str | None = None,
    force: bool = False,
    verify: str | None = None,
    progress: bool = False,
) -> BuildResult:
    """Build ``model`` (path or ModelWrapper) with ``blueprint`` (path, Blueprint or BuildPlan).

    ``output_dir`` defaults to the blueprint's ``build.output_dir``, else a fresh
    ``build-out/<name>-<timestamp>``. A non-empty folder is refused unless ``force``
    (which moves it aside). ``verify`` overrides the blueprint's each | final | none;
    ``input_npy``/``expected_npy`` add the user's own vectors to every check. Raises
    BuildError naming the step, the reason and what to try.
    """
    started = time.perf_counter()
    plan = _plan(blueprint, verify)
    if (input_npy is None) != (expected_npy is None):
        raise BuildError(
            "setup",
            "--input and --expected must be given together",
            "pass both files, or neither",
            exit_code=2,
        )
    for path in (p for p in (input_npy, expected_npy) if p):
        if not os.path.isfile(path):
            raise BuildError("setup", f"file {path} does not exist", "check the path", exit_code=2)
    model_path = model if isinstance(model, str | os.PathLike) else ""
    if model_path and not os.path.isfile(model_path):
        raise BuildError(
            "setup",
            f"model file {model_path} does not exist",
            "check the path of the QONNX model",
            exit_code=2,
        )
    folder = output_dir or plan.options.output_dir or default_output_dir(plan.name)
    moved = prepare_output_dir(folder, force)
    steps = [s for s in plan.steps]
    display = (
        Progress(steps, title=f"brainsmith build {plan.name} -> {folder}")
        if progress
        else Progress.silent()
    )
    run = _Run(
        plan,
        os.path.abspath(folder),
        str(model_path),
        display,
        plan.options.verify,
        (str(input_npy), str(expected_npy)) if input_npy else None,
        moved,
        started,
    )
    try:
        return _execute(run, model)
    finally:
        display.close()
        if run.charts is not None:
            run.charts.close()
        if run.log is not None:
            run.log.close()


def _plan(blueprint, verify: str | None) -> BuildPlan:
    from brainsmith.plugin.errors import PluginError

    try:
        plan = load_plan(blueprint)
    except (PlanError, PluginError, OSError) as exc:
        raise BuildError(
            "setup",
            f"blueprint {blueprint}: {exc}",
            "fix the blueprint (brainsmith blueprint validate FILE)",
            exit_code=2,
        ) from exc
    if plan.options is None:
        raise BuildError(
            "setup",
            f"blueprint {plan.name} has no build: section",
            "add build: with fpga_part (or board) and target_fps",
            exit_code=2,
        )
    if verify is not None:
        if verify not in ("each", "final", "none"):
            raise BuildError(
                "setup", f"verify must be each, final or none, not {verify!r}", exit_code=2
            )
        plan = replace(plan, options=replace(plan.options, verify=verify))
    return plan


def _execute(run: _Run, model) -> BuildResult:
    from brainsmith.build.charts import ChartWorker
    from brainsmith.frameworks.finn_env import contain_finn_output, generated_code_dir

    run.charts = ChartWorker()
    run.progress.note("loading FINN and the model ...")
    run.log = open(os.path.join(run.output_dir, "build.log"), "w")  # noqa: SIM115
    finn_dir = os.path.join(run.output_dir, "finn")
    with generated_code_dir(os.path.join(finn_dir, "build")):
        with contain_finn_output(run.log):
            steps, model, verifier = _setup(run, model, finn_dir)
        setup_seconds = time.perf_counter() - run.started
        model = _run_steps(run, steps, model, verifier)
        return _finish(run, model, setup_seconds)


def _setup(run: _Run, model, finn_dir: str):
    """Resolve steps, make the FINN config, load the model and the verification reference."""
    try:
        steps = _resolve_steps(run.plan)
        run.records = [StepRecord(s.name, s.plugin) for s in steps]
        run.progress.steps[:] = [s.name for s in steps]
        run.cfg = _finn_config(run.plan, finn_dir)
        run.context = BuildContext(run.plan)
        attach(run.cfg, run.context)
        from qonnx.core.modelwrapper import ModelWrapper

        model = (
            ModelWrapper(run.model_path)
            if run.model_path
            else ModelWrapper(copy.deepcopy(model.model))
        )
        verifier = _verifier(run, model)
    except BuildError as exc:
        _write_reports(run, None, error=exc)
        raise
    except Exception as exc:  # a setup problem of any kind is reported the same way
        traceback.print_exc(file=run.log)
        error = BuildError(
            "setup",
            f"{type(exc).__name__}: {exc}",
            f"see {os.path.join(run.output_dir, 'build.log')}",
            exit_code=2,
        )
        _write_reports(run, None, error=error)
        raise error from exc
    return steps, model, verifier


def _resolve_steps(plan: BuildPlan) -> list[_Step]:
    from brainsmith.build.finn_tables import TOOL_STEPS
    from brainsmith.plugin.core import get_registry
    from brainsmith.plugin.errors import PluginError

    registry = get_registry()
    steps = []
    for name in plan.steps:
        try:
            spec = registry.find("step", name)
            tool_step = spec.framework == "finn" and spec.name in TOOL_STEPS
            missing = [t for t in spec.metadata.get("tools", []) if shutil.which(t) is None]
            step = _Step(spec.name, spec.qualified_name, verifiable=not tool_step)
            if missing:
                step.skip_reason = f"needs {', '.join(missing)} on PATH"
            else:
                step.fn = registry.load(spec)
        except PluginError as exc:
            raise BuildError("setup", str(exc), "fix the blueprint's steps", exit_code=2) from exc
        steps.append(step)
    return steps


def _finn_config(plan: BuildPlan, finn_dir: str):
    from brainsmith.frameworks.finn_env import prepare_finn

    prepare_finn()
    import finn.builder.build_dataflow_steps  # noqa: F401 - import FINN during setup, not in a step
    from finn.builder.build_dataflow_config import DataflowBuildConfig, DataflowOutputType
    from finn.util.exception import FINNConfigurationError

    from brainsmith.build.finn_tables import STEP_OUTPUTS

    options = plan.options
    wanted = ["estimate_reports"]
    for name in plan.steps:
        wanted += STEP_OUTPUTS.get(name.rpartition(":")[2], ())
    outputs = [DataflowOutputType(value) for value in dict.fromkeys(wanted)]
    cfg = DataflowBuildConfig(
        output_dir=finn_dir,
        synth_clk_period_ns=float(options.clock_ns),
        fpga_part=options.fpga_part,
        board=options.board,
        target_fps=int(options.target_fps) if options.target_fps else None,
        folding_config_file=options.folding_config,
        specialize_layers_config_file=options.specialize_config,
        generate_outputs=outputs,
    )
    try:
        cfg._resolve_fpga_part()
    except FINNConfigurationError as exc:
        raise BuildError(
            "setup", str(exc), "set build.fpga_part, or a board FINN knows", exit_code=2
        ) from exc
    return cfg


def _verifier(run: _Run, model):
    if run.verify == "none" and run.user_vectors is None:
        return None
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.build.verify import VectorError, Verifier, load_user_vectors

    reference = cleanup_model(copy.deepcopy(model))
    user = None
    if run.user_vectors is not None:
        try:
            user = load_user_vectors(reference, *run.user_vectors)
        except (VectorError, ValueError, OSError) as exc:
            raise BuildError(
                "setup",
                str(exc),
                "give vectors shaped like the model's input "
                "and output (a leading sample axis is fine)",
                exit_code=2,
            ) from exc
    return Verifier(reference, run.plan.options.verify_samples, seed=0, user=user)


def _run_steps(run: _Run, steps: list[_Step], model, verifier):
    from brainsmith.build.finn_tables import missing_tool
    from brainsmith.frameworks.finn_env import contain_finn_output

    runnable = [i for i, s in enumerate(steps) if not s.skip_reason and s.verifiable]
    last = runnable[-1] if runnable else -1
    models_dir = os.path.join(run.output_dir, "intermediate_models")
    os.makedirs(models_dir, exist_ok=True)
    for index, step in enumerate(steps):
        record = run.records[index]
        if not step.verifiable:  # a FINN hardware step: is its tool needed and missing?
            step.skip_reason = step.skip_reason or missing_tool(step.name, model)
        if step.skip_reason:
            record.status, record.reason = "skipped", step.skip_reason
            run.progress.finish(index, "skipped", detail=step.skip_reason)
            continue
        run.progress.start(index)
        run.log.write(f"\n===== step {index + 1}: {step.name} =====\n")
        had_parent = run.context.dataflow_parent is not None
        began = time.perf_counter()
        try:
            with contain_finn_output(run.log):
                model = step.fn(model, run.cfg)
        except StepError as exc:
            _fail(run, model, index, exc.reason, exc.hint)
        except KeyboardInterrupt:
            _fail(run, model, index, "interrupted", "run the build again", exit_code=130)
        except Exception as exc:  # any step failure becomes a BuildError
            traceback.print_exc(file=run.log)
            _fail(
                run,
                model,
                index,
                f"{type(exc).__name__}: {exc}",
                f"see {os.path.join(run.output_dir, 'build.log')} for FINN's output and the "
                "traceback; check the blueprint's kernels and options for this step",
            )
        record.seconds = round(time.perf_counter() - began, 4)
        record.model = _save_step_model(run, model, models_dir, index, step.name, had_parent)
        detail = ""
        wanted = run.verify == "each" or index == last
        if verifier is not None and step.verifiable and wanted:
            detail = _check(run, verifier, model, index)
        record.status = "ok"
        run.progress.finish(index, "ok", record.seconds, detail)
        _start_charts(run, model)
    return model


def _start_charts(run: _Run, model) -> None:
    """Hand the layers to the chart worker as soon as the estimates exist."""
    from brainsmith.build import report as reports

    if run.charts.layers is None and os.path.isfile(
        os.path.join(_report_dir(run), reports.RESOURCE_FILE)
    ):
        run.charts.submit(reports.estimates(_report_dir(run), model)["layers"])


def _report_dir(run: _Run) -> str:
    return os.path.join(run.output_dir, "finn", "report")


def _save_step_model(run: _Run, model, folder: str, index: int, name: str, had_parent: bool) -> str:
    path = os.path.join(folder, f"{index + 1:02d}_{name}.onnx")
    model.save(path)
    if not had_parent and run.context.dataflow_parent is not None:
        run.context.dataflow_parent.save(os.path.join(folder, "dataflow_parent.onnx"))
    return os.path.relpath(path, run.output_dir)


def _check(run: _Run, verifier, model, index: int) -> str:
    from brainsmith.build.verify import ATOL, RTOL
    from brainsmith.frameworks.finn_env import contain_finn_output

    workdir = os.path.join(run.output_dir, "finn", "verification")
    os.makedirs(workdir, exist_ok=True)
    began = time.perf_counter()
    try:
        with contain_finn_output(run.log):
            checks = verifier.check(model, run.context.dataflow_parent, workdir)
    except Exception as exc:  # a model that cannot run fails its step
        traceback.print_exc(file=run.log)
        _fail(
            run,
            model,
            index,
            f"the model after this step cannot be executed for "
            f"verification: {type(exc).__name__}: {exc}",
            "see build.log; set build.verify: final or none to verify less often",
        )
    generated = checks[0]
    result = {**generated.as_dict(), "seconds": round(time.perf_counter() - began, 4)}
    for check in checks[1:]:
        result["user"] = check.as_dict()
    run.records[index].verification = result
    tolerance = f"tolerance atol {ATOL:g} + rtol {RTOL:g}"
    step_model = run.records[index].model
    if not generated.ok:
        _fail(
            run,
            model,
            index,
            f"verification failed: outputs differ from the cleaned QONNX model by up to "
            f"{generated.max_error:.4g} ({tolerance}) on {generated.samples} generated inputs",
            f"this step changed what the model computes; compare {step_model} with the "
            "previous step's model, and check the blueprint's transforms and kernels",
        )
    for check in checks[1:]:
        if not check.ok:
            _fail(
                run,
                model,
                index,
                f"verification failed: outputs differ from --expected {run.user_vectors[1]} "
                f"by up to {check.max_error:.4g} ({tolerance}) on {check.samples} user inputs",
                "check that the expected file was produced by this model from the --input "
                "file (the model matched the cleaned QONNX model on generated inputs)",
            )
    text = f"max err {generated.max_error:.2g} ({generated.samples} inputs)"
    if len(checks) > 1:
        text += f", user {checks[1].max_error:.2g}"
    return text


def _fail(run: _Run, model, index: int, reason: str, hint: str, exit_code: int = 1) -> None:
    record = run.records[index]
    record.status, record.reason = "failed", reason
    run.progress.finish(index, "failed", detail=reason if len(reason) < 70 else reason[:67] + "...")
    error = BuildError(
        record.name,
        reason,
        hint,
        exit_code=exit_code,
        report=os.path.join(run.output_dir, "report.json"),
    )
    _write_reports(run, model, error=error)
    raise error


def _finish(run: _Run, model, setup_seconds: float) -> BuildResult:
    final = os.path.join(run.output_dir, "final.onnx")
    model.save(final)
    parent = run.context.dataflow_parent
    if parent is not None:
        from qonnx.custom_op.registry import getCustomOp

        wrapper = copy.deepcopy(parent)
        for node in wrapper.get_nodes_by_op_type("StreamingDataflowPartition"):
            getCustomOp(node).set_nodeattr("model", final)
        wrapper.save(os.path.join(run.output_dir, "final_parent.onnx"))
    report = _write_reports(run, model, setup_seconds=setup_seconds)
    return BuildResult(
        run.output_dir,
        report,
        model,
        os.path.join(run.output_dir, "report.json"),
        os.path.join(run.output_dir, "report.html"),
    )


def _write_reports(
    run: _Run, model, error: BuildError | None = None, setup_seconds: float | None = None
) -> dict:
    from brainsmith.build import report as reports

    options = run.plan.options
    report = {
        "name": run.plan.name,
        "status": "failed" if error else "ok",
        "error": {"step": error.step, "reason": error.reason, "hint": error.hint}
        if error
        else None,
        "model": os.path.abspath(run.model_path) if run.model_path else "",
        "blueprint_path": run.plan.path,
        "output_dir": run.output_dir,
        "moved_aside": run.moved_aside,
        "fpga_part": options.fpga_part or (run.cfg._resolve_fpga_part() if run.cfg else ""),
        "board": options.board,
        "clock_ns": options.clock_ns,
        "target_fps": options.target_fps,
        "verify": run.verify,
        "verify_samples": options.verify_samples,
        "seconds": round(time.perf_counter() - run.started, 3),
        "setup_seconds": round(setup_seconds, 3) if setup_seconds is not None else None,
        "steps": [r.as_dict() for r in run.records],
    }
    report.update(reports.estimates(_report_dir(run), model))
    report["blueprint"] = run.plan.blueprint
    report["versions"] = _versions()
    run.report = report
    reports.write_json(report, os.path.join(run.output_dir, "report.json"))
    try:
        charts = run.charts.charts(report["layers"]) if run.charts else None
        reports.write_html(report, os.path.join(run.output_dir, "report.html"), charts)
    except Exception:  # a chart problem must not hide the build's result
        if run.log is not None:
            traceback.print_exc(file=run.log)
    return report


def _versions() -> dict:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import brainsmith

    found = {"brainsmith": brainsmith.__version__}
    for label, dist in (("finn", "finn-plus"), ("qonnx", "qonnx")):
        try:
            found[label] = version(dist)
        except PackageNotFoundError:
            found[label] = "not installed"
    found["python"] = platform.python_version()
    return found
