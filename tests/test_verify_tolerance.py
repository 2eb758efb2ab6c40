"""The verification tolerance a blueprint leaves open: none (differences in quantizer steps,
ties counted), or 0.15 for a model computing LayerNorm/Softmax in floating point (stated in
a note); a tolerance the blueprint sets is kept."""

from __future__ import annotations

from types import SimpleNamespace

from onnx import TensorProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.util.basic import qonnx_make_model

from brainsmith.blueprint.options import FLOAT_FUNCTION_ATOL
from brainsmith.builder.runner import DEFAULT_BLUEPRINT, _tolerate_float_functions
from brainsmith.planning.plan import load_plan


def model_with(op_type: str) -> ModelWrapper:
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return ModelWrapper(qonnx_make_model(graph))


def chosen(blueprint: str, op_type: str) -> tuple[float | None, list[str]]:
    run = SimpleNamespace(plan=load_plan(blueprint), notes=[])
    _tolerate_float_functions(run, model_with(op_type))
    return run.plan.build.verify_atol, run.notes


def test_a_float_softmax_is_verified_with_the_stated_float_tolerance():
    atol, notes = chosen(DEFAULT_BLUEPRINT, "Softmax")
    assert atol == FLOAT_FUNCTION_ATOL
    assert len(notes) == 1 and "Softmax x1 in floating point" in notes[0]
    assert "set build.verify_atol to choose" in notes[0]


def test_a_model_without_float_functions_is_compared_in_quantizer_steps():
    assert chosen(DEFAULT_BLUEPRINT, "Relu") == (None, [])


def test_a_tolerance_the_blueprint_sets_is_kept(tmp_path):
    blueprint = tmp_path / "strict.yaml"
    blueprint.write_text(
        f"name: strict\nextends: {DEFAULT_BLUEPRINT}\nbuild:\n  verify_atol: 0.001\n"
    )
    assert chosen(str(blueprint), "Softmax") == (0.001, [])
