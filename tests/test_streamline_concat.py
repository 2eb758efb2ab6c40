"""Concatenations in streamlining: the scales of differently quantized branches move past
the join as one per-channel scale, identical branch transposes move past it (and different
ones do not), and a per-channel scale moves past a transpose. Each graph computes the same
before and after."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.test_streamline_joins import model_of

pytestmark = pytest.mark.slow


def same_results(before, after) -> None:
    """Both graphs give the same output for inputs drawn from their QONNX datatypes."""
    from qonnx.core.onnx_exec import execute_onnx

    rng = np.random.default_rng(0)
    feed = {}
    for tensor in before.graph.input:
        kind = before.get_tensor_datatype(tensor.name)
        shape = before.get_tensor_shape(tensor.name)
        low, high = (kind.min(), kind.max()) if kind.is_integer() else (-8, 8)
        feed[tensor.name] = rng.integers(low, high + 1, size=shape).astype(np.float32)
    output = before.graph.output[0].name
    np.testing.assert_allclose(
        execute_onnx(after, feed)[output], execute_onnx(before, feed)[output]
    )


def concat_of_scaled(axis: int = 1):
    """Concat(x * 0.5, y * 0.25) along ``axis``, x UINT4 with 2 channels, y INT3 with 3."""
    from qonnx.core.datatype import DataType

    nodes = [
        helper.make_node("Mul", ["x", "a"], ["xs"]),
        helper.make_node("Mul", ["b", "y"], ["ys"]),  # the constant first
        helper.make_node("Concat", ["xs", "ys"], ["out"], axis=axis),
    ]
    initializers = [
        helper.make_tensor("a", TensorProto.FLOAT, [], [0.5]),
        helper.make_tensor("b", TensorProto.FLOAT, [], [0.25]),
    ]
    model = model_of(
        nodes, [("x", [1, 2, 3, 3]), ("y", [1, 3, 3, 3])], ("out", [1, 5, 3, 3]), initializers
    )
    model.set_tensor_datatype("x", DataType["UINT4"])
    model.set_tensor_datatype("y", DataType["INT3"])
    return model


def test_branch_scales_move_past_the_concat_as_one_scale_per_channel():
    from qonnx.core.datatype import DataType

    from brainsmith.transforms.concat_layouts import MoveScalesPastConcat

    model = concat_of_scaled()
    moved = model.transform(MoveScalesPastConcat())
    concat, mul = [n for n in moved.graph.node]
    assert (concat.op_type, mul.op_type) == ("Concat", "Mul")
    assert list(concat.input) == ["x", "y"]
    scale = moved.get_initializer(mul.input[1])
    np.testing.assert_array_equal(scale.reshape(-1), [0.5, 0.5, 0.25, 0.25, 0.25])
    assert scale.shape == (1, 5, 1, 1)
    assert moved.get_tensor_datatype(concat.output[0]) == DataType["INT5"]  # -4 .. 15
    same_results(model, moved)


def test_equal_branch_scales_become_one_scalar():
    from brainsmith.transforms.concat_layouts import MoveScalesPastConcat

    model = concat_of_scaled()
    model.set_initializer("b", np.array(0.5, dtype=np.float32))
    moved = model.transform(MoveScalesPastConcat())
    mul = moved.graph.node[-1]
    assert moved.get_initializer(mul.input[1]).size == 1
    same_results(model, moved)


def test_a_branch_scale_read_elsewhere_too_stays_before_the_concat():
    from brainsmith.transforms.concat_layouts import MoveScalesPastConcat

    model = concat_of_scaled()
    model.graph.node.append(helper.make_node("Relu", ["xs"], ["other"]))
    model.graph.output.append(helper.make_tensor_value_info("other", TensorProto.FLOAT, None))
    _, changed = MoveScalesPastConcat().apply(model)
    assert not changed


def transposed_concat(perms: tuple[list[int], list[int]]):
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=perms[0]),
        helper.make_node("Transpose", ["y"], ["yt"], perm=perms[1]),
        helper.make_node("Concat", ["xt", "yt"], ["out"], axis=1),
    ]
    return model_of(nodes, [("x", [1, 4, 4, 2]), ("y", [1, 4, 4, 3])], ("out", [1, 5, 4, 4]))


def test_identical_branch_transposes_move_past_the_concat_along_the_permuted_axis():
    from brainsmith.transforms.concat_layouts import MoveTransposesPastConcat

    model = transposed_concat(([0, 3, 1, 2], [0, 3, 1, 2]))
    moved = model.transform(MoveTransposesPastConcat())
    assert [n.op_type for n in moved.graph.node] == ["Concat", "Transpose"]
    assert moved.graph.node[0].attribute[0].i == 3  # channels-last
    same_results(model, moved)


def test_branch_transposes_with_different_permutations_stay_before_the_concat():
    """FINN's MoveTransposePastJoinConcat compares the permutations without acting on the
    result (``False`` is evaluated, not returned), so it moves them anyway and the graph
    computes something else."""
    from finn.transformation.streamline.reorder import MoveTransposePastJoinConcat

    from brainsmith.transforms.concat_layouts import MoveTransposesPastConcat

    model = transposed_concat(([0, 3, 1, 2], [0, 3, 2, 1]))
    _, changed = MoveTransposesPastConcat().apply(model)
    assert not changed
    finn = model.transform(MoveTransposePastJoinConcat())
    with pytest.raises(AssertionError):
        same_results(model, finn)


def test_a_per_channel_scale_moves_past_a_transpose():
    from brainsmith.transforms.concat_layouts import MoveScalePastTranspose

    nodes = [
        helper.make_node("Mul", ["x", "c"], ["xs"]),
        helper.make_node("Transpose", ["xs"], ["out"], perm=[0, 2, 3, 1]),
    ]
    scale = helper.make_tensor("c", TensorProto.FLOAT, [1, 3, 1, 1], [0.5, 2.0, 3.0])
    model = model_of(nodes, [("x", [1, 3, 2, 4])], ("out", [1, 2, 4, 3]), [scale])
    moved = model.transform(MoveScalePastTranspose())
    assert [n.op_type for n in moved.graph.node] == ["Transpose", "Mul"]
    assert moved.get_initializer(moved.graph.node[1].input[1]).shape == (1, 1, 1, 3)
    same_results(model, moved)
