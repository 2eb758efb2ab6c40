"""The step loop: run each step with FINN's output contained, save its model, verify it,
and turn any failure into a BuildError that names the step (reports written first)."""

from __future__ import annotations

import os
import time
import traceback

from brainsmith.builder.errors import BuildError, StepError
from brainsmith.builder.state import BuildRun, Step


def run_steps(run: BuildRun, steps: list[Step], model, verifier):
    """Run ``steps`` on ``model``; returns the last model."""
    from brainsmith.builder.finn_tables import missing_tool
    from brainsmith.frameworks.finn_env import contain_finn_output

    runnable = [i for i, s in enumerate(steps) if not s.skip_reason and s.verifiable]
    last = runnable[-1] if runnable else -1
    os.makedirs(run.path("intermediate_models"), exist_ok=True)
    first = len(run.start.records) if run.start is not None else 0
    stop = len(steps) if run.stop_after is None else min(run.stop_after, len(steps))
    for index in range(first, stop):
        step, record = steps[index], run.records[index]
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
            hint = exc.hint
            if exc.model is not None:
                saved = _save_model(run, exc.model, index, f"{step.name}_failed", had_parent)
                hint += f"; the node names are those in {saved}"
            fail(run, model, index, exc.reason, hint)
        except KeyboardInterrupt:
            fail(run, model, index, "interrupted", "run the build again", exit_code=130)
        except Exception as exc:  # any step failure becomes a BuildError
            traceback.print_exc(file=run.log)
            fail(
                run,
                model,
                index,
                f"{type(exc).__name__}: {exc}",
                f"see {run.path('build.log')} for FINN's output and the traceback; check the "
                "blueprint's kernels and options for this step",
            )
        record.seconds = round(time.perf_counter() - began, 4)
        if not had_parent:
            _adopt_finn_parent(run)
        record.model = _save_model(run, model, index, step.name, had_parent)
        detail = ""
        if verifier is not None and step.verifiable and (run.verify == "each" or index == last):
            detail = check(run, verifier, model, index)
        record.status = "ok"
        run.progress.finish(index, "ok", record.seconds, detail)
        _start_charts(run, model)
    return model


def _save_model(run: BuildRun, model, index: int, name: str, had_parent: bool) -> str:
    path = run.path("intermediate_models", f"{index + 1:02d}_{name}.onnx")
    model.save(path)
    if not had_parent and run.context.dataflow_parent is not None:
        run.context.dataflow_parent.save(run.path("intermediate_models", "dataflow_parent.onnx"))
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


def _start_charts(run: BuildRun, model) -> None:
    """Hand the layers to the chart worker as soon as the estimates exist."""
    from brainsmith.builder import report

    resources = os.path.join(run.report_dir, report.RESOURCE_FILE)
    if run.charts is not None and run.charts.layers is None and os.path.isfile(resources):
        run.charts.submit(report.estimates(run.report_dir, model)["layers"])


def check(run: BuildRun, verifier, model, index: int) -> str:
    """Verify the model after step ``index``; fail the step on a mismatch."""
    from brainsmith.frameworks.finn_env import contain_finn_output

    workdir = run.path("finn", "verification")
    os.makedirs(workdir, exist_ok=True)
    began = time.perf_counter()
    try:
        with contain_finn_output(run.log):
            checks = verifier.check(model, run.context.dataflow_parent, workdir)
    except Exception as exc:  # a model that cannot run fails its step
        traceback.print_exc(file=run.log)
        fail(
            run,
            model,
            index,
            f"the model after this step cannot be executed for verification: "
            f"{type(exc).__name__}: {exc}",
            "see build.log; "
            + (
                "set build.verify: final to verify only the finished design"
                if run.verify == "each"
                else "set build.verify: none to build without verifying"
            ),
        )
    generated, user = checks[0], checks[1:]
    result = {**generated.as_dict(), "seconds": round(time.perf_counter() - began, 4)}
    if user:
        result["user"] = user[0].as_dict()
    run.records[index].verification = result
    tolerance = f"tolerance atol {verifier.atol:g} + rtol {verifier.rtol:g}"
    if not generated.ok:
        fail(
            run,
            model,
            index,
            f"verification failed: outputs differ from the cleaned QONNX model by up to "
            f"{generated.max_error:.4g} ({tolerance}) on {generated.samples} generated inputs",
            f"this step changed what the model computes; compare {run.records[index].model} "
            "with the previous step's model, and check the blueprint's transforms and kernels "
            "(known float rounding: raise build.verify_atol / verify_rtol)",
        )
    if user and not user[0].ok:
        fail(
            run,
            model,
            index,
            f"verification failed: outputs differ from --expected {run.user_vectors[1]} "
            f"by up to {user[0].max_error:.4g} ({tolerance}) on {user[0].samples} user inputs",
            "check that the expected file was produced by this model from the --input "
            "file (the model matched the cleaned QONNX model on generated inputs)",
        )
    text = f"max err {generated.max_error:.2g} ({generated.samples} inputs)"
    return text + (f", user {user[0].max_error:.2g}" if user else "")


def fail(run: BuildRun, model, index: int, reason: str, hint: str, exit_code: int = 1) -> None:
    """Record step ``index`` as failed, write the reports, raise its BuildError."""
    from brainsmith.builder.report import write_reports

    record = run.records[index]
    record.status, record.reason = "failed", reason
    run.progress.finish(index, "failed", detail=reason if len(reason) < 70 else reason[:67] + "...")
    error = BuildError(
        record.name, reason, hint, exit_code=exit_code, report=run.path("report.json")
    )
    write_reports(run, model, error=error)
    raise error
