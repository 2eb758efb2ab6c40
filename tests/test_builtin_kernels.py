"""brainsmith's kernels and backends over FINN, and the example models through FINN's flow."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.transformation.infer_datatypes import InferDataTypes
from qonnx.transformation.infer_shapes import InferShapes
from qonnx.util.basic import qonnx_make_model

from brainsmith.frameworks.finn.env import prepare_finn, preserve_process_io
from brainsmith.plugin.core import get_registry
from brainsmith.plugins import backends as bk
from brainsmith.plugins import kernels as kn
from brainsmith.plugins import transforms as tfm

# FINN's data-layout inference warns when it guesses a layout from the rank
pytestmark = pytest.mark.filterwarnings("ignore:Assuming .* input is:UserWarning")

HW_DOMAIN = "finn.custom_op.fpgadataflow"
KERNELS = {
    "matmul": ("MVAU", "finn:InferQuantizedMatrixVectorActivation"),
    "softmax": ("HWSoftmax", "finn:InferHWSoftmax"),
    "LayerNorm": ("LayerNorm", "finn:InferLayerNorm"),
}
BACKENDS = {
    "MatMulHLS": ("matmul", "hls"),
    "MatMulRTL": ("matmul", "rtl"),
    "SoftmaxHLS": ("softmax", "hls"),
    "SoftmaxRTL": ("softmax", "rtl"),
    "LayerNormHLS": ("LayerNorm", "hls"),
    "LayerNormRTL": ("LayerNorm", "rtl"),
}
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "models"
VERSAL_PART = "xcvc1902-vsva2197-2MP-e-S"
SEEDS = (0, 1, 2, 3)


def single_node_model(node, in_shape, out_shape, initializers=None, in_dtype=None) -> ModelWrapper:
    graph = helper.make_graph(
        [node],
        "kernel_test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        initializer=[
            helper.make_tensor(name, TensorProto.FLOAT, value.shape, value.flatten())
            for name, value in (initializers or {}).items()
        ],
    )
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    if in_dtype is not None:
        model.set_tensor_datatype("x", DataType[in_dtype])
    return model.transform(InferShapes()).transform(InferDataTypes())


def random_input(model: ModelWrapper, seed: int) -> dict[str, np.ndarray]:
    name = model.graph.input[0].name
    shape = model.get_tensor_shape(name)
    dtype = model.get_tensor_datatype(name)
    rng = np.random.default_rng(seed)
    if dtype.is_integer():
        values = rng.integers(dtype.min(), dtype.max() + 1, size=shape)
    else:
        values = rng.normal(size=shape)
    return {name: values.astype(np.float32)}


def assert_same_function(before: ModelWrapper, after: ModelWrapper, atol: float = 1e-6) -> None:
    for seed in SEEDS:
        inputs = random_input(before, seed)
        expected = execute_onnx(before, inputs)[before.graph.output[0].name]
        produced = execute_onnx(
            after, {after.graph.input[0].name: inputs[before.graph.input[0].name]}
        )
        np.testing.assert_allclose(
            produced[after.graph.output[0].name], expected, rtol=1e-5, atol=atol
        )


def infer_with_kernel(model: ModelWrapper, kernel_name: str) -> ModelWrapper:
    """Apply the kernel's own infer transform, found through its hub metadata."""
    spec = get_registry().find("kernel", kernel_name, "brainsmith")
    return model.transform(tfm[spec.metadata["infer_transform"]]())


def hw_op_types(model: ModelWrapper) -> list[str]:
    return [node.op_type for node in model.graph.node if node.domain.startswith(HW_DOMAIN)]


# -- registration and class structure -------------------------------------------------------


def test_kernels_carry_their_finn_op_type_domain_and_infer_transform():
    registry = get_registry()
    for name, (op_type, infer) in KERNELS.items():
        metadata = registry.find("kernel", name, "brainsmith").metadata
        assert (metadata["op_type"], metadata["domain"], metadata["infer_transform"]) == (
            op_type,
            HW_DOMAIN,
            infer,
        )
        assert registry.find("transform", infer).framework == "finn"


def test_kernel_classes_subclass_the_finn_kernel_of_their_op_type():
    prepare_finn()
    from finn.custom_op.fpgadataflow import custom_op
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

    for name, (op_type, _) in KERNELS.items():
        assert issubclass(kn[name], custom_op[op_type])
        assert issubclass(kn[name], HWCustomOp)


def test_backends_subclass_their_kernel_and_the_matching_finn_backend():
    prepare_finn()
    from finn.custom_op.fpgadataflow.hls import custom_op as hls_ops
    from finn.custom_op.fpgadataflow.rtl import custom_op as rtl_ops

    registry = get_registry()
    for name, (kernel_name, backend_type) in BACKENDS.items():
        metadata = registry.find("backend", name, "brainsmith").metadata
        assert (metadata["kernel"], metadata["backend_type"]) == (kernel_name, backend_type)
        op_type = KERNELS[kernel_name][0]
        finn_backend = {"hls": hls_ops, "rtl": rtl_ops}[backend_type][f"{op_type}_{backend_type}"]
        assert issubclass(bk[name], finn_backend)
        assert issubclass(bk[name], kn[kernel_name])


def test_layernorm_hls_backend_is_finn_layernorm_hls_for_the_layernorm_kernel():
    prepare_finn()
    from finn.custom_op.fpgadataflow.hls.layernorm_hls import LayerNorm_hls

    assert issubclass(bk.LayerNormHLS, LayerNorm_hls)
    metadata = get_registry().find("backend", "LayerNormHLS").metadata
    assert metadata["kernel"] == "LayerNorm" and metadata["backend_type"] == "hls"


# -- each kernel's infer transform on a real model --------------------------------------------


def test_layernorm_kernel_replaces_an_expanded_affine_layernorm():
    rng = np.random.default_rng(7)
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)
    constants = {"g": rng.normal(size=16), "b": rng.normal(size=16)}
    original = single_node_model(node, [1, 4, 16], [1, 4, 16], constants)
    hw = infer_with_kernel(original.transform(tfm.ExpandNorms()), "LayerNorm")
    assert [n.op_type for n in hw.graph.node] == ["LayerNorm", "Mul", "Add"]
    assert hw.graph.node[0].domain == HW_DOMAIN
    assert_same_function(original, hw, atol=1e-5)


def test_layernorm_kernel_ignores_a_layernorm_with_affine_scale():
    rng = np.random.default_rng(7)
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)
    constants = {"g": rng.normal(size=16), "b": rng.normal(size=16)}
    original = single_node_model(node, [1, 4, 16], [1, 4, 16], constants)
    assert hw_op_types(infer_with_kernel(original, "LayerNorm")) == []


def test_expand_norms_keeps_the_bias_finn_drops_from_a_unit_scale_layernorm():
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)
    constants = {"g": np.ones(16), "b": np.full(16, 3.0)}
    original = single_node_model(node, [1, 4, 16], [1, 4, 16], constants)
    inputs = random_input(original, 0)
    finn_alone = infer_with_kernel(original, "LayerNorm")
    dropped = execute_onnx(finn_alone, inputs)["y"] - execute_onnx(original, inputs)["y"]
    assert np.allclose(dropped, -3.0, atol=1e-5)  # finn-plus 1.6.1 converts and loses the bias
    hw = infer_with_kernel(original.transform(tfm.ExpandNorms()), "LayerNorm")
    assert [n.op_type for n in hw.graph.node] == ["LayerNorm", "Add"]
    assert_same_function(original, hw, atol=1e-5)


def test_softmax_kernel_replaces_softmax_on_int8_input():
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
    original = single_node_model(node, [1, 8, 16], [1, 8, 16], in_dtype="INT8")
    hw = infer_with_kernel(original, "softmax")
    assert hw_op_types(hw) == ["HWSoftmax"]
    assert_same_function(original, hw)


def test_matmul_kernel_replaces_an_integer_matmul():
    weights = np.random.default_rng(3).integers(-8, 8, size=(16, 8)).astype(np.float32)
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    original = single_node_model(node, [1, 16], [1, 8], {"w": weights}, in_dtype="INT4")
    original.set_tensor_datatype("w", DataType["INT4"])
    original = original.transform(InferDataTypes())
    hw = infer_with_kernel(original, "matmul")
    assert hw_op_types(hw) == ["MVAU"]
    assert_same_function(original, hw, atol=0)


# -- the example models -----------------------------------------------------------------------


def test_make_models_regenerates_the_committed_models_byte_for_byte(tmp_path):
    from examples.make_models import main

    for path in main(tmp_path):
        committed = EXAMPLES / path.name
        assert path.read_bytes() == committed.read_bytes(), f"{committed} is stale; regenerate it"
        assert committed.stat().st_size < 200_000


def estimate_flow(model: ModelWrapper, output_dir: Path) -> dict[str, ModelWrapper]:
    """FINN's estimate-only flow, step by step; returns the model after each step."""
    prepare_finn()
    import finn.builder.build_dataflow_steps as steps
    from finn.builder.build_dataflow_config import (
        DataflowBuildConfig,
        DataflowOutputType,
        estimate_only_dataflow_steps,
    )

    cfg = DataflowBuildConfig(
        output_dir=str(output_dir),
        synth_clk_period_ns=5.0,
        fpga_part=VERSAL_PART,
        target_fps=100_000,
        standalone_thresholds=True,
        generate_outputs=[DataflowOutputType.ESTIMATE_REPORTS],
    )
    after: dict[str, ModelWrapper] = {}
    with preserve_process_io():
        for name in estimate_only_dataflow_steps:
            model = getattr(steps, name)(model, cfg)
            after[name] = copy.deepcopy(model)
    return after


def example(name: str) -> ModelWrapper:
    from qonnx.util.cleanup import cleanup_model

    return cleanup_model(ModelWrapper(str(EXAMPLES / f"{name}.onnx")))


def prepared_transformer_block() -> ModelWrapper:
    model = example("transformer_block")
    for transform in ("RemoveInferenceNoOps", "ExpandNorms", "ConvertDivToMul", "MergeOpChains"):
        model = model.transform(tfm[transform]())
    return model


def test_mlp_example_becomes_thresholds_and_mvaus_in_hardware(tmp_path):
    original = example("mlp_4bit")
    after = estimate_flow(original, tmp_path)
    hw = after["step_convert_to_hw"]
    assert hw_op_types(hw) == [
        "Thresholding",
        "MVAU",
        "Thresholding",
        "MVAU",
        "ElementwiseMul",
        "ElementwiseAdd",
    ]
    assert len(hw.graph.node) == len(hw_op_types(hw))
    assert_same_function(original, hw, atol=1e-5)


def test_mlp_example_gets_cycle_estimates_for_every_layer(tmp_path):
    after = estimate_flow(example("mlp_4bit"), tmp_path)
    final = after["step_generate_estimate_reports"]
    assert all(op.endswith("_rtl") for op in hw_op_types(final))
    import json

    cycles = json.loads((tmp_path / "report" / "estimate_layer_cycles.json").read_text())
    assert sorted(cycles) == sorted(node.name for node in final.graph.node)
    assert 0 < max(cycles.values()) <= 2000  # 100k FPS at 200 MHz allows 2000 cycles


def test_transformer_block_example_becomes_layernorm_mvau_and_softmax_in_hardware(tmp_path):
    original = example("transformer_block")
    after = estimate_flow(prepared_transformer_block(), tmp_path)
    hw = after["step_convert_to_hw"]
    assert {"LayerNorm", "MVAU", "HWSoftmax"} <= set(hw_op_types(hw))
    assert len(hw.graph.node) == len(hw_op_types(hw))
    assert_same_function(original, hw, atol=1e-5)
    specialized = hw_op_types(after["step_specialize_layers"])
    assert {"LayerNorm_rtl", "MVAU_rtl", "HWSoftmax_rtl"} <= set(specialized)


def test_transformer_block_keeps_layernorm_in_software_without_brainsmith_transforms(tmp_path):
    after = estimate_flow(example("transformer_block"), tmp_path)
    leftover = [
        n.op_type
        for n in after["step_convert_to_hw"].graph.node
        if not n.domain.startswith(HW_DOMAIN)
    ]
    assert leftover == ["LayerNormalization", "Dropout"]


def test_builtin_plugins_doc_examples_run():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "builtin-plugins.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    assert len(blocks) >= 10
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/builtin-plugins.md", "exec"), namespace)
