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
    import onnx
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper


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
        used = {name for n in nodes for name in (*n.input, *n.output)}
        have = {t.name for t in graph.initializer}
        graph.initializer.extend(
            copy.deepcopy(t) for t in source.initializer if t.name in used and t.name not in have
        )
        boundary = list(graph.output)  # what the accelerator hands the tail
        del graph.output[:]
        graph.output.extend(copy.deepcopy(o) for o in source.output)
        known = {v.name for v in (*graph.input, *graph.output, *graph.value_info)}
        for info in [*boundary, *(v for v in source.value_info if v.name in used)]:
            if info.name not in known:
                graph.value_info.append(copy.deepcopy(info))
                known.add(info.name)
        annotated = {a.tensor_name for a in graph.quantization_annotation}
        for annotation in source.quantization_annotation:
            if annotation.tensor_name in used and annotation.tensor_name not in annotated:
                graph.quantization_annotation.append(copy.deepcopy(annotation))
        graph.node.extend(copy.deepcopy(n) for n in nodes)
        return parent


def split_host_tail(
    model: ModelWrapper, converted: ModelWrapper, cfg: DataflowBuildConfig
) -> tuple[ModelWrapper, HostTail]:
    """(head, tail): ``model`` without the nodes that must stay on the host — the blocking
    nodes of ``converted`` (its hardware conversion) and everything downstream of them —
    and those nodes. The tail is empty when nothing blocks, or when an installed kernel
    would convert a blocking node (the blueprint leaves it out or excludes it): then the
    build stops and says which kernel to add."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_shapes import InferShapes

    blocking = blocking_nodes(converted)
    if not blocking:
        return model, HostTail(model)
    found = takers(model, cfg)
    if any(found.get(out) for n in blocking for out in n.output):
        return model, HostTail(model)  # a kernel would convert it: the build says which
    made = {out for n in blocking for out in n.output}  # (the conversion renames nodes)
    seeds = {n.name for n in model.graph.node if made & set(n.output)}
    if not seeds:
        return model, HostTail(model)
    tail = downstream(model, seeds)
    head = ModelWrapper(copy.deepcopy(model.model))
    graph = head.graph
    produced_in_tail = {out for n in graph.node if n.name in tail for out in n.output}
    kept = [n for n in graph.node if n.name not in tail]
    read_by_tail = {name for n in graph.node if n.name in tail for name in n.input}
    boundary = [name for n in kept for name in n.output if name in read_by_tail]
    del graph.node[:]
    graph.node.extend(kept)
    outputs = [o for o in graph.output if o.name not in produced_in_tail]
    del graph.output[:]
    graph.output.extend(outputs)
    for name in dict.fromkeys(boundary):  # a tensor the tail reads: an output of the head
        infos = [v for v in graph.value_info if v.name == name]
        for info in infos:
            graph.value_info.remove(info)
        graph.output.append(infos[0] if infos else _value_info(head, name))
    head = head.transform(InferShapes())
    order = [n.name for n in model.graph.node if n.name in tail]
    first = [n for n in model.graph.node if n.name in seeds]  # named as in final_parent.onnx
    why = "; ".join(explain_blocking(model, first, cfg, found))
    note = (
        f"{len(order)} node(s) run on the host after the accelerator, from the first node that "
        f"cannot be a hardware layer on: {why}"
    )
    return head, HostTail(model, order, note)


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
