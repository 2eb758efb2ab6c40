"""Average pooling as Brevitas exports it (``AveragePool -> Trunc``) rewritten as a window
sum and thresholds computes what QONNX computes, for every rounding mode, window shape,
stride, width and signedness; the sum pool that FINN's ``InferPoolFromReduce`` reads
computes the mean's thresholds exactly."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.frameworks.finn.recipe.steps import qonnx_to_finn
from brainsmith.transforms.average_pools import AveragePoolToSumPool, TruncAvgPoolToThresholds

QONNX = "qonnx.custom_op.general"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def truncated_pool(shape, kernel, strides, rounding, bits, signed, out_bits) -> ModelWrapper:
    """x -> Quant(scale 0.3, bits) -> AveragePool -> Trunc as Brevitas's TruncAvgPool exports
    it: the pool's scale divided by the window, a power-of-two truncation to ``out_bits``."""
    window = math.prod(kernel)
    scale = 0.3
    sum_bits = bits + math.ceil(math.log2(window))
    out_scale = scale / window * 2 ** (sum_bits - out_bits)
    constants = {"s": scale, "z": 0.0, "b": float(bits), "ts": scale / window,
                 "tb": float(sum_bits), "os": out_scale, "ob": float(out_bits)}  # fmt: skip
    rank = len(kernel)
    out_shape = [
        *shape[:2],
        *((n - k) // s + 1 for n, k, s in zip(shape[2:], kernel, strides, strict=True)),
    ]
    nodes = [
        helper.make_node("Quant", ["x", "s", "z", "b"], ["q"], domain=QONNX, signed=signed,
                         narrow=0, rounding_mode="ROUND"),
        helper.make_node("AveragePool", ["q"], ["p"], kernel_shape=kernel, strides=strides,
                         pads=[0] * 2 * rank),
        helper.make_node("Trunc", ["p", "ts", "z", "tb", "os", "ob"], ["y"], domain=QONNX,
                         signed=signed, narrow=0, rounding_mode=rounding),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in constants.items()],
    )  # fmt: skip
    model = qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid(QONNX, 2)])  # fmt: skip
    return ModelWrapper(model).transform(InferShapes())


def inputs(shape, bits: int, signed: bool, seed: int = 0) -> np.ndarray:
    """Every integer of the input's range (and beyond it, clipped) times the scale."""
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    rng = np.random.default_rng(seed)
    ints = rng.integers(low - 1, high + 2, size=(32, *shape[1:]))
    ints[0].flat[: high - low + 1] = np.arange(low, high + 1)[: ints[0].size]
    ints[1] = high  # the largest sum: the clamp
    return (ints * 0.3).astype(np.float32)


def run(model: ModelWrapper, x: np.ndarray) -> np.ndarray:
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    return np.concatenate([execute_onnx(model, {source: frame[None]})[sink] for frame in x])


CASES = {  # name: (shape, kernel, strides, rounding, bits, signed, out_bits)
    "2x2-round": ([1, 3, 4, 4], [2, 2], [2, 2], "ROUND", 4, 0, 4),
    "3x3-round-signed": ([1, 2, 5, 5], [3, 3], [1, 1], "ROUND", 3, 1, 3),
    "25x5-global-round": ([1, 4, 25, 5], [25, 5], [1, 1], "ROUND", 4, 0, 4),
    "2x3-floor-not-square": ([1, 3, 6, 6], [2, 3], [2, 3], "FLOOR", 5, 0, 5),
    "3x3-ceil": ([1, 2, 6, 6], [3, 3], [3, 3], "CEIL", 2, 0, 4),
    "1d-round": ([1, 3, 12], [4], [2], "ROUND", 4, 1, 4),
    "1d-global-floor": ([1, 5, 10], [10], [1], "FLOOR", 3, 0, 6),
    "6x6-global-round": ([1, 16, 6, 6], [6, 6], [1, 1], "ROUND", 4, 0, 4),
}


@pytest.mark.parametrize("name", CASES)
def test_a_truncated_average_pool_becomes_thresholds_that_compute_as_qonnx(name):
    shape, kernel, strides, rounding, bits, signed, out_bits = CASES[name]
    model = truncated_pool(shape, kernel, strides, rounding, bits, signed, out_bits)
    x = inputs(shape, bits, bool(signed))
    want = run(model, x)
    rewritten = model.transform(TruncAvgPoolToThresholds())
    ops = [n.op_type for n in rewritten.graph.node]
    assert "Trunc" not in ops and "MultiThreshold" in ops, ops
    assert np.array_equal(run(rewritten, x), want)
    # and after FINN's conversion of the quantizers, whose scales make the window's sum a
    # whole number only to single precision
    converted = qonnx_to_finn(rewritten, SimpleNamespace(max_multithreshold_bit_width=8))
    assert np.array_equal(run(converted, x), want)
    if len(kernel) == 1:
        return  # a 1D pool is lowered once the network is made 2D (test_zoo's tcn, ds_cnn)
    # and as FINN's accumulating pool will read it: a window sum of integers
    lowered = rewritten.transform(AveragePoolToSumPool())
    ops = [n.op_type for n in lowered.graph.node]
    assert "AveragePool" not in ops and {"Im2Col", "ReduceSum"} <= set(ops), ops
    assert np.array_equal(run(lowered, x), want)


def test_a_floor_rounded_square_pool_is_left_to_finn():
    model = truncated_pool([1, 2, 4, 4], [2, 2], [2, 2], "FLOOR", 4, 0, 4)
    rewritten = model.transform(TruncAvgPoolToThresholds())
    assert [n.op_type for n in rewritten.graph.node] == ["Quant", "AveragePool", "Trunc"]


def test_a_pool_whose_input_is_not_a_quantizer_is_left_alone():
    model = truncated_pool([1, 2, 4, 4], [2, 2], [2, 2], "ROUND", 4, 0, 4)
    quant = model.graph.node[0]
    relu = helper.make_node("Relu", [quant.output[0]], ["r"])
    model.graph.node.insert(1, relu)
    model.graph.node[2].input[0] = "r"
    rewritten = model.transform(TruncAvgPoolToThresholds())
    assert "Trunc" in [n.op_type for n in rewritten.graph.node]


def mean_thresholds(shape, kernel, strides, dtype: str, seed: int) -> tuple[ModelWrapper, list]:
    """An integer input -> AveragePool -> MultiThreshold: thresholds on the mean, random and
    (as streamlining leaves them) window sums divided by the window in single precision."""
    rng = np.random.default_rng(seed)
    data = DataType[dtype]
    window = math.prod(kernel)
    sums = np.sort(rng.choice(np.arange(window * data.min(), window * data.max()), 7))
    random = rng.uniform(data.min(), data.max(), size=7)
    steps = np.sort(np.concatenate([sums / window, random])).astype(np.float32)[None]
    out_shape = [
        *shape[:2],
        *((n - k) // s + 1 for n, k, s in zip(shape[2:], kernel, strides, strict=True)),
    ]
    nodes = [
        helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=kernel, strides=strides),
        helper.make_node("MultiThreshold", ["p", "t"], ["y"], domain=QONNX, out_dtype="UINT4"),
    ]
    graph = helper.make_graph(
        nodes, "mean",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(steps, "t")],
    )  # fmt: skip
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    model = model.transform(InferShapes())
    model.set_tensor_datatype("x", data)
    x = rng.integers(int(data.min()), int(data.max()) + 1, size=(6, *shape[1:]))
    return model, x.astype(np.float32)


@pytest.mark.parametrize(
    ("shape", "kernel", "strides", "dtype"),
    [([1, 3, 6, 6], [3, 3], [3, 3], "UINT4"), ([1, 2, 7, 5], [7, 5], [1, 1], "INT3"),
     ([1, 4, 8, 8], [2, 4], [2, 2], "UINT2"), ([1, 5, 9, 9], [3, 3], [2, 2], "UINT5")],
)  # fmt: skip
def test_thresholds_on_a_mean_read_the_window_sum_exactly(shape, kernel, strides, dtype):
    model, x = mean_thresholds(shape, kernel, strides, dtype, seed=sum(shape))
    want = run(model, x)
    lowered = model.transform(AveragePoolToSumPool())
    ops = [n.op_type for n in lowered.graph.node]
    assert ops == ["Transpose", "Im2Col", "Reshape", "ReduceSum", "MultiThreshold", "Transpose"]
    thresholds = lowered.get_initializer(lowered.graph.node[4].input[1])
    assert np.array_equal(thresholds, np.round(thresholds))  # integers: what FINN's layer takes
    assert np.array_equal(run(lowered, x), want)
