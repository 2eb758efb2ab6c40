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
    commutative = self.SUPPORTED_COMMUTATIVE_OPS
    modified = False
    for node in (node for node in model.graph.node if node.op_type in commutative):
        modified |= _dynamic_first(node, initializers)
    return model, modified


def _dynamic_first(node: NodeProto, initializers: set[str]) -> bool:
    """Put ``node``'s inputs that are not ``initializers`` first, each part in its order;
    whether that moved one."""
    dynamic = [name for name in node.input if name not in initializers]
    inputs = [*dynamic, *(name for name in node.input if name not in dynamic)]
    moved = False
    for index, name in enumerate(inputs):
        moved |= node.input[index] != name
        node.input[index] = name
    return moved


def shapes_specified(self: ModelWrapper, fix_missing_init_shape: bool = False) -> bool:
    graph = self.graph
    infos = Counter(t.name for t in chain(graph.input, graph.output, graph.value_info))
    specified = True
    for name in _tensor_uses(graph):
        specified &= _shape_known(self, name, infos, fix_missing_init_shape)
    return specified


def _tensor_uses(graph: GraphProto) -> Iterator[str]:
    """Each node's inputs (but the empty ones) and outputs, as QONNX's check walks them."""
    for node in graph.node:
        yield from (name for name in node.input if name != "")
        yield from node.output


def _shape_known(model: ModelWrapper, name: str, infos: Counter[str], fix: bool) -> bool:
    """Whether tensor ``name`` has a shape: a value info (``infos`` counts them), else as
    QONNX looks it up (an initializer's, its value info added with ``fix``)."""
    count = infos[name]
    if count > 1:
        raise AssertionError("Multiple ValueInfoProto found for " + name)  # as QONNX's
    if count == 1:
        return True
    if model.get_tensor_shape(name, fix_missing_init_shape=fix) is None:
        return False
    if fix:
        infos[name] = 1  # QONNX added the initializer's value info
    return True


@contextmanager
def annotations_by_name(model: ModelWrapper) -> Iterator[None]:
    """While inside, ``model`` finds and adds datatype and layout annotations by name (a tensor
    annotated twice, which QONNX's lookups refuse, leaves ``model`` as it is)."""
    index = AnnotationIndex.of(model)
    if index is None:
        yield
        return
    methods = {
        "get_tensor_datatype": index.get_tensor_datatype,
        "set_tensor_datatype": index.set_tensor_datatype,
        "get_tensor_layout": index.get_tensor_layout,
        "set_tensor_layout": index.set_tensor_layout,
    }
    vars(model).update(methods)
    try:
        yield
    finally:
        for name in methods:
            vars(model).pop(name, None)


class AnnotationIndex:
    """A model's datatype and layout annotations by tensor name: its lookups and changes as
    QONNX's ``ModelWrapper`` makes them, without scanning the annotations."""

    def __init__(self, model: ModelWrapper, found: dict[str, TensorAnnotation]) -> None:
        self.model, self.found, self.kind = model, found, type(model)
        self.annotations = model.graph.quantization_annotation

    @classmethod
    def of(cls, model: ModelWrapper) -> AnnotationIndex | None:
        """``model``'s annotations indexed; None when a tensor is annotated twice."""
        found: dict[str, TensorAnnotation] = {}
        for annotation in model.graph.quantization_annotation:
            if annotation.tensor_name in found:
                return None
            found[annotation.tensor_name] = annotation
        return cls(model, found)

    def get_tensor_datatype(self, name: str) -> BaseDataType:
        known = self._entry(name, "finn_datatype")
        if known is None:
            return self.kind.get_tensor_datatype(self.model, name)  # the value info's, as QONNX
        return DataType[known.value]

    def set_tensor_datatype(self, name: str, datatype: BaseDataType | None) -> None:
        known = self._entry(name, "finn_datatype")
        if known is None or datatype is None:
            self.kind.set_tensor_datatype(self.model, name, datatype)
            self._added(name)
        else:
            known.value = datatype.name

    def get_tensor_layout(self, name: str) -> list[str] | None:
        layout: list[str] | None
        if self._indexed(name) is None:
            layout = self.kind.get_tensor_layout(self.model, name)
            return layout
        known = self._entry(name, "tensor_layout")
        layout = None if known is None else literal_eval(known.value)  # a list of strings
        return layout

    def set_tensor_layout(self, name: str, layout: list[str]) -> None:
        known = self._entry(name, "tensor_layout")
        if known is None or type(layout) is not list:
            self.kind.set_tensor_layout(self.model, name, layout)  # QONNX's checks, additions
            self._added(name)
        else:
            known.value = str(layout)

    def _indexed(self, name: str) -> TensorAnnotation | None:
        """Tensor ``name``'s annotation (not one renamed since it was indexed)."""
        annotation = self.found.get(name)
        return annotation if annotation is not None and annotation.tensor_name == name else None

    def _entry(self, name: str, key: str) -> StringStringEntryProto | None:
        """The entry ``key`` of tensor ``name``'s annotation; None without either."""
        annotation = self._indexed(name)
        if annotation is None:
            return None
        entry: StringStringEntryProto | None = get_by_name(
            annotation.quant_parameter_tensor_names, key, "key"
        )
        return entry

    def _added(self, name: str) -> None:
        """Index the annotation QONNX added for tensor ``name`` (the last one), if it did."""
        last = self.annotations[-1] if len(self.annotations) else None
        if self._indexed(name) is None and last is not None and last.tensor_name == name:
            self.found[name] = last


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
