"""Which step to blame: verifying the model after a step, tracing a difference back through
the saved models of steps not verified as they ran, and naming the transform and node a
crash happened in."""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterator
from typing import cast

from brainsmith.builder.failure import fail, fail_output
from brainsmith.builder.state import BuildRun
from brainsmith.frameworks.finn.env import contain_finn_output
from brainsmith.planning.errors import option
from brainsmith.planning.shaping import Step

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn, Protocol, TypeGuard

    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.report_schema import Verification
    from brainsmith.verification.verifier import Check, Verifier

    # Where an earlier step's saved model first differs: its index, and its failing checks
    # or the exception that stopped it from running
    Culprit = tuple[int, list[Check] | Exception]

    class NamedNode(Protocol):
        """A graph node as a traceback's frame holds it (an ONNX ``NodeProto``)."""

        @property
        def name(self) -> str: ...

        @property
        def op_type(self) -> str: ...


NODE_VARIABLES = ("node", "n", "consumer", "producer")


def failing_transform(exc: BaseException) -> tuple[str, str]:
    """The innermost graph transformation in ``exc``'s traceback and the node it was
    handling (read from its local variables), so a crash names both; ("", "") if none."""
    found = ("", "")
    for scope in _scopes(exc):
        owner = scope.get("self")
        if owner is not None and any(
            c.__name__ == "Transformation" for c in type(owner).__mro__[1:]
        ):
            found = (type(owner).__name__, _described(_node_in(scope)))
    return found


class Earlier:
    """What ``verify_step`` needs to trace a difference back: the steps, and which step indices
    of this run produced the dataflow partition rather than the whole graph."""

    def __init__(self, steps: list[Step], partitioned: dict[int, bool]) -> None:
        self.steps, self.partitioned = steps, partitioned

    def verifiable(self, index: int) -> bool:
        return index >= len(self.steps) or self.steps[index].verifiable


def verify_step(
    run: BuildRun,
    verifier: Verifier,
    model: ModelWrapper,
    index: int,
    earlier: Earlier | None = None,
) -> str:
    """Verify the model after step ``index``; on a mismatch (or a model that cannot run),
    fail the first step whose saved model differs, traced back when earlier steps were not
    verified as they ran. Returns what the progress display shows."""
    began = time.perf_counter()
    checks = _checked(run, verifier, model, index, earlier)
    generated = next((c for c in checks if c.label == "generated"), None)
    user = next((c for c in checks if c.label == "user"), None)
    run.records[index].verification = _verification(generated, user, began)
    tolerance = tolerance_text(verifier.atol, verifier.rtol)
    if generated is not None and not generated.ok:
        culprit = first_difference(run, verifier, index, earlier)
        _differs(run, model, index, culprit, generated, tolerance)
    if user is not None and not user.ok:
        _user_differs(run, model, index, user, verifier, tolerance, generated is not None)
    return _summary(generated, user)


def _checked(
    run: BuildRun, verifier: Verifier, model: ModelWrapper, index: int, earlier: Earlier | None
) -> list[Check]:
    """The checks of the model after step ``index``; a model that cannot run fails the first
    step whose saved model differs, a verification model that cannot be written this step."""
    try:
        return _run_check(run, verifier, model, run.context.dataflow_parent)
    except OSError as exc:
        fail_output(run, model, index, exc, "writing the verification models")
    except Exception as exc:  # a model that cannot run fails its step
        traceback.print_exc(file=run.build_log)
        culprit = first_difference(run, verifier, index, earlier)
        _cannot_run(run, model, index, culprit, exc)


def _verification(generated: Check | None, user: Check | None, began: float) -> Verification:
    """The step's verification record: the generated inputs' check, its time, the user's."""
    result: Verification = {
        **(generated.as_dict() if generated is not None else {}),
        "seconds": round(time.perf_counter() - began, 4),
    }
    if user is not None:
        result["user"] = user.as_dict()
    return result


def _user_differs(
    run: BuildRun, model: ModelWrapper, index: int, user: Check, verifier: Verifier,
    tolerance: str, generated: bool,
) -> NoReturn:  # fmt: skip
    """The outputs differ from the user's expected ones (``generated``: the generated inputs'
    check passed); the exported model itself, when no step has changed it yet."""
    expected = run.user_vectors[1] if run.user_vectors else ""
    if not any(r.status == "ok" and r.model for r in run.records[:index]):
        _export_differs(run, model, index, user, verifier, tolerance)
    matched = (
        " (the model matched the cleaned QONNX model on generated inputs)" if generated else ""
    )
    fail(
        run,
        model,
        index,
        f"verification failed: outputs differ from {option('expected')} "
        f"{expected} by up to {user.max_error:.4g} in {user.errors} element(s) no "
        f"rounding tie explains ({tolerance}) on {user.samples} user inputs",
        f"check that the {option('expected')} file was produced by this model from the "
        f"{option('input')} file{matched}",
    )


def _summary(generated: Check | None, user: Check | None) -> str:
    """What the progress display shows of a step's passing checks."""
    checked = generated or user
    if checked is None:
        return ""
    if checked.unchanged:
        return "unchanged, not re-run"
    if generated is None:
        return f"user max err {checked.max_error:.2g}" + _ties_text(checked)
    text = f"max err {checked.max_error:.2g} ({checked.samples} inputs)" + _ties_text(checked)
    return text + (f", user {user.max_error:.2g}" if user else "")


def _export_differs(
    run: BuildRun, model: ModelWrapper, index: int, user: Check, verifier: Verifier,
    tolerance: str,
) -> NoReturn:  # fmt: skip
    """The first model checked already differs from the user's outputs: the exported model
    as QONNX executes it, before any step changed what it computes, is not what torch gave."""
    expected = run.user_vectors[1] if run.user_vectors else ""
    outputs = verifier.user[1] if verifier.user else []
    largest = max((float(abs(o).max()) for sample in outputs for o in sample if o.size), default=0)
    share = f" ({user.max_error / largest:.1%} of the largest, {largest:.4g})" if largest else ""
    fail(
        run,
        model,
        index,
        f"the exported model itself does not match {option('expected')} {expected}: run by "
        f"QONNX before any step changed what it computes, it differs by up to "
        f"{user.max_error:.4g}{share} in {user.errors} element(s) no rounding tie explains "
        f"({tolerance}) on {user.samples} user inputs. The difference comes from the export "
        "or from QONNX's execution of the exported model, not from a build step",
        "Brevitas 0.13 exports accumulator-aware (A2Q) and other decoupled weight quantizers "
        "with their raw weights: quantize those in place before export (docs/build.md, "
        '"Accumulator-aware weights (A2Q)"); else '
        f"check that {option('expected')} holds the outputs of the torch model this ONNX file "
        f"was exported from, in eval mode, on the {option('input')} file; a difference of float "
        "rounding between torch and QONNX grows through quantizers: compare the two layer by "
        "layer (qonnx.core.onnx_exec.execute_onnx with return_full_exec_context=True against "
        "torch forward hooks), or accept it with build.verify_atol",
    )


def _ties_text(check: Check) -> str:
    return f", {check.ties} tie(s)" if check.ties else ""


def measure_rtl_arithmetic(
    run: BuildRun, verifier: Verifier, model: ModelWrapper, index: int
) -> str:
    """On the last verified model: how far FINN's RTL softmax and LayerNorm, computing as
    their RTL does, take the outputs from the exact functions (``rtl_arithmetic`` in the
    step's verification, and a note); "" without such layers."""
    workdir = run.path("finn", "verification")
    os.makedirs(workdir, exist_ok=True)
    began = time.perf_counter()
    with contain_finn_output(run.build_log):
        check = verifier.rtl_arithmetic(model, run.context.dataflow_parent, workdir)
    record = run.records[index].verification
    if check is None or record is None:
        return ""
    record["rtl_arithmetic"] = {**check.as_dict(), "seconds": round(time.perf_counter() - began, 4)}
    steps = f", {check.max_steps:g} quantizer steps" if check.max_steps is not None else ""
    largest = max(float(abs(o).max(initial=0.0)) for s in verifier.expected for o in s)
    run.context.notes.append(
        f"FINN's RTL softmax and LayerNorm approximate the functions (the verification "
        f"compares the exact ones): computed as their RTL computes, the outputs differ from "
        f"the cleaned QONNX model's by up to {check.max_error:.3g}{steps} where they reach "
        f"{largest:.3g} ({check.errors:,} output values outside what verification accepts, "
        f"on {check.samples} samples)"
    )
    return f"RTL float arithmetic within {check.max_error:.3g}"


def tolerance_text(atol: float | None, rtol: float) -> str:
    """How outputs were compared, in a few words."""
    from brainsmith.verification.verifier import FLOAT_RTOL

    if atol is not None:
        return f"tolerance atol {atol:g} + rtol {rtol:g}"
    return (
        f"quantized outputs in quantizer steps, float outputs within {FLOAT_RTOL:g} of "
        f"their largest value + rtol {rtol:g}"
    )


def _run_check(
    run: BuildRun, verifier: Verifier, model: ModelWrapper, parent: ModelWrapper | None
) -> list[Check]:
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
    return None if all(c.ok for c in checks if c.label == "generated") else checks


def _parent_of(
    run: BuildRun, model: ModelWrapper, index: int, earlier: Earlier
) -> ModelWrapper | None:
    """The dataflow parent to run step ``index``'s model in, or None for a whole graph (a
    checkpoint's steps: the model is the partition when its inputs and outputs are the
    partition node's)."""
    parent = run.context.dataflow_parent
    if parent is None or index in earlier.partitioned:
        return parent if earlier.partitioned.get(index) else None
    partitions = parent.get_nodes_by_op_type("StreamingDataflowPartition")
    return parent if any(_partition_of(model, node) for node in partitions) else None


def _partition_of(model: ModelWrapper, partition: NodeProto) -> bool:
    """Whether ``model``'s inputs and outputs are those of the node ``partition``."""
    ins = [i.name for i in model.graph.input if model.get_initializer(i.name) is None]
    outs = [o.name for o in model.graph.output]
    return ins == list(partition.input) and outs == list(partition.output)


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
        f"{worst.max_error:.4g}{_in_steps(worst)} in {worst.errors} element(s) no rounding tie "
        f"explains ({tolerance}) on {worst.samples} generated inputs{how}",
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
    return tolerance_text(options.verify_atol, options.verify_rtol)


def _in_steps(check: Check) -> str:
    return f" ({check.max_steps:.3g} quantizer steps)" if check.max_steps is not None else ""


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
    for scope in _scopes(exc):
        found = _described(_node_in(scope)) or found
    return found


def _scopes(exc: BaseException) -> Iterator[dict[str, object]]:
    """The local variables of each frame of ``exc``'s traceback, outermost first."""
    frame_tb = exc.__traceback__
    while frame_tb is not None:
        yield frame_tb.tb_frame.f_locals
        frame_tb = frame_tb.tb_next


def _node_in(scope: dict[str, object]) -> NamedNode | None:
    """The node a frame was handling: the first of its ``NODE_VARIABLES`` with an op type."""
    found = (scope.get(name) for name in NODE_VARIABLES)
    return next((value for value in found if _is_node(value)), None)


def _is_node(value: object) -> TypeGuard[NamedNode]:
    return hasattr(value, "op_type")


def _described(node: NamedNode | None) -> str:
    return f"{node.name} ({node.op_type})" if node is not None else ""


def _previous_model(run: BuildRun, index: int) -> str:
    for record in reversed(run.records[:index]):
        if record.model:
            return record.model
    return run.model_path or "the input model"
