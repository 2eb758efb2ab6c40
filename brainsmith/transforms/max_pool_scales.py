"""MoveScalesPastMaxPoolNHWC: a non-negative scale moved past a channels-last max pool."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.transformation.base import Transformation
from qonnx.transformation.infer_shapes import InferShapes

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import graph_output_names, rewrite_each


@transform(stage="streamline")
class MoveScalesPastMaxPoolNHWC(Transformation):  # type: ignore[misc]
    """MaxPoolNHWC(x * c) -> MaxPoolNHWC(x) * c for a non-negative scalar or channel c.

    ``MaxPoolNHWC(x·c)`` becomes ``MaxPoolNHWC(x)·c`` for a constant ``c >= 0`` that is a
    scalar or one value per channel (the last axis): the maximum of scaled values is the
    scaled maximum. FINN's ``MoveMulPastMaxPool`` moves scales past channels-first pools
    only; a scale that reaches a pool after it was made channels-last (a U-Net's skip, whose
    fork the scales were moved past) would otherwise stay, and the layers after the pool
    would read floats.
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        moved = rewrite_each(model, "MaxPoolNHWC", _move)
        if moved:
            model = model.transform(InferShapes())
        return model, moved


def _movable_scale(model: ModelWrapper, pool: NodeProto) -> NodeProto | None:
    """The ``Mul`` by a non-negative scalar or per-channel constant that feeds ``pool``
    alone (and no graph output), else None."""
    scale = model.find_producer(pool.input[0])
    if scale is None or scale.op_type != "Mul" or model.is_fork_node(scale):
        return None
    factor = model.get_initializer(scale.input[1])
    channels = (model.get_tensor_shape(pool.input[0]) or [0])[-1]
    if factor is None or np.any(factor < 0) or scale.output[0] in graph_output_names(model):
        return None
    return scale if _scalar_or_per_channel(factor, channels) else None


def _scalar_or_per_channel(factor: np.ndarray, channels: int) -> bool:
    """Whether ``factor`` is one value, or one per channel along the last axis."""
    one_per_channel = factor.size <= 1 or factor.shape[-1] == channels
    return factor.size in (1, channels) and one_per_channel


def _move(model: ModelWrapper, pool: NodeProto) -> bool:
    scale = _movable_scale(model, pool)
    if scale is None:
        return False
    source, between, result = scale.input[0], scale.output[0], pool.output[0]
    pool.input[0], pool.output[0] = source, between
    scale.input[0], scale.output[0] = between, result
    model.set_tensor_datatype(between, model.get_tensor_datatype(source) or DataType["FLOAT32"])
    model.set_tensor_shape(between, model.get_tensor_shape(result))
    nodes = model.graph.node
    nodes.remove(scale)
    nodes.insert(list(nodes).index(pool) + 1, scale)
    return True
