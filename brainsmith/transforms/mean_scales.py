"""MoveScalesPastMeans: a scale constant over the averaged axes moved past the average."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.frameworks.finn.recipe.networks import node_int, node_ints
from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import (
    add_initializer,
    drop_initializer_if_unused,
    graph_output_names,
)

MEANS = ("AveragePool", "ReduceMean")


@transform(stage="streamline")
class MoveScalesPastMeans(Transformation):  # type: ignore[misc]
    """AveragePool(x * c) -> AveragePool(x) * c, and the same for ReduceMean.

    A mean of scaled values is the scaled mean when the scale ``c`` (a constant) is the same
    over every averaged axis: a scalar, or one value per channel of an ``AveragePool``, or
    one per kept axis of a ``ReduceMean``. FINN moves scalars past a ``GlobalAveragePool``
    only, so a windowed pool or a mean over tokens (Brevitas's ``nn.AvgPool2d`` or
    ``x.mean(dim=1)`` between two quantizers) read floats and ran on the host with every
    layer after it; moved, the mean reads the quantizer's integers.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        moved = False
        for op_type in MEANS:
            moved |= any(_move(model, node) for node in model.get_nodes_by_op_type(op_type))
        if moved:
            model = model.transform(InferShapes())
        return model, moved


def averaged_axes(model: ModelWrapper, mean: NodeProto) -> list[int] | None:
    """The axes ``mean`` averages over (non-negative), or None when they are not constant."""
    rank = len(model.get_tensor_shape(mean.input[0]) or [])
    if mean.op_type == "AveragePool":
        return list(range(2, rank))
    axes = node_ints(mean, "axes")
    if len(mean.input) > 1 and mean.input[1]:
        given = model.get_initializer(mean.input[1])
        if given is None:
            return None
        axes = [int(a) for a in given.ravel()]
    if not axes:
        return None if node_int(mean, "noop_with_empty_axes", 0) else list(range(rank))
    return sorted(a % rank for a in axes)


def _moved_factor(model: ModelWrapper, mean: NodeProto, factor: np.ndarray) -> np.ndarray | None:
    """``factor`` as it multiplies ``mean``'s output, or None if it varies over an
    averaged axis."""
    shape = model.get_tensor_shape(mean.input[0])
    axes = averaged_axes(model, mean)
    if shape is None or axes is None or factor.ndim > len(shape):
        return None
    if factor.size == 1:
        return factor.reshape(()) if factor.ndim == 0 else factor.reshape([1] * factor.ndim)
    full = factor.reshape([1] * (len(shape) - factor.ndim) + list(factor.shape))
    if any(full.shape[a] != 1 for a in axes):
        return None
    if mean.op_type == "ReduceMean" and not node_int(mean, "keepdims", 1):
        full = full.squeeze(axis=tuple(axes))
    return full


def _move(model: ModelWrapper, mean: NodeProto) -> bool:
    scale = model.find_producer(mean.input[0])
    if scale is None or scale.op_type != "Mul" or model.is_fork_node(scale):
        return False
    factor = model.get_initializer(scale.input[1])
    if factor is None or scale.output[0] in graph_output_names(model):
        return False
    moved = _moved_factor(model, mean, factor)
    if moved is None:
        return False
    source, between, result = scale.input[0], scale.output[0], mean.output[0]
    mean.input[0], mean.output[0] = source, between
    scale.input[0], scale.output[0] = between, result
    factor_name = scale.input[1]
    scale.input[1] = add_initializer(model, f"{mean.name or mean.op_type}_scale", moved)
    drop_initializer_if_unused(model, factor_name)
    model.set_tensor_datatype(between, DataType["FLOAT32"])  # a mean of integers is not one
    model.set_tensor_shape(between, model.get_tensor_shape(result))
    nodes = model.graph.node
    nodes.remove(scale)
    nodes.insert(list(nodes).index(mean) + 1, scale)
    return True
