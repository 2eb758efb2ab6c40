"""Layout rewrites for residual networks, run by the ``streamline`` step's residual loop
(``frameworks/finn/recipe/networks.py``): transposes moved past joins, adds done in the transposed
layout, and channels-last transposes moved before the thresholds that feed them, so the
layout changes on the host or cancels instead of becoming shuffle layers."""

from __future__ import annotations

from dataclasses import dataclass

from finn.transformation.streamline.reorder import MoveOpPastFork, MoveTransposePastJoinAdd
from onnx import NodeProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation
from qonnx.transformation.general import SortGraph
from qonnx.transformation.infer_data_layouts import InferDataLayouts
from qonnx.transformation.infer_datatypes import InferDataTypes
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    graph_output_names,
    perm_of,
    rename_inputs,
    rewrite_first,
)

TO_NHWC = [0, 2, 3, 1]


@transform(stage="streamline")
class MoveTransposePastProducedJoinAdd(MoveTransposePastJoinAdd):  # type: ignore[misc]
    """FINN's ``MoveTransposePastJoinAdd`` for joins whose operands nodes produce.

    FINN's takes an add whose first operand is the graph input (a residual from the input)
    for a join and fails on the input's missing producer (``'NoneType' object has no
    attribute 'op_type'``); this one leaves such an add as it is (FINN's loop, with that
    check) and changes nothing else in the graph. Transposes count as identical only with
    the same permutation (FINN's check computes that and drops the result).
    """

    def are_producers_identical(self, model: ModelWrapper, producers: list[NodeProto]) -> bool:
        if {p.op_type for p in producers} != {"Transpose"}:
            return False
        perms = {tuple(perm_of(p)) for p in producers}
        return len(perms) == 1

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        modified = False
        for node in model.graph.node:
            producers = self._identical_producers(model, node)
            if producers is None:
                continue
            if any(_forks(model, producer) for producer in producers):
                return model.transform(MoveOpPastFork(self.ops_to_move)), True
            modified = self.move_node(model, node, producers) or modified
        if modified:
            model = model.transform(InferDataLayouts())
            model = model.transform(InferShapes()).transform(InferDataTypes())
            model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
        return model, modified

    def _identical_producers(self, model: ModelWrapper, node: NodeProto) -> list[NodeProto] | None:
        """The producers of a join's operands, when they are identical nodes to move."""
        if node.op_type not in self.join_node_op or not model.is_join_node(node):
            return None
        found = [model.find_producer(name) for name in node.input]
        producers = [p for p in found if p is not None]
        if len(producers) != len(found) or producers[0].op_type not in self.ops_to_move:
            return None  # an operand no node produces: nothing to move past the add
        return producers if self.are_producers_identical(model, producers) else None


def _forks(model: ModelWrapper, node: NodeProto) -> bool:
    """Whether ``node`` forks (and does not join)."""
    return bool(model.is_fork_node(node) and not model.is_join_node(node))


@transform(stage="streamline")
class MoveAddIntoTransposedLayout(Transformation):  # type: ignore[misc]
    """An add of a transposed branch and an untransposed one done in the transposed layout.

    A residual whose body runs in another layout (NHWC convolutions beside an NCHW skip):
    ``Add(T(p), b)`` becomes ``T(Add(p, T⁻¹(b)))`` where ``b`` already has a reader that
    transposes it by ``T⁻¹`` (the body's own layout change at the fork). The new transpose
    merges with that one, so the layout changes once before the fork and once after the
    add, where FINN's streamlining absorbs them, instead of around the join, where they
    became shuffle layers. Without such a twin nothing is rewritten (the rewrite would only
    move a transpose from one operand to the other, and back).
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "Add", _move_add):
            return model, False
        return model.transform(InferShapes()).transform(InferDataTypes()), True


@dataclass(frozen=True)
class TransposedAdd:
    """``Add(T(p), other)`` (operands in either order: the transpose's is ``side``), ``T``
    read by the add alone, ``other`` of the add's shape; ``inverse`` undoes ``T``."""

    add: NodeProto
    transpose: NodeProto
    side: int
    other: str
    inverse: list[int]


def _move_add(model: ModelWrapper, add: NodeProto) -> bool:
    found = _transposed_add(model, add)
    if found is None or not _has_twin(model, found.other, found.inverse):
        return False  # nothing to merge with: the rewrite would only move transposes
    _rewrite(model, found)
    return True


def _transposed_add(model: ModelWrapper, add: NodeProto) -> TransposedAdd | None:
    side = _transposed_side(model, add)
    if side is None:
        return None
    transpose, other = model.find_producer(add.input[side]), add.input[1 - side]
    if transpose is None or len(model.find_consumers(transpose.output[0]) or []) != 1:
        return None
    if model.get_tensor_shape(other) != model.get_tensor_shape(add.output[0]):
        return None  # broadcasting: the layouts of the operands differ anyway
    perm = perm_of(transpose)
    inverse = [perm.index(axis) for axis in range(len(perm))]
    return TransposedAdd(add, transpose, side, other, inverse)


def _transposed_side(model: ModelWrapper, add: NodeProto) -> int | None:
    """Which operand of a join of two (no bias) a transpose produces, when one alone does."""
    if len(add.input) != 2 or any(model.get_initializer(name) is not None for name in add.input):
        return None
    producers = [model.find_producer(name) for name in add.input]
    kinds = [p is not None and p.op_type == "Transpose" for p in producers]
    return kinds.index(True) if kinds.count(True) == 1 else None


def _has_twin(model: ModelWrapper, tensor: str, perm: list[int]) -> bool:
    """Whether ``tensor`` already has a reader that transposes it by ``perm``."""
    return any(
        reader.op_type == "Transpose" and perm_of(reader) == perm
        for reader in model.find_consumers(tensor) or []
    )


def _rewrite(model: ModelWrapper, found: TransposedAdd) -> None:
    """``Add(T(p), other)`` -> ``T(Add(p, T⁻¹(other)))``, reusing the transpose node."""
    add, transpose = found.add, found.transpose
    source = transpose.input[0]
    back = model.make_new_valueinfo_name()
    undo = helper.make_node("Transpose", [found.other], [back], perm=found.inverse)
    summed = model.make_new_valueinfo_name()
    inputs = [source, back] if found.side == 0 else [back, source]
    result = add.output[0]
    add.input[0], add.input[1] = inputs
    add.output[0] = summed
    transpose.input[0], transpose.output[0] = summed, result
    graph = model.graph
    graph.node.insert(list(graph.node).index(add), undo)
    graph.node.remove(transpose)
    graph.node.insert(list(graph.node).index(add) + 1, transpose)


@transform(stage="streamline")
class MoveTransposesBeforeThresholds(Transformation):  # type: ignore[misc]
    """Channels-last transposes moved before the thresholds that feed them.

    ``T(MultiThreshold(x))`` with every reader of the thresholds a ``[0, 2, 3, 1]``
    transpose becomes ``MultiThreshold_NHWC(T(x))``, one transpose for all of them. Where a
    residual forks an NCHW activation into an NHWC body and an NHWC join, the fork then
    runs channels last and the transpose moves to the graph input (or cancels an earlier
    one) instead of becoming shuffle layers after the fork. FINN's own absorption moves the
    opposite transpose (``[0, 3, 1, 2]``) the other way, so the two never undo each other.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "MultiThreshold", _move_transposes_before):
            return model, False
        return model.transform(InferDataTypes()), True


def _move_transposes_before(model: ModelWrapper, node: NodeProto) -> bool:
    outputs = graph_output_names(model)
    if node.output[0] in outputs or not _channels_first(model, node):
        return False
    shape = model.get_tensor_shape(node.input[0])
    readers = model.find_consumers(node.output[0]) or []
    if shape is None or len(shape) != 4 or not readers:
        return False
    if not all(_to_nhwc(reader, outputs) for reader in readers):
        return False
    _move_before(model, node, readers, shape)
    return True


def _to_nhwc(node: NodeProto, outputs: set[str]) -> bool:
    """Whether ``node`` is a transpose to channels last that writes no graph output."""
    return (
        node.op_type == "Transpose" and perm_of(node) == TO_NHWC and node.output[0] not in outputs
    )


def _move_before(
    model: ModelWrapper, node: NodeProto, readers: list[NodeProto], shape: list[int]
) -> None:
    """One transpose before ``node`` instead of ``readers`` after it; ``node`` reads NHWC."""
    moved = model.make_new_valueinfo_name()
    model.set_tensor_shape(moved, [shape[i] for i in TO_NHWC])
    model.set_tensor_datatype(
        moved, model.get_tensor_datatype(node.input[0]) or DataType["FLOAT32"]
    )
    graph = model.graph
    graph.node.insert(
        list(graph.node).index(node),
        helper.make_node("Transpose", [node.input[0]], [moved], perm=TO_NHWC),
    )
    node.input[0] = moved
    getCustomOp(node).set_nodeattr("data_layout", "NHWC")
    kept = readers[0].output[0]
    node.output[0] = kept
    for reader in readers[1:]:
        rename_inputs(model.find_consumers(reader.output[0]) or [], reader.output[0], kept)
    for reader in readers:
        graph.node.remove(reader)


def _channels_first(model: ModelWrapper, threshold: NodeProto) -> bool:
    """Whether a MultiThreshold reads channels first (or has one set of thresholds for all
    channels, where the layout does not matter)."""
    if getCustomOp(threshold).get_nodeattr("data_layout") in ("NCHW", "NCW"):
        return True
    thresholds = model.get_initializer(threshold.input[1])
    return thresholds is not None and thresholds.shape[0] == 1
