"""The host tail: when a node between hardware layers cannot be a hardware layer — no
installed kernel converts it (a floating-point attention product, say) — that node and
everything after it run on the host after the accelerator, instead of the build stopping.
The accelerator is what comes before (``split_host_tail`` cuts the streamlined model
there); ``HostTail.attach`` adds the tail's nodes to the graph around the accelerator
(``final_parent.onnx``), where FINN's execution runs them, and the report lists them as
CPU nodes."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from brainsmith.planning.advice import blocking_nodes, explain_blocking, takers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, MutableSequence
    from typing import Any, TypeVar

    T = TypeVar("T")

    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.advice import Taker


@dataclass
class HostTail:
    """The nodes that stay on the host, taken from the streamlined ``model``."""

    model: ModelWrapper  # the streamlined model the nodes come from
    names: list[str] = field(default_factory=list)  # in the model's (topological) order
    note: str = ""

    def __bool__(self) -> bool:
        return bool(self.names)

    def attach(self, parent: ModelWrapper) -> ModelWrapper:
        """``parent`` (the accelerator in its graph) followed by the tail's nodes, with the
        model's own outputs."""
        source, graph = self.model.graph, parent.graph
        nodes = [n for n in source.node if n.name in self.names]
        used = _tensors(nodes)
        _add_missing(graph.initializer, source.initializer, _names(graph.initializer), used)
        boundary = list(graph.output)  # what the accelerator hands the tail
        _replace(graph.output, [copy.deepcopy(o) for o in source.output])
        known = _names([*graph.input, *graph.output, *graph.value_info])
        _add_missing(graph.value_info, boundary, known)
        _add_missing(graph.value_info, source.value_info, known, used)
        annotated = {a.tensor_name for a in graph.quantization_annotation}
        _add_missing(graph.quantization_annotation, source.quantization_annotation, annotated, used)
        graph.node.extend(copy.deepcopy(n) for n in nodes)
        return parent


def _tensors(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """The tensors ``nodes`` read or write."""
    return {name for n in nodes for name in (*n.input, *n.output)}


def _replace(repeated: MutableSequence[T], items: list[T]) -> None:
    """The ``repeated`` field (of a graph) holding ``items`` instead."""
    del repeated[:]
    repeated.extend(items)


def _names(items: Iterable[Any]) -> set[str]:
    return {item.name for item in items}


def _add_missing(
    into: Any, items: Iterable[Any], have: set[str], wanted: set[str] | None = None
) -> None:
    """Copies of ``items`` (named by ``name`` or ``tensor_name``) appended to ``into``: those
    ``wanted`` (all when None) not in ``have``, each name once."""
    for item in items:
        name = getattr(item, "tensor_name", None) or item.name
        if name not in have and (wanted is None or name in wanted):
            into.append(copy.deepcopy(item))
            have.add(name)


def split_host_tail(
    model: ModelWrapper, converted: ModelWrapper, cfg: DataflowBuildConfig
) -> tuple[ModelWrapper, HostTail]:
    """(head, tail): ``model`` without the nodes that must stay on the host — the blocking
    nodes of ``converted`` (its hardware conversion) and everything downstream of them —
    and those nodes. The tail is empty when nothing blocks, or when an installed kernel
    would convert a blocking node (the blueprint leaves it out or excludes it): then the
    build stops and says which kernel to add."""
    seeds, found = _seeds(model, converted, cfg)
    if not seeds:
        return model, HostTail(model)
    tail = downstream(model, seeds)
    order = [n.name for n in model.graph.node if n.name in tail]
    first = [n for n in model.graph.node if n.name in seeds]  # named as in final_parent.onnx
    why = "; ".join(explain_blocking(model, first, cfg, found))
    note = (
        f"{len(order)} node(s) run on the host after the accelerator, from the first node that "
        f"cannot be a hardware layer on: {why}"
    )
    return _head(model, tail), HostTail(model, order, note)


def _seeds(
    model: ModelWrapper, converted: ModelWrapper, cfg: DataflowBuildConfig
) -> tuple[set[str], dict[str, list[Taker]]]:
    """The nodes of ``model`` that start the tail (none when nothing blocks in
    ``converted``, or when an installed kernel would convert a blocking node: then the build
    says which), and the kernels that take ``model``'s nodes."""
    blocking = blocking_nodes(converted)
    if not blocking:
        return set(), {}
    found = takers(model, cfg)
    made = {out for n in blocking for out in n.output}  # (the conversion renames nodes)
    if any(found.get(out) for out in made):
        return set(), found
    return _producing(model, made), found


def _producing(model: ModelWrapper, tensors: set[str]) -> set[str]:
    """The nodes of ``model`` that write one of ``tensors``."""
    return {n.name for n in model.graph.node if tensors & set(n.output)}


def _head(model: ModelWrapper, tail: set[str]) -> ModelWrapper:
    """A copy of ``model`` without the ``tail`` nodes; what the tail reads from the rest
    becomes its outputs."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_shapes import InferShapes

    head = ModelWrapper(copy.deepcopy(model.model))
    boundary = _cut(head.graph, tail)
    for name in dict.fromkeys(boundary):  # a tensor the tail reads: an output of the head
        head.graph.output.append(_take_value_info(head, name))
    return head.transform(InferShapes())


def _cut(graph: onnx.GraphProto, tail: set[str]) -> list[str]:
    """``graph`` without the ``tail`` nodes and the outputs they make; returns what the
    tail reads from the nodes kept."""
    produced_in_tail, read_by_tail = _tail_tensors(graph, tail)
    kept = [n for n in graph.node if n.name not in tail]
    _replace(graph.node, kept)
    _replace(graph.output, [o for o in graph.output if o.name not in produced_in_tail])
    return [name for n in kept for name in n.output if name in read_by_tail]


def _tail_tensors(graph: onnx.GraphProto, tail: set[str]) -> tuple[set[str], set[str]]:
    """What the ``tail`` nodes of ``graph`` produce, and what they read."""
    nodes = [n for n in graph.node if n.name in tail]
    return {out for n in nodes for out in n.output}, {name for n in nodes for name in n.input}


def _take_value_info(model: ModelWrapper, name: str) -> onnx.ValueInfoProto:
    """``name``'s value info, removed from ``model``'s (made from its shape if absent)."""
    graph = model.graph
    infos = [v for v in graph.value_info if v.name == name]
    for info in infos:
        graph.value_info.remove(info)
    return infos[0] if infos else _value_info(model, name)


def downstream(model: ModelWrapper, names: set[str]) -> set[str]:
    """``names`` and every node that reads, directly or not, what they produce."""
    found = set(names)
    tainted = {out for n in model.graph.node if n.name in names for out in n.output}
    for node in model.graph.node:  # topological order: producers come first
        if node.name in found or any(i in tainted for i in node.input):
            found.add(node.name)
            tainted.update(node.output)
    return found


def _value_info(model: ModelWrapper, name: str) -> onnx.ValueInfoProto:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, model.get_tensor_shape(name))
