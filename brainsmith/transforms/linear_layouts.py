"""ThresholdsOnLinearFeatures: a quantizer after a linear layer thresholds its features."""

from __future__ import annotations

from onnx import NodeProto
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation

from brainsmith.plugin import transform
from brainsmith.transforms.graph_rewrite import rewrite_each

CONSTANT_STEPS = ("Add", "Mul")  # a bias or a scale between the layer and its quantizer


@transform(stage="streamline")
class ThresholdsOnLinearFeatures(Transformation):  # type: ignore[misc]
    """A 3D MultiThreshold reading a linear layer gets its channels on the last axis.

    A ``MatMul`` by a weight matrix writes its features on the last axis. QONNX gives the
    ``MultiThreshold`` of the quantizer after it the layout annotated on the layer's input,
    which is channels-first (``NCW``) when the input was transposed (an MLP-Mixer's token
    MLP, linear layers on ``x.transpose(1, 2)``); the layer's bias, absorbed into the
    thresholds one per feature, then lands on the wrong axis and the model no longer runs.
    The layout of such a quantizer's thresholds, still one row, is made ``NWC`` (no output
    changes).
    """

    def apply(self, model: ModelWrapper) -> tuple[ModelWrapper, bool]:
        return model, rewrite_each(model, "MultiThreshold", _channels_last)


def _linear_producer(model: ModelWrapper, tensor: str) -> NodeProto | None:
    """The ``MatMul`` by a constant that writes ``tensor``, through constant adds and scales."""
    producer = model.find_producer(tensor)
    while producer is not None and producer.op_type in CONSTANT_STEPS:
        if model.get_initializer(producer.input[1]) is None:
            return None
        producer = model.find_producer(producer.input[0])
    if producer is None or producer.op_type != "MatMul":
        return None
    return producer if model.get_initializer(producer.input[1]) is not None else None


def _channels_last(model: ModelWrapper, node: NodeProto) -> bool:
    thresholds = getCustomOp(node)
    layout = thresholds.get_nodeattr("data_layout")
    if layout != "NCW" or len(model.get_tensor_shape(node.input[0]) or []) != 3:
        return False
    rows = model.get_initializer(node.input[1])
    if rows is None or rows.shape[0] != 1 or _linear_producer(model, node.input[0]) is None:
        return False
    thresholds.set_nodeattr("data_layout", "NWC")
    return True
