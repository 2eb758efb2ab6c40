"""``brainsmith.build()``: run a blueprint's steps on a QONNX model, verify, and report.

Order: the blueprint, the model and the vectors are checked first (``intake``, no FINN,
nothing written); then the output folder is made and report.json says ``running``; FINN
loads; the steps run; the final models and the reports are written, report.json last.

Output folder layout::

    report.json  report.html  build.log      status, steps, estimates; FINN's output
    final.onnx   final_parent.onnx           the accelerator; the whole graph around it
    intermediate_models/NN_<step>.onnx       the model after each step
    finn/                                    FINN's own reports and generated code
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
import traceback
from dataclasses import replace
from typing import cast

from brainsmith import interrupts
from brainsmith.builder.bitstream import make_bitstream
from brainsmith.builder.checkpoint import Checkpoint, continue_from, make_checkpoint
from brainsmith.builder.failure import fail, fail_output
from brainsmith.builder.flow import run_steps
from brainsmith.builder.lattice import board_clock, check_bitstream_tools, costed_part
from brainsmith.builder.measure import check_synthesis, measure
from brainsmith.builder.outdir import (
    OutputFolder,
    default_output_dir,
    output_error,
    prepare_output_dir,
)
from brainsmith.builder.refold import chosen_clock, refold_notes, refolded
from brainsmith.builder.reporting import write_reports
from brainsmith.builder.result import BuildResult
from brainsmith.builder.state import BuildLog, BuildRun, StepRecord
from brainsmith.clock import mhz_text
from brainsmith.files import save_model
from brainsmith.folder_lock import FolderBusy, FolderLock
from brainsmith.frameworks.finn.env import contain_finn_output, generated_code_dir
from brainsmith.frameworks.finn.execution import HOST_ADVICE, HOST_EXECUTOR, host_problems
from brainsmith.frameworks.finn.layers import note_lines, stamp
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.hardware.rtlsim.manifest import record as record_hdl
from brainsmith.intake.model import check_inputs
from brainsmith.planning.context import BuildContext, running
from brainsmith.planning.errors import BuildError, option
from brainsmith.planning.shaping import Step, finn_config, resolve_steps, shape_plan
from brainsmith.report.charts import ChartWorker
from brainsmith.report.console import Progress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.plan import BlueprintSource, BuildPlan
    from brainsmith.planning.shaping import BuildOverrides
    from brainsmith.report_schema import StoppedReport
    from brainsmith.verification.verifier import Verifier


def build(
    model: str | os.PathLike[str] | ModelWrapper,
    blueprint: BlueprintSource | None = None,
    output_dir: str | None = None,
    *,
    input_npy: str | None = None,
    expected_npy: str | None = None,
    force: bool = False,
    verify: str | None = None,
    options: BuildOverrides | None = None,
    prefer: str | None = None,
    progress: bool = False,
    start: Checkpoint | None = None,
    stop_after: int | None = None,
    exclude: Sequence[str] = (),
    started: float | None = None,
) -> BuildResult:
    """Build ``model`` (path or ModelWrapper) with ``blueprint`` (path, Blueprint or BuildPlan;
    None: the default blueprint, ``shaping.DEFAULT_BLUEPRINT``).

    ``output_dir`` defaults to the blueprint's ``build.output_dir``, else a fresh
    ``build-out/<name>-<timestamp>``. A non-empty folder is refused unless ``force`` and
    brainsmith made it (then it is moved aside). ``verify`` overrides the blueprint's
    each | final | rtlsim | none, ``options`` its ``build:`` options (``{"fpga_part": ...,
    "target_fps": ...}``), ``prefer`` its ``hw_compiler.prefer`` and ``exclude`` adds
    kernels (names) to its ``hw_compiler.exclude``;
    ``input_npy``/``expected_npy`` add the user's own vectors to every
    check. Raises BuildError naming the step, the reason and what to try; SIGINT/SIGTERM
    end the build with ``status: interrupted`` (or no folder, if nothing was made yet).

    ``stop_after=N`` runs only the first N steps and writes a checkpoint instead of the
    final model and reports (``result.checkpoint``); ``start=checkpoint`` continues such a
    build, ``model`` still being the original model (the verification reference). See
    ``brainsmith.builder.checkpoint``.

    The build's time counts from ``started`` (``time.perf_counter()`` when the command
    began: ``brainsmith build`` gives its process' start), else from this call.
    """
    given = dict(options or {})
    began = time.perf_counter() if started is None else started

    def once(
        folder: str | None,
        clock: dict[str, float],
        refolds: list[dict[str, object]],
        notes: list[str],
    ) -> BuildResult:
        return _build_once(
            model, blueprint, folder, input_npy=input_npy, expected_npy=expected_npy,
            force=force and not refolds, verify=verify, options={**given, **clock},
            prefer=prefer, progress=progress, start=start, stop_after=stop_after,
            exclude=exclude, refolds=refolds, began=began, notes=notes,
        )  # fmt: skip

    first = once(output_dir, {}, [], [])
    chosen = chosen_clock(first.report)
    return refolded(first, lambda clock_ns, rounds: once(
        first.output_dir, {"clock_ns": clock_ns}, rounds, refold_notes(chosen, rounds, clock_ns)
    ))  # fmt: skip


def _build_once(
    model: str | os.PathLike[str] | ModelWrapper,
    blueprint: BlueprintSource | None,
    output_dir: str | None,
    *,
    input_npy: str | None,
    expected_npy: str | None,
    force: bool,
    verify: str | None,
    options: BuildOverrides | None,
    prefer: str | None,
    progress: bool,
    start: Checkpoint | None,
    stop_after: int | None,
    exclude: Sequence[str],
    refolds: list[dict[str, object]],
    began: float,
    notes: list[str],
) -> BuildResult:
    """One build (``build``'s, its rounds of ``refolds`` so far recorded in its bitstream,
    ``notes`` added to its plan's; its time counted from ``began``, when the command
    began)."""
    started = began
    with interrupts.handled():
        plan = board_clock(shape_plan(blueprint, verify, options, prefer, exclude))
        plan = replace(plan, notes=[*plan.notes, *notes])
        plan = _named_after_model(plan, model) if blueprint is None else plan
        check_bitstream_tools(plan.build)
        checked, vectors = check_inputs(model, input_npy, expected_npy)
        folder = output_dir or plan.build.output_dir or default_output_dir(plan.name)
        out, run = None, None
        lock = _locked(folder)
        try:
            with interrupts.blocked():
                out = prepare_output_dir(
                    folder, force, keep=(checked.path, plan.path, input_npy, expected_npy)
                )
            display = _display(plan, folder, progress)
            user = (str(input_npy), str(expected_npy)) if input_npy else None
            run = BuildRun(plan, out, checked, display, plan.build.verify, user, vectors)
            run.started_at, run.resumed_from, run.stop_after = started, start, stop_after
            run.refolds = refolds
            _note_refold(display, refolds, options)
            return _execute(run)
        except KeyboardInterrupt as exc:
            raise _interrupted(run, out, exc) from None
        except BuildError:
            raise
        except Exception as exc:  # a defect: still, the report must not say "running"
            if run is None:
                raise
            raise _crashed(run, exc) from exc
        finally:
            if run is not None:
                _close(run)
            lock.release()


def _named_after_model(plan: BuildPlan, model: str | os.PathLike[str] | ModelWrapper) -> BuildPlan:
    """The default blueprint's ``plan``, named after its model file (if it is one)."""
    return replace(plan, name=_build_name(model)) if isinstance(model, str | os.PathLike) else plan


def _display(plan: BuildPlan, folder: str, progress: bool) -> Progress:
    """The build's progress display: its steps as they run, or silent."""
    if not progress:
        return Progress.silent()
    return Progress(list(plan.steps), title=f"brainsmith build {plan.name} -> {folder}")


def _note_refold(
    display: Progress, refolds: list[dict[str, object]], options: BuildOverrides | None
) -> None:
    """Say why the build runs again (the last of ``refolds``: timing not met), if it does."""
    if not refolds:
        return
    last = refolds[-1]
    if last.get("failed"):
        display.note(
            f"round {len(refolds)} could not be placed ({last['failed']}); building round "
            f"{len(refolds) - 1}'s folding again, placed below the Fmax it reached "
            f"(round {len(refolds) + 1})"
        )
        return
    display.note(
        f"timing not met: {mhz_text(cast(float, last['clock_mhz']))} asked, {last['fmax_mhz']:.1f} MHz "
        f"reached; building again folded for {(options or {}).get('clock_ns')} ns "
        f"(round {len(refolds) + 1})"
    )


def _locked(folder: str) -> FolderLock:
    """``folder``'s lock, held (another build or exploration into it: BuildError at once)."""
    lock = FolderLock(folder, "build")
    try:
        lock.acquire()
    except FolderBusy as exc:
        raise BuildError.setup(exc.reason, exc.hint) from None
    except OSError as exc:  # as preparing the folder would say
        raise output_error(f"cannot use output folder {lock.folder}", exc) from None
    return lock


def _build_name(model: str | os.PathLike[str]) -> str:
    """A build of the default blueprint is named after its model file."""
    stem = os.path.splitext(os.path.basename(os.fspath(model)))[0]
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in stem).lstrip("._-")
    return cleaned[:100] or "default"


def _execute(run: BuildRun) -> BuildResult:

    # The helper process draws while FINN loads; where FINN is loaded already, draw here.
    if "finn" not in sys.modules and run.stop_after is None:
        run.charts = ChartWorker()
    run.progress.note("loading FINN and the model ...")
    try:
        run.log = BuildLog(run.path("build.log"))
        write_reports(run, None, "running")
    except OSError as exc:
        run.folder.discard()
        raise output_error(f"cannot write into output folder {run.output_dir}", exc) from exc
    finn_dir = os.path.join(run.output_dir, "finn")
    with generated_code_dir(os.path.join(finn_dir, "build")), run.log.crash_dumps():
        with contain_finn_output(run.log):
            steps, model, verifier = _setup(run, finn_dir)
        interrupts.check()
        setup_seconds = time.perf_counter() - run.started_at
        with running(run.context):
            model = run_steps(run, steps, model, verifier)
        return _finish(run, model, setup_seconds)


def _setup(run: BuildRun, finn_dir: str) -> tuple[list[Step], ModelWrapper, Verifier | None]:
    """Resolve steps, make the FINN config, load the model and the verification reference."""
    try:
        with interrupts.signal_first():
            steps, model, verifier = _load(run, finn_dir)
    except BuildError as exc:
        _report_failure(run, exc)
        raise
    except OSError as exc:
        error = output_error("cannot set up the build", exc, report=run.path("report.json"))
        _report_failure(run, error)
        raise error from exc
    except Exception as exc:  # a setup problem of any kind is reported the same way
        traceback.print_exc(file=run.log)
        error = BuildError.setup(
            f"{type(exc).__name__}: {exc}",
            f"see {run.path('build.log')}",
            report=run.path("report.json"),
        )
        _report_failure(run, error)
        raise error from exc
    return steps, model, verifier


def _load(run: BuildRun, finn_dir: str) -> tuple[list[Step], ModelWrapper, Verifier | None]:
    """``_setup``'s work, any failure left to it."""
    steps = resolve_steps(run.plan)
    run.records = [StepRecord(s.name, s.plugin) for s in steps]
    run.progress.steps[:] = [s.name for s in steps]
    run.cfg = finn_config(run.plan, finn_dir)
    if run.plan.build.synth:
        check_synthesis(fpga_part(run.cfg))  # Yosys is started after the steps
    run.context = BuildContext(run.plan)
    run.context.costed_part, costed = costed_part(run.plan.build)
    if costed is not None:
        run.context.notes.append(costed)
    from qonnx.core.modelwrapper import ModelWrapper

    model = ModelWrapper(run.model.proto)
    verifier = _verifier(run, model)
    if run.resumed_from is not None:
        model = continue_from(run, run.resumed_from, steps)
    if run.verify == "rtlsim":
        from brainsmith.builder.rtl_check import require_simulator

        require_simulator()
    return steps, model, verifier


def _report_failure(run: BuildRun, error: BuildError) -> None:
    with interrupts.blocked():
        with contextlib.suppress(OSError):  # report.json says "running"; the caller learns why
            write_reports(run, None, "failed", error=error)
        interrupts.settled()


def _verifier(run: BuildRun, model: ModelWrapper) -> Verifier | None:
    """The verifier of this build: none with ``verify: none`` and no user vectors; only the
    user's vectors with ``verify: none``."""
    if run.verify == "none" and run.vectors is None:
        return None
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.verification.verifier import Verifier

    reference = cleanup_model(copy.deepcopy(model))
    problems = host_problems(reference)
    if problems:  # the reference runs on the host, node by node
        raise BuildError.setup(
            f"verification runs the model on the host with {HOST_EXECUTOR}, which cannot run "
            + "; ".join(problems),
            HOST_ADVICE,
        )
    options = run.plan.build
    return Verifier(
        reference,
        options.verify_samples,
        seed=0,
        user=run.vectors,
        atol=options.verify_atol,
        rtol=options.verify_rtol,
        generated=run.verify != "none",
    )


def _finish(run: BuildRun, model: ModelWrapper, setup_seconds: float) -> BuildResult:
    """Write the final models, then the reports, report.json last: a signal before
    report.json says ok interrupts the build; one after it changes nothing."""
    if run.stop_after is not None:  # a checkpoint instead of a design: no reports
        _remove(run.path("report.json"))
        checkpoint = make_checkpoint(run, model)
        stopped: StoppedReport = {
            "name": run.plan.name,
            "status": "stopped",
            "steps": [r.as_dict() for r in run.records],
        }
        return BuildResult(run.output_dir, stopped, model, checkpoint=checkpoint)

    run.current = None
    final = run.path("final.onnx")
    record_layer_plugins(run, model)
    try:
        save_model(model, final)
        parent = run.context.dataflow_parent
        if parent is not None:
            from qonnx.custom_op.registry import getCustomOp

            wrapper = copy.deepcopy(parent)
            for node in wrapper.get_nodes_by_op_type("StreamingDataflowPartition"):
                getCustomOp(node).set_nodeattr("model", final)
            save_model(wrapper, run.path("final_parent.onnx"))
        record_hdl(model, run.path("finn"))  # what verify-rtl may compile, by hash
    except OSError as exc:
        _remove(run.path("final.onnx"), run.path("final_parent.onnx"))
        fail_output(run, model, None, exc, "writing the final models")
    if run.plan.build.synth:
        _measure(run, model)
    if run.plan.build.bitstream:
        _bitstream(run, model)

    def verdict_due() -> None:  # last moment a signal still interrupts the build
        interrupts.check()
        if arrived := take():
            raise interrupts.BuildInterrupted(arrived[0])

    with interrupts.blocked() as take:
        try:
            report = write_reports(
                run, model, "ok", setup_seconds=setup_seconds, before_verdict=verdict_due
            )
        except OSError as exc:
            fail_output(run, model, None, exc, "writing the reports")
        except interrupts.BuildInterrupted as exc:
            raise _interrupted(run, run.folder, exc) from None
        interrupts.settled()
    return BuildResult(
        run.output_dir, report, model, run.path("report.json"), run.path("report.html")
    )


def _measure(run: BuildRun, model: ModelWrapper) -> None:
    """``build.synth``: Yosys' counts of every RTL layer into the report."""
    try:
        measure(run, model, fpga_part(run.cfg))
    except BuildError as exc:
        fail(run, model, None, exc.reason, exc.hint, exit_code=exc.exit_code)
    except OSError as exc:
        fail_output(run, model, None, exc, "synthesising the RTL layers")


def _bitstream(run: BuildRun, model: ModelWrapper) -> None:
    """``build.bitstream``: the Lattice board's bitstream into the report."""
    try:
        make_bitstream(run, model)
    except BuildError as exc:
        fail(run, model, None, exc.reason, exc.hint, exc.exit_code, exc.step, exc.tools_failed)
    except OSError as exc:
        fail_output(run, model, None, exc, "making the bitstream")


def record_layer_plugins(run: BuildRun, model: ModelWrapper) -> None:
    """Record in ``model``'s metadata (and the report's notes) which plugin provides each
    layer type FINN does not have: a fresh process reading final.onnx loads them first."""
    found = stamp(model)
    run.context.notes.extend(n for n in note_lines(found) if n not in run.context.notes)


def _remove(*paths: str) -> None:
    for path in paths:
        if os.path.exists(path):
            os.unlink(path)


def _interrupted(run: BuildRun | None, out: OutputFolder | None, exc: BaseException) -> BuildError:
    """The BuildError for an interrupt: with report.json saying so and the step reached, or
    — when no step has finished yet — with the output folder removed again."""
    signum = getattr(exc, "signum", 2)
    name = getattr(exc, "name", "SIGINT")
    hint = "run the build again"
    with interrupts.blocked():
        interrupts.settled()
        if run is None or not any(r.status == "ok" for r in run.records):
            if run is not None:
                _close(run)
            if out is not None:
                out.discard()
            return BuildError(
                "setup",
                f"interrupted by {name} before any step finished; nothing was kept",
                hint,
                exit_code=128 + signum,
            )
        index = run.current
        step = run.records[index].name if index is not None else "writing the results"
        if index is not None:
            run.records[index].status = "interrupted"
            run.records[index].reason = f"interrupted by {name}"
        error = BuildError(
            step,
            f"interrupted by {name}",
            f"{hint} ({option('force')} moves this folder aside)",
            exit_code=128 + signum,
            report=run.path("report.json"),
        )
        try:
            write_reports(run, run.latest_model, "interrupted", error=error)
        except OSError:
            error.report = None
        return error


def _crashed(run: BuildRun, exc: Exception) -> BuildError:
    """The BuildError for an unexpected exception, with report.json saying failed."""
    if run.log is not None and not run.log.closed:
        traceback.print_exc(file=run.log)
    step = run.records[run.current].name if run.current is not None else "finish"
    error = BuildError(
        step,
        f"internal error: {type(exc).__name__}: {exc}",
        f"this is a defect in brainsmith; please report it with {run.path('build.log')}",
        report=run.path("report.json"),
    )
    _report_failure(run, error)
    return error


def _close(run: BuildRun) -> None:
    run.progress.close()
    if run.charts is not None:
        run.charts.close()
        run.charts = None
    if run.log is not None and not run.log.closed:
        run.log.close()
