"""``brainsmith check``: what each node of a model will become, in seconds and before any
code is generated.

Runs the blueprint's flow up to ``hardware_inference`` (clean-up, conversion to FINN-ONNX,
streamlining), converts with the selected kernels, and predicts each layer's backend as the
``specialize`` step would. Every node gets a verdict: the kernel and backend it becomes, or
where it stays on the host and why; a node that would block the build gets every installed
kernel that would take it (selected or not) and the transform that does it.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field

from brainsmith.builder.blame import failing_transform
from brainsmith.errors import StepError
from brainsmith.frameworks.finn.env import contain_finn_output, generated_code_dir
from brainsmith.frameworks.finn.execution import HOST_ADVICE, HOST_EXECUTOR, host_cannot_run
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.intake.model import check_inputs
from brainsmith.planning.advice import (
    Taker,
    advice,
    fork_hint,
    fork_problems,
    options_for,
    placement,
    takers,
)
from brainsmith.planning.backend_reason import asked_reason, backend_reason, finn_refusals
from brainsmith.planning.context import BuildContext, context_of, running
from brainsmith.planning.errors import BuildError
from brainsmith.planning.host_tail import HostTail, downstream, split_host_tail
from brainsmith.planning.road import BLOCKING, ON_HOST, board_shaper, judge_again, road
from brainsmith.planning.shaping import finn_config, resolve_steps, shape_plan
from brainsmith.planning.wiring import streams, wiring_error
from brainsmith.steps.dataflow import infer_hardware, rtl_before_finn, set_backend_styles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.intake.model import CheckedModel
    from brainsmith.planning.plan import BlueprintSource, BuildPlan
    from brainsmith.planning.shaping import BuildOverrides, Step

FRONT_END = "hardware_inference"  # check runs the steps before this one
# Placements that stop the build (``planning.road.BLOCKING``) other than a node left between
# hardware layers
BLOCKING_ELSEWHERE = tuple(p for p in BLOCKING if p != "between")
HOST_REASONS = {
    "before": "on the host, before the accelerator (its input side)",
    "after": "on the host, after the accelerator (it reads the accelerator's output)",
    "host": "on the host: not connected to any hardware layer",
}


@dataclass
class NodeVerdict:
    """One node of the converted model."""

    name: str
    op_type: str
    placement: str  # hardware | before | after | host | tail, or one of BLOCKING
    kernel: str = ""
    backend: str = ""
    reason: str = ""


@dataclass
class CheckResult:
    model: str
    blueprint: str
    nodes: list[NodeVerdict] = field(default_factory=list)
    error: str = ""  # a front-end step that failed: nothing after it was checked
    seconds: float = 0.0
    # whether its layers reach a board's bitstream, run --simulate and export (``planning.road``)
    road: str = ""

    @property
    def blocking(self) -> list[NodeVerdict]:
        return [n for n in self.nodes if n.placement in BLOCKING]

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and not self.blocking
            and any(n.placement == "hardware" for n in self.nodes)
        )

    def to_dict(self) -> Json:
        data = asdict(self)
        data["ok"] = self.ok
        return data


def check(
    model: str | os.PathLike[str],
    blueprint: BlueprintSource | None = None,
    *,
    options: BuildOverrides | None = None,
    prefer: str | None = None,
    exclude: Sequence[str] = (),
) -> CheckResult:
    """Check ``model`` (a path) against ``blueprint`` (None: the default), with ``build``'s
    overrides. BuildError for a model or blueprint that cannot be read (exit code 2)."""
    began = time.perf_counter()
    plan = shape_plan(blueprint or None, "none", options, prefer, exclude)
    checked, _ = check_inputs(model, None, None)
    result = CheckResult(str(model), plan.path or str(blueprint))
    shaped = board_shaper(blueprint, options, prefer, exclude)
    with tempfile.TemporaryDirectory(prefix="brainsmith-check-") as scratch:
        _run(result, plan, checked, scratch, shaped)
    result.seconds = round(time.perf_counter() - began, 3)
    return result


def _run(
    result: CheckResult,
    plan: BuildPlan,
    checked: CheckedModel,
    scratch: str,
    shaped: Callable[[], BuildPlan],
) -> None:
    from qonnx.core.modelwrapper import ModelWrapper

    steps = resolve_steps(plan)
    names = [s.name for s in steps]
    if FRONT_END not in names:
        raise BuildError.setup(
            f"blueprint {plan.name} has no {FRONT_END} step, so check cannot tell what its "
            "steps convert",
            "check it with the standard flow (drop steps:), or build it",
        )
    finn = os.path.join(scratch, "finn")
    log = open(os.path.join(scratch, "build.log"), "w")  # noqa: SIM115 - closed below
    with log, contain_finn_output(log), generated_code_dir(finn), running(BuildContext(plan)):
        cfg = finn_config(plan, finn)
        front = steps[: names.index(FRONT_END)]
        model, result.error = _front_end(front, ModelWrapper(checked.proto), cfg)
        if result.error:  # reported; the nodes so far are still shown
            result.nodes = [NodeVerdict(n.name, n.op_type, "host") for n in model.graph.node]
            return
        result.nodes = verdicts(model, cfg)
        if result.ok:
            result.error = _conversion_error(steps[names.index(FRONT_END)], model, cfg)
        if result.ok:
            again = judge_again(model, os.path.join(scratch, "board"), verdicts)
            result.road = road(result.nodes, plan, again, shaped)


def _front_end(
    steps: list[Step], model: ModelWrapper, cfg: DataflowBuildConfig
) -> tuple[ModelWrapper, str]:
    """``steps`` run on ``model``, each checked for wiring as the build checks it: (the
    model so far, why a step failed or broke it; "" when none did)."""
    for step in steps:
        before = streams(model, None)
        try:
            model = _ran(step, model, cfg)
        except Exception as exc:
            return model, _failure(step, exc, "failed")
        broken = wiring_error(step.name, model, None, before)
        if broken:  # named before the next step spins on a loop
            return model, f"{broken}; try: remove the step, or report it with the model"
    return model, ""


def _ran(step: Step, model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """``model`` after ``step`` (unchanged by a step with no function)."""
    function = step.function()
    return function(model, cfg) if function is not None else model


def _failure(step: Step, exc: Exception, failed: str) -> str:
    """How ``step`` ``failed`` ("failed", "would fail") with ``exc``: a StepError's reason
    and hint, else the transform and node it failed in."""
    if isinstance(exc, StepError):
        return f"step {step.name} {failed}: {exc.reason}; try: {exc.hint}"
    transform, node = failing_transform(exc)
    where = f" in {transform}" + (f" on node {node}" if node else "") if transform else ""
    return f"step {step.name} {failed}{where}: {type(exc).__name__}: {exc}"


def _conversion_error(step: Step, model: ModelWrapper, cfg: DataflowBuildConfig) -> str:
    """Why the build's own conversion step fails on ``model`` ("" when it does not): the
    step run on a copy, its graph and the graph around the accelerator checked as the build
    checks them, so check never calls ready a model the build cannot convert."""
    from qonnx.core.modelwrapper import ModelWrapper

    before = streams(model, None)
    try:
        if step.function() is None:
            return ""
        converted = _ran(step, ModelWrapper(copy.deepcopy(model.model)), cfg)
    except Exception as exc:
        return _failure(step, exc, "would fail")
    broken = wiring_error(step.name, converted, context_of(cfg).dataflow_parent, before)
    return f"{broken}; try: report it with the model" if broken else ""


def verdicts(before: ModelWrapper, cfg: DataflowBuildConfig) -> list[NodeVerdict]:
    """Convert ``before`` with the plan's kernels and judge every node. Where nodes stay on
    the host after the accelerator, as ``hardware_inference`` leaves them: the nodes before
    them converted again without them (``split_host_tail``), then the tail's nodes as the
    streamlined model has them, so check and the build name the same nodes."""
    model = infer_hardware(before, cfg)
    nodes, found = _judged(model, before, cfg)
    starts = _tail_starts(model, nodes, found)
    if not starts:
        return _unrunnable(model, nodes)
    head, tail = split_host_tail(before, model, cfg)
    if not tail:  # (a kernel would take a start: _tail_starts found none then)
        return _unrunnable(model, _host_tail(model, nodes, starts))
    converted = infer_hardware(head, cfg)
    kept, _ = _judged(converted, head, cfg)
    listed = _tail(model, converted, before, tail, starts)
    return _unrunnable(converted, kept) + _unrunnable(before, listed)


def _tail(
    model: ModelWrapper,
    head: ModelWrapper,
    before: ModelWrapper,
    tail: HostTail,
    starts: list[NodeVerdict],
) -> list[NodeVerdict]:
    """The ``tail``'s nodes of ``before``: each of ``starts`` (nodes of the converted
    ``model``) with its reason, its operands' producers named as in the converted ``head``,
    every other node on the host after them."""
    converted = {n.name: n for n in model.graph.node}
    reasons = {
        out: _named_as_in(head, model, converted[v.name], v.reason)
        for v in starts
        for out in converted[v.name].output
    }
    first = ", ".join(n.name for n in before.graph.node if set(n.output) & set(reasons))
    nodes = []
    for node in (n for n in before.graph.node if n.name in tail.names):
        start = next((reasons[out] for out in node.output if out in reasons), None)
        verdict = NodeVerdict(node.name, node.op_type, "hardware" if start is None else "between")
        verdict.reason = start or ""
        _left_on_host(verdict, len(tail.names) - 1, first)
        nodes.append(verdict)
    return nodes


def _named_as_in(head: ModelWrapper, model: ModelWrapper, node: onnx.NodeProto, reason: str) -> str:
    """``reason`` (for ``node`` of ``model``) with each operand's producer named as in
    ``head``: "(from ElementwiseMul_0)" where the head, converted without the tail, keeps
    that node as ``Mul_0``."""
    for name in node.input:
        was, now = model.find_producer(name), head.find_producer(name)
        if was is not None and now is not None and was.name != now.name:
            reason = reason.replace(f"(from {was.name})", f"(from {now.name})")
    return reason


def _judged(
    model: ModelWrapper, before: ModelWrapper, cfg: DataflowBuildConfig
) -> tuple[list[NodeVerdict], dict[str, list[Taker]]]:
    """Every node of ``model`` (``before`` converted) judged, and the kernels that would
    take ``before``'s nodes left off the accelerator."""
    plan = context_of(cfg).plan
    board = plan.build.lattice  # a Lattice part has no HLS flow: an HLS layer blocks
    where = placement(model)
    forks = fork_problems(model)
    backends = predicted_backends(model, cfg)
    places = set(where.values())
    # blocking nodes: every kernel is tried; host nodes: only what the plan leaves out
    found = takers(before, cfg, "between" not in places) if places - {"hardware"} else {}
    nodes = []
    for node in model.graph.node:
        verdict = NodeVerdict(node.name, node.op_type, where[node.name])
        if verdict.placement == "hardware":
            _judge_hardware(verdict, plan, backends.get(node.name, ("", "")), forks, board)
        elif verdict.placement == "between":
            verdict.reason = advice(node, found, model, model, plan)
        else:
            verdict.reason = HOST_REASONS[verdict.placement] + _would_take(node, found)
        nodes.append(verdict)
    return nodes, found


def _judge_hardware(
    verdict: NodeVerdict,
    plan: BuildPlan,
    backend: tuple[str, str],
    forks: dict[str, str],
    board: str | None,
) -> None:
    """A hardware layer's kernel and ``backend`` (op type, why); it blocks when its output
    forks, when ``board`` has no HLS flow for it, or when the blueprint forbids its backend."""
    kernel = plan.kernel_for(verdict.op_type)
    verdict.kernel = kernel.name if kernel is not None else f"finn:{verdict.op_type}"
    verdict.backend, verdict.reason = backend
    if verdict.name in forks:
        verdict.placement = "fork"
        verdict.reason = f"its {forks[verdict.name]}: {fork_hint(plan)}"
        return
    allowed = kernel.backend_types if kernel is not None else []
    forbidden = _forbidden_backend(verdict, allowed, board)
    if forbidden:
        verdict.placement, verdict.reason = "backend", forbidden


def _forbidden_backend(verdict: NodeVerdict, allowed: Sequence[str], board: str | None) -> str:
    """Why ``verdict``'s backend cannot be built: ``board`` has no HLS flow, or the blueprint
    ``allowed`` other backends for its kernel ("" when it can)."""
    style = verdict.backend.rpartition("_")[2]
    if style == "hls" and board is not None:
        return f"{board} has no HLS flow, and {verdict.reason}"
    if style not in ("hls", "rtl") or not allowed or style in allowed:
        return ""
    return (
        f"FINN can build it only as {verdict.backend}, but the blueprint allows "
        f"{'/'.join(allowed)} for {verdict.kernel}: allow {style} for it"
    )


def _would_take(node: onnx.NodeProto, found: dict[str, list[Taker]]) -> str:
    """For a host node: the installed kernels the blueprint does not select that would take
    it, and how to select them ("" if none)."""
    unselected = _unselected_takers(node, found)
    if not unselected:
        return ""
    names = ", ".join(f"{t.kernel} ({t.by})" for t in unselected)
    if all(t.excluded for t in unselected):
        return f"; {names} would take it, but {unselected[0].exclusion}"
    return f"; {names} would take it: add it to the blueprint's kernels, or use kernels: auto"


def _unselected_takers(node: onnx.NodeProto, found: dict[str, list[Taker]]) -> list[Taker]:
    """The kernels that would take ``node`` that the blueprint does not select, once each."""
    return [t for t in options_for(node, found) if not t.selected]


def _host_tail(
    model: ModelWrapper, nodes: list[NodeVerdict], starts: list[NodeVerdict]
) -> list[NodeVerdict]:
    """The ``starts`` of a host tail and every node after them in ``model`` on the host,
    after the accelerator (``brainsmith.planning.host_tail``)."""
    tail = downstream(model, {n.name for n in starts})
    first = ", ".join(n.name for n in starts)
    for verdict in nodes:
        if verdict.name in tail:
            _left_on_host(verdict, len(tail) - 1, first)
    return nodes


def _left_on_host(verdict: NodeVerdict, after: int, first: str) -> None:
    """``verdict`` in a host tail that starts at ``first``: a tail start (``after`` nodes
    follow it) keeps its reason, a node after it is on the host after the accelerator."""
    if verdict.placement == "between":
        verdict.placement = "tail"
        verdict.reason += f"; the build runs it and the {after} node(s) after it on the host"
        return
    verdict.placement, verdict.kernel, verdict.backend = "after", "", ""
    verdict.reason = f"on the host, after {first} (which no hardware layer computes)"


def _tail_starts(
    model: ModelWrapper, nodes: list[NodeVerdict], found: dict[str, list[Taker]]
) -> list[NodeVerdict]:
    """The nodes left between hardware layers that start a host tail: all of them, when
    nothing else blocks and no kernel the blueprint could select converts any; else none."""
    if any(n.placement in BLOCKING_ELSEWHERE for n in nodes):
        return []
    starts = [n for n in nodes if n.placement == "between"]
    if _selectable_kernel_takes(model, starts, found):
        return []  # a kernel the blueprint could select converts one: it blocks
    return starts


def _selectable_kernel_takes(
    model: ModelWrapper, starts: list[NodeVerdict], found: dict[str, list[Taker]]
) -> bool:
    """Whether a kernel the blueprint could select converts one of ``starts``."""
    outputs = {n.name: n.output for n in model.graph.node}
    return any(found.get(out) for n in starts for out in outputs[n.name])


def _unrunnable(model: ModelWrapper, nodes: list[NodeVerdict]) -> list[NodeVerdict]:
    """Nodes left on the host that its executor cannot run block the build: it runs them."""
    opsets = {o.domain: o.version for o in model.model.opset_import}
    host = {n.name: n for n in model.graph.node}
    for verdict in nodes:
        why = host_cannot_run(host[verdict.name], opsets) if verdict.placement in ON_HOST else ""
        if why:
            verdict.placement, verdict.kernel, verdict.backend = "unrunnable", "", ""
            verdict.reason = f"the host runs it with {HOST_EXECUTOR}, but {why}: {HOST_ADVICE}"
    return nodes


def predicted_backends(model: ModelWrapper, cfg: DataflowBuildConfig) -> dict[str, tuple[str, str]]:
    """Hardware node name -> (backend op type, why), as the ``specialize`` step would choose
    (``brainsmith.planning.backend_reason`` says why, as the build does)."""
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from qonnx.core.modelwrapper import ModelWrapper

    plan, part = context_of(cfg).plan, fpga_part(cfg)
    trial = _narrowed(ModelWrapper(copy.deepcopy(model.model)), cfg)
    styles = set_backend_styles(trial, plan)
    why = _asked_reasons(trial, styles, plan)
    rtl_before_finn(trial, styles, cfg)  # as the step does
    try:
        with finn_refusals() as refused:
            trial = trial.transform(SpecializeLayers(part))
    except Exception as exc:  # shown per layer instead of failing the check
        return {name: ("?", f"cannot specialise: {exc}") for name in why}
    if len(trial.graph.node) != len(model.graph.node):  # not one for one: no prediction
        return {name: ("?", reason) for name, reason in why.items()}
    pairs = zip(model.graph.node, trial.graph.node, strict=True)
    return {
        node.name: _chosen(node, chosen, styles[node.name], why[node.name], part, refused)
        for node, chosen in pairs
        if node.name in why
    }


def _narrowed(trial: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """``trial`` with its widths narrowed as ``hardware_inference`` narrows them before the
    build specialises (FINN's rule for an RTL layer reads them); as it is where that fails
    (the build's step then says why)."""
    from brainsmith.frameworks.finn.recipe.steps import minimize_bit_width

    try:
        return minimize_bit_width(trial, cfg)
    except Exception:  # the step's own failure: check reports it with that step
        return trial


def _asked_reasons(trial: ModelWrapper, styles: dict[str, str], plan: BuildPlan) -> dict[str, str]:
    """Hardware node name -> who asked for its backend style (``asked_reason``)."""
    return {
        n.name: asked_reason(n, styles[n.name], plan) for n in trial.graph.node if n.name in styles
    }


def _chosen(
    node: onnx.NodeProto,
    chosen: onnx.NodeProto,
    style: str,
    asked: str,
    part: str,
    refused: dict[str, str],
) -> tuple[str, str]:
    """(backend op type, why) ``node`` became ``chosen`` when specialised for ``part``."""
    if chosen.domain == node.domain:  # not specialised: a later step decomposes it (Shuffle)
        return ("-", "decomposed into other layers when folded")
    reason = backend_reason(
        node.op_type, style, asked, chosen.op_type, part, refused.get(node.name, "")
    )
    return (chosen.op_type, reason)
