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
import sys
import time
import traceback
from dataclasses import replace

from brainsmith.builder.checkpoint import Checkpoint, continue_from, make_checkpoint
from brainsmith.builder.context import BuildContext, attach
from brainsmith.builder.errors import BuildError
from brainsmith.builder.flow import run_steps
from brainsmith.builder.outdir import default_output_dir, prepare_output_dir
from brainsmith.builder.plan import BuildPlan, PlanError, load_plan
from brainsmith.builder.progress import Progress
from brainsmith.builder.report import write_reports
from brainsmith.builder.state import BuildResult, BuildRun, Step, StepRecord


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
    start: Checkpoint | None = None,
    stop_after: int | None = None,
) -> BuildResult:
    """Build ``model`` (path or ModelWrapper) with ``blueprint`` (path, Blueprint or BuildPlan).

    ``output_dir`` defaults to the blueprint's ``build.output_dir``, else a fresh
    ``build-out/<name>-<timestamp>``. A non-empty folder is refused unless ``force``
    (which moves it aside). ``verify`` overrides the blueprint's each | final | none;
    ``input_npy``/``expected_npy`` add the user's own vectors to every check. Raises
    BuildError naming the step, the reason and what to try.

    ``stop_after=N`` runs only the first N steps and writes a checkpoint instead of the
    final model and reports (``result.checkpoint``); ``start=checkpoint`` continues such a
    build, ``model`` still being the original model (the verification reference). See
    ``brainsmith.builder.checkpoint``.
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
    run = BuildRun(
        plan,
        os.path.abspath(folder),
        str(model_path),
        display,
        plan.options.verify,
        (str(input_npy), str(expected_npy)) if input_npy else None,
        moved,
        started,
        start=start,
        stop_after=stop_after,
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


def _execute(run: BuildRun, model) -> BuildResult:
    from brainsmith.builder.charts import ChartWorker
    from brainsmith.frameworks.finn_env import contain_finn_output, generated_code_dir

    # The helper process draws while FINN loads; where FINN is loaded already, draw here.
    if "finn" not in sys.modules and run.stop_after is None:
        run.charts = ChartWorker()
    run.progress.note("loading FINN and the model ...")
    run.log = open(os.path.join(run.output_dir, "build.log"), "w")  # noqa: SIM115
    finn_dir = os.path.join(run.output_dir, "finn")
    with generated_code_dir(os.path.join(finn_dir, "build")):
        with contain_finn_output(run.log):
            steps, model, verifier = _setup(run, model, finn_dir)
        setup_seconds = time.perf_counter() - run.started
        model = run_steps(run, steps, model, verifier)
        return _finish(run, model, setup_seconds)


def _setup(run: BuildRun, model, finn_dir: str):
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
        if run.start is not None:
            model = continue_from(run, run.start, steps)
    except BuildError as exc:
        write_reports(run, None, error=exc)
        raise
    except Exception as exc:  # a setup problem of any kind is reported the same way
        traceback.print_exc(file=run.log)
        error = BuildError(
            "setup",
            f"{type(exc).__name__}: {exc}",
            f"see {os.path.join(run.output_dir, 'build.log')}",
            exit_code=2,
        )
        write_reports(run, None, error=error)
        raise error from exc
    return steps, model, verifier


def _resolve_steps(plan: BuildPlan) -> list[Step]:
    from brainsmith.builder.finn_tables import TOOL_STEPS
    from brainsmith.plugin.core import get_registry
    from brainsmith.plugin.errors import PluginError

    registry = get_registry()
    steps = []
    for name in plan.steps:
        try:
            spec = registry.find("step", name)
            tool_step = spec.framework == "finn" and spec.name in TOOL_STEPS
            missing = [t for t in spec.metadata.get("tools", []) if shutil.which(t) is None]
            step = Step(spec.name, spec.qualified_name, verifiable=not tool_step)
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

    from brainsmith.builder.finn_tables import STEP_OUTPUTS

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
        # RTL-only matrix kernels need separate threshold layers; FINN's own steps then agree.
        standalone_thresholds=plan.needs_standalone_thresholds(),
    )
    try:
        cfg._resolve_fpga_part()
    except FINNConfigurationError as exc:
        raise BuildError(
            "setup", str(exc), "set build.fpga_part, or a board FINN knows", exit_code=2
        ) from exc
    return cfg


def _verifier(run: BuildRun, model):
    if run.verify == "none" and run.user_vectors is None:
        return None
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.builder.verify import VectorError, Verifier, load_user_vectors

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
    options = run.plan.options
    return Verifier(
        reference,
        options.verify_samples,
        seed=0,
        user=user,
        atol=options.verify_atol,
        rtol=options.verify_rtol,
    )


def _finish(run: BuildRun, model, setup_seconds: float) -> BuildResult:
    if run.stop_after is not None:
        checkpoint = make_checkpoint(run, model)
        report = {
            "name": run.plan.name,
            "status": "stopped",
            "steps": [r.as_dict() for r in run.records],
        }
        return BuildResult(run.output_dir, report, model, checkpoint=checkpoint)
    final = os.path.join(run.output_dir, "final.onnx")
    model.save(final)
    parent = run.context.dataflow_parent
    if parent is not None:
        from qonnx.custom_op.registry import getCustomOp

        wrapper = copy.deepcopy(parent)
        for node in wrapper.get_nodes_by_op_type("StreamingDataflowPartition"):
            getCustomOp(node).set_nodeattr("model", final)
        wrapper.save(os.path.join(run.output_dir, "final_parent.onnx"))
    report = write_reports(run, model, setup_seconds=setup_seconds)
    return BuildResult(
        run.output_dir, report, model, run.path("report.json"), run.path("report.html")
    )
