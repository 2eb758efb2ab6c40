"""Models with several outputs: a convolutional trunk forked into two heads keeps both heads in
the accelerator (a DuplicateStreams at the fork, the flatten absorbed into each head's
weights), verifies against one expected array per output (an ``.npz``), and a step that leaves
a node reading a tensor nothing produces fails at that step, whatever ``--verify`` says."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from qonnx.core.modelwrapper import ModelWrapper

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.planning.wiring import unproduced
from tests.conftest import REPO

ZOO = REPO / "examples" / "models" / "zoo"
MODEL = ZOO / "two_heads.onnx"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multi-output")]


@pytest.fixture(scope="module")
def streamlined(hub, tmp_path_factory) -> ModelWrapper:
    """The two-head network after the streamline step, as a build leaves it."""
    out = tmp_path_factory.mktemp("two_heads") / "out"
    brainsmith.build(str(MODEL), None, str(out), verify="none")
    return ModelWrapper(str(out / "intermediate_models" / "03_streamline.onnx"))


def converted(model: ModelWrapper) -> ModelWrapper:
    """FINN's conversion of the streamlined network to hardware layers, before the flatten
    between the trunk and the heads is removed."""
    from finn.transformation.fpgadataflow.convert_to_hw.conv_inp_gen import InferConvInpGen
    from finn.transformation.fpgadataflow.convert_to_hw.pool import InferPool
    from finn.transformation.fpgadataflow.convert_to_hw.quantized_matrix_vector_activation import (
        InferQuantizedMatrixVectorActivation,
    )
    from finn.transformation.fpgadataflow.convert_to_hw.thresholding import (
        InferThresholdingLayer,
    )
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes

    model = ModelWrapper(model.model.SerializeToString())
    for transform in (
        InferQuantizedMatrixVectorActivation(),
        InferThresholdingLayer(),
        InferPool(),
        InferConvInpGen(),
    ):
        model = model.transform(transform)
    return model.transform(InferShapes()).transform(InferDataTypes())


def outputs(model: ModelWrapper, x: np.ndarray) -> list[np.ndarray]:
    from qonnx.core.onnx_exec import execute_onnx

    context = execute_onnx(model, {model.graph.input[0].name: x})
    return [context[t.name] for t in model.graph.output]


def test_finn_s_flatten_removal_loses_a_head_and_brainsmith_s_keeps_both(streamlined):
    """FINN's RemoveCNVtoFCFlatten rewires the first head only and deletes the flatten the
    other still reads; RemoveFlattenForks absorbs the transpose into both heads' weights."""
    from finn.transformation.move_reshape import RemoveCNVtoFCFlatten

    from brainsmith.frameworks.finn.passes.flatten import RemoveFlattenForks

    hardware = converted(streamlined)
    assert [n.op_type for n in hardware.graph.node].count("Flatten") == 1
    finn_s = hardware.transform(RemoveCNVtoFCFlatten())
    assert [p for p in unproduced(finn_s) if "Flatten" in p], unproduced(finn_s)

    ours = hardware.transform(RemoveFlattenForks())
    assert unproduced(ours) == []
    assert not {"Flatten", "Transpose"} & {n.op_type for n in ours.graph.node[3:]}
    heads = [n for n in ours.graph.node if n.op_type == "MVAU" and not n.input[0].startswith("Im2")]
    assert len(heads) == 2 and heads[0].input[0] == heads[1].input[0]  # both read the fork
    rng = np.random.default_rng(3)
    shape = streamlined.get_tensor_shape(streamlined.graph.input[0].name)
    for _ in range(3):
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        for got, want in zip(outputs(ours, x), outputs(streamlined, x), strict=True):
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_two_heads_build_whole_and_verify_against_one_array_per_output(hub, farm, tmp_path):
    inputs = ZOO / "two_heads_input.npy"
    result = farm.build(  # (as test_zoo builds it)
        MODEL, None, verify="each", input_npy=inputs, expected_npy=ZOO / "two_heads_expected.npz"
    )
    report = json.loads(Path(result.report_path).read_text())
    verified = [s["verification"] for s in report["steps"] if "verification" in s]
    assert verified and all(v["ok"] and v["user"]["errors"] == 0 for v in verified)
    parent = ModelWrapper(str(Path(result.output_dir, "final_parent.onnx")))
    assert unproduced(parent) == [] and len(parent.graph.output) == 2
    final = ModelWrapper(str(Path(result.output_dir, "final.onnx")))
    assert len(final.graph.output) == 2
    assert any(n.op_type.startswith("DuplicateStreams") for n in final.graph.node)
    # the second head's expected outputs, one value off: an error naming the file
    with np.load(ZOO / "two_heads_expected.npz") as archive:
        first, second = archive["arr_0"], archive["arr_1"].copy()
    second[2, 1] += 1
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, first, second)
    with pytest.raises(BuildError, match=r"wrong\.npz"):
        brainsmith.build(
            str(MODEL), None, str(tmp_path / "bad"), verify="final",
            input_npy=str(inputs), expected_npy=str(wrong),
        )  # fmt: skip


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"one": True}, "is one array, but the model has 2 outputs"),
        ({"head": "arr_0"}, "missing"),
    ],
)
def test_expected_vectors_of_a_two_output_model_say_how_to_give_them(
    hub, tmp_path, arrays, message
):
    with np.load(ZOO / "two_heads_expected.npz") as archive:
        first = archive["arr_0"]
    if "one" in arrays:
        path = tmp_path / "one.npy"
        np.save(path, first)
    else:
        path = tmp_path / "named.npz"
        np.savez(path, head=first)
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(MODEL), None, str(tmp_path / "out"), verify="final",
            input_npy=str(ZOO / "two_heads_input.npy"), expected_npy=str(path),
        )  # fmt: skip
    assert message in str(caught.value) and "numpy.savez(path, y0, y1)" in str(caught.value)


BROKEN_TRANSFORM = """\
from qonnx.transformation.base import Transformation

from brainsmith.plugin.core import transform


@transform(name="DropMiddleLayer")
class DropMiddleLayer(Transformation):
    def apply(self, model):
        model.graph.node.remove(model.graph.node[len(model.graph.node) // 2])
        return model, False
"""


def test_a_step_that_leaves_a_tensor_nobody_produces_fails_even_unverified(
    hub, plugin_folder, tmp_path
):
    from brainsmith.plugin.manager import reset_plugin_system

    plugin_folder("broken.py", BROKEN_TRANSFORM)
    reset_plugin_system()
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(
        f"name: broken\nextends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "hw_compiler:\n  transforms_phased:\n    post_hw: [user:DropMiddleLayer]\n"
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MODEL), str(blueprint), str(tmp_path / "out"), verify="none")
    error = str(caught.value)
    assert "folding" in error and "no node produces" in error and "reads" in error
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed"
