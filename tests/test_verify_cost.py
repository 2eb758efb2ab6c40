"""Verification at a fraction of the build's cost, with the same power to catch errors: a
step that leaves the computation unchanged is not run again (and only then), and QONNX's
integer check runs in NumPy with the same outcome as QONNX's own."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import brainsmith

REPO = Path(__file__).resolve().parents[1]
ZOO = REPO / "examples" / "models" / "zoo"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("verify-cost")]


@pytest.fixture(scope="module")
def kws(hub, tmp_path_factory):
    out = tmp_path_factory.mktemp("kws") / "out"
    return brainsmith.build(str(ZOO / "kws_conv1d.onnx"), None, str(out), verify="each")


def test_steps_that_change_nothing_executed_are_not_run_again(kws):
    report = json.loads(Path(kws.report_path).read_text())
    verified = {s["name"]: s["verification"] for s in report["steps"] if s.get("verification")}
    assert verified["estimates"]["unchanged"] and verified["codegen"]["unchanged"]
    for name in ("cleanup", "qonnx_to_finn", "streamline", "hardware_inference", "folding"):
        assert "unchanged" not in verified[name]
    assert verified["codegen"]["max_error"] == verified["folding"]["max_error"]


def load(path: Path):
    from qonnx.core.modelwrapper import ModelWrapper

    return ModelWrapper(str(path))


def test_computation_key_ignores_names_and_sees_what_execution_reads(kws):
    from qonnx.core.datatype import DataType
    from qonnx.custom_op.registry import getCustomOp
    from qonnx.transformation.general import GiveRandomTensorNames, GiveUniqueNodeNames

    from brainsmith.verification.verifier import computation_key

    folder = Path(kws.output_dir) / "intermediate_models"
    model, parent = load(folder / "06_folding.onnx"), load(folder / "dataflow_parent.onnx")
    key = computation_key(model, parent)
    renamed = model.transform(GiveRandomTensorNames()).transform(GiveUniqueNodeNames("x"))
    assert computation_key(renamed, parent) == key

    weights = load(folder / "06_folding.onnx")
    matrix = weights.get_nodes_by_op_type("MVAU_hls")[0]
    values = weights.get_initializer(matrix.input[1]).copy()
    values.flat[0] += 1
    weights.set_initializer(matrix.input[1], values)
    assert computation_key(weights, parent) != key

    folded = load(folder / "06_folding.onnx")
    window = getCustomOp(folded.get_nodes_by_op_type("ConvolutionInputGenerator_rtl")[0])
    window.set_nodeattr("SIMD", 1 if window.get_nodeattr("SIMD") != 1 else 2)
    assert computation_key(folded, parent) != key

    typed = load(folder / "06_folding.onnx")
    typed.set_tensor_datatype(typed.graph.output[0].name, DataType["INT32"])
    assert computation_key(typed, parent) != key

    placed = load(folder / "06_folding.onnx")
    getCustomOp(placed.graph.node[0]).set_nodeattr("code_gen_dir_ipgen", "/elsewhere")
    assert computation_key(placed, parent) == key


def reference_sanitize(model, names, context):
    from qonnx.util import basic

    return basic.sanitize_quant_values(model, names, context)


@pytest.mark.parametrize("seed", range(5))
def test_fast_integer_check_matches_qonnx(kws, seed):
    from qonnx.core.datatype import DataType

    from brainsmith.frameworks.finn.execution import sanitize_quant_values

    rng = np.random.default_rng(seed)
    model = load(Path(kws.output_dir) / "intermediate_models" / "03_streamline.onnx")
    name = model.graph.output[0].name
    for dtype, noise in (("INT8", 0.0), ("INT8", 1e-6), ("UINT4", 1e-7), ("INT8", 0.4)):
        model.set_tensor_datatype(name, DataType[dtype])
        low, high = DataType[dtype].min(), DataType[dtype].max()
        values = rng.integers(low, high + 1, size=(1, 12)).astype(np.float32)
        values += rng.uniform(-noise, noise, size=values.shape).astype(np.float32)
        outcomes = []
        for check in (reference_sanitize, sanitize_quant_values):
            context = {name: values.copy()}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    result = check(model, [name], context)[name]
                except Exception as exc:  # both must refuse the same inputs
                    result = type(exc).__name__
            outcomes.append((result, len(caught)))
        (expected, warned), (actual, warned_fast) = outcomes
        assert warned == warned_fast
        if isinstance(expected, str):
            assert actual == expected
        else:
            np.testing.assert_array_equal(actual, expected)


def test_fast_integer_check_refuses_nan(kws):
    from qonnx.core.datatype import DataType

    from brainsmith.frameworks.finn.execution import sanitize_quant_values

    model = load(Path(kws.output_dir) / "intermediate_models" / "03_streamline.onnx")
    name = model.graph.output[0].name
    model.set_tensor_datatype(name, DataType["INT8"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception, match="Rounding error is too high"):
            sanitize_quant_values(model, [name], {name: np.array([[1.0, np.nan]])})


@pytest.mark.parametrize("step", ["01_cleanup", "02_qonnx_to_finn", "03_streamline"])
def test_node_major_execution_is_bit_for_bit_finns(kws, step):
    """The flat models before the partition run node by node over all samples; their
    outputs are exactly those of FINN's executor run one sample at a time."""
    from finn.core.onnx_exec import execute_onnx

    from brainsmith.verification.verifier import _flat, generate_inputs, run

    model = load(Path(kws.output_dir) / "intermediate_models" / f"{step}.onnx")
    assert _flat(model)
    samples = generate_inputs(model, 6, seed=3)
    name, out = model.graph.input[0].name, model.graph.output[0].name
    with warnings.catch_warnings():  # float inputs rounded to an INT8 input quantizer
        warnings.simplefilter("ignore")
        expected = [execute_onnx(model, {name: s[0]})[out] for s in samples]
        outputs = run(model, samples)
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize("step", ["02_qonnx_to_finn", "03_streamline"])
def test_the_integer_datatypes_read_once_are_qonnxs(kws, step):
    """Node-major runs read the integer datatypes QONNX checks after every node once per
    model: for every tensor, the one QONNX's own lookup gives (float tensors left out)."""
    from brainsmith.verification.node_major import integer_datatypes

    model = load(Path(kws.output_dir) / "intermediate_models" / f"{step}.onnx")
    found = integer_datatypes(model)
    assert found
    for name in {t for node in model.graph.node for t in (*node.input, *node.output)}:
        datatype = model.get_tensor_datatype(name)
        assert found.get(name) == (datatype if datatype.is_integer() else None), name


def test_a_wrong_threshold_before_the_partition_is_caught(hub, tmp_path, monkeypatch):
    """A step that shifts one threshold of the streamlined model fails verification (the
    node-by-node execution path)."""
    from brainsmith.builder import BuildError
    from brainsmith.plugin.manager import reset_plugin_system

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "shift.py").write_text(
        "from brainsmith.plugin.core import step\n\n"
        '@step(name="shift_threshold")\n'
        "def shift_threshold(model, cfg):\n"
        '    node = model.get_nodes_by_op_type("MultiThreshold")[1]\n'
        "    values = model.get_initializer(node.input[1]).copy()\n"
        "    values[0] += 3\n"
        "    model.set_initializer(node.input[1], values)\n"
        "    return model\n"
    )
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(plugins))
    reset_plugin_system()
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "steps: [cleanup, qonnx_to_finn, streamline, shift_threshold]\n"
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(ZOO / "kws_conv1d.onnx"), str(blueprint), str(tmp_path / "out"),
                         verify="each")  # fmt: skip
    assert caught.value.step == "shift_threshold"
    assert "verification failed" in caught.value.reason
