"""QONNX's clean-up in linear time: the same graph, byte for byte, as QONNX's own passes on real
models (Brevitas exports and streamlined models with forks, joins, several outputs and
attention, their nodes shuffled and their weights shared), on dangling and constant nodes, and
a cycle still refused by QONNX's error."""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace

import pytest
from onnx import TensorProto, helper

from tests.test_tensor_names import MODELS as RENAMED
from tests.test_tensor_names import REPO

pytestmark = pytest.mark.slow

MODELS = [*RENAMED, "examples/models/zoo/two_heads.onnx"]  # and a model with two outputs
PASSES = ["SortGraph", "GiveUniqueParameterTensors", "SortCommutativeInputsInitializerLast"]


def installed():
    from brainsmith.frameworks.finn.passes import linear_passes

    linear_passes.install()


def both(model, name: str):
    """(QONNX's pass ``name``, the linear one) applied to copies of ``model``."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation import general

    installed()
    kind = getattr(general, name)
    random.seed(0)  # the names of copied weights are random strings
    theirs, _ = kind.qonnx_apply(kind(), ModelWrapper(copy.deepcopy(model.model)))
    random.seed(0)
    ours, _ = kind().apply(ModelWrapper(copy.deepcopy(model.model)))
    return theirs, ours


def shapes_checked(model, fix: bool):
    """(QONNX's check, the linear one): each's answer and the graph it leaves."""
    from qonnx.core.modelwrapper import ModelWrapper

    installed()
    theirs = ModelWrapper(copy.deepcopy(model.model), fix_missing_initializer_valueinfo=False)
    ours = ModelWrapper(copy.deepcopy(model.model), fix_missing_initializer_valueinfo=False)
    answers = (
        ModelWrapper.qonnx_check_all_tensor_shapes_specified(theirs, fix),
        ours.check_all_tensor_shapes_specified(fix),
    )
    return answers, theirs, ours


def varied(model, seed: int):
    """``model`` with its nodes shuffled, some inputs of Add/Mul swapped and one weight shared."""
    from qonnx.core.modelwrapper import ModelWrapper

    proto = copy.deepcopy(model.model)
    chance = random.Random(seed)
    nodes = list(proto.graph.node)
    chance.shuffle(nodes)
    for node in nodes:
        if node.op_type in ("Add", "Mul") and len(node.input) == 2 and chance.random() < 0.5:
            node.input[0], node.input[1] = node.input[1], node.input[0]
    weights = {t.name for t in proto.graph.initializer}
    readers = [n for n in nodes if any(name in weights for name in n.input)]
    if len(readers) >= 2:  # the second reader of a weight reads the first's
        first = next(name for name in readers[0].input if name in weights)
        second = list(readers[1].input).index(next(n for n in readers[1].input if n in weights))
        readers[1].input[second] = first
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    return ModelWrapper(proto)


def assert_same(theirs, ours) -> None:
    assert [n.name for n in ours.graph.node] == [n.name for n in theirs.graph.node]
    assert ours.model.SerializeToString() == theirs.model.SerializeToString()


@pytest.fixture(scope="module")
def models():
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_shapes import InferShapes

    from brainsmith.frameworks.finn.recipe import steps

    made = []
    cfg = SimpleNamespace(max_multithreshold_bit_width=8)
    for path in MODELS:
        exported = ModelWrapper(str(REPO / path)).transform(InferShapes())
        made += [exported, steps.streamline(steps.qonnx_to_finn(steps.tidy_up(exported), cfg))]
    return made


@pytest.mark.parametrize("name", PASSES)
def test_each_pass_gives_qonnx_s_graph_on_exports_and_streamlined_models(models, name):
    for model in models:
        for seed in range(3):
            assert_same(*both(varied(model, seed), name))


@pytest.mark.parametrize("name", ["InferDataTypes", "InferDataLayouts"])
def test_datatypes_and_layouts_are_inferred_as_qonnx_does(models, name):
    """With a third of the annotations dropped, some left empty and some wrong, the same
    annotations inferred, added, corrected and kept, and the model's own lookups QONNX's afterwards."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_data_layouts import InferDataLayouts
    from qonnx.transformation.infer_datatypes import InferDataTypes

    installed()
    kind = {"InferDataTypes": InferDataTypes, "InferDataLayouts": InferDataLayouts}[name]
    for model in models:
        proto = copy.deepcopy(model.model)
        annotations = list(proto.graph.quantization_annotation)
        kept = [a for index, a in enumerate(annotations) if index % 3]
        for annotation in kept[::4]:
            del annotation.quant_parameter_tensor_names[:]  # annotated, but with no datatype
        for annotation in kept[1::4]:
            for entry in annotation.quant_parameter_tensor_names:  # annotated wrongly
                entry.value = "['N', 'X']" if entry.key == "tensor_layout" else "FLOAT32"
        del proto.graph.quantization_annotation[:]
        proto.graph.quantization_annotation.extend(kept)
        theirs, _ = kind.qonnx_apply(kind(), ModelWrapper(copy.deepcopy(proto)))
        ours, _ = kind().apply(ModelWrapper(copy.deepcopy(proto)))
        assert_same(theirs, ours)
        assert "get_tensor_datatype" not in vars(ours)  # the model's own methods again


def test_a_tensor_annotated_twice_is_left_to_qonnx():
    from qonnx.core.datatype import DataType
    from qonnx.transformation.infer_datatypes import InferDataTypes

    model = graph([helper.make_node("Relu", ["x"], ["y"], name="one")])
    model.set_tensor_datatype("x", DataType["INT4"])
    model.graph.quantization_annotation.add(tensor_name="x")
    installed()
    with pytest.raises(Exception, match="multiple get_by_name matches"):
        model.transform(InferDataTypes())


def test_the_shape_check_answers_and_fixes_as_qonnx_s(models):
    """With value infos dropped for some tensors (initializers among them), the same answer
    and, when asked to fix initializers' shapes, the same value infos added."""
    from qonnx.core.modelwrapper import ModelWrapper

    for model in models:
        proto = copy.deepcopy(model.model)
        kept = [vi for index, vi in enumerate(proto.graph.value_info) if index % 3]
        del proto.graph.value_info[:]
        proto.graph.value_info.extend(kept)
        thinned = ModelWrapper(proto, fix_missing_initializer_valueinfo=False)
        for fix in (False, True):
            (theirs_said, ours_said), theirs, ours = shapes_checked(thinned, fix)
            assert ours_said == theirs_said
            assert_same(theirs, ours)
        assert shapes_checked(model, False)[0] == (True, True)


def graph(nodes, initializer=(), value_info=()):
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.basic import qonnx_make_model

    value = helper.make_tensor_value_info
    made = helper.make_graph(
        nodes,
        "order",
        [value("x", TensorProto.FLOAT, [2])],
        [value("y", TensorProto.FLOAT, [2])],
        initializer=list(initializer),
        value_info=list(value_info),
    )
    return ModelWrapper(qonnx_make_model(made), fix_missing_initializer_valueinfo=False)


def test_dangling_and_constant_nodes_are_kept_or_dropped_as_qonnx_does():
    """A node reading a tensor nothing produces is dropped, a constant nothing reads too; a
    constant that is read stays, and a node reading only an initializer stays."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    model = graph(
        [
            helper.make_node("Add", ["a", "c"], ["y"], name="join"),
            helper.make_node("Relu", ["nowhere"], ["lost"], name="dangling"),
            helper.make_node("Constant", [], ["c"], name="read", value=w),
            helper.make_node("Constant", [], ["unread"], name="unread", value=w),
            helper.make_node("Neg", ["w"], ["from_w"], name="weights_only"),
            helper.make_node("Mul", ["x", "from_w"], ["a"], name="scale"),
        ],
        initializer=[w],
    )
    theirs, ours = both(model, "SortGraph")
    assert [n.name for n in ours.graph.node] == ["read", "weights_only", "scale", "join"]
    assert_same(theirs, ours)


def test_a_node_reading_its_own_output_and_a_cycle():
    """A node's own output among its inputs is no dependency; a cycle is QONNX's error."""
    from qonnx.transformation.general import SortGraph
    from toposort import CircularDependencyError

    own = graph(
        [
            helper.make_node("Loop", ["x", "y"], ["y"], name="own"),
            helper.make_node("Relu", ["x"], ["z"], name="first"),
        ]
    )
    assert_same(*both(own, "SortGraph"))
    cycle = graph(
        [
            helper.make_node("Relu", ["b"], ["a"], name="one"),
            helper.make_node("Relu", ["a"], ["b"], name="two"),
            helper.make_node("Add", ["x", "a"], ["y"], name="out"),
        ]
    )
    installed()
    with pytest.raises(CircularDependencyError):
        SortGraph().apply(cycle)


def test_two_value_infos_for_one_tensor_are_qonnx_s_error():
    value = helper.make_tensor_value_info
    twice = graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="one"),
            helper.make_node("Relu", ["a"], ["y"], name="two"),
        ],
        value_info=[value("a", TensorProto.FLOAT, [2]), value("a", TensorProto.FLOAT, [2])],
    )
    installed()
    with pytest.raises(AssertionError, match="Multiple ValueInfoProto found for a"):
        twice.check_all_tensor_shapes_specified()
