"""Which nodes block a build and what would convert them: for ``hardware_inference``
failures and ``brainsmith check``.

A node blocks when it stays off the hardware with hardware layers both before and after it
(FINN builds one contiguous accelerator). For each such node, every installed kernel is
tried on the model as it was before conversion, one infer transform at a time, whether the
blueprint selects it or not.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import cast

from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.plugin import get_registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.plan import BuildPlan


# What to do about nodes no kernel takes, by op type (the rest get the generic advice).
NO_KERNEL_HINTS = {
    "Transpose": "a layout change FINN's streamlining could not move out of the way; "
    "check that every convolution branch is quantized the same way",
    "Reshape": "a flatten or reshape between layers; FINN absorbs it only right before a "
    "fully connected layer",
    "Mul": "a floating-point scale left between layers: quantize the tensor before it "
    "(a Brevitas QuantIdentity) so streamlining can absorb the scale",
    "Add": "a floating-point bias or residual add: quantize both operands with one shared "
    "quantizer",
    "Conv": "a convolution FINN could not lower to a matrix product",
    "AveragePool": "FINN's pools sum a quantizer's integers over windows that count their "
    "padding: quantize right before the pool (a Brevitas QuantReLU or QuantIdentity), and "
    "pad with count_include_pad=True or not at all",
    "ReduceMean": "FINN's pools sum a quantizer's integers over a sequence's tokens or each "
    "token's channels (x.mean(dim=1) or dim=2 of a (batch, tokens, dim) tensor) or over an "
    "image's pixels (dim=(2, 3)): quantize right before the mean and average over one of "
    "those",
    "Concat": "FINN's StreamingConcat joins integer streams along the channel axis: quantize "
    "every branch right before the join (each with its own quantizer or one shared; the "
    "streamline step moves their scales past it) and join along channels",
    "Slice": "a slice FINN has no layer for; a projection sliced into q, k and v is split "
    "by SplitPackedProjections when the slices read the product directly (or after its "
    "scales), along the last axis",
}
# ... and for a node joining a constant to a stream (a class token)
CONSTANT_HINTS = {
    "Concat": "a constant joined to the stream, such as a ViT class token prepended to the "
    "patch tokens: no FINN layer inserts constant tokens; pool the patch tokens by their mean "
    "instead, which timm's VisionTransformer does with class_token=False and "
    "global_pool='avg', or keep the class token out of the exported model",
}
# ... and for nodes whose floating-point operands are what keeps them from a kernel
FLOAT_HINTS = {
    "MatMul": "in attention: the softmax output, the scaled query or the transposed key left "
    "unquantized; brainsmith's matmul kernel multiplies integers: quantize both operands "
    "(Brevitas QuantMultiheadAttention's attn_output_weights_quant, q_scaled_quant, "
    "k_transposed_quant, v_quant)",
    "Softmax": "brainsmith's softmax kernel reads integers: quantize its input (Brevitas "
    "QuantMultiheadAttention's softmax_input_quant)",
    "LayerNormalization": "quantize its input (a Brevitas QuantIdentity before it)",
}


# ... and for a matrix product reached by a per-channel scale (through layout changes)
PER_CHANNEL_HINT = (
    "a per-channel scale from the layer before reaches this matrix product with no quantizer "
    "between them (as from a depthwise convolution straight into its pointwise one): only a "
    "scalar scale moves past a matrix product; quantize the tensor between them (a Brevitas "
    "QuantIdentity) or give the layer before one weight scale per tensor (Brevitas's "
    "per-tensor weight quantizer, e.g. Int8WeightPerTensorFloat)"
)
PASS_THROUGH = ("Transpose", "Shuffle", "Reshape", "Flatten", "Squeeze", "Unsqueeze")
# Floating-point functions of one value no integer layer computes as they are: between two
# quantizers streamlining makes such a function a threshold layer over integers (a lookup of
# its quantized outputs); unquantized, it keeps the scales and biases around it in floating
# point too
FLOAT_FUNCTIONS = frozenset({
    "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Elu", "Selu",
    "Celu", "Mish", "Gelu", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Sin", "Cos",
})  # fmt: skip


def per_channel_scale(model: ModelWrapper, name: str) -> str:
    """The multiplication by a constant of more than one value (``Mul``, or the FINN layer
    made of it) that ``name`` comes from through layout changes only ("" if none)."""
    producer = _through_layout_changes(model, name)
    if producer is None or producer.op_type not in ("Mul", "ElementwiseMul"):
        return ""
    constants = [model.get_initializer(i) for i in producer.input]
    return producer.name if any(c is not None and c.size > 1 for c in constants) else ""


def _through_layout_changes(model: ModelWrapper, name: str) -> onnx.NodeProto | None:
    """The first node up from tensor ``name`` that is not a layout change (None: none)."""
    producer: onnx.NodeProto | None = model.find_producer(name)
    while producer is not None and producer.op_type in PASS_THROUGH:
        producer = model.find_producer(producer.input[0])
    return producer


@dataclass(frozen=True)
class Taker:
    """A kernel that would convert a node, and the transform that does it."""

    kernel: str
    transform: str
    selected: bool
    excluded: bool = False
    instead_of: str = ""  # a listed kernel building the same layers without this transform
    rewrites: tuple[str, ...] = ()  # what the kernel runs first to expose its pattern
    excluded_why: str = ""  # why it is excluded when the blueprint did not exclude it

    @property
    def exclusion(self) -> str:
        """Why it is not used: the plan's reason, else the blueprint's exclude."""
        return self.excluded_why or "the blueprint excludes it"

    @property
    def by(self) -> str:
        """How it converts: ``by T`` or ``by T after its rewrite R``."""
        after = (
            f" after its rewrite{'s' if len(self.rewrites) > 1 else ''} " if self.rewrites else ""
        )
        return f"by {self.transform}{after}{', '.join(self.rewrites)}"


# A host node's place by (hardware upstream, hardware downstream)
PLACES = {
    (True, True): "between",
    (False, True): "before",
    (True, False): "after",
    (False, False): "host",
}


def placement(model: ModelWrapper) -> dict[str, str]:
    """Node name -> "hardware", "before" (host, feeding the accelerator), "after" (host,
    reading from it), "between" (blocking) or "host" (not connected to hardware)."""
    upstream = _reach(model, forward=False)
    downstream = _reach(model, forward=True)
    return {
        n.name: "hardware" if is_hardware(n) else PLACES[upstream[n.name], downstream[n.name]]
        for n in model.graph.node
    }


def blocking_nodes(model: ModelWrapper) -> list[onnx.NodeProto]:
    """The non-hardware nodes with hardware layers both upstream and downstream."""
    where = placement(model)
    return [n for n in model.graph.node if where[n.name] == "between"]


def _reach(model: ModelWrapper, forward: bool) -> dict[str, bool]:
    """Node name -> whether a hardware layer lies downstream (``forward``) or upstream."""
    neighbours = _consumers(model) if forward else _producers(model)
    memo: dict[str, bool] = {}
    order = list(zip(model.graph.node, neighbours, strict=True))  # inputs come first
    for node, around in order if not forward else reversed(order):
        memo[node.name] = any(is_hardware(n) or memo.get(n.name, False) for n in around)
    return memo


def _producers(model: ModelWrapper) -> list[list[onnx.NodeProto]]:
    """For each node in order: the nodes that produce its inputs."""
    producers = {out: n for n in model.graph.node for out in n.output}
    return [[producers[i] for i in n.input if i in producers] for n in model.graph.node]


def _consumers(model: ModelWrapper) -> list[list[onnx.NodeProto]]:
    """For each node in order: the nodes that read its outputs."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    return [[c for out in n.output for c in readers.get(out, ())] for n in model.graph.node]


@dataclass(frozen=True)
class Candidate:
    """An installed kernel's infer transform, to try on a model."""

    kernel: str  # qualified name
    op_type: str
    transform: str
    rewrites: tuple[str, ...]  # what the kernel runs first to expose its pattern


def candidates() -> list[Candidate]:
    """Every infer transform of every installed kernel that loads."""
    from brainsmith.planning.plan import infer_transforms_of, op_type_of

    return [
        Candidate(spec.qualified_name, op_type_of(spec), name,
                  tuple(str(r) for r in spec.metadata.get("rewrites", ())))
        for spec in get_registry().specs("kernel") if not spec.error
        for name in infer_transforms_of(spec)
    ]  # fmt: skip


def as_taker(candidate: Candidate, plan: BuildPlan) -> Taker:
    """``candidate`` as the plan sees it: selected, excluded, or in place of a listed one."""
    c = candidate
    return Taker(c.kernel, c.transform, _selected(c, plan), c.kernel in plan.excluded,
                 _listed_instead(c, plan), c.rewrites, plan.exclusions.get(c.kernel, ""))  # fmt: skip


def _selected(c: Candidate, plan: BuildPlan) -> bool:
    """Whether the plan's kernels run ``c``'s transform (every kernel: ``kernels: auto``)."""
    return plan.kernels is None or any(
        k.op_type == c.op_type and c.transform in k.infer_transforms for k in plan.kernels
    )


def _listed_instead(c: Candidate, plan: BuildPlan) -> str:
    """The kernel the blueprint lists last for ``c``'s op type when it is not ``c``'s
    ("" otherwise)."""
    pinned = [k.name for k in plan.kernels or () if k.pinned and k.op_type == c.op_type]
    listed = pinned[-1] if pinned else ""
    return listed if listed != c.kernel else ""


def takers(
    before: ModelWrapper, cfg: DataflowBuildConfig, unselected_only: bool = False
) -> dict[str, list[Taker]]:
    """Output tensor name -> the kernels that convert its producer in ``before`` (the model
    as the conversion found it), whether selected or not (``unselected_only``: only the
    kernels the plan does not select are tried)."""
    from brainsmith.frameworks.finn.recipe.networks import transform_args
    from brainsmith.planning.context import context_of
    from brainsmith.planning.plan import BuildPlan

    plan = context_of(cfg).plan
    made: dict[str, dict[str, set[str]]] = {}
    found: dict[str, list[Taker]] = {}
    for candidate in candidates():
        taker = as_taker(candidate, plan)
        if unselected_only and taker.selected:
            continue
        name, rewrites = candidate.transform, candidate.rewrites
        key = f"{name} {rewrites}"
        if key not in made:
            made[key] = _converted_by(
                before, name, transform_args(name, cfg, BuildPlan()), rewrites
            )
        for tensor, op_types in made[key].items():
            if candidate.op_type in op_types:
                found.setdefault(tensor, []).append(taker)
    return found


def _converted_by(
    before: ModelWrapper, name: str, args: dict[str, object], rewrites: tuple[str, ...] = ()
) -> dict[str, set[str]]:
    """Output tensors of ``before``'s nodes that transform ``name`` (after ``rewrites``)
    turns into hardware, with the hardware op types that took them. A rewrite may rename a
    node's outputs; its nodes are followed by name (a rewrite keeps the names it moves)."""
    try:
        rewritten, after = _trial(before, name, args, rewrites)
    except Exception:  # a transform that cannot run on this model takes nothing
        return {}
    taken = _taken(rewritten, after)  # node name in ``rewritten`` -> op types that took it
    return {out: taken[n.name] for n in before.graph.node if n.name in taken for out in n.output}


def _trial(
    before: ModelWrapper, name: str, args: dict[str, object], rewrites: tuple[str, ...]
) -> tuple[ModelWrapper, ModelWrapper]:
    """(``before`` after ``rewrites``, that after transform ``name``), on copies."""

    from qonnx.core.modelwrapper import ModelWrapper

    registry = get_registry()
    rewritten = ModelWrapper(copy.deepcopy(before.model))
    for rewrite in rewrites:
        rewritten = rewritten.transform(
            cast("Callable[..., Any]", registry.get("transform", rewrite))()
        )
    transform = cast("Callable[..., Any]", registry.get("transform", name))(**args)
    return rewritten, ModelWrapper(copy.deepcopy(rewritten.model)).transform(transform)


def _taken(rewritten: ModelWrapper, after: ModelWrapper) -> dict[str, set[str]]:
    """Node name in ``rewritten`` -> the hardware op types in ``after`` that took it (a node
    whose outputs are all gone was absorbed into a new layer: any of them)."""
    made = _made(after)
    remaining = {out for n in after.graph.node for out in n.output}
    nodes = [n for n in rewritten.graph.node if not is_hardware(n)]
    return {n.name: hits for n in nodes if (hits := _took(n, made, remaining))}


def _made(after: ModelWrapper) -> dict[str, str]:
    """Tensor name -> the op type of the hardware layer in ``after`` that writes it."""
    return {out: n.op_type for n in after.graph.node if is_hardware(n) for out in n.output}


def _took(node: onnx.NodeProto, made: dict[str, str], remaining: set[str]) -> set[str]:
    """The hardware op types that took ``node``: those ``made`` under its outputs' names,
    else, when none of its outputs is ``remaining`` (absorbed into a new layer), any."""
    hits = {made[out] for out in node.output if out in made}
    if not hits and not set(node.output) & remaining:
        return set(made.values())
    return hits


def float_operands(model: ModelWrapper, node: onnx.NodeProto) -> list[str]:
    """``node``'s computed inputs that carry floating-point values, each as ``tensor (from
    producer)``: what keeps a matrix product or softmax from an integer kernel."""
    return [_from(model, name) for name in node.input if _computed_float(model, name)]


def _computed_float(model: ModelWrapper, name: str) -> bool:
    """Whether tensor ``name`` is computed (not a constant) and carries floating point."""
    if not name or model.get_initializer(name) is not None:
        return False
    return not model.get_tensor_datatype(name).is_integer()


def _from(model: ModelWrapper, name: str) -> str:
    """``name (from producer)``, or ``(from the graph input)``."""
    producer = model.find_producer(name)
    return f"{name} (from {producer.name if producer else 'the graph input'})"


def fork_hint(plan: BuildPlan) -> str:
    """What to do about a fork: DuplicateStreams copies the stream."""
    if "finn:DuplicateStreams" in plan.excluded:
        return "remove finn:DuplicateStreams from the blueprint's exclude (it copies the stream)"
    return (
        "add finn:DuplicateStreams to the blueprint's kernels (it copies the stream), or use "
        "kernels: auto"
    )


def fork_problems(model: ModelWrapper) -> dict[str, str]:
    """Hardware node name -> why its output cannot feed several hardware layers as it is
    (a stream has one reader; FINN's DuplicateStreams copies it; see ``fork_hint``)."""
    hardware = [n for n in model.graph.node if is_hardware(n)]
    return {n.name: problem for n in hardware if (problem := _fork(model, n))}


def _fork(model: ModelWrapper, node: onnx.NodeProto) -> str:
    """Why ``node``'s output cannot feed the several hardware layers that read it (its last
    such output; "" when none forks)."""
    problem = ""
    for name in node.output:
        readers = [n for n in model.find_consumers(name) or () if is_hardware(n)]
        if len(readers) > 1:
            names = ", ".join(n.name for n in readers)
            problem = (
                f"output feeds {len(readers)} hardware layers ({names}), but a stream has "
                "one reader"
            )
    return problem


def explain_blocking(
    before: ModelWrapper,
    nodes: Iterable[onnx.NodeProto],
    cfg: DataflowBuildConfig,
    found: dict[str, list[Taker]] | None = None,
    converted: ModelWrapper | None = None,
) -> list[str]:
    """One line per blocking node of the ``converted`` model: which kernel and transform
    would convert it (``found``: ``takers(before, cfg)`` when already known)."""
    from brainsmith.planning.context import context_of

    found = takers(before, cfg) if found is None else found
    plan = context_of(cfg).plan
    return [
        f"{node.name} ({node.op_type}): {advice(node, found, before, converted, plan)}"
        for node in nodes
    ]


def advice(
    node: onnx.NodeProto,
    found: dict[str, list[Taker]],
    model: ModelWrapper | None = None,
    converted: ModelWrapper | None = None,
    plan: BuildPlan | None = None,
) -> str:
    """What would convert ``node`` (selected or not), or that nothing installed would; with
    ``model``, its floating-point operands are named; with the ``converted`` model (and the
    ``plan``), the kernels that took its neighbours."""
    graph = converted if converted is not None else model
    function = float_function(node, graph) if graph is not None else None
    if function is not None:
        return float_function_advice(*function)
    options = options_for(node, found)
    if not options:
        return no_kernel_advice(node, model)
    unselected = [t for t in options if not t.selected]
    for decide in (_excluded_advice, _swap_advice, _add_advice):
        text = decide(unselected)
        if text:
            return text
    return _order_advice(node, options, converted, plan)


def float_function(node: onnx.NodeProto, model: ModelWrapper) -> tuple[onnx.NodeProto, str] | None:
    """The floating-point function (``FLOAT_FUNCTIONS``) that keeps ``node`` off the
    hardware, and where it lies: ``node`` itself (""), or the nearest one its floating-point
    values flow to ("after") or come from ("before") through other nodes left off the
    hardware ("near": both ways); None when there is none."""
    seen, queue = {node.name}, [(node, "")]
    while queue:
        current, where = queue.pop(0)
        if current.op_type in FLOAT_FUNCTIONS and _float_out(model, current):
            return current, where
        for tensor, way in [*((i, "before") for i in current.input),
                            *((o, "after") for o in current.output)]:  # fmt: skip
            if not _computed_float(model, tensor):
                continue
            producer = model.find_producer(tensor)
            for neighbour in [producer, *(model.find_consumers(tensor) or ())]:
                if neighbour is None or neighbour.name in seen or is_hardware(neighbour):
                    continue
                seen.add(neighbour.name)
                queue.append((neighbour, way if where in ("", way) else "near"))
    return None


def _float_out(model: ModelWrapper, node: onnx.NodeProto) -> bool:
    return any(_computed_float(model, name) for name in node.output)


def float_function_advice(function: onnx.NodeProto, where: str) -> str:
    """What to do, in plain words, about a floating-point ``function`` between layers that
    keeps a node off the hardware: ``function`` itself (``where`` ""), or a scale or bias
    ``where`` ("before", "after", "near") it."""
    from brainsmith.transforms.monotonic_thresholds import INVERSES

    name, op_type = function.name, function.op_type
    what = (
        f"a floating-point {op_type} between layers, which no integer layer computes"
        if not where
        else f"kept in floating point by the {op_type} {name} {where} it, which no integer "
        "layer computes"
    )
    host = (
        f"or leave {name} on the host, at the network's start or end (the accelerator is one "
        "unbroken chain of layers)"
    )
    if op_type in INVERSES:
        return (
            f"{what}: put a quantizer right before {name} and one right after it, as its only "
            f"reader (a Brevitas QuantIdentity on each side), so that {name} and the quantizer "
            f"after it become one threshold (lookup) layer over integers; {host}"
        )
    made = ", ".join(INVERSES)
    return (
        f"{what}: the build makes a threshold (lookup) layer of a {made} with a quantizer "
        f"right before and after it, not of a {op_type}; use one of those, or a ReLU, "
        f"{host}"
    )


def options_for(node: onnx.NodeProto, found: dict[str, list[Taker]]) -> list[Taker]:
    """The kernels in ``found`` that would take ``node``, once each, in order."""
    return list(dict.fromkeys(t for out in node.output for t in found.get(out, ())))


@dataclass(frozen=True)
class Clue:
    """Something about a node no kernel takes: what it is, and the hint it calls for ("":
    the hint so far stands)."""

    text: str
    hint: str = ""


def no_kernel_advice(node: onnx.NodeProto, model: ModelWrapper | None) -> str:
    """That no installed kernel implements ``node``, with what in ``model`` keeps it off
    the hardware and what to do about it."""
    text = f"no installed plugin implements {node.op_type}"
    hint = NO_KERNEL_HINTS.get(node.op_type, "")
    for clue in _clues(node, model) if model is not None else []:
        text += f"; {clue.text}"
        hint = clue.hint or hint
    return f"{text} ({hint})" if hint else text


def _clues(node: onnx.NodeProto, model: ModelWrapper) -> list[Clue]:
    """Its floating-point operands (and a per-channel scale reaching a matrix product), and
    a constant joined to the stream."""
    constants = [i for i in node.input if model.get_initializer(i) is not None]
    if not constants or node.op_type not in CONSTANT_HINTS:
        return _float_clues(node, model)
    text = f"constant input{_s(constants)}: {', '.join(constants)}"
    return [*_float_clues(node, model), Clue(text, CONSTANT_HINTS[node.op_type])]


def _float_clues(node: onnx.NodeProto, model: ModelWrapper) -> list[Clue]:
    """Its floating-point operands, and a per-channel scale that reaches a matrix product."""
    floats = float_operands(model, node)
    if not floats:
        return []
    clues = [Clue(f"floating-point operand{_s(floats)}: {', '.join(floats)}",
                  FLOAT_HINTS.get(node.op_type, ""))]  # fmt: skip
    scales = [per_channel_scale(model, i) for i in node.input] if node.op_type == "MatMul" else []
    if any(scales):
        clues.append(Clue(f"per-channel scale: {', '.join(s for s in scales if s)}",
                          PER_CHANNEL_HINT))  # fmt: skip
    return clues


def _s(items: list[str]) -> str:
    return "s" if len(items) > 1 else ""


def _excluded_advice(unselected: list[Taker]) -> str:
    """Kernels that would convert it but are excluded: why, or to remove the exclude."""
    excluded = [t for t in unselected if t.excluded]
    if not excluded:
        return ""
    names = ", ".join(t.kernel for t in excluded)
    if all(t.excluded_why for t in excluded):
        return f"{names} would convert it, but {excluded[0].exclusion}"
    return f"{names} would convert it, but the blueprint excludes it: remove it from exclude"


def _swap_advice(unselected: list[Taker]) -> str:
    """A kernel that would convert it in place of a listed one building the same layers."""
    swaps = [t for t in unselected if t.instead_of]
    if not swaps:
        return ""
    t = swaps[0]
    return (
        f"{t.kernel} would convert it ({t.by}); the blueprint's {t.instead_of} "
        f"builds the same layers without that transform: list {t.kernel} instead of "
        f"{t.instead_of}, with the same backends"
    )


def _add_advice(unselected: list[Taker]) -> str:
    """Kernels the blueprint does not select that would convert it: add them."""
    if not unselected:
        return ""
    names = ", ".join(f"{t.kernel} ({t.by})" for t in unselected)
    return f"add kernel {names} to the blueprint's kernels, or use kernels: auto"


def _order_advice(
    node: onnx.NodeProto,
    options: list[Taker],
    converted: ModelWrapper | None,
    plan: BuildPlan | None,
) -> str:
    """Selected kernels convert it alone, but earlier transforms took its neighbours."""
    names = ", ".join(f"{t.kernel} ({t.by})" for t in options)
    takers_of = neighbour_kernels(node, converted, plan) if converted is not None else []
    culprit = (
        f"exclude {' or '.join(takers_of)}, which took its neighbours first "
        f"(--exclude {takers_of[0]} or the blueprint's exclude), or give "
        f"{options[0].kernel} an earlier infer_order"
        if takers_of
        else f"give {options[0].kernel} an earlier infer_order"
    )
    return (
        f"{names} converts it on its own, but not after the transforms before it changed the "
        f"graph: {culprit}"
    )


def neighbour_kernels(
    node: onnx.NodeProto, converted: ModelWrapper, plan: BuildPlan | None = None
) -> list[str]:
    """The kernels that made the hardware layers next to ``node`` in ``converted``."""
    names = [*node.input, *node.output]
    around = [
        n for n in converted.graph.node
        if is_hardware(n) and n is not node and set(names) & {*n.input, *n.output}
    ]  # fmt: skip
    return list(dict.fromkeys(_kernel_name(layer.op_type, plan) for layer in around))


def _kernel_name(op_type: str, plan: BuildPlan | None) -> str:
    """The plan's kernel for ``op_type``, else FINN's own (``finn:op_type``)."""
    kernel = plan.kernel_for(op_type) if plan is not None else None
    return kernel.name if kernel is not None else f"finn:{op_type}"
