"""DepthToSpace (torch's PixelShuffle) in hardware: the layer computes ONNX's operator, the
quantizer's thresholds move in front of it without changing what the model computes, and
the layer is made channels-last from the transpose in front of it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from brainsmith.kernels.depth_to_space import depth_to_space
from brainsmith.transforms.depth_to_space import block_and_mode


def onnx_depth_to_space(x_nchw: np.ndarray, block: int, mode: str) -> np.ndarray:
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=block, mode=mode)
    graph = helper.make_graph(
        [node], "d2s", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return ReferenceEvaluator(model).run(None, {"x": x_nchw})[0]


@pytest.mark.parametrize("mode", ["CRD", "DCR"])
@pytest.mark.parametrize(
    ("block", "channels", "high", "wide"), [(2, 1, 3, 4), (3, 2, 2, 1), (4, 3, 1, 2)]
)
def test_the_layer_computes_onnx_depth_to_space_channels_last(mode, block, channels, high, wide):
    rng = np.random.default_rng(block * 10 + channels)
    x = rng.integers(-8, 8, (2, channels * block * block, high, wide)).astype(np.float32)
    expected = onnx_depth_to_space(x, block, mode)
    got = depth_to_space(x.transpose(0, 2, 3, 1), block, mode).transpose(0, 3, 1, 2)
    assert np.array_equal(got, expected)


def thresholds_node(source: str, rows: str, result: str, **layout) -> object:
    """A MultiThreshold to 2-bit unsigned integers (QONNX's, channels-first by default)."""
    return helper.make_node("MultiThreshold", [source, rows], [result],
                            domain="qonnx.custom_op.general", out_dtype="UINT2", **layout)  # fmt: skip


def model_of(nodes: list, shape: list[int], constants: dict[str, np.ndarray], datatype: str):
    """A QONNX model of ``nodes`` from ``x`` (``shape``, integers of ``datatype``) to ``y``."""
    from qonnx.core.datatype import DataType
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_shapes import InferShapes
    from qonnx.util.basic import qonnx_make_model

    graph = helper.make_graph(
        nodes, "d2s", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = ModelWrapper(qonnx_make_model(graph))
    for name, values in constants.items():
        model.set_initializer(name, np.asarray(values, dtype=np.float32))
    model.set_tensor_datatype("x", DataType[datatype])
    return model.transform(InferShapes())


def tail(mode: str, channels: int = 2, block: int = 2, size: int = 3):
    """Integers laid out channels-last, a transpose to channels-first, a per-channel scale,
    DepthToSpace, a per-channel bias and scale, 2-bit thresholds per output channel and the
    output scale: what streamlining leaves of Brevitas's sub-pixel convolution."""
    depth = channels * block * block
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
        helper.make_node("Mul", ["t", "scale_in"], ["s"]),
        helper.make_node("DepthToSpace", ["s"], ["d"], blocksize=block, mode=mode),
        helper.make_node("Add", ["bias", "d"], ["b"]),
        helper.make_node("Mul", ["b", "scale_mid"], ["m"]),
        thresholds_node("m", "thresholds", "q"),
        helper.make_node("Mul", ["q", "scale_out"], ["y"]),
    ]
    constants = {
        "scale_in": rng.uniform(0.5, 2, (1, depth, 1, 1)),
        "bias": rng.uniform(-1, 1, (channels, 1, 1)),
        "scale_mid": 0.5,
        "thresholds": np.sort(rng.uniform(-4, 4, (channels, 3)), axis=1),
        "scale_out": 0.25,
    }
    return model_of(nodes, [1, size, size, depth], constants, "INT5")


@pytest.mark.parametrize("mode", ["CRD", "DCR"])
def test_thresholds_move_in_front_of_depth_to_space_and_compute_the_same(mode):
    """The bias, the scale and the thresholds move in front of the DepthToSpace (one row per
    input channel); the output scale stays after it; the outputs are unchanged."""
    from qonnx.core.onnx_exec import execute_onnx

    from brainsmith.transforms.depth_to_space import MoveChannelwiseBeforeDepthToSpace

    model = tail(mode)
    x = np.random.default_rng(5).integers(-16, 16, (1, 3, 3, 8)).astype(np.float32)
    before = execute_onnx(model, {"x": x})["y"]
    for _ in range(4):
        model = model.transform(MoveChannelwiseBeforeDepthToSpace())
    order = [n.op_type for n in model.graph.node]
    assert order == ["Transpose", "Mul", "Add", "Mul", "MultiThreshold", "DepthToSpace", "Mul"]
    assert np.array_equal(execute_onnx(model, {"x": x})["y"], before)


def test_a_depth_to_space_read_through_a_transpose_becomes_a_channels_last_layer():
    """Thresholded integers behind a transpose to channels-first: the DepthToSpace becomes a
    StreamingDepthToSpace reading the channels-last tensor, and the model computes the same
    in FINN's Python execution."""
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.absorb import AbsorbTransposeIntoMultiThreshold
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_datatypes import InferDataTypes

    from brainsmith.plugin import get_registry
    from brainsmith.transforms.depth_to_space import (
        InferDepthToSpace,
        MoveChannelwiseBeforeDepthToSpace,
    )

    get_registry().get("kernel", "StreamingDepthToSpace")  # registers the layer with QONNX
    model = tail("CRD")
    for _ in range(4):
        model = model.transform(MoveChannelwiseBeforeDepthToSpace())
    model = model.transform(Streamline()).transform(AbsorbTransposeIntoMultiThreshold())
    model = model.transform(InferDataTypes())
    x = np.random.default_rng(6).integers(-16, 16, (1, 3, 3, 8)).astype(np.float32)
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    before = execute_onnx(model, {source: x})[sink]
    model = model.transform(InferDepthToSpace())
    order = [n.op_type for n in model.graph.node]
    assert order == ["MultiThreshold", "StreamingDepthToSpace", "Transpose", "Mul"], order
    assert np.array_equal(execute_onnx(model, {source: x})[sink], before)


@pytest.mark.parametrize(("block", "channels", "shared"), [(2, 3, False), (3, 2, True)])
def test_crd_order_moves_into_the_weights_and_computes_the_same(block, channels, shared):
    """A CRD DepthToSpace after a thresholded channels-last MatMul becomes DCR, with the
    weight columns and (per-channel or shared) threshold rows reordered: the same outputs,
    and each output beat of the layer a run of input channels."""
    from qonnx.core.onnx_exec import execute_onnx

    from brainsmith.transforms.depth_to_space import DepthToSpaceInWeightOrder

    depth, rng = channels * block * block, np.random.default_rng(block)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["p"]),
        thresholds_node("p", "t", "q", data_layout="NHWC"),
        helper.make_node("Transpose", ["q"], ["c"], perm=[0, 3, 1, 2]),
        helper.make_node("DepthToSpace", ["c"], ["y"], blocksize=block, mode="CRD"),
    ]
    thresholds = rng.integers(-9, 9, (1 if shared else depth, 3))
    constants = {"w": rng.integers(-3, 4, (5, depth)), "t": np.sort(thresholds, axis=1)}
    model = model_of(nodes, [1, 2, 3, 5], constants, "INT4")
    x = rng.integers(-8, 8, (1, 2, 3, 5)).astype(np.float32)
    before = execute_onnx(model, {"x": x})["y"]
    model = model.transform(DepthToSpaceInWeightOrder())
    assert block_and_mode(model.graph.node[-1]) == (block, "DCR")
    assert np.array_equal(execute_onnx(model, {"x": x})["y"], before)
