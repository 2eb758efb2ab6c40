"""Readable tensor names in one pass: the same graph, name for name, as QONNX's own
``GiveReadableTensorNames`` on real models at several points of a build (Brevitas exports,
streamlined and converted models with forks, joins and shared weights)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
MODELS = [
    "examples/models/zoo/resnet8.onnx",
    "examples/models/zoo/encoder_layer.onnx",
    "examples/models/zoo/concat_branches.onnx",
    "examples/models/mlp_4bit.onnx",
]


def both(model):
    """(QONNX's renaming, the one-pass renaming) of copies of ``model``."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.general import GiveReadableTensorNames

    from brainsmith.frameworks.finn.passes import tensor_names

    tensor_names.install()
    theirs = ModelWrapper(copy.deepcopy(model.model))
    theirs, _ = GiveReadableTensorNames.qonnx_apply(GiveReadableTensorNames(), theirs)
    ours, _ = GiveReadableTensorNames().apply(ModelWrapper(copy.deepcopy(model.model)))
    return theirs, ours


@pytest.mark.parametrize("path", MODELS)
def test_the_names_are_qonnx_s_on_exports_and_streamlined_models(path):
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.general import GiveUniqueNodeNames
    from qonnx.transformation.infer_shapes import InferShapes

    from brainsmith.frameworks.finn.recipe import steps

    exported = ModelWrapper(str(REPO / path)).transform(InferShapes())
    cfg = SimpleNamespace(max_multithreshold_bit_width=8)
    streamlined = steps.streamline(steps.qonnx_to_finn(steps.tidy_up(exported), cfg))
    for model in (exported, streamlined):
        theirs, ours = both(model.transform(GiveUniqueNodeNames()))
        assert ours.graph.SerializeToString() == theirs.graph.SerializeToString()


def test_a_shared_initializer_is_made_one_per_reader_and_an_unused_tensor_dropped():
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.basic import qonnx_make_model

    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["a"], name="first"),
            helper.make_node("Add", ["a", "w"], ["y"], name="second"),
        ],
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])],
        value_info=[helper.make_tensor_value_info("unused", TensorProto.FLOAT, [2])],
    )
    model = ModelWrapper(qonnx_make_model(graph))
    theirs, ours = both(model)
    assert ours.graph.SerializeToString() == theirs.graph.SerializeToString()
    assert [t.name for t in ours.graph.initializer] == ["first_param0", "second_param0"]
    assert "unused" not in [t.name for t in ours.graph.value_info]
    assert [n.output[0] for n in ours.graph.node] == ["first_out0", "global_out"]
