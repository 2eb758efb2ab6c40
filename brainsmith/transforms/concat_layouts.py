"""Rewrites that bring a ``Concat`` of quantized branches to FINN's ``StreamingConcat``: the
scales moved past the join (one per channel of the joined tensor), the branches' identical
layout transposes moved after it, and scales moved past the transposes to the thresholds
that absorb them, so the join reads integer streams along the channel (last) axis. Run by the
``streamline`` step's join loop (``frameworks/finn/recipe/networks.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import NodeProto
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.general import SortGraph
from qonnx.transformation.infer_data_layouts import InferDataLayouts
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import get_by_name

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import perm_of, rewrite_first, sole_reader


@dataclass(frozen=True)
class Scale:
    """A ``Mul`` (``node``) of the streamed tensor ``source`` by a constant."""

    node: NodeProto
    source: str
    constant: np.ndarray


def _scale_of(model: ModelWrapper, node: NodeProto | None) -> Scale | None:
    """The scale of a ``Mul`` by a constant, else None."""
    if node is None or node.op_type != "Mul" or len(node.input) != 2:
        return None
    constants = [model.get_initializer(name) for name in node.input]
    if (constants[0] is None) == (constants[1] is None):
        return None
    side = 0 if constants[0] is None else 1
    return Scale(node, node.input[side], np.asarray(constants[1 - side], dtype=np.float32))


def _constant(model: ModelWrapper, values: np.ndarray) -> str:
    """A new initializer holding ``values`` (a scale's may be shared with other nodes)."""
    name: str = model.make_new_valueinfo_name()
    model.set_initializer(name, values)
    return name


def _squeezed(values: np.ndarray) -> np.ndarray:
    """``values`` with every axis along which it does not change reduced to size 1."""
    for axis in range(values.ndim):
        first = values.take([0], axis=axis)
        if values.shape[axis] > 1 and np.array_equal(np.broadcast_to(first, values.shape), values):
            values = first
    return values


def _covering(types: list[DataType]) -> DataType:
    """The narrowest integer type holding every value of ``types`` (all integer)."""
    low, high = min(t.min() for t in types), max(t.max() for t in types)
    for candidate in (DataType.get_smallest_possible(low), DataType.get_smallest_possible(high)):
        if candidate.min() <= low and high <= candidate.max():
            return candidate
    return DataType.get_smallest_possible(-high - 1) if low < 0 else DataType["INT32"]


def _join_first(
    model: ModelWrapper, concat: NodeProto, producers: list[NodeProto], sources: list[str]
) -> str:
    """``concat`` joins ``sources`` (what its ``producers``, one per input, read) and the
    first producer moves after it, reading the join (its first input) and writing what the
    join wrote; the other producers go. The join's integers get the narrowest type holding
    every source's. Returns the joined tensor."""
    types = [model.get_tensor_datatype(source) for source in sources]
    joined: str = model.make_new_valueinfo_name()
    result = concat.output[0]
    concat.input[:] = sources
    concat.output[0] = joined
    producers[0].input[0], producers[0].output[0] = joined, result
    for producer in producers[1:]:
        model.graph.node.remove(producer)
    if all(t.is_integer() for t in types):
        model.set_tensor_datatype(joined, _covering(types))
    return joined


def _branches(model: ModelWrapper, concat: NodeProto) -> list[NodeProto | None] | None:
    """The producers of a join of two or more inputs each read by the join alone (and no
    graph output), else None."""
    if len(concat.input) < 2 or any(sole_reader(model, name) is None for name in concat.input):
        return None
    return [model.find_producer(name) for name in concat.input]


@transform(stage="streamline")
class MoveScalesPastConcat(Transformation):  # type: ignore[misc]
    """Join the integers before their scales: Concat(x*a, y*b) -> Concat(x, y)*[a|b].

    ``Concat(x₀·a₀, x₁·a₁, …)`` becomes ``Concat(x₀, x₁, …)·c``, where ``c`` holds each
    branch's scale over that branch's part of the joined axis (a scalar when all are equal).

    Brevitas exports each quantized branch as integers times its own scale; FINN's
    ``MoveMulPastJoinConcat`` moves only equal scalars or per-channel vectors, so branches
    with different scales (each with its own quantizer) kept the join on floats and on the
    host. Every branch must be a ``Mul`` by a constant read by the join alone. The joined
    integers get the narrowest type holding every branch's.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "Concat", _move_scales):
            return model, False
        model = model.transform(InferShapes())
        return model.transform(SortGraph(), make_deepcopy=False, cleanup=False), True


def _branch_scales(model: ModelWrapper, concat: NodeProto) -> list[Scale] | None:
    """Each branch's scale, when every branch of the join is one."""
    producers = _branches(model, concat)
    if producers is None:
        return None
    found = [_scale_of(model, producer) for producer in producers]
    scales = [s for s in found if s is not None]
    return scales if len(scales) == len(found) else None


def _move_scales(model: ModelWrapper, concat: NodeProto) -> bool:
    scales = _branch_scales(model, concat)
    shapes = [model.get_tensor_shape(name) for name in concat.input]
    if scales is None or any(shape is None for shape in shapes):
        return False
    axis = get_by_name(concat.attribute, "axis").i % len(shapes[0])
    parts = [np.broadcast_to(s.constant, shape) for s, shape in zip(scales, shapes, strict=True)]
    constant = _squeezed(np.concatenate(parts, axis=axis).astype(np.float32))
    scales[0].node.input[:] = ["", _constant(model, constant)]
    muls = [s.node for s in scales]
    joined = _join_first(model, concat, muls, [s.source for s in scales])
    model.set_tensor_shape(joined, model.get_tensor_shape(concat.output[0]))
    return True


@transform(stage="streamline")
class MoveTransposesPastConcat(Transformation):  # type: ignore[misc]
    """Concat(T(x), T(y)) -> T(Concat(x, y)) when every branch has the same transpose.

    ``Concat(T(x), T(y), …)`` with one permutation on every branch becomes
    ``T(Concat(x, y, …))`` along the permuted axis, so a join of channels-last branches
    happens channels-last (FINN's ``MoveTransposePastJoinConcat`` does not compare the
    permutations it checks). Each transpose must be read by the join alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "Concat", _move_transposes):
            return model, False
        model = model.transform(InferShapes()).transform(InferDataLayouts())
        return model.transform(SortGraph(), make_deepcopy=False, cleanup=False), True


def _branch_transposes(model: ModelWrapper, concat: NodeProto) -> list[NodeProto] | None:
    """The branches' transposes, when every branch of the join is one of one permutation."""
    producers = _branches(model, concat) or []
    transposes = [p for p in producers if p is not None and p.op_type == "Transpose"]
    if not producers or len(transposes) != len(producers):
        return None
    perms = [perm_of(t) for t in transposes]
    return transposes if all(perm == perms[0] for perm in perms) else None


def _move_transposes(model: ModelWrapper, concat: NodeProto) -> bool:
    transposes = _branch_transposes(model, concat)
    if transposes is None:
        return False
    perms = [perm_of(t) for t in transposes]
    axis = get_by_name(concat.attribute, "axis")
    axis.i = perms[0][axis.i % len(perms[0])]
    _join_first(model, concat, transposes, [t.input[0] for t in transposes])
    return True


@transform(stage="streamline")
class MoveScalePastTranspose(Transformation):  # type: ignore[misc]
    """T(Mul(x, c)) -> Mul(T(x), T(c)): a per-channel scale moved past a transpose.

    ``T(x·c)`` becomes ``T(x)·T(c)`` for a constant ``c`` of any broadcastable shape
    (FINN's ``MoveScalarLinearPastInvariants`` moves scalars only): the per-channel scale a
    join of differently scaled branches leaves between two transposes moves on to the
    threshold that absorbs it, and the transposes meet and cancel. The scale must be read by
    the transpose alone."""

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        if not rewrite_first(model, "Mul", _move_scale_past_transpose):
            return model, False
        model = model.transform(SortGraph(), make_deepcopy=False, cleanup=False)
        return model.transform(InferShapes()).transform(InferDataLayouts()), True


def _move_scale_past_transpose(model: ModelWrapper, mul: NodeProto) -> bool:
    scale = _scale_of(model, mul)
    transpose = sole_reader(model, mul.output[0])
    if scale is None or transpose is None or transpose.op_type != "Transpose":
        return False
    perm = perm_of(transpose)
    constant = scale.constant
    if constant.ndim > len(perm):
        return False
    full = constant.reshape((1,) * (len(perm) - constant.ndim) + constant.shape)
    moved, result = mul.output[0], transpose.output[0]
    transpose.input[0], transpose.output[0] = scale.source, moved
    mul.input[:] = [moved, _constant(model, full.transpose(perm).copy())]
    mul.output[0] = result
    model.set_tensor_shape(moved, model.get_tensor_shape(result))
    model.set_tensor_datatype(moved, model.get_tensor_datatype(scale.source))
    return True
