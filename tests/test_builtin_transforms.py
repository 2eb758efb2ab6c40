"""brainsmith's own transforms, used through the hub on real ONNX models executed by QONNX."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from qonnx.core.datatype import DataType
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx
from qonnx.custom_op.registry import getCustomOp
from qonnx.transformation.base import Transformation
from qonnx.util.basic import qonnx_make_model

from brainsmith.plugin.core import get_registry
from brainsmith.plugins import transforms as tfm
from tests.conftest import run_python

SEEDS = (0, 1, 2, 3)
SHAPE = [2, 3, 8]


def make_model(
    nodes: list,
    initializers: dict[str, np.ndarray],
    shape: list[int] = SHAPE,
    opset: int = 17,
    outputs: tuple[str, ...] = ("y",),
) -> ModelWrapper:
    """A float32 model ``x -> nodes -> outputs`` with the given constant tensors."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
        initializer=[
            helper.make_tensor(n, _onnx_type(v), v.shape, v) for n, v in initializers.items()
        ],
    )
    model = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    from qonnx.transformation.infer_shapes import InferShapes

    return model.transform(InferShapes(), cleanup=False)


def _onnx_type(value: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(value.dtype)


def random(seed: int, shape: list[int] | tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def outputs_of(model: ModelWrapper, seed: int) -> list[np.ndarray]:
    shape = model.get_tensor_shape("x")
    result = execute_onnx(model, {"x": random(1000 + seed, shape)})
    return [result[t.name] for t in model.graph.output]


def assert_same_function(
    before: ModelWrapper, after: ModelWrapper, rtol: float = 1e-6, atol: float = 1e-6
) -> None:
    for seed in SEEDS:
        for old, new in zip(outputs_of(before, seed), outputs_of(after, seed), strict=True):
            np.testing.assert_allclose(new, old, rtol=rtol, atol=atol)


def op_types(model: ModelWrapper) -> list[str]:
    return [node.op_type for node in model.graph.node]


def layernorm_model(scale: np.ndarray, bias: np.ndarray | None, opset: int = 17) -> ModelWrapper:
    inputs = ["x", "scale"] + (["bias"] if bias is not None else [])
    norm = helper.make_node("LayerNormalization", inputs, ["y"], axis=-1, epsilon=1e-5, name="ln")
    constants = {"scale": scale} | ({"bias": bias} if bias is not None else {})
    return make_model([norm], constants, opset=opset)


# -- the hub ---------------------------------------------------------------------------------


def test_builtin_transforms_are_registered_with_their_stage():
    registry = get_registry()
    stages = {
        name: registry.find("transform", name, "brainsmith").metadata["stage"]
        for name in (
            "ExpandNorms",
            "ConvertDivToMul",
            "MergeOpChains",
            "RemoveInferenceNoOps",
            "SplitPackedProjections",
            "BipolarThresholdsToBinary",
            "AbsorbMonotonicIntoThresholds",
        )
    }
    assert stages == {
        "SplitPackedProjections": "topology_opt",
        "ExpandNorms": "topology_opt",
        "ConvertDivToMul": "topology_opt",
        "MergeOpChains": "topology_opt",
        "RemoveInferenceNoOps": "cleanup",
        "BipolarThresholdsToBinary": "streamline",
        "AbsorbMonotonicIntoThresholds": "streamline",
    }


def test_builtin_transforms_are_qonnx_transformations():
    for name in ("ExpandNorms", "ConvertDivToMul", "MergeOpChains", "RemoveInferenceNoOps",
                 "SplitPackedProjections"):  # fmt: skip
        assert issubclass(tfm[name], Transformation)


def test_importing_plugin_packages_imports_no_heavy_library():
    result = run_python(
        """
        import sys
        import brainsmith.transforms, brainsmith.kernels, brainsmith.backends
        print(sorted(m for m in ("qonnx", "onnx", "numpy", "finn", "torch") if m in sys.modules))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- ExpandNorms ------------------------------------------------------------------------------


def test_expand_norms_moves_scale_and_bias_into_mul_and_add():
    before = layernorm_model(random(1, [8]), random(2, [8]))
    after = before.transform(tfm.ExpandNorms())
    assert op_types(after) == ["LayerNormalization", "Mul", "Add"]
    assert_same_function(before, after)


@pytest.mark.parametrize("opset", [17, 18])
def test_expand_norms_leaves_the_norm_with_unit_scale_and_zero_bias(opset):
    after = layernorm_model(random(1, [8]), random(2, [8]), opset).transform(tfm.ExpandNorms())
    norm = after.get_nodes_by_op_type("LayerNormalization")[0]
    scale, bias = (after.get_initializer(name) for name in norm.input[1:])
    assert np.all(scale == 1) and np.all(bias == 0)


def test_expand_norms_adds_a_zero_bias_input_that_finn_requires():
    before = layernorm_model(np.ones(8, np.float32), None)
    after = before.transform(tfm.ExpandNorms())
    assert op_types(after) == ["LayerNormalization"]
    norm = after.graph.node[0]
    assert len(norm.input) == 3 and not np.any(after.get_initializer(norm.input[2]))
    assert_same_function(before, after)


def test_expand_norms_spells_out_default_axis_and_epsilon_that_finn_reads():
    norm = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"])
    ones, zeros = np.ones(8, np.float32), np.zeros(8, np.float32)
    before = make_model([norm], {"s": ones, "b": zeros})
    after = before.transform(tfm.ExpandNorms())
    attributes = {a.name: helper.get_attribute_value(a) for a in after.graph.node[0].attribute}
    assert attributes["axis"] == -1 and attributes["epsilon"] == pytest.approx(1e-5)
    assert_same_function(before, after)


def test_expand_norms_adds_only_a_mul_when_bias_is_zero():
    before = layernorm_model(random(1, [8]), np.zeros(8, np.float32))
    after = before.transform(tfm.ExpandNorms())
    assert op_types(after) == ["LayerNormalization", "Mul"]
    assert_same_function(before, after)


def test_expand_norms_does_nothing_to_a_norm_already_in_finn_form():
    before = layernorm_model(np.ones(8, np.float32), np.zeros(8, np.float32))
    after = before.transform(tfm.ExpandNorms())
    assert after.model == before.model


def test_expand_norms_does_nothing_without_layernormalization():
    before = make_model([helper.make_node("Relu", ["x"], ["y"])], {})
    after = before.transform(tfm.ExpandNorms())
    assert after.model == before.model


@pytest.mark.parametrize("opset", [17, 18])
def test_expand_norms_primitive_mode_uses_only_elementary_ops(opset):
    before = layernorm_model(random(1, [8]), random(2, [8]), opset)
    after = before.transform(tfm.ExpandNorms(mode="primitive"))
    assert op_types(after) == [
        "ReduceMean",
        "Sub",
        "Mul",
        "ReduceMean",
        "Add",
        "Sqrt",
        "Div",
        "Mul",
        "Add",
    ]
    assert_same_function(before, after, rtol=1e-5, atol=1e-5)


def test_expand_norms_primitive_mode_normalizes_over_trailing_axes():
    norm = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=1, name="ln")
    before = make_model([norm], {"s": random(1, [3, 8]), "b": random(2, [3, 8])})
    after = before.transform(tfm.ExpandNorms(mode="primitive"))
    assert "LayerNormalization" not in op_types(after)
    assert_same_function(before, after, rtol=1e-5, atol=1e-5)


def test_expand_norms_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="'affine' or 'primitive'"):
        tfm.ExpandNorms(mode="fused")


# -- ConvertDivToMul --------------------------------------------------------------------------


def test_convert_div_to_mul_multiplies_by_the_reciprocal():
    divisor = random(5, [8]) + 4.0
    before = make_model([helper.make_node("Div", ["x", "c"], ["y"])], {"c": divisor})
    after = before.transform(tfm.ConvertDivToMul())
    assert op_types(after) == ["Mul"]
    np.testing.assert_allclose(
        after.get_initializer(after.graph.node[0].input[1]), 1 / divisor, rtol=1e-7
    )
    assert_same_function(before, after)


def test_convert_div_to_mul_keeps_the_divisor_for_its_other_readers():
    nodes = [helper.make_node("Div", ["x", "c"], ["d"]), helper.make_node("Add", ["d", "c"], ["y"])]
    before = make_model(nodes, {"c": np.full([8], 3.0, np.float32)})
    after = before.transform(tfm.ConvertDivToMul(), cleanup=False)
    assert op_types(after) == ["Mul", "Add"]
    assert after.get_initializer("c") is not None
    assert_same_function(before, after)


@pytest.mark.parametrize(
    "divisor",
    [np.array([2.0, 0.0], np.float32), None],
    ids=["divisor_with_zero", "computed_divisor"],
)
def test_convert_div_to_mul_leaves_divisions_it_cannot_rewrite(divisor):
    if divisor is None:
        nodes = [helper.make_node("Abs", ["x"], ["c"]), helper.make_node("Div", ["x", "c"], ["y"])]
        before = make_model(nodes, {}, shape=[2, 2])
    else:
        before = make_model([helper.make_node("Div", ["x", "c"], ["y"])], {"c": divisor}, [2, 2])
    after = before.transform(tfm.ConvertDivToMul())
    assert after.model == before.model


def test_convert_div_to_mul_leaves_integer_division():
    graph = helper.make_graph(
        [helper.make_node("Div", ["x", "c"], ["y"])],
        "int_div",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [4])],
        initializer=[helper.make_tensor("c", TensorProto.INT32, [1], [3])],
    )
    before = ModelWrapper(qonnx_make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    after = before.transform(tfm.ConvertDivToMul())
    assert op_types(after) == ["Div"]
    x = np.array([7, -7, 9, 2], np.int32)
    assert execute_onnx(after, {"x": x})["y"].tolist() == [2, -2, 3, 0]


# -- MergeOpChains ----------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Add", "Mul"])
def test_merge_op_chains_folds_two_constant_ops_into_one(op_type):
    nodes = [
        helper.make_node(op_type, ["x", "a"], ["t"]),
        helper.make_node(op_type, ["t", "b"], ["y"]),
    ]
    before = make_model(nodes, {"a": random(1, [8]), "b": random(2, [3, 1])})
    after = before.transform(tfm.MergeOpChains())
    assert op_types(after) == [op_type]
    assert_same_function(before, after, rtol=1e-5, atol=1e-6)


def test_merge_op_chains_folds_a_long_chain_with_constants_on_either_side():
    nodes = [
        helper.make_node("Mul", ["x", "a"], ["t1"]),
        helper.make_node("Mul", ["b", "t1"], ["t2"]),
        helper.make_node("Mul", ["t2", "c"], ["t3"]),
        helper.make_node("Add", ["t3", "d"], ["t4"]),
        helper.make_node("Add", ["e", "t4"], ["y"]),
    ]
    constants = {name: random(i, [8]) for i, name in enumerate("abcde")}
    before = make_model(nodes, constants)
    after = before.transform(tfm.MergeOpChains())
    assert op_types(after) == ["Mul", "Add"]
    assert_same_function(before, after, rtol=1e-5, atol=1e-5)


def test_merge_op_chains_keeps_a_chain_whose_middle_tensor_is_also_read_elsewhere():
    nodes = [
        helper.make_node("Add", ["x", "a"], ["t"]),
        helper.make_node("Add", ["t", "b"], ["y"]),
        helper.make_node("Relu", ["t"], ["z"]),
    ]
    before = make_model(nodes, {"a": random(1, [8]), "b": random(2, [8])}, outputs=("y", "z"))
    after = before.transform(tfm.MergeOpChains())
    assert after.model == before.model


def test_merge_op_chains_does_nothing_to_mixed_or_dynamic_chains():
    nodes = [
        helper.make_node("Add", ["x", "a"], ["t1"]),
        helper.make_node("Mul", ["t1", "b"], ["t2"]),
        helper.make_node("Mul", ["t2", "x"], ["y"]),
    ]
    before = make_model(nodes, {"a": random(1, [8]), "b": random(2, [8])})
    after = before.transform(tfm.MergeOpChains())
    assert after.model == before.model


# -- RemoveInferenceNoOps ---------------------------------------------------------------------


def test_remove_inference_noops_drops_identity_and_dropout_with_any_ratio():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Identity", ["r"], ["i"]),
        helper.make_node("Dropout", ["i", "ratio"], ["d"]),
        helper.make_node("Abs", ["d"], ["y"]),
    ]
    before = make_model(nodes, {"ratio": np.array(0.1, np.float32)})
    after = before.transform(tfm.RemoveInferenceNoOps())
    assert op_types(after) == ["Relu", "Abs"]
    assert_same_function(before, after, rtol=0, atol=0)


def test_remove_inference_noops_drops_a_noop_that_writes_the_graph_output():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["r"], ["y"])]
    before = make_model(nodes, {})
    after = before.transform(tfm.RemoveInferenceNoOps())
    assert op_types(after) == ["Relu"]
    assert after.graph.node[0].output[0] == "y"
    assert_same_function(before, after, rtol=0, atol=0)


def test_remove_inference_noops_keeps_dropout_in_training_mode_or_with_its_mask_read():
    nodes = [
        helper.make_node("Dropout", ["x", "ratio", "training"], ["d"]),
        helper.make_node("Dropout", ["d"], ["y", "mask"]),
    ]
    constants = {"ratio": np.array(0.5, np.float32), "training": np.array(True)}
    before = make_model(nodes, constants, outputs=("y", "mask"))
    after = before.transform(tfm.RemoveInferenceNoOps())
    assert after.model == before.model


def test_remove_inference_noops_does_nothing_without_noops():
    before = make_model([helper.make_node("Relu", ["x"], ["y"])], {})
    after = before.transform(tfm.RemoveInferenceNoOps())
    assert after.model == before.model


# -- SplitPackedProjections -------------------------------------------------------------------


def packed(slices: list[tuple[int, int, int]], reader: str = "Slice") -> ModelWrapper:
    """x[2, 3, 8] @ W[8, 12], a scale, per-column divisor and bias, then ``slices`` (start,
    end, axis) summed into y (each slice 4 wide); with ``reader`` another reader of the
    product's last tensor too."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["p"]),
        helper.make_node("Mul", ["p", "scale"], ["q"]),
        helper.make_node("Div", ["q", "columns"], ["r"]),
        helper.make_node("Add", ["bias", "r"], ["packed"]),
    ]
    constants = {
        "w": random(5, (8, 12)), "scale": np.array(0.5, np.float32),
        "columns": np.abs(random(6, (12,))) + 0.5, "bias": random(7, (12,)),
    }  # fmt: skip
    for index, (start, end, axis) in enumerate(slices):
        names = [f"start{index}", f"end{index}", f"axis{index}"]
        values = (np.array([v], np.int64) for v in (start, end, axis))
        constants.update(zip(names, values, strict=True))
        nodes.append(helper.make_node("Slice", ["packed", *names], [f"s{index}"]))
    summed = [f"s{index}" for index in range(len(slices))]
    if reader != "Slice":
        nodes.append(helper.make_node("ReduceSum", ["packed"], ["other"], keepdims=1))
    total = summed[0]
    for index, name in enumerate(summed[1:]):
        nodes.append(helper.make_node("Add", [total, name], [f"t{index}"]))
        total = f"t{index}"
    nodes.append(helper.make_node("Identity", [total], ["y"]))
    return make_model(nodes, constants)


def test_split_packed_projections_gives_each_slice_its_own_product():
    """q, k and v from one projection (Brevitas's packed_in_proj) become three products of
    the weight's columns, with the scale kept and the per-column constants sliced."""
    model = packed([(0, 4, -1), (4, 8, 2), (8, 12, -1)])
    split = model.transform(tfm.SplitPackedProjections())
    kinds = [node.op_type for node in split.graph.node]
    assert kinds.count("MatMul") == 3 and "Slice" not in kinds
    weights = [split.get_initializer(n.input[1]) for n in split.graph.node if n.op_type == "MatMul"]
    assert [w.shape for w in weights] == [(8, 4)] * 3
    assert split.get_initializer("w") is None and split.get_initializer("columns") is None
    for seed in SEEDS:
        np.testing.assert_allclose(outputs_of(split, seed), outputs_of(model, seed), rtol=1e-6)


@pytest.mark.parametrize(
    "slices, reader",
    [
        ([(0, 4, -1), (4, 8, -1)], "ReduceSum"),  # the packed tensor has another reader
        ([(0, 2, 1)], "Slice"),  # a slice along another axis
    ],
)
def test_split_packed_projections_leaves_a_product_read_otherwise_alone(slices, reader):
    model = packed(slices, reader)
    before = [node.op_type for node in model.graph.node]
    after = model.transform(tfm.SplitPackedProjections())
    assert [node.op_type for node in after.graph.node] == before


# -- BipolarThresholdsToBinary ----------------------------------------------------------------


def sign_model(out_dtype: str, out_scale: float, out_bias: float, reader: str) -> ModelWrapper:
    """x -> MultiThreshold (one threshold per channel) -> ``reader`` with a constant -> y."""
    nodes = [
        helper.make_node("MultiThreshold", ["x", "t"], ["s"], domain="qonnx.custom_op.general",
                         out_dtype=out_dtype, out_scale=out_scale, out_bias=out_bias, name="mt"),
        helper.make_node(reader, ["s", "w"], ["y"]),
    ]  # fmt: skip
    thresholds = random(3, [8, 1])
    weight = np.random.default_rng(4).integers(-2, 2, size=(8, 5)).astype(np.float32)
    model = make_model(nodes, {"t": thresholds, "w": weight}, shape=[2, 8])
    model.set_tensor_datatype("s", DataType[out_dtype])
    return model


def test_bipolar_thresholds_become_two_bit_thresholds_and_2x_minus_1():
    before = sign_model("BIPOLAR", 2.0, -1.0, "MatMul")
    after = before.transform(tfm.BipolarThresholdsToBinary())
    assert op_types(after) == ["MultiThreshold", "Mul", "Add", "MatMul"]
    thresholds = getCustomOp(after.graph.node[0])
    assert (thresholds.get_nodeattr("out_scale"), thresholds.get_nodeattr("out_bias")) == (1, 0)
    assert after.get_tensor_datatype(after.graph.node[0].output[0]) == DataType["UINT2"]
    assert_same_function(before, after, rtol=0, atol=0)


@pytest.mark.parametrize("dtype, scale, bias", [("BINARY", 1.0, 0.0), ("INT2", 1.0, -2.0)])
def test_bipolar_thresholds_leave_other_activations_alone(dtype, scale, bias):
    before = sign_model(dtype, scale, bias, "MatMul")
    after = before.transform(tfm.BipolarThresholdsToBinary())
    assert after.model == before.model


# -- AbsorbMonotonicIntoThresholds ------------------------------------------------------------


def function_then_thresholds(op_type: str, thresholds: np.ndarray) -> ModelWrapper:
    """``x -> op_type -> MultiThreshold(thresholds)``: a quantizer after a float function."""
    function = helper.make_node(op_type, ["x"], ["f"], name="function")
    counted = helper.make_node("MultiThreshold", ["f", "t"], ["y"], name="thresholds",
                               domain="qonnx.custom_op.general", out_dtype="UINT4")  # fmt: skip
    return make_model([function, counted], {"t": thresholds.astype(np.float32)})


@pytest.mark.parametrize(
    ("op_type", "levels"),
    [
        ("Tanh", np.linspace(-1.2, 1.2, 15)),  # beyond the range at both ends: -inf, +inf
        ("Sigmoid", np.linspace(-0.1, 1.0, 15)),
        ("Exp", np.linspace(-0.5, 3.0, 15)),
        ("Softplus", np.linspace(0.0, 2.5, 15)),
    ],
)
def test_a_rising_function_before_thresholds_becomes_part_of_them(op_type, levels):
    """f then thresholds T counts what f^-1(T) counts on f's input, f removed; a threshold
    f never reaches is never reached, one below its range always is."""
    thresholds = np.tile(levels, (SHAPE[-1], 1))
    before = function_then_thresholds(op_type, thresholds)
    after = before.transform(tfm.AbsorbMonotonicIntoThresholds())
    assert op_types(after) == ["MultiThreshold"]
    assert after.graph.node[0].input[0] == "x"
    assert_same_function(before, after, rtol=0, atol=0)


def test_a_function_read_by_anything_but_thresholds_is_left_alone():
    function = helper.make_node("Tanh", ["x"], ["f"], name="function")
    doubled = helper.make_node("Add", ["f", "f"], ["y"], name="add")
    model = make_model([function, doubled], {})
    assert op_types(model.transform(tfm.AbsorbMonotonicIntoThresholds())) == ["Tanh", "Add"]
