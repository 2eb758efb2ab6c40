"""The execution tree: variants that agree on every step up to a branch point share that
run of steps (a segment), which runs once and feeds its model to every branch.

Two variants agree on a step when the step gets the same model and reads the same parts of
the blueprint. For brainsmith's standard steps those parts are known (``STEP_INPUTS``):
``streamline`` reads the ``pre_hw`` transforms, ``folding`` the target fps, clock, folding
file, kernels and ``post_hw`` transforms, and so on. Any other step (FINN's own, yours)
is taken to read the whole blueprint, so it is never shared between different variants.
Each step's key also holds the verification settings and whether it verifies.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from brainsmith.dse.variants import Variant, expand
from brainsmith.frameworks.finn.facts import step_label
from brainsmith.frameworks.finn.tables import TOOL_STEPS
from brainsmith.planning.plan import BuildPlan
from brainsmith.plugin.names import short_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.resolved import Blueprint


def _infer(plan: BuildPlan) -> object:
    standalone = plan.needs_standalone_thresholds()
    kernels = [(k.name, k.op_type) for k in plan.kernels or ()]
    return (
        plan.infer_transforms(standalone),
        standalone,
        sorted(plan.elementwise_ops() or ()),
        kernels,
    )


def _kernels(plan: BuildPlan) -> object:
    kernels = [(k.name, k.op_type, k.backends, k.backend_types) for k in plan.kernels or ()]
    return kernels, plan.prefer


def _file(path: str | None) -> object:
    """A configuration file by path and content (an edited file is another input)."""
    if not path:
        return None
    with open(path, "rb") as handle:
        return path, hashlib.sha256(handle.read()).hexdigest()


INPUTS: dict[str, Callable[[BuildPlan], object]] = {
    "pre_hw": lambda plan: [(t.name, t.args) for t in plan.pre_hw],
    "post_hw": lambda plan: [(t.name, t.args) for t in plan.post_hw],
    "infer": _infer,
    "kernels": _kernels,
    "part": lambda plan: (plan.build.fpga_part, plan.build.board),
    "clock": lambda plan: plan.build.period_ns,
    "target_fps": lambda plan: plan.build.target_fps,
    "folding": lambda plan: sorted(vars(plan.build.folding).items()),
    "folding_config": lambda plan: _file(plan.build.folding_config),
    "specialize_config": lambda plan: _file(plan.build.specialize_config),
}
STEP_INPUTS: dict[str, tuple[str, ...]] = {
    "brainsmith:cleanup": (),
    "brainsmith:qonnx_to_finn": (),
    "brainsmith:streamline": ("pre_hw",),
    "brainsmith:hardware_inference": ("infer",),
    "brainsmith:specialize": ("kernels", "part", "specialize_config"),
    "brainsmith:folding": (
        "kernels",
        "part",
        "clock",
        "target_fps",
        "folding",
        "folding_config",
        "post_hw",
    ),
    "brainsmith:estimates": ("part", "clock"),
    "brainsmith:codegen": ("part", "clock"),
}


def qualified_step(name: str) -> str:
    """A plan's step name as the key table knows it (short names are brainsmith's first)."""
    return name if ":" in name else f"brainsmith:{name}"


def step_keys(plan: BuildPlan, root: str) -> list[str]:
    """Per step, a hash of everything the model after that step depends on."""
    options = plan.build
    names = [qualified_step(s) for s in plan.steps]
    checked = [i for i, n in enumerate(names) if short_name(n) not in TOOL_STEPS]
    last = checked[-1] if checked else -1
    verify = (options.verify, options.verify_samples, options.verify_atol, options.verify_rtol)
    keys, key = [], root
    for index, name in enumerate(names):
        reads = STEP_INPUTS.get(name)
        if reads is None:
            read: dict[str, object] = {"blueprint": plan.blueprint}
        else:
            read = {what: INPUTS[what](plan) for what in reads}
        step = {"step": name, "reads": read, "verify": verify, "last": index == last}
        key = _hash(key, step)
        keys.append(key)
    return keys


def root_key(model: str, vectors: tuple[str, str] | None) -> str:
    """What every build of an exploration starts from: the model, vectors and versions."""
    from brainsmith.report.contents import versions

    files = [model, *(vectors or ())]
    return _hash("", {"files": [_file(os.path.abspath(f)) for f in files], **versions()})


def _hash(previous: str, value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest()


@dataclass
class Segment:
    """Steps ``start`` to ``stop`` (exclusive) run once for ``variants``; a segment with
    one variant is that variant's own tail, built in the variant's folder."""

    start: int
    stop: int
    variants: list[Variant]
    parent: Segment | None = None
    children: list[Segment] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return len(self.variants) > 1

    @property
    def key(self) -> str:
        return self.variants[0].keys[self.stop - 1] if self.stop else ""

    @property
    def id(self) -> str:
        return f"s{self.key[:10]}" if self.shared else self.variants[0].id

    @property
    def steps(self) -> list[str]:
        return self.variants[0].plan.steps[self.start : self.stop]

    def path(self) -> list[Segment]:
        """The segments from the root down to this one."""
        chain: list[Segment] = []
        node: Segment | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain[::-1]

    def walk(self) -> Iterator[Segment]:
        yield self
        for child in self.children:
            yield from child.walk()

    def fixed(self) -> dict[str, object]:
        """The choices all variants here share and the parent's do not."""
        mine = _common(self.variants)
        theirs = _common(self.parent.variants) if self.parent else {}
        return {k: v for k, v in mine.items() if theirs.get(k, _MISSING) != v}


_MISSING = object()


def _common(variants: list[Variant]) -> dict[str, object]:
    first = variants[0].choices
    return {k: v for k, v in first.items() if all(x.choices.get(k) == v for x in variants)}


def build_tree(variants: list[Variant]) -> list[Segment]:
    """The roots of the execution tree over ``variants`` (keys filled in)."""
    roots: list[Segment] = []
    _split(variants, 0, None, roots)
    return roots


def _split(group: list[Variant], depth: int, parent: Segment | None, roots: list[Segment]) -> None:
    if len(group) == 1:
        _attach(Segment(depth, len(group[0].keys), group, parent), parent, roots)
        return
    common = depth
    while all(len(v.keys) > common for v in group) and len({v.keys[common] for v in group}) == 1:
        common += 1
    node = parent
    if common > depth:
        node = Segment(depth, common, group, parent)
        _attach(node, parent, roots)
    buckets: dict[str, list[Variant]] = {}
    for variant in group:
        fork = variant.keys[common] if len(variant.keys) > common else f"end:{variant.id}"
        buckets.setdefault(fork, []).append(variant)
    for bucket in buckets.values():
        _split(bucket, common, node, roots)


def _attach(node: Segment, parent: Segment | None, roots: list[Segment]) -> None:
    (parent.children if parent is not None else roots).append(node)


@dataclass
class TreeCounts:
    """How much the tree saves: step runs with it and without it."""

    variants: int
    segments: int
    shared: int
    steps_run: int
    steps_without_reuse: int


def counts(roots: list[Segment]) -> TreeCounts:
    nodes = [node for root in roots for node in root.walk()]
    variants = [v for node in nodes if not node.shared for v in node.variants]
    return TreeCounts(
        variants=len(variants),
        segments=len(nodes),
        shared=sum(node.shared for node in nodes),
        steps_run=sum(node.stop - node.start for node in nodes),
        steps_without_reuse=sum(len(v.keys) for v in variants),
    )


def render(roots: list[Segment]) -> list[str]:
    """The tree as text lines, one per segment."""
    lines: list[str] = []
    for index, root in enumerate(roots):
        _render(root, "", index == len(roots) - 1, lines)
    return lines


def _render(node: Segment, indent: str, last: bool, lines: list[str]) -> None:
    names = [step_label(short_name(s)) for s in node.steps]
    if not names:
        what = "no steps of its own"
    elif len(names) <= 3:
        what = f"steps {node.start + 1}-{node.stop} " + ", ".join(names)
    else:
        what = f"steps {node.start + 1}-{node.stop} {names[0]} .. {names[-1]}"
    choices = " ".join(f"{k}={show(v)}" for k, v in node.fixed().items())
    who = f"{len(node.variants)} variants" if node.shared else node.variants[0].id
    lines.append(
        f"{indent}{'└─' if last else '├─'} {who}: {what}" + (f"  [{choices}]" if choices else "")
    )
    for index, child in enumerate(node.children):
        _render(child, indent + ("   " if last else "│  "), index == len(node.children) - 1, lines)


def show(value: object) -> str:
    if isinstance(value, list):
        return "[" + ",".join(short_name(str(v)) for v in value) + "]"
    return str(value)


def describe_space(blueprint: Blueprint) -> list[str]:
    """The variant count and the execution tree of a design-space blueprint, as text."""
    variants = expand(blueprint)
    space = blueprint.design_space
    assert space is not None  # expand refused a blueprint without one
    if blueprint.build is None and not any(d.section == "build" for d in space.dimensions):
        return [f"design space: {len(variants)} variants; no tree: the blueprint has no build:"]
    for variant in variants:
        variant.keys = step_keys(variant.plan, "")
    roots = build_tree(variants)
    tree = counts(roots)
    picked = f"{space.search.strategy}, {len(variants)} of {space.size}"
    return [
        f"design space: {len(variants)} variants ({picked}); "
        + ", ".join(f"{d.label} x{len(d.values)}" for d in space.dimensions),
        f"execution tree: {tree.segments} segments ({tree.shared} shared), "
        f"{tree.steps_run} step runs instead of {tree.steps_without_reuse}",
        *render(roots),
    ]
