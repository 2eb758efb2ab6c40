"""A non-negative scale (scalar or per channel) before a channels-last max pool moves past it,
and the pool then computes the same; a negative one stays."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.transforms.max_pool_scales import MoveScalesPastMaxPoolNHWC


def scaled_pool(factor: np.ndarray) -> ModelWrapper:
    """x (1 x 6 x 6 x 3, channels last) -> Mul(factor) -> MaxPoolNHWC 2x2 -> y."""
    nodes = [
        helper.make_node("Mul", ["x", "c"], ["s"]),
        helper.make_node("MaxPoolNHWC", ["s"], ["y"], domain="qonnx.custom_op.general",
                         kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 6, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 3, 3])],
        [numpy_helper.from_array(factor.astype(np.float32), "c")],
        value_info=[helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 6, 6, 3])],
    )  # fmt: skip
    return ModelWrapper(qonnx_make_model(graph)).transform(InferShapes())


@pytest.mark.parametrize(
    "factor", [np.array(0.375), np.array([[[[0.5, 2.0, 0.0]]]]), np.array([1.5, 0.25, 3.0])]
)
def test_a_non_negative_scale_moves_past_the_pool_and_computes_the_same(factor):
    model = scaled_pool(factor)
    x = np.random.default_rng(3).normal(size=(1, 6, 6, 3)).astype(np.float32)
    want = execute_onnx(model, {"x": x})["y"]
    moved = model.transform(MoveScalesPastMaxPoolNHWC())
    assert [n.op_type for n in moved.graph.node] == ["MaxPoolNHWC", "Mul"]
    assert np.allclose(execute_onnx(moved, {"x": x})["y"], want, atol=0, rtol=1e-6)


def test_a_negative_scale_stays_before_the_pool():
    model = scaled_pool(np.array([1.0, -1.0, 2.0]))
    moved = model.transform(MoveScalesPastMaxPoolNHWC())
    assert [n.op_type for n in moved.graph.node] == ["Mul", "MaxPoolNHWC"]
