"""QONNX's clean-up and annotation passes in linear time, giving the same graphs.

``ModelWrapper.cleanup`` runs after each of the hundreds of rewrites a streamlining makes,
``InferShapes`` wraps every result in a new ``ModelWrapper``, which checks every tensor's
shape, and FINN re-infers datatypes and layouts after most rewrites. QONNX looks each name up
by scanning the graph (``find_producer`` per node input, ``get_initializer`` per input, decoding
the weights it finds, ``get_tensor_shape`` per tensor, the annotations per tensor), so each of
these passes takes time in nodes x tensors: a 4-layer ViT's streamlining took 231 s, 35 s with
these (``benchmarks/streamline.py``; under a profiler ``SortGraph`` alone took a third of it).
Here each pass indexes the graph once:

- ``SortGraph``: the same order — each node's level (its longest path from a node with no
  predecessor) first, the graph's order within a level — and the same nodes dropped (no
  producer and no input from an initializer or a graph input, and nothing reads them); a cycle
  is left to QONNX's, which raises its own error;
- ``GiveUniqueParameterTensors`` and ``SortCommutativeInputsInitializerLast``: initializers
  known by name, decoded only when one is copied;
- ``check_all_tensor_shapes_specified``: value infos counted once; a tensor without one is
  looked up as QONNX does (an initializer's shape, added when asked to);
- ``InferDataTypes`` and ``InferDataLayouts``: while they run, the model finds a tensor's
  annotation by name in an index; a tensor with none (or none of the kind asked) is looked up
  as QONNX does, and an annotation QONNX adds is indexed. A graph annotating one tensor twice
  is left to QONNX's passes.

``install()`` (idempotent) makes them QONNX's, keeping each original as ``qonnx_<name>``.
"""

from __future__ import annotations

from ast import literal_eval
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import chain

from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation import general
from qonnx.transformation.infer_data_layouts import InferDataLayouts
from qonnx.transformation.infer_datatypes import InferDataTypes
from qonnx.util.basic import get_by_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onnx import GraphProto, NodeProto, StringStringEntryProto, TensorAnnotation
    from qonnx.core.datatype import BaseDataType
    from qonnx.transformation.base import Transformation

    Apply = Callable[[Transformation, ModelWrapper], tuple[ModelWrapper, bool]]  # its apply

MARK = "_brainsmith_linear"


def topological_order(graph: GraphProto) -> list[int] | None:
    """Indices of ``graph``'s nodes in ``SortGraph``'s order, or None for a cycle."""
    needs = _dependencies(graph)
    level = _levels(needs)
    if level is None:
        return None
    return sorted(needs, key=lambda index: (level[index], index))


def _dependencies(graph: GraphProto) -> dict[int, set[int]]:
    """Each sorted node's index -> the indices of the nodes it reads, as QONNX's toposort
    sees them (a node reading neither a node nor a graph input or initializer is left out)."""
    nodes = list(graph.node)
    producer = _producers(nodes)
    sources = {t.name for t in graph.initializer} | {t.name for t in graph.input}
    needs: dict[int, set[int]] = {}
    for index, node in enumerate(nodes):
        before = _reads(node, index, producer, sources)
        if before is not None:
            needs[index] = before
    for index in {index for before in needs.values() for index in before}:
        needs.setdefault(index, set())  # toposort: a dependency is an item
    return needs


def _reads(
    node: NodeProto, index: int, producer: dict[str, int], sources: set[str]
) -> set[int] | None:
    """The indices of the nodes ``node`` reads (not itself: toposort ignores a node's own
    output); empty when it reads only ``sources``; None when it reads neither."""
    before = {producer[name] for name in node.input if name in producer}
    if before:
        return before - {index}
    return set() if any(name in sources for name in node.input) else None


def _producers(nodes: list[NodeProto]) -> dict[str, int]:
    """Each tensor -> the index of its first producer in the graph (find_producer's)."""
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            producer.setdefault(name, index)
    return producer


def _readers(needs: dict[int, set[int]]) -> dict[int, list[int]]:
    """Each node's index -> the indices of the nodes that read it."""
    readers: dict[int, list[int]] = {index: [] for index in needs}
    for index, before in needs.items():
        for earlier in before:
            readers[earlier].append(index)
    return readers


def _levels(needs: dict[int, set[int]]) -> dict[int, int] | None:
    """Each node's level (the longest chain of nodes before it), or None for a cycle."""
    readers = _readers(needs)
    waiting = {index: len(before) for index, before in needs.items()}
    level = dict.fromkeys(needs, 0)
    ready = [index for index, count in waiting.items() if count == 0]
    for index in ready:  # grows while it is walked: Kahn's algorithm
        for reader in readers[index]:
            level[reader] = max(level[reader], level[index] + 1)
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    return level if len(ready) == len(needs) else None


def sort_graph(self: Transformation, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
    graph = model.graph
    if len(graph.node) == 1:
        return model, False  # as QONNX's: nothing to sort
    order = topological_order(graph)
    if order is None:
        sorted_by_qonnx: tuple[ModelWrapper, bool] = type(self).qonnx_apply(self, model)
        return sorted_by_qonnx  # a cycle: QONNX's error
    nodes = list(graph.node)
    in_order = [nodes[index] for index in order]
    del graph.node[:]
    graph.node.extend(in_order)
    return model, False


def unique_parameters(self: Transformation, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
    initializers = {t.name for t in model.graph.initializer}
    seen: set[str] = set()
    for node in model.graph.node:
        for index, name in enumerate(list(node.input)):
            if name not in initializers:
                continue  # a dynamic input
            if name not in seen:
                seen.add(name)  # its first reader keeps it
                continue
            copy = model.make_new_valueinfo_name()
            model.set_initializer(copy, model.get_initializer(name))
            model.set_tensor_datatype(copy, model.get_tensor_datatype(name))
            node.input[index] = copy
    return model, False


def initializers_last(self: Transformation, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
    initializers = {t.name for t in model.graph.initializer}
    modified = False
    for node in model.graph.node:
        if node.op_type not in self.SUPPORTED_COMMUTATIVE_OPS:
            continue
        dynamic = [name for name in node.input if name not in initializers]
        inputs = [*dynamic, *(name for name in node.input if name not in dynamic)]
        for index, name in enumerate(inputs):
            modified |= node.input[index] != name
            node.input[index] = name
    return model, modified


def shapes_specified(self: ModelWrapper, fix_missing_init_shape: bool = False) -> bool:
    graph = self.graph
    infos = Counter(t.name for t in chain(graph.input, graph.output, graph.value_info))
    specified = True
    for node in graph.node:
        for name in chain((name for name in node.input if name != ""), node.output):
            count = infos[name]
            if count > 1:
                raise AssertionError("Multiple ValueInfoProto found for " + name)  # as QONNX's
            if count == 1:
                continue
            shape = self.get_tensor_shape(name, fix_missing_init_shape=fix_missing_init_shape)
            if shape is None:
                specified = False
            elif fix_missing_init_shape:
                infos[name] = 1  # QONNX added the initializer's value info
    return specified


@contextmanager
def annotations_by_name(model: ModelWrapper) -> Iterator[None]:
    """While inside, ``model`` finds and adds datatype and layout annotations by name (a tensor
    annotated twice, which QONNX's lookups refuse, leaves ``model`` as it is)."""

    annotations = model.graph.quantization_annotation
    found: dict[str, TensorAnnotation] = {}
    for annotation in annotations:
        if annotation.tensor_name in found:
            yield
            return
        found[annotation.tensor_name] = annotation
    kind = type(model)

    def indexed(name: str) -> TensorAnnotation | None:
        annotation = found.get(name)
        return annotation if annotation is not None and annotation.tensor_name == name else None

    def key_of(annotation: TensorAnnotation, key: str) -> StringStringEntryProto | None:
        entry: StringStringEntryProto | None = get_by_name(
            annotation.quant_parameter_tensor_names, key, "key"
        )
        return entry

    def added(name: str) -> None:
        if indexed(name) is None and len(annotations) and annotations[-1].tensor_name == name:
            found[name] = annotations[-1]

    def get_tensor_datatype(name: str) -> BaseDataType:
        annotation = indexed(name)
        known = None if annotation is None else key_of(annotation, "finn_datatype")
        if known is None:
            return kind.get_tensor_datatype(model, name)  # from the value info, as QONNX
        return DataType[known.value]

    def set_tensor_datatype(name: str, datatype: BaseDataType | None) -> None:
        annotation = indexed(name)
        known = None if annotation is None else key_of(annotation, "finn_datatype")
        if known is None or datatype is None:
            kind.set_tensor_datatype(model, name, datatype)
            added(name)
        else:
            known.value = datatype.name

    def get_tensor_layout(name: str) -> list[str] | None:
        annotation = indexed(name)
        layout: list[str] | None
        if annotation is None:
            layout = kind.get_tensor_layout(model, name)
            return layout
        known = key_of(annotation, "tensor_layout")
        layout = None if known is None else literal_eval(known.value)  # a list of strings
        return layout

    def set_tensor_layout(name: str, layout: list[str]) -> None:
        annotation = indexed(name)
        known = None if annotation is None else key_of(annotation, "tensor_layout")
        if known is None or type(layout) is not list:
            kind.set_tensor_layout(model, name, layout)  # QONNX's checks and additions
            added(name)
        else:
            known.value = str(layout)

    methods = {
        "get_tensor_datatype": get_tensor_datatype,
        "set_tensor_datatype": set_tensor_datatype,
        "get_tensor_layout": get_tensor_layout,
        "set_tensor_layout": set_tensor_layout,
    }
    vars(model).update(methods)
    try:
        yield
    finally:
        for name in methods:
            vars(model).pop(name, None)


def by_name(qonnx_apply: Apply) -> Apply:
    """``qonnx_apply`` run with the model's annotations found by name."""

    def apply(self: Transformation, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        with annotations_by_name(model):
            applied = qonnx_apply(self, model)
        return applied

    return apply


def install() -> None:
    """Make QONNX's passes the linear-time ones (idempotent)."""

    replacements = [
        (general.SortGraph, "apply", sort_graph),
        (general.GiveUniqueParameterTensors, "apply", unique_parameters),
        (general.SortCommutativeInputsInitializerLast, "apply", initializers_last),
        (ModelWrapper, "check_all_tensor_shapes_specified", shapes_specified),
        (InferDataTypes, "apply", by_name(InferDataTypes.apply)),
        (InferDataLayouts, "apply", by_name(InferDataLayouts.apply)),
    ]
    for owner, name, linear in replacements:
        if getattr(getattr(owner, name), MARK, False):
            continue
        setattr(linear, MARK, True)
        setattr(owner, f"qonnx_{name}", getattr(owner, name))  # kept for comparison
        setattr(owner, name, linear)
