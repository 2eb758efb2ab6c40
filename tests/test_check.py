"""``brainsmith check``: what each node will become, before building. Every blocking node is
named with advice that works when followed; hardware_inference failures list all of them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import onnx
import pytest
from onnx import helper

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.commands.check_model import check
from tests.conftest import once
from tests.support.models import mlp_with
from tests.support.processes import Ran, invoke

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
ZOO = MODELS / "zoo"
BRAINSMITH = str(Path(__import__("sys").executable).with_name("brainsmith"))

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("check")]

# What blueprints listed before kernels: auto (the old conv_pad.yaml).
OLD_CONV_KERNELS = [
    "{kernel: matmul, backends: [rtl]}",
    "{kernel: finn:Thresholding, backends: [rtl]}",
    "{kernel: finn:FMPadding, backends: [rtl]}",
    "{kernel: finn:ConvolutionInputGenerator, backends: [rtl]}",
    "finn:Pool",
]


def blueprint(folder: Path, kernels: list[str], extra: str = "", name: str = "bp") -> Path:
    path = folder / f"{name}.yaml"
    listing = "\n".join(f"    - {k}" for k in kernels)
    path.write_text(
        f"name: {name}\nextends: {REPO / 'blueprints' / 'base.yaml'}\n"
        f"hw_compiler:\n  kernels:\n{listing}\n{extra}"
    )
    return path


def test_default_check_of_a_zoo_network_is_ready_and_names_every_node(hub):
    result = check(ZOO / "resnet8.onnx")
    assert result.ok and not result.error and not result.blocking
    hardware = [n for n in result.nodes if n.placement == "hardware"]
    assert hardware and all(n.kernel and n.backend for n in hardware)
    assert {n.backend for n in hardware} >= {"MVAU_hls", "DuplicateStreams_hls", "Pool_hls"}
    assert all(n.reason for n in result.nodes)  # every node says why


def test_advice_for_blocking_nodes_works_when_followed(hub, tmp_path):
    """Start from a kernel list without the residual join and fork; add what check advises
    until it is ready; then the build succeeds."""
    kernels = list(OLD_CONV_KERNELS)
    advised = []
    for _ in range(4):
        result = check(MODELS / "residual.onnx", blueprint(tmp_path, kernels))
        if result.ok:
            break
        assert result.blocking and not result.error
        for node in result.blocking:
            found = re.search(r"add (?:kernel )?(finn:\w+)", node.reason)
            assert found, node.reason
            advised.append(found[1])
            kernels.append(found[1])
    assert result.ok and set(advised) == {"finn:ElementwiseAdd", "finn:DuplicateStreams"}
    built = brainsmith.build(
        str(MODELS / "residual.onnx"), str(blueprint(tmp_path, kernels)), str(tmp_path / "out")
    )
    assert built.status == "ok"


def test_binarized_layers_advice_through_an_explicit_kernel_list(hub, tmp_path):
    """mlp.yaml lists matmul (RTL); a binarized MLP needs finn:MVAU, which FINN builds
    only in HLS: two rounds of advice, each followed as written, then the build succeeds."""
    model = ZOO / "tfc_w1a1.onnx"
    kernels = ["{kernel: matmul, backends: [rtl]}", "{kernel: finn:Thresholding, backends: [rtl]}"]
    first = check(model, blueprint(tmp_path, kernels))
    assert {n.op_type for n in first.blocking} == {"XnorPopcountMatMul"}
    assert "list finn:MVAU instead of brainsmith:matmul" in first.blocking[0].reason
    kernels[0] = "{kernel: finn:MVAU, backends: [rtl]}"
    second = check(model, blueprint(tmp_path, kernels))
    assert second.blocking and all(n.placement == "backend" for n in second.blocking)
    assert "allow hls for it" in second.blocking[0].reason
    kernels[0] = "{kernel: finn:MVAU, backends: [rtl, hls]}"
    assert check(model, blueprint(tmp_path, kernels)).ok
    built = brainsmith.build(str(model), str(blueprint(tmp_path, kernels)), str(tmp_path / "out"))
    assert built.status == "ok"


def test_attention_with_floating_point_weights_runs_from_that_product_on_on_the_host(hub, tmp_path):
    """An encoder whose softmax output is not quantized: the product of the attention weights
    and the values cannot be an integer matrix layer, and no installed kernel computes it.
    check names it, the float operand and its producer, and the Brevitas option that fixes
    it; the build puts what comes before it in hardware and runs it and everything after it
    on the host, named in the report, still matching torch."""
    from tests.test_zoo import export

    export(tmp_path, {"float_scores": "encoder(quantized_scores=False)"})
    model = tmp_path / "float_scores.onnx"
    result = check(model)
    assert result.ok and not result.blocking
    (first,) = [n for n in result.nodes if n.placement == "tail"]
    assert first.op_type == "MatMul"
    assert "floating-point operand" in first.reason and "HWSoftmax" in first.reason
    assert (
        "attn_output_weights_quant" in first.reason
        and "node(s) after it on the host" in first.reason
    )
    softmax = [n for n in result.nodes if n.backend.startswith("HWSoftmax")]
    assert softmax and softmax[0].placement == "hardware"
    built = brainsmith.build(
        str(model), None, str(tmp_path / "out"), verify="each",
        input_npy=str(tmp_path / "float_scores_input.npy"),
        expected_npy=str(tmp_path / "float_scores_expected.npy"),
    )  # fmt: skip
    report = built.report
    cpu = report["cpu_nodes"]["nodes"]
    assert cpu[0]["op_type"] == "MatMul" and {n["side"] for n in cpu} == {"after"}
    assert {"HWSoftmax", "MVAU"} <= {x["op_type"] for x in report["layers"]}
    (note,) = [n for n in report["notes"] if "run on the host after the accelerator" in n]
    assert f"{len(cpu)} node(s)" in note and f"{cpu[0]['name']} (MatMul)" in note
    checks = [s["verification"] for s in report["steps"] if "verification" in s]
    assert all(c["ok"] for c in checks) and checks[-1]["user"]["max_error"] < 1e-4


EXPORTS = {  # fresh zoo exports some tests check: name -> call of an examples.zoo function
    "class_token": "class_token(dim=12, tokens=5, act_bits=5)",
    "qn": "quartznet(channels=(12,), kernels=(5,), per_channel_depthwise=True)",
    "avg_window": "pooled_signed(channels=6, weight_bits=4, act_bits=4, pool_bits=4, window=3, "
    "padding=1)",
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Path:
    """The folder of ``EXPORTS``, exported in one process (torch and Brevitas load once)."""
    from tests.test_zoo import export

    def make() -> Path:
        folder = tmp_path_factory.mktemp("exports")
        export(folder, EXPORTS)
        return folder

    return once("check exports", make)


def test_a_class_token_concat_is_named_with_what_to_change_in_the_model(hub, exports):
    """A ViT's class token is a constant prepended to the patch tokens; no FINN layer inserts
    constant tokens, so the Concat and what follows run on the host. check says it is a
    constant joined to the stream and what to change in the model (before: only "no
    installed plugin implements Concat")."""
    result = check(exports / "class_token.onnx")
    (concat,) = [n for n in result.nodes if n.op_type == "Concat"]
    assert concat.placement == "tail" and "constant input: " in concat.reason
    assert "class token" in concat.reason and "global_pool='avg'" in concat.reason


def test_a_per_channel_scale_into_a_pointwise_product_is_named_with_what_to_change(hub, exports):
    """A depthwise 1D convolution with per-channel weight scales feeding its pointwise one
    with nothing quantized between them (QuartzNet's separable convolutions): the scale
    cannot move past the pointwise product, which runs on the host with all after it.
    check names the scale and what to change; before, it gave attention's advice."""
    result = check(exports / "qn.onnx")
    products = [n for n in result.nodes if n.op_type == "MatMul" and n.placement != "hardware"]
    assert products and "per-channel scale: " in products[0].reason
    assert "one weight scale per tensor" in products[0].reason
    assert "attention" not in products[0].reason


def test_check_and_the_build_name_the_same_nodes_on_the_host_and_in_hardware(hub, exports):
    """A windowed ``nn.AvgPool2d`` averaging its padded border windows over their values
    only (``count_include_pad=False``; FINN's pools count the padding) runs on the host with
    all after it. The build converts the nodes before it again without it: check names what
    the build leaves, node for node (before: 6 host nodes, the converted tail's, where the
    build left 8, the streamlined model's, and a scale check called hardware that the build
    kept on the host)."""
    model = exports / "avg_window.onnx"
    predicted = check(model)
    assert predicted.ok, predicted.error
    built = brainsmith.build(
        str(model), None, str(exports.parent / "avg_window_build"), force=True, verify="each",
        input_npy=str(exports / "avg_window_input.npy"),
        expected_npy=str(exports / "avg_window_expected.npy"),
    )  # fmt: skip
    host = [(n["name"], n["op_type"]) for n in built.report["cpu_nodes"]["nodes"]]
    on_host = [n for n in predicted.nodes if n.placement in ("before", "after", "tail", "host")]
    assert sorted(host) == sorted((n.name, n.op_type) for n in on_host)
    (start,) = [n for n in on_host if n.placement == "tail"]
    assert start.op_type == "AveragePool"
    (note,) = [n for n in built.report["notes"] if "run on the host after the accelerator" in n]
    said = start.reason.split("; the build runs it")[0]
    assert f"{start.name} (AveragePool): {said}" in note, note
    assert "count_include_pad=True" in said, said  # what to change in the model
    final = onnx.load(str(Path(built.output_dir) / "final.onnx"))
    hardware = [n.backend for n in predicted.nodes if n.placement == "hardware"]
    assert [n.op_type for n in final.graph.node] == hardware
    checks = [s["verification"] for s in built.report["steps"] if "verification" in s]
    assert all(c["ok"] for c in checks) and checks[-1]["user"]["max_error"] < 1e-4


def test_excluded_kernel_is_named_with_how_to_bring_it_back(hub, tmp_path):
    bp = blueprint(tmp_path, ["auto"], "  exclude: [finn:VVAU]\n")
    result = check(ZOO / "mobilenet_block.onnx", bp)
    assert not result.ok and len(result.blocking) == 2
    for node in result.blocking:
        assert node.op_type == "MatMul"
        assert "finn:VVAU would convert it, but the blueprint excludes it" in node.reason


def test_excluded_join_is_named_with_how_to_bring_it_back(hub, tmp_path):
    bp = blueprint(tmp_path, ["auto"], "  exclude: [finn:ElementwiseAdd]\n")
    result = check(MODELS / "residual.onnx", bp)
    add = next(n for n in result.blocking if n.op_type == "Add")
    assert "finn:ElementwiseAdd would convert it, but the blueprint excludes it" in add.reason


def tanh_between_layers(path: Path, quantized: bool = False) -> Path:
    """Three 4-bit layers, the middle one read through a floating-point Tanh (``quantized``:
    with a quantizer right before and after the Tanh, as the advice says)."""
    import numpy as np

    from examples.make_models import GraphBuilder

    rng = np.random.default_rng(5)
    g = GraphBuilder()
    tensor = g.quant("global_in", "in_quant", 0.25, 4, signed=True)
    for layer, (fan_in, fan_out) in enumerate([(16, 16), (16, 16), (16, 8)]):
        weight = (rng.normal(size=(fan_in, fan_out)) / 4).astype(np.float32)
        out = "global_out" if layer == 2 else f"mm{layer}"
        tensor = g.node("MatMul", [tensor, g.quant_weight(f"w{layer}", weight, 4)], out)
        if layer == 0:
            if quantized:
                tensor = g.quant(tensor, "tanh_in", 0.125, 8, signed=True)
            tensor = g.node("Tanh", [tensor], "tanh")
            if quantized:
                tensor = g.quant(tensor, "tanh_out", 0.125, 4, signed=True)
        elif layer == 1:
            tensor = g.quant(g.node("Relu", [tensor], "relu1"), "act1", 0.25, 4, signed=False)
    g.model("tanh_mlp", {"global_in": [1, 16]}, {"global_out": [1, 8]}).save(str(path))
    return path


def test_a_float_tanh_between_layers_is_advised_in_plain_words_naming_it(hub, tmp_path):
    """A floating-point Tanh between layers: the Tanh and the product it keeps in floating
    point each say to put quantizers around the Tanh (named) or leave it on the host, never
    an infer_order; followed, the advice makes the Tanh a threshold layer and the build can
    go ahead."""
    result = check(tanh_between_layers(tmp_path / "tanh.onnx"), options={"board": "ulx3s-85f"})
    assert not result.ok
    tanh = next(n for n in result.blocking if n.op_type == "Tanh")
    assert "MatMul" in {n.op_type for n in result.blocking}
    for node in result.blocking:
        assert "infer_order" not in node.reason, node.reason
        assert f"put a quantizer right before {tanh.name} and one right after it" in node.reason
        assert "threshold (lookup) layer" in node.reason
        assert f"leave {tanh.name} on the host" in node.reason, node.reason
    assert "a floating-point Tanh between layers" in tanh.reason
    matmul = next(n for n in result.blocking if n.op_type == "MatMul")
    assert f"kept in floating point by the Tanh {tanh.name} before it" in matmul.reason
    followed = tanh_between_layers(tmp_path / "quantized.onnx", quantized=True)
    ready = check(followed, options={"board": "ulx3s-85f"})
    assert ready.ok and not ready.blocking, [(n.name, n.reason) for n in ready.blocking]
    assert not {n.op_type for n in ready.nodes} & {"Tanh", "MatMul"}
    built = brainsmith.build(str(followed), None, str(tmp_path / "out"),
                             options={"board": "ulx3s-85f"})  # fmt: skip
    checked = [s["verification"] for s in built.report["steps"] if s.get("verification")]
    assert built.status == "ok" and checked and checked[-1]["ok"] and not checked[-1]["errors"]


def test_hardware_inference_failure_lists_every_blocking_node(hub, tmp_path):
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(ZOO / "mobilenet_block.onnx"),
            str(blueprint(tmp_path, OLD_CONV_KERNELS)),
            str(tmp_path / "out"),
            verify="none",
        )
    error = caught.value
    assert error.step == "hardware_inference" and "2 node(s) sit between" in error.reason
    assert error.reason.count("add kernel finn:VVAU") == 2


def test_a_step_that_fails_is_reported_with_the_nodes_so_far(hub, tmp_path):
    result = check(MODELS / "cnv.onnx", blueprint(tmp_path, ["auto"], name="ok"))
    assert result.ok
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        f"extends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "build: {fpga_part: xcvc1902-vsva2197-2MP-e-S, clock_ns: 5.0}\n"
        "steps: [cleanup, qonnx_to_finn, specialize]\n"
    )
    with pytest.raises(BuildError, match="has no hardware_inference step"):
        check(MODELS / "cnv.onnx", broken)


def run_cli(*args: str, cwd: Path) -> Ran:
    """``brainsmith check ARGS`` in this process (the Ctrl-C test below starts one)."""
    return invoke("check", *args, cwd=cwd)


def test_cli_names_its_columns_and_what_chose_each_backend(hub, tmp_path):
    """The default blueprint sets no ``prefer``: a Pool layer is HLS by the default rule (FINN
    has it in HLS only; brainsmith's RTL for it needs prefer: rtl), and check says so."""
    result = run_cli(str(ZOO / "kws_conv1d.onnx"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["place", "node", "op", "type", "kernel", "backend", "why"]
    pools = [line for line in lines if " Pool_hls " in line]
    assert pools and all("prefer: hls" not in line for line in pools), pools
    assert all("default rule" in line and "prefer: rtl" in line for line in pools), pools


def test_cli_exit_codes_json_and_no_files_written(hub, tmp_path):
    ready = run_cli(str(ZOO / "kws_conv1d.onnx"), cwd=tmp_path)
    assert ready.returncode == 0, ready.stderr
    assert "ready to build" in ready.stdout and "ConvolutionInputGenerator_rtl" in ready.stdout
    bp = blueprint(tmp_path, OLD_CONV_KERNELS)
    blocked = run_cli(str(ZOO / "mobilenet_block.onnx"), str(bp), "--json", cwd=tmp_path)
    assert blocked.returncode == 1, blocked.stderr
    report = json.loads(blocked.stdout)
    assert report["ok"] is False
    assert [n["op_type"] for n in report["nodes"] if n["placement"] == "between"] == ["MatMul"] * 2
    missing = run_cli(str(tmp_path / "nope.onnx"), cwd=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bp.yaml"]  # nothing else written


def unknown_op_after_the_output(model) -> None:
    """A change: a node of an op type no one implements (standard domain) reads the output."""
    output = model.graph.output[0]
    node = helper.make_node("FrobnicateXYZ", [output.name], ["frobnicated"], name="frobnicate")
    model.graph.node.append(node)
    output.name = "frobnicated"


def test_a_host_node_no_executor_runs_blocks_check_and_the_build_names_it(hub, tmp_path):
    """After the accelerator, an op onnxruntime does not have (and QONNX/FINN do not
    implement): the host could not run it. check marks it BLOCKS (exit 1) with the reason
    and advice; the build stops with the same reason, whether it verifies or not."""
    model = mlp_with(tmp_path / "frob.onnx", unknown_op_after_the_output)
    why = "onnxruntime has no operator FrobnicateXYZ in the standard ONNX domain"
    checked = run_cli(str(model), "--json", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    (node,) = [n for n in json.loads(checked.stdout)["nodes"] if n["op_type"] == "FrobnicateXYZ"]
    assert node["placement"] == "unrunnable" and why in node["reason"]
    assert "replace it with standard ONNX" in node["reason"]
    shown = run_cli(str(model), cwd=tmp_path)
    assert shown.returncode == 1 and "ready to build" not in shown.stdout
    assert "BLOCKS" in shown.stdout and why in shown.stdout
    for verify, code in (("final", 2), ("none", 1)):
        outdir = str(tmp_path / f"out-{verify}")
        built = invoke("build", str(model), "-o", outdir, "--verify", verify, cwd=tmp_path)
        assert built.returncode == code, built.stderr
        assert f"{node['name']} (FrobnicateXYZ)" in built.stderr and why in built.stderr


WAITING_STEP = """\
import os
import time

from brainsmith.plugin.core import step


@step(name="wait_here")
def wait_here(model, cfg):
    open(os.environ["WAITING"], "w").close()
    time.sleep(120)
    return model
"""


def test_ctrl_c_during_check_exits_130_not_blocked(hub, tmp_path):
    import os
    import signal
    import time

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "waiting.py").write_text(WAITING_STEP)
    waiting_blueprint = tmp_path / "wait.yaml"
    waiting_blueprint.write_text(
        f"extends: {REPO / 'blueprints' / 'mlp.yaml'}\n"
        "steps: [wait_here, cleanup, qonnx_to_finn, streamline, hardware_inference]\n"
    )
    waiting = tmp_path / "waiting"
    env = {**os.environ, "BRAINSMITH_PLUGIN_DIRS": str(plugins), "WAITING": str(waiting)}
    process = subprocess.Popen(
        [BRAINSMITH, "check", str(MODELS / "mlp_4bit.onnx"), str(waiting_blueprint)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not waiting.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert waiting.exists(), process.communicate()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "check interrupted (SIGINT)" in stderr and "Traceback" not in stderr
