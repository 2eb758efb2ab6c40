"""A signed quantizer after an average pool (Brevitas's ``nn.AdaptiveAvgPool2d`` then a
signed ``QuantIdentity``) has thresholds below 0 on the pool's unsigned sum, which FINN's
Thresholding layer refuses with a bare AssertionError. Thresholds below an input's range are
raised to its smallest value (``x >= t`` holds for every input either way): the network
builds, in hardware, and matches torch; ``check`` predicts the build. Where the input's data
type cannot bound them, the build names the node and why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.util.basic import qonnx_make_model

from brainsmith.commands.check_model import check
from brainsmith.errors import StepError
from brainsmith.frameworks.finn.recipe.steps import clamp_thresholds_to_inputs

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "examples" / "models" / "zoo" / "pooled_signed.onnx"
FINN_HW = "finn.custom_op.fpgadataflow"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def thresholding(thresholds: np.ndarray, tensor_type: str, declared: str) -> ModelWrapper:
    """One FINN Thresholding layer on 4 channels: its input annotated ``tensor_type``, the
    layer's own ``inputDataType`` ``declared``, 3-bit signed outputs."""
    node = helper.make_node(
        "Thresholding", ["x", "t"], ["y"], domain=FINN_HW, name="Thresholding_0",
        backend="fpgadataflow", NumChannels=4, PE=1, numSteps=thresholds.shape[1],
        inputDataType=declared, weightDataType="INT8", outputDataType="INT3",
        numInputVectors=[1], ActVal=-4,
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "thresholds",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    model = ModelWrapper(qonnx_make_model(graph))
    model.set_initializer("t", thresholds.astype(np.float32))
    model.set_tensor_datatype("x", DataType[tensor_type])
    model.set_tensor_datatype("t", DataType["INT8"])
    return model


def outputs(model: ModelWrapper, values: range) -> np.ndarray:
    return np.stack(
        [execute_onnx(model, {"x": np.full((1, 4), v, np.float32)})["y"] for v in values]
    )


def test_thresholds_below_an_unsigned_input_are_raised_to_it_and_compute_the_same():
    from finn.transformation.fpgadataflow.minimize_weight_bit_width import (
        MinimizeWeightBitWidth,
    )

    rng = np.random.default_rng(3)
    # 7 steps per channel from -9 to 20 on a UINT4 input (0..15): some below, some above
    thresholds = np.sort(rng.integers(-9, 21, size=(4, 7)), axis=1)
    thresholds[0, :3] = [-9, -5, -1]
    thresholds[1, -2:] = [18, 20]
    model = thresholding(thresholds, "UINT4", "UINT4")
    with pytest.raises(AssertionError):  # FINN's layer, as the build met it
        model.transform(MinimizeWeightBitWidth())
    want = outputs(model, range(16))
    clamped = clamp_thresholds_to_inputs(model)
    assert np.array_equal(clamped.get_initializer("t"), np.clip(thresholds, 0, 16))
    assert np.array_equal(outputs(clamped, range(16)), want)
    clamped.transform(MinimizeWeightBitWidth())  # accepted


def test_thresholds_below_0_that_the_input_cannot_bound_are_named():
    thresholds = np.array([[-2.5, 0.5, 1.5]] * 4)
    model = thresholding(thresholds, "FLOAT32", "UINT4")
    with pytest.raises(StepError) as caught:
        clamp_thresholds_to_inputs(model)
    reason = caught.value.reason
    assert "node Thresholding_0 (Thresholding)" in reason and "-2.5" in reason
    assert "UINT4" in reason and "FLOAT32" in reason and caught.value.hint


def test_a_signed_quantizer_after_a_global_pool_builds_in_hardware_and_matches_torch(hub, farm):
    """The zoo's ``pooled_signed`` (INT3 after a global average pool of a UINT3 ReLU): check
    predicts a build, the build verifies after every step against torch's outputs."""
    predicted = check(MODEL)
    assert predicted.ok and not predicted.error and not predicted.blocking
    result = farm.build(
        MODEL, None, verify="each", input_npy=MODEL.with_name("pooled_signed_input.npy"),
        expected_npy=MODEL.with_name("pooled_signed_expected.npy"),
    )  # fmt: skip
    report = json.loads(Path(result.report_path).read_text())
    assert report["status"] == "ok"
    checks = [s["verification"] for s in report["steps"] if "verification" in s]
    assert checks and all(c["ok"] and c["errors"] == 0 for c in checks)
    assert checks[-1]["user"]["errors"] == 0 and checks[-1]["user"]["max_error"] <= 1e-4
    final = onnx.load(str(Path(result.output_dir) / "final.onnx"))
    layers = [n.op_type for n in final.graph.node]  # check's backends, layer for layer
    assert layers == [n.backend for n in predicted.nodes if n.placement == "hardware"]
    assert "GlobalAccPool_hls" in layers and layers.count("Thresholding_rtl") == 2
    host = [(n["op_type"], n["side"]) for n in report["cpu_nodes"]["nodes"]]
    assert host == [("Transpose", "before"), ("Mul", "after")]
