"""A graph's wiring is checked after every step, whatever verification says, so the step that
broke it is named:

- every tensor a node reads is produced: by a node, a graph input or an initializer;
- no tensor a node produces is also an initializer or a graph input;
- no loop (a node reading its own output, or a longer one): FINN's passes would never finish;
- no hardware layer's stream became a constant (an initializer or a Constant node's output)
  that the next layer or the graph's output reads: the accelerator would stream it.

Every check is linear in nodes + edges (the loop check is Kahn's, without recursion)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from brainsmith.frameworks.finn.facts import is_hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onnx import GraphProto, NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

LISTED = 5  # problems of one kind named in a message
LOOP_SHOWN = 6  # nodes of a long loop named at each end
CONSTANT_OPS = ("Constant",)
AROUND = " (around the accelerator)"
WHERE = {"model": "", "parent": AROUND}  # after a problem of each graph


class Loop(NamedTuple):
    """A loop: ``nodes[i]`` reads ``tensors[i]``, an output of the node before it (the last
    node's for ``nodes[0]``)."""

    nodes: list[NodeProto]
    tensors: list[str]


@dataclass
class Streams:
    """Where hardware layers streamed before a step: tensor -> the layer producing it,
    (reader, input index) and (graph, output index) -> the tensor a layer streamed there."""

    tensors: dict[str, str] = field(default_factory=dict)
    reads: dict[tuple[str, int], str] = field(default_factory=dict)
    outputs: dict[tuple[str, int], str] = field(default_factory=dict)


def label(node: NodeProto, index: int) -> str:
    """A node as messages name it (an unnamed one by its position and type)."""
    return node.name or f"#{index} ({node.op_type})"


def unproduced(model: ModelWrapper) -> list[str]:
    """Each "node N reads T" (and "the graph's output T") where nothing produces T: no node,
    graph input or initializer."""
    graph = model.graph
    known = _sources(graph)
    problems = [
        f"node {node.name} reads {name}"
        for node in graph.node
        for name in node.input
        if name and name not in known
    ]
    problems += [f"the graph's output {t.name}" for t in graph.output if t.name not in known]
    return problems


def _sources(graph: GraphProto) -> set[str]:
    """Every tensor ``graph`` gives or produces: inputs, initializers and nodes' outputs."""
    known = {t.name for t in graph.input} | {t.name for t in graph.initializer}
    return known | {name for node in graph.node for name in node.output}


def given_and_produced(graph: GraphProto) -> list[str]:
    """Each "node N produces T, which is also the initializer T" (or a graph input)."""
    given = {t.name: f"the graph's input {t.name}" for t in graph.input}
    given |= {
        t.name: f"the initializer {t.name}" for t in graph.initializer
    }  # an initializer's name wins
    return [
        f"node {label(node, index)} produces {name}, which is also {given[name]}"
        for index, node in enumerate(graph.node)
        for name in node.output
        if name in given
    ]


def cycle(graph: GraphProto) -> Loop | None:
    """A loop among ``graph``'s nodes, None without one. Kahn's algorithm removes every node
    whose inputs are all ready; each node left reads a node left, so walking back from one
    through such inputs reaches a loop."""
    nodes = list(graph.node)
    producers = _producers(nodes)
    left = _kahn_left(_edges(nodes, producers))
    if not left:
        return None
    return _walk_back(nodes, producers, {*left}, left[0])


def _producers(nodes: list[NodeProto]) -> dict[str, list[int]]:
    """Each tensor -> the positions of the nodes producing it."""
    producers: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if name:
                producers.setdefault(name, []).append(index)
    return producers


@dataclass
class _Edges:
    """For each node: how many inputs it still waits for, and the nodes reading its outputs."""

    waiting: list[int]
    readers: list[list[int]]


def _edges(nodes: list[NodeProto], producers: dict[str, list[int]]) -> _Edges:
    edges = _Edges([0] * len(nodes), [[] for _ in nodes])
    for index, node in enumerate(nodes):
        for name in filter(None, node.input):
            for producer in producers.get(name, ()):
                edges.waiting[index] += 1
                edges.readers[producer].append(index)
    return edges


def _kahn_left(edges: _Edges) -> list[int]:
    """The nodes Kahn's algorithm cannot remove (each waits for a node on or after a loop)."""
    waiting = edges.waiting
    ready = [i for i, count in enumerate(waiting) if count == 0]
    while ready:
        for reader in edges.readers[ready.pop()]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    return [i for i, count in enumerate(waiting) if count > 0]


def _walk_back(
    nodes: list[NodeProto], producers: dict[str, list[int]], left: set[int], start: int
) -> Loop:
    """The loop reached from node ``start`` by following inputs produced by nodes ``left``."""
    path: list[int] = []
    read: list[str] = []  # read[k]: the tensor path[k] reads from path[k + 1]
    at: dict[int, int] = {}
    current = start
    while current not in at:
        at[current] = len(path)
        path.append(current)
        name, current = next(
            (name, producer)
            for name in nodes[current].input
            for producer in (producers.get(name, ()) if name else ())
            if producer in left
        )
        read.append(name)
    first = at[current]
    # reversed, each node reads from the one before it: start at the graph's earliest
    order, tensors = path[first:][::-1], read[first:][::-1]
    begin = order.index(min(order))
    order, tensors = order[begin:] + order[:begin], tensors[begin:] + tensors[:begin]
    return Loop([nodes[i] for i in order], tensors)


def describe(loop: Loop) -> str:
    """A loop in words: "node A reads its own output T" or "nodes A -> B -> A form a loop
    (A reads T, which B produces)"."""
    names = [n.name or f"({n.op_type})" for n in loop.nodes]
    if len(names) == 1:
        return f"node {names[0]} reads its own output {loop.tensors[0]}"
    shown = names
    if len(names) > 2 * LOOP_SHOWN:
        shown = [*names[:LOOP_SHOWN], "...", *names[-LOOP_SHOWN:]]
    return (
        f"nodes {' -> '.join([*shown, names[0]])} form a loop of {len(names):,} nodes "
        f"({names[0]} reads {loop.tensors[0]}, which {names[-1]} produces)"
    )


def streams(model: ModelWrapper, parent: ModelWrapper | None) -> Streams:
    """Where ``model``'s hardware layers (and those of the graph around the accelerator,
    ``parent``) stream: taken before a step, which may change the model in place."""
    found = Streams()
    for role, wrapper in (("model", model), ("parent", parent)):
        if wrapper is not None:
            _add_streams(found, role, wrapper.graph)
    return found


def _hardware_outputs(graph: GraphProto) -> dict[str, str]:
    """Each tensor a hardware layer of ``graph`` produces -> that layer."""
    return {
        name: label(node, index)
        for index, node in enumerate(graph.node)
        if is_hardware(node)
        for name in node.output
        if name
    }


def _add_streams(found: Streams, role: str, graph: GraphProto) -> None:
    hardware = _hardware_outputs(graph)
    for name, layer in hardware.items():  # the model's layer, not the partition node
        found.tensors.setdefault(name, layer)
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name in hardware:
                found.reads[(label(node, index), position)] = name
    for position, output in enumerate(graph.output):
        if output.name in hardware:
            found.outputs[(role, position)] = output.name


def constants(graph: GraphProto) -> set[str]:
    """The tensors of ``graph`` that hold a constant: initializers and Constant nodes'."""
    names = {t.name for t in graph.initializer}
    names |= {
        name
        for node in graph.node
        if node.op_type in CONSTANT_OPS and node.domain in ("", "ai.onnx")
        for name in node.output
    }
    return names


@dataclass
class _ConstantStreams:
    """The constants of a graph read where hardware layers streamed ``before``; ``named``:
    the streams a problem already names."""

    fixed: set[str]
    before: Streams
    named: set[str] = field(default_factory=set)

    def stream(self, tensor: str) -> str:
        return f"{tensor}, the stream of hardware layer {self.before.tensors[tensor]}"

    def read(self, reader: str, position: int, name: str) -> list[str]:
        """The problem of ``reader`` reading constant ``name`` at ``position``, if any."""
        was = self.before.reads.get((reader, position))
        if was is None or name not in self.fixed:
            return []
        self.named.add(was)
        now = "now a constant" if name == was else f"replaced by the constant {name}"
        return [f"node {reader} reads {self.stream(was)}, {now}"]

    def output(self, role: str, position: int, name: str) -> list[str]:
        """The problem of the graph's output ``position`` being constant ``name``, if any."""
        was = self.before.outputs.get((role, position))
        if was is None or name not in self.fixed:
            return []
        self.named.add(was)
        if name == was:
            return [f"the graph's output {self.stream(was)}, is now a constant"]
        return [f"the graph's output {name} is a constant in place of {self.stream(was)}"]

    def unnamed(self) -> list[str]:
        """The streams now constant that no problem above names."""
        return [
            f"{self.stream(tensor)}, is now a constant"
            for tensor in sorted(self.fixed & self.before.tensors.keys())
            if tensor not in self.named
        ]


def constant_streams(graph: GraphProto, role: str, before: Streams) -> list[str]:
    """Each place of ``graph`` where a constant is read in place of what a hardware layer
    streamed there ``before``."""
    check = _ConstantStreams(constants(graph), before)
    problems = [
        problem
        for index, node in enumerate(graph.node)
        for position, name in enumerate(node.input)
        for problem in check.read(label(node, index), position, name)
    ]
    problems += [
        problem
        for position, output in enumerate(graph.output)
        for problem in check.output(role, position, output.name)
    ]
    return problems + check.unnamed()


def wiring_error(
    step: str, model: ModelWrapper, parent: ModelWrapper | None, before: Streams | None = None
) -> str:
    """Why ``step`` left the model (or the graph around the accelerator, ``parent``) broken
    ("" when it did not); ``before``: where hardware layers streamed before the step."""
    kinds: dict[str, list[str]] = {}
    for role, wrapper in (("model", model), ("parent", parent)):
        if wrapper is None:
            continue
        where = WHERE[role]
        for kind, problems in _graph_problems(wrapper, role, before).items():
            kinds.setdefault(kind, []).extend(p + where for p in problems)
    parts = [_part(kind, problems) for kind, problems in kinds.items() if problems]
    return f"step {step} left {'; and '.join(parts)}" if parts else ""


def _graph_problems(
    wrapper: ModelWrapper, role: str, before: Streams | None
) -> dict[str, list[str]]:
    """Each kind of wiring problem (the keys of ``WHY``, in order) -> those of one graph."""
    graph = wrapper.graph
    loop = cycle(graph)
    return {
        "unproduced": unproduced(wrapper),
        "given": given_and_produced(graph),
        "constant": constant_streams(graph, role, before) if before is not None else [],
        "loop": [describe(loop)] if loop is not None else [],
    }


WHY = {
    "unproduced": ("tensors that no node produces", "a transform removed their producer"),
    "given": (
        "tensors both produced by a node and given as a constant or input",
        "each tensor has one source",
    ),
    "constant": (
        "a hardware layer's stream turned into a constant",
        "the accelerator would stream a constant instead of the layer's results",
    ),
    "loop": ("a loop in the graph", "the next steps would never finish on it"),
}


def _part(kind: str, problems: list[str]) -> str:
    what, why = WHY[kind]
    more = f" and {len(problems) - LISTED} more" if len(problems) > LISTED else ""
    return f"{what}: {'; '.join(problems[:LISTED])}{more} ({why})"
