"""brainsmith's conversion of a QONNX quantizer to FINN's thresholds rounds half to even, as
the quantizer does: on every boundary k + 0.5 of the quantizer's steps, at any bit width,
signedness and power-of-two scale, the converted model's outputs equal QONNX's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.frameworks.finn.recipe.steps import qonnx_to_finn

pytestmark = pytest.mark.filterwarnings("ignore:The values of tensor MultiThreshold_:UserWarning")


def quantizer(bits: int, signed: int, scale: float, relu: bool) -> ModelWrapper:
    """x -> [Relu ->] Quant(scale, zero 0, bits, ROUND) on a 1 x 64 float tensor."""
    constants = [numpy_helper.from_array(np.array(v, np.float32), n)
                 for n, v in (("s", scale), ("z", 0.0), ("b", float(bits)))]  # fmt: skip
    nodes = [helper.make_node("Relu", ["x"], ["r"])] if relu else []
    nodes.append(helper.make_node(
        "Quant", ["r" if relu else "x", "s", "z", "b"], ["y"], domain="qonnx.custom_op.general",
        signed=signed, narrow=0, rounding_mode="ROUND",
    ))  # fmt: skip
    graph = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        constants,
    )  # fmt: skip
    return ModelWrapper(qonnx_make_model(graph)).transform(InferShapes())


@pytest.mark.parametrize(("bits", "signed", "scale", "relu"),
                         [(3, 0, 1.0, True), (4, 1, 0.25, False), (6, 1, 2.0, False),
                          (5, 0, 0.125, True)])  # fmt: skip
def test_every_half_step_rounds_as_qonnx_rounds_it(bits, signed, scale, relu):
    model = quantizer(bits, signed, scale, relu)
    low = -(2 ** (bits - 1)) if signed else 0
    high = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
    halves = (np.arange(low - 1, high + 1) + 0.5) * scale  # every boundary, and one outside
    x = np.resize(halves, 64).astype(np.float32).reshape(1, 64)
    want = execute_onnx(model, {"x": x})["y"]
    converted = qonnx_to_finn(model, SimpleNamespace(max_multithreshold_bit_width=8))
    assert any(n.op_type == "MultiThreshold" for n in converted.graph.node)
    inputs, outputs = converted.graph.input[0].name, converted.graph.output[0].name
    got = execute_onnx(converted, {inputs: x})[outputs]
    assert np.array_equal(got, want), np.flatnonzero(got != want)
    # half to even: a boundary above an even integer goes down, above an odd one up
    inside = want.reshape(-1)[1 : halves.size - 1] / scale  # the outer two are clipped
    assert np.array_equal(inside % 2, np.zeros(inside.size))
