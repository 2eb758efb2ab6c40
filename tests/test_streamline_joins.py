"""Residual joins in streamlining: an add whose operand is the graph input (a residual from
the input, as in a transformer encoder) or a constant no longer crashes FINN's
``MoveTransposePastJoinAdd`` in the residual recipe; adds of two transposed branches still
have the transpose moved past them. Each graph computes the same before and after."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.slow


def model_of(nodes, inputs, output, initializers=()):
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.basic import qonnx_make_model

    graph = helper.make_graph(
        nodes,
        "joins",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])],
        initializer=list(initializers),
    )
    from qonnx.transformation.infer_shapes import InferShapes

    return ModelWrapper(qonnx_make_model(graph)).transform(InferShapes())


def same_results(before, after) -> None:
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_shapes import InferShapes

    rng = np.random.default_rng(0)
    feed = {
        i.name: rng.standard_normal(before.get_tensor_shape(i.name)).astype(np.float32)
        for i in before.graph.input
    }
    after = after.transform(InferShapes())  # inputs by position: tidying renames them
    values = dict(zip([i.name for i in after.graph.input], feed.values(), strict=True))
    got = execute_onnx(after, values)[after.graph.output[0].name]
    np.testing.assert_allclose(got, execute_onnx(before, feed)[before.graph.output[0].name])


PERM = helper.make_attribute("perm", [0, 2, 3, 1])


def transpose(source: str, target: str):
    node = helper.make_node("Transpose", [source], [target])
    node.attribute.append(PERM)
    return node


@pytest.mark.parametrize("order", ["input first", "input second"])
def test_an_add_of_the_graph_input_and_a_transposed_branch_is_left_alone(order):
    from brainsmith.frameworks.finn.recipe.networks import streamline_residuals
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    operands = ["x", "t"] if order == "input first" else ["t", "x"]
    model = model_of(
        [
            helper.make_node("Relu", ["x"], ["a"]),
            transpose("a", "b"),
            transpose("b", "t0"),  # back to the input's layout: the shapes of the add agree
            helper.make_node("Identity", ["t0"], ["t"]),
            helper.make_node("Add", operands, ["y"]),
        ],
        [("x", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveTransposePastProducedJoinAdd())  # FINN's alone fails here
    assert [n.op_type for n in moved.graph.node].count("Add") == 1
    same_results(model, moved)
    same_results(model, streamline_residuals(model))


def test_an_add_of_a_constant_is_left_alone():
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    bias = helper.make_tensor("c", TensorProto.FLOAT, [1, 4, 4, 4], [0.5] * 64)
    model = model_of(
        [transpose("x", "t"), helper.make_node("Add", ["t", "c"], ["y"])],
        [("x", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
        [bias],
    )
    same_results(model, model.transform(MoveTransposePastProducedJoinAdd()))


def test_transposes_on_both_branches_still_move_past_the_add():
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    model = model_of(
        [
            transpose("x", "p"),
            transpose("z", "q"),
            helper.make_node("Add", ["p", "q"], ["y"]),
        ],
        [("x", [1, 4, 4, 4]), ("z", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveTransposePastProducedJoinAdd())
    assert [n.op_type for n in moved.graph.node] == ["Add", "Transpose"]
    same_results(model, moved)


def test_an_add_of_the_graph_input_beside_a_movable_join_keeps_valid_op_types():
    """Both kinds in one graph: the movable join is rewritten (FINN returns a new model) and
    every node is still a standard ONNX op."""
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    model = model_of(
        [
            transpose("x", "p"),
            transpose("z", "q"),
            helper.make_node("Add", ["p", "q"], ["s"]),
            helper.make_node("Add", ["w", "s"], ["y"]),
        ],
        [("x", [1, 4, 4, 4]), ("z", [1, 4, 4, 4]), ("w", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveTransposePastProducedJoinAdd())
    assert sorted(n.op_type for n in moved.graph.node) == ["Add", "Add", "Transpose"]
    same_results(model, moved)


def test_transposes_with_different_permutations_stay_before_the_add():
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    other = helper.make_node("Transpose", ["z"], ["q"])
    other.attribute.append(helper.make_attribute("perm", [0, 3, 1, 2]))
    model = model_of(
        [transpose("x", "p"), other, helper.make_node("Add", ["p", "q"], ["y"])],
        [("x", [1, 4, 4, 4]), ("z", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveTransposePastProducedJoinAdd())
    assert [n.op_type for n in moved.graph.node].count("Transpose") == 2
    same_results(model, moved)


def test_a_transpose_and_another_op_into_an_add_stay_before_it():
    from brainsmith.transforms.residual_layouts import MoveTransposePastProducedJoinAdd

    model = model_of(
        [transpose("x", "p"), helper.make_node("Relu", ["z"], ["q"]),
         helper.make_node("Add", ["p", "q"], ["y"])],
        [("x", [1, 4, 4, 4]), ("z", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )  # fmt: skip
    moved = model.transform(MoveTransposePastProducedJoinAdd())
    assert [n.op_type for n in moved.graph.node] == ["Transpose", "Relu", "Add"]
    same_results(model, moved)


def test_an_add_of_a_transposed_body_and_a_skip_runs_in_the_body_s_layout():
    """A residual whose body runs NHWC beside an NCHW skip: the add moves into NHWC (the
    skip gets the body's transpose; one layout change after the add), and the graph
    computes the same."""
    from brainsmith.transforms.residual_layouts import MoveAddIntoTransposedLayout

    to_nhwc = helper.make_node("Transpose", ["x"], ["body_in"], perm=[0, 2, 3, 1])
    to_nchw = helper.make_node("Transpose", ["body"], ["t"], perm=[0, 3, 1, 2])
    model = model_of(
        [
            to_nhwc,
            helper.make_node("Relu", ["body_in"], ["body"]),
            to_nchw,
            helper.make_node("Add", ["t", "x"], ["y"]),
        ],
        [("x", [1, 3, 4, 5])],
        ("y", [1, 3, 4, 5]),
    )
    moved = model.transform(MoveAddIntoTransposedLayout())
    kinds = [n.op_type for n in moved.graph.node]
    assert kinds[-1] == "Transpose", kinds
    add = next(n for n in moved.graph.node if n.op_type == "Add")
    assert moved.get_tensor_shape(add.output[0]) == [1, 4, 5, 3]  # NHWC
    same_results(model, moved)


def test_a_broadcast_add_keeps_its_layout():
    from brainsmith.transforms.residual_layouts import MoveAddIntoTransposedLayout

    model = model_of(
        [transpose("x", "t"), helper.make_node("Add", ["t", "z"], ["y"])],
        [("x", [1, 4, 4, 4]), ("z", [1, 1, 1, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveAddIntoTransposedLayout())
    assert [n.op_type for n in moved.graph.node] == ["Transpose", "Add"]
    same_results(model, moved)


def test_an_add_without_a_twin_transpose_on_the_skip_is_left_alone():
    """Rewriting would only move the transpose to the other operand (and back, forever)."""
    from brainsmith.transforms.residual_layouts import MoveAddIntoTransposedLayout

    model = model_of(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            transpose("r", "t"),
            helper.make_node("Relu", ["z"], ["s"]),
            helper.make_node("Add", ["t", "s"], ["y"]),
        ],
        [("x", [1, 4, 4, 4]), ("z", [1, 4, 4, 4])],
        ("y", [1, 4, 4, 4]),
    )
    moved = model.transform(MoveAddIntoTransposedLayout())
    add = next(n for n in moved.graph.node if n.op_type == "Add")
    producers = sorted(moved.find_producer(name).op_type for name in add.input)
    assert producers == ["Relu", "Transpose"] and len(moved.graph.node) == 4


def threshold(source: str, target: str, channels: int, layout: str = "NCHW"):
    """A MultiThreshold with per-channel thresholds (3 steps per channel)."""
    node = helper.make_node(
        "MultiThreshold",
        [source, f"{target}_thresholds"],
        [target],
        domain="qonnx.custom_op.general",
        data_layout=layout,
        out_dtype="UINT2",
    )
    rows = np.sort(np.random.default_rng(1).standard_normal((channels, 3)), axis=1)
    return node, helper.make_tensor(
        f"{target}_thresholds", TensorProto.FLOAT, rows.shape, rows.flatten()
    )


def test_a_residual_fork_of_nchw_thresholds_runs_channels_last_and_the_add_too():
    """The zoo's residual block after FINN's streamlining: NCHW thresholds fork into an
    NHWC body (a transpose) and the skip of an NCHW add. Afterwards the transposes are one,
    before the thresholds at the graph input, the add runs NHWC, and the graph computes
    the same."""
    from brainsmith.frameworks.finn.recipe.networks import channels_last, streamline_residuals

    first, first_rows = threshold("x", "a", 4)
    model = model_of(
        [
            first,
            helper.make_node("Transpose", ["a"], ["body_in"], perm=[0, 2, 3, 1]),
            helper.make_node("Relu", ["body_in"], ["body"]),
            helper.make_node("Transpose", ["body"], ["back"], perm=[0, 3, 1, 2]),
            helper.make_node("Add", ["back", "a"], ["y"]),
        ],
        [("x", [1, 4, 3, 5])],
        ("y", [1, 4, 3, 5]),
        [first_rows],
    )
    moved = channels_last(streamline_residuals(model))
    kinds = [n.op_type for n in moved.graph.node]
    assert kinds[:2] == ["Transpose", "MultiThreshold"], kinds
    assert kinds.count("Transpose") == 2 and kinds[-1] == "Transpose", kinds
    same_results(model, moved)


def test_twin_transposes_of_forked_thresholds_become_one_before_them():
    from brainsmith.frameworks.finn.recipe.networks import channels_last

    first, rows = threshold("x", "a", 4)
    model = model_of(
        [
            first,
            helper.make_node("Transpose", ["a"], ["p"], perm=[0, 2, 3, 1]),
            helper.make_node("Transpose", ["a"], ["q"], perm=[0, 2, 3, 1]),
            helper.make_node("Add", ["p", "q"], ["y"]),
        ],
        [("x", [1, 4, 3, 5])],
        ("y", [1, 3, 5, 4]),
        [rows],
    )
    moved = channels_last(model)
    assert [n.op_type for n in moved.graph.node] == ["Transpose", "MultiThreshold", "Add"]
    same_results(model, moved)


def test_thresholds_read_by_something_else_too_keep_their_layout():
    from brainsmith.frameworks.finn.recipe.networks import channels_last

    first, rows = threshold("x", "a", 4)
    model = model_of(
        [
            first,
            helper.make_node("Transpose", ["a"], ["p"], perm=[0, 2, 3, 1]),
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("Transpose", ["r"], ["q"], perm=[0, 2, 3, 1]),
            helper.make_node("Add", ["p", "q"], ["y"]),
        ],
        [("x", [1, 4, 3, 5])],
        ("y", [1, 3, 5, 4]),
        [rows],
    )
    moved = channels_last(model)
    assert moved.graph.node[0].op_type == "MultiThreshold"
    same_results(model, moved)


def test_channels_last_thresholds_per_channel_are_not_moved():
    """Thresholds already reading NHWC per channel: a transpose after them cannot move
    before them without reading other rows, so nothing changes."""
    from brainsmith.frameworks.finn.recipe.networks import channels_last

    first, rows = threshold("x", "a", 5, layout="NHWC")
    model = model_of(
        [first, helper.make_node("Transpose", ["a"], ["y"], perm=[0, 2, 3, 1])],
        [("x", [1, 4, 3, 5])],
        ("y", [1, 3, 5, 4]),
        [rows],
    )
    moved = channels_last(model)
    assert [n.op_type for n in moved.graph.node] == ["MultiThreshold", "Transpose"]
