"""Real networks end to end: the shipped Brevitas exports (CNV-like, padded, residual) and
fresh exports nobody tuned for build with ``verify: each`` and match the torch model's own
outputs; wrong designs are still caught; failures name what to fix and where to look."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest

import brainsmith
from brainsmith.blueprint.schema import DEFAULT_STEPS
from brainsmith.builder import BuildError
from tests.conftest import run_python
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
NETWORKS = ("cnv", "conv_pad", "residual")
BACKEND_DOMAINS = ("finn.custom_op.fpgadataflow.hls", "finn.custom_op.fpgadataflow.rtl")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("networks")]


def build_with_torch_vectors(model: Path, blueprint: Path, out: Path, **options):
    vectors = (
        model.with_name(model.stem + "_input.npy"),
        model.with_name(model.stem + "_expected.npy"),
    )
    return brainsmith.build(
        str(model),
        str(blueprint),
        str(out),
        verify="each",
        input_npy=str(vectors[0]),
        expected_npy=str(vectors[1]),
        **options,
    )


@pytest.fixture(scope="module")
def shipped(hub, tmp_path_factory):
    """Each shipped network built once with its blueprint, checked against torch."""
    folder = tmp_path_factory.mktemp("networks")
    return {
        name: build_with_torch_vectors(
            MODELS / f"{name}.onnx", BLUEPRINTS / f"{name}.yaml", folder / name
        )
        for name in NETWORKS
    }


def unimplemented_layers(path: str) -> list[str]:
    model = onnx.load(path)
    return [f"{n.name} ({n.op_type})" for n in model.graph.node if n.domain not in BACKEND_DOMAINS]


@pytest.mark.parametrize("name", NETWORKS)
def test_shipped_network_builds_verified_at_every_step_and_matches_torch(shipped, name):
    result = shipped[name]
    report = json.loads(Path(result.report_path).read_text())
    assert report["status"] == "ok"
    run = [s for s in report["steps"] if s["status"] == "ok"]
    assert len(run) == len(DEFAULT_STEPS) and all(s["verification"]["ok"] for s in run)
    torch_match = [s["verification"]["user"] for s in run]
    assert all(check["ok"] and check["max_error"] < 1e-4 for check in torch_match)
    assert result.performance["estimated_fps"] > 0 and result.totals["LUT"] > 0


@pytest.mark.parametrize("name", NETWORKS)
def test_every_layer_of_the_final_design_has_a_backend(shipped, name):
    final = os.path.join(shipped[name].output_dir, "final.onnx")
    assert unimplemented_layers(final) == []
    ops = {n.op_type for n in onnx.load(final).graph.node}
    assert not ops & {"Shuffle", "Transpose", "Reshape", "Flatten"}


def test_residual_block_keeps_its_skip_path_in_hardware(shipped):
    ops = [n.op_type for n in onnx.load(shipped["residual"].output_dir + "/final.onnx").graph.node]
    for layer in ("DuplicateStreams_hls", "ElementwiseAdd_hls", "GlobalAccPool_hls"):
        assert layer in ops
    matrix = [op for op in ops if op.startswith("MVAU_")]
    assert len(matrix) == 4 and ops.count("FMPadding_rtl") == 3


def test_pool_folded_below_its_channel_count_verifies_exactly(shipped):
    """The CNV's first pool is folded to PE < channels (the sliding window interleaves)."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    model = ModelWrapper(shipped["cnv"].output_dir + "/final.onnx")
    pools = [getCustomOp(n) for n in model.get_nodes_by_op_type("Pool_hls")]
    assert any(p.get_nodeattr("PE") < p.get_nodeattr("Channels") for p in pools)
    report = json.loads(Path(shipped["cnv"].report_path).read_text())
    folding = next(s for s in report["steps"] if s["name"] == "folding")
    assert folding["verification"]["max_error"] < 1e-5


@pytest.mark.parametrize("name", NETWORKS)
def test_run_gives_the_torch_models_outputs(shipped, name):
    """The whole built graph in Python (host nodes around the accelerator included) on the
    torch model's own vectors, batch on axis 0 as saved."""
    x = np.load(MODELS / f"{name}_input.npy")
    expected = np.load(MODELS / f"{name}_expected.npy")
    got = shipped[name].run(x)
    assert got.shape == expected.shape
    assert np.allclose(got, expected, atol=1e-4)


def export_network(folder: Path, name: str, spec: str) -> Path:
    """Export a fresh Brevitas network (``spec``: ConvNetSpec arguments) in a subprocess."""
    result = run_python(
        f"""
        from pathlib import Path
        from examples.brevitas_models import ConvNetSpec, conv_net, export
        export({name!r}, Path({str(folder)!r}), seed=7,
               make=lambda: conv_net(ConvNetSpec({spec})))
        """,
        cwd=REPO,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder / f"{name}.onnx"


@pytest.mark.parametrize(
    ("name", "spec", "blueprint"),
    [
        ("cnv_6_12", "channels=(6, 12), weight_bits=(2, 4), image=14", "cnv.yaml"),
        ("pad_4_8", "channels=(4, 8), weight_bits=(4, 2), padding=1, image=12", "conv_pad.yaml"),
    ],
)
def test_brevitas_export_not_tuned_for_builds_and_matches_torch(
    hub, tmp_path, name, spec, blueprint
):
    model = export_network(tmp_path, name, spec)
    result = build_with_torch_vectors(model, BLUEPRINTS / blueprint, tmp_path / "out")
    assert result.status == "ok"
    assert unimplemented_layers(os.path.join(result.output_dir, "final.onnx")) == []
    last = [s for s in result.report["steps"] if s["status"] == "ok"][-1]
    assert last["verification"]["user"]["max_error"] < 1e-4


def write_blueprint(folder: Path, text: str) -> Path:
    path = folder / "bp.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_shuffle_kernel_leaves_no_layer_without_code(hub, tmp_path):
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: cnv_shuffle
        extends: {BLUEPRINTS / "cnv.yaml"}
        hw_compiler:
          kernels:
            - {{kernel: matmul, backends: [rtl]}}
            - {{kernel: finn:Thresholding, backends: [rtl]}}
            - {{kernel: finn:ConvolutionInputGenerator, backends: [rtl]}}
            - finn:Pool
            - finn:Shuffle
        """,
    )
    result = build_with_torch_vectors(MODELS / "cnv.onnx", blueprint, tmp_path / "out")
    final = os.path.join(result.output_dir, "final.onnx")
    assert result.status == "ok" and unimplemented_layers(final) == []
    assert result.report["layers"] and all(layer["backend"] for layer in result.report["layers"])


def plugin_folder(tmp_path: Path, monkeypatch, source: str) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "corrupt_parameter.py").write_text(textwrap.dedent(source))
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(plugins))
    from brainsmith.plugin.manager import reset_plugin_system

    reset_plugin_system()


@pytest.mark.parametrize(
    ("op_type", "tensor"),
    [("Thresholding_rtl", 1), ("MVAU_rtl", 1)],
    ids=["threshold", "weight"],
)
def test_corrupted_parameter_in_the_folded_design_is_caught(
    hub, tmp_path, monkeypatch, op_type, tensor
):
    plugin_folder(
        tmp_path,
        monkeypatch,
        f"""\
        from brainsmith.plugin.core import step

        @step(name="corrupt_parameter")
        def corrupt_parameter(model, cfg):
            node = model.get_nodes_by_op_type({op_type!r})[-1]
            values = model.get_initializer(node.input[{tensor}]).copy()
            values.flat[0] += 3
            model.set_initializer(node.input[{tensor}], values)
            return model
        """,
    )
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: corrupt
        extends: {BLUEPRINTS / "cnv.yaml"}
        steps: [cleanup, qonnx_to_finn, streamline, hardware_inference, specialize, folding,
                corrupt_parameter, estimates]
        """,
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(MODELS / "cnv.onnx"), str(blueprint), str(tmp_path / "out"), verify="each"
        )
    assert caught.value.step == "corrupt_parameter" and "verification failed" in caught.value.reason


def test_missing_kernel_error_names_a_node_of_a_saved_model(hub, tmp_path):
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: no_pool
        extends: {BLUEPRINTS / "cnv.yaml"}
        hw_compiler:
          kernels:
            - {{kernel: matmul, backends: [rtl]}}
            - {{kernel: finn:Thresholding, backends: [rtl]}}
            - {{kernel: finn:ConvolutionInputGenerator, backends: [rtl]}}
        """,
    )
    out = tmp_path / "out"
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MODELS / "cnv.onnx"), str(blueprint), str(out))
    error = caught.value
    assert error.step == "hardware_inference" and "MaxPool" in error.reason
    saved = "intermediate_models/04_hardware_inference_failed.onnx"
    assert saved in error.hint
    # "... not converted to hardware: <name> (MaxPoolNHWC): add kernel finn:Pool (by ...)"
    node, advice = re.search(r"(\S+) \(MaxPool\w*\): ([^;]+)", error.reason).groups()
    assert node in {n.name for n in onnx.load(out / saved).graph.node}
    assert "add kernel finn:Pool" in advice


def test_fork_without_duplicate_streams_names_the_kernel_to_add(hub, tmp_path):
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: no_fork
        extends: {BLUEPRINTS / "residual.yaml"}
        hw_compiler:
          kernels:
            - {{kernel: matmul, backends: [rtl]}}
            - {{kernel: finn:Thresholding, backends: [rtl]}}
            - {{kernel: finn:FMPadding, backends: [rtl]}}
            - {{kernel: finn:ConvolutionInputGenerator, backends: [rtl]}}
            - finn:ElementwiseAdd
            - finn:GlobalAccPool
        """,
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MODELS / "residual.onnx"), str(blueprint), str(tmp_path / "out"))
    assert caught.value.step == "hardware_inference"
    assert (
        "finn:DuplicateStreams" in caught.value.hint and "feeds 2 hardware" in caught.value.reason
    )


def test_flow_without_specialize_fails_naming_the_layer_without_code(hub, tmp_path):
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: generic
        extends: {BLUEPRINTS / "cnv.yaml"}
        steps: [cleanup, qonnx_to_finn, streamline, hardware_inference, folding, estimates]
        """,
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MODELS / "cnv.onnx"), str(blueprint), str(tmp_path / "out"))
    error = caught.value
    assert error.step == "folding" and "has no HLS or RTL implementation" in error.reason
    assert "_rtl" in error.reason or "_hls" in error.reason  # the backends that would do it


def test_finn_own_conversion_steps_verify_from_the_models_inputs(hub, tmp_path):
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: finn_steps
        extends: {BLUEPRINTS / "cnv.yaml"}
        steps: [cleanup, qonnx_to_finn, streamline, finn:step_convert_to_hw,
                finn:step_create_dataflow_partition, specialize, folding, estimates]
        """,
    )
    result = build_with_torch_vectors(MODELS / "cnv.onnx", blueprint, tmp_path / "out")
    checked = [s["verification"] for s in result.report["steps"] if s.get("verification")]
    assert len(checked) == 8 and all(c["ok"] and c["user"]["ok"] for c in checked)


def test_verify_tolerance_comes_from_the_blueprint(hub, tmp_path):
    exact = write_blueprint(
        tmp_path,
        f"""\
        name: exact
        extends: {BLUEPRINTS / "cnv.yaml"}
        build: {{verify_atol: 0, verify_rtol: 0}}
        """,
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(MODELS / "cnv.onnx"), str(exact), str(tmp_path / "exact"), verify="each"
        )
    assert "tolerance atol 0 + rtol 0" in caught.value.reason
    report = json.loads((tmp_path / "exact" / "report.json").read_text())
    assert report["verify_tolerance"] == {"atol": 0.0, "rtol": 0.0}
    assert np.isfinite(report["steps"][1]["verification"]["max_error"])


def transpose_between_layers(path: Path) -> Path:
    """A 4-bit projection, a transpose of its (sequence, channels) result, a second one."""
    from examples.make_models import GraphBuilder

    rng = np.random.default_rng(3)
    g = GraphBuilder()
    tensor = g.quant("global_in", "in_quant", 0.25, 4, signed=True)
    weight = (rng.normal(size=(16, 16)) / 4).astype(np.float32)
    tensor = g.node("MatMul", [tensor, g.quant_weight("w0", weight, 4)], "mm0")
    tensor = g.quant(g.node("Relu", [tensor], "relu0"), "act0", 0.25, 4, signed=False)
    tensor = g.node("Transpose", [tensor], "transpose", perm=[0, 2, 1])
    weight = (rng.normal(size=(8, 8)) / 3).astype(np.float32)
    g.node("MatMul", [tensor, g.quant_weight("w1", weight, 4)], "global_out")
    g.model("transposed", {"global_in": [1, 8, 16]}, {"global_out": [1, 16, 8]}).save(str(path))
    return path


def test_transpose_between_layers_becomes_shuffle_hardware_that_verifies(hub, tmp_path):
    model = transpose_between_layers(tmp_path / "transposed.onnx")
    blueprint = write_blueprint(
        tmp_path,
        f"""\
        name: transposed
        extends: {BLUEPRINTS / "mlp.yaml"}
        hw_compiler:
          kernels:
            - {{kernel: matmul, backends: [rtl]}}
            - {{kernel: finn:Thresholding, backends: [rtl]}}
            - finn:Shuffle
        """,
    )
    result = brainsmith.build(str(model), str(blueprint), str(tmp_path / "out"), verify="each")
    final = os.path.join(result.output_dir, "final.onnx")
    assert result.status == "ok" and unimplemented_layers(final) == []
    ops = [n.op_type for n in onnx.load(final).graph.node]
    assert "InnerShuffle_rtl" in ops and "Shuffle" not in ops


def test_cli_builds_the_residual_example_against_torch_and_exits_0(tmp_path):
    model = MODELS / "residual.onnx"
    result = invoke(
        "build", model, BLUEPRINTS / "residual.yaml", "-o", tmp_path / "out",
        "--input", MODELS / "residual_input.npy", "--expected", MODELS / "residual_expected.npy",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "verified    each of 9 steps run" in result.stdout and "on your 8 vectors" in result.stdout
    )
