"""Networks users bring: every network of the zoo (examples/zoo.py, Brevitas exports) builds
with no blueprint, verified after every step and matching the torch model's own outputs;
fresh exports nobody tuned for (other sizes and bit widths, padding, stride 2, 1D) do the
same; what FINN cannot build correctly is refused by name."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

import numpy as np
import onnx
import pytest
from qonnx.core.datatype import DataType

import brainsmith
from brainsmith.blueprint.schema import DEFAULT_STEPS
from brainsmith.builder import BuildError
from examples.zoo import ZOO
from tests.conftest import once, run_python
from tests.support.tiers import wide

REPO = Path(__file__).resolve().parents[1]
ZOO_DIR = REPO / "examples" / "models" / "zoo"
SMALL = [name for name, (_, _, small) in ZOO.items() if small]
LARGEST = "bert_tiny"  # two encoder layers of encoder_layer's kind: make test-wide
BACKEND_DOMAINS = ("finn.custom_op.fpgadataflow.hls", "finn.custom_op.fpgadataflow.rtl")

pytestmark = pytest.mark.slow

# Fresh exports: (name, zoo function call) with sizes and bit widths the zoo does not use.
VARIANTS = {
    "cnv_w3a5_pool": "cnv(3, 5, channels=(8, 16), pool_after=(0, 1), fc=(32,), image=16)",
    "tfc_w2a2": "tfc(2, 2, in_bits=8, hidden=(32, 48), image=12)",
    "tfc_w8a8": "tfc(8, 8, in_bits=8, hidden=(24,), image=10)",
    "lfc_w1a1_narrow": "tfc(1, 1, hidden=(256, 256, 256))",  # bipolar ties at 0 in every layer
    # bipolar activations read by multi-bit weights (no XNOR product): every layer, the input
    "tfc_w2a1": "tfc(2, 1, hidden=(24, 40), image=10)",
    "tfc_w3a2_bipolar_input": "tfc(3, 2, in_bits=1, hidden=(20,), image=9)",
    "cnv_w3a1_pooled": "cnv(3, 1, channels=(6, 12), pool_after=(0, 1), fc=(20,), image=14)",
    "mobilenet_w5a3_stride2": "mobilenet_block(channels=(8, 24, 24), strides=(2, 1), "
    "weight_bits=5, act_bits=3, image=12)",
    "kws_w2a3_padded": "kws_conv1d(channels=(12, 20), weight_bits=2, act_bits=3, kernel=5, "
    "padding=2, frames=40)",
    "kws_w1a1": "kws_conv1d(channels=(8, 8), weight_bits=1, act_bits=1)",
    "quartznet_d2_w3a5": "quartznet(channels=(16, 20), kernels=(3, 9), dilation=2, "
    "weight_bits=3, act_bits=5, frames=40)",
    "resnet_w3a6": "resnet8(channels=(8, 16, 24), weight_bits=3, act_bits=6, image=12)",
    "residual_w6a2": "residual_identity(channels=12, weight_bits=6, act_bits=2, image=6)",
    "encoder_w6a5": "encoder_mlp(dim=24, hidden=40, sequence=8, weight_bits=6, act_bits=5)",
    "encoder_h4_w6a6": "encoder(dim=48, heads=4, hidden=96, sequence=12, weight_bits=6, "
    "act_bits=6)",
    "two_heads_w3a2": "two_heads(channels=6, weight_bits=3, act_bits=2, image=12, classes=(7, 3))",
    "concat_w5_a3a6": "concat_branches(channels=(4, 12), weight_bits=5, act_bits=(3, 6), "
    "image=7, classes=5)",
    "concat_shared_w3a2": "concat_branches(channels=(6, 10), weight_bits=3, act_bits=(2, 2), "
    "image=6, shared=True)",
    "upsample_x3_w6a3": "upsample(channels=6, scale=3, weight_bits=6, act_bits=3, image=4)",
    "espcn_x3_w3a5": "espcn(channels=(12, 6), scale=3, weight_bits=3, act_bits=5, colours=2, "
    "image=5, last_per_channel=True)",
    # average pools as Brevitas exports them: rounding to nearest, windows not square
    "ds_cnn_floor_w3a3": "ds_cnn(channels=8, blocks=2, weight_bits=3, act_bits=3, "
    "round_pool=False, coefficients=8, frames=30)",
    "mobilenet_round_w3a5": "mobilenet_block(channels=(8, 16, 16), strides=(2, 1), "
    "weight_bits=3, act_bits=5, round_pool=True, image=10)",
    "resnet_round_w4a3": "resnet8(channels=(8, 12), weight_bits=4, act_bits=3, image=10, "
    "round_pool=True)",
    "tcn_d3_w3a5": "tcn(channels=12, dilations=(1, 3, 9), kernel=5, weight_bits=3, act_bits=5, "
    "features=6, frames=40)",
    # a signed quantizer after a global average pool: thresholds below 0 on an unsigned sum
    "tcn_pool_signed_w3a4": "tcn(channels=8, dilations=(1, 2), weight_bits=3, act_bits=4, "
    "pool_bits=3, features=4, frames=24)",
    "pooled_signed_1d_w4a2": "pooled_signed(channels=6, weight_bits=4, act_bits=2, pool_bits=4, "
    "image=5, one_d=True)",
    # MLPerf Tiny's reference networks at their own sizes, exported with Brevitas's defaults
    "resnet8_mlperf_tiny": "resnet8(channels=(16, 32, 64), image=32, round_pool=True)",
    "ds_cnn_mlperf_tiny": "ds_cnn(channels=64, blocks=4)",
    "mobilenet_v1_025_vww": "mobilenet_block(channels=(8, 16, 32, 32, 64, 64, 128, 128, 128, "
    "128, 128, 128, 256, 256), strides=(1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1), "
    "round_pool=True, image=96, classes=2)",
    # U-Nets: a skip read by the next level and by a Concat, at other depths and widths
    "unet_d3_w3a5": "unet(channels=(6, 10, 12), bottom=16, weight_bits=3, act_bits=5, image=16)",
    "unet_d1_w5a2": "unet(channels=(12,), bottom=8, weight_bits=5, act_bits=2, image=12, "
    "classes=3)",
    # Brevitas's default attention: q, k and v from one projection, then three Slices
    "encoder_packed_h5_w5a7": "encoder(dim=40, heads=5, hidden=56, sequence=7, weight_bits=5, "
    "act_bits=7, packed_in_proj=True)",
}
PACKED = "encoder_packed_h5_w5a7"
# Other sizes and widths of a kind make test builds fresh already: make test-wide.
WIDE_VARIANTS = {"tfc_w2a2", "tfc_w8a8", "lfc_w1a1_narrow", "tfc_w2a1", "mobilenet_w5a3_stride2",
                 "kws_w1a1", "resnet_w3a6", "residual_w6a2", "encoder_w6a5", "two_heads_w3a2",
                 "concat_w5_a3a6", "upsample_x3_w6a3", "espcn_x3_w3a5", "mobilenet_round_w3a5",
                 "resnet_round_w4a3", "tcn_d3_w3a5", "unet_d1_w5a2", "resnet8_mlperf_tiny",
                 "ds_cnn_mlperf_tiny", "mobilenet_v1_025_vww", "unet_d3_w3a5",
                 "ds_cnn_floor_w3a3", "pooled_signed_1d_w4a2", "tcn_pool_signed_w3a4"}  # fmt: skip
BIPOLAR_BEFORE_WEIGHTS = ("tfc_w2a1", "tfc_w3a2_bipolar_input", "cnv_w3a1_pooled")


def export(folder: Path, networks: dict[str, str], raw: Collection[str] = ()) -> None:
    """Export zoo networks (name -> call of an examples.zoo function) in one subprocess, the
    accumulator-aware weights of those named in ``raw`` not baked."""
    lines = "\n".join(
        f"export_network({name!r}, folder, seed=7, make=lambda: zoo.{call}, bake={name not in raw})"
        for name, call in networks.items()
    )
    result = run_python(
        "from pathlib import Path\n"
        "import examples.zoo as zoo\n"
        "from examples.zoo import export_network\n"
        f"folder = Path({str(folder)!r})\n{lines}\n",
        cwd=REPO,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def build(model: Path, out: Path, **options):
    """Build ``model`` with no blueprint, verified after each step against its torch vectors."""
    return brainsmith.build(
        str(model),
        None,
        str(out),
        verify="each",
        input_npy=str(model.with_name(model.stem + "_input.npy")),
        expected_npy=str(expected_file(model)),
        **options,
    )


def expected_file(model: Path) -> Path:
    """The torch outputs beside ``model``: one array, or an archive of one per output."""
    archive = model.with_name(model.stem + "_expected.npz")
    return archive if archive.exists() else model.with_name(model.stem + "_expected.npy")


def assert_built_and_matches_torch(result) -> None:
    report = json.loads(Path(result.report_path).read_text())
    assert report["status"] == "ok"
    run = [s for s in report["steps"] if s["status"] == "ok"]
    verified = [s for s in run if "verification" in s]  # (code generation is not a model step)
    assert len(verified) == len(DEFAULT_STEPS) and all(s["verification"]["ok"] for s in verified)
    assert report["verify_tolerance"]["atol"] is None  # none chosen for any model
    for check in [s["verification"] for s in verified]:  # in quantizer steps: ties counted
        assert check["errors"] == 0 and check["user"]["errors"] == 0
        # torch's vectors matched, unless a rounding tie explains the difference
        assert check["user"]["max_error"] <= 1e-4 or check["user"]["ties"] > 0
    final = onnx.load(os.path.join(result.output_dir, "final.onnx"))
    assert [n.name for n in final.graph.node if n.domain not in BACKEND_DOMAINS] == []
    assert report["layers"] and all(layer["backend"] for layer in report["layers"])


class ZooBuilds:
    """The small zoo networks built with no blueprint, verified after each step against
    their torch vectors: each built on first use, once per test run (``tests.support.farm``)."""

    def __init__(self, farm) -> None:
        self.farm, self.made = farm, {}

    def __getitem__(self, name: str):
        if name not in self.made:
            model = ZOO_DIR / f"{name}.onnx"
            self.made[name] = self.farm.build(
                model, None, verify="each", input_npy=model.with_name(f"{name}_input.npy"),
                expected_npy=expected_file(model),
            )  # fmt: skip
        return self.made[name]


@pytest.fixture(scope="module")
def zoo(hub, farm) -> ZooBuilds:
    return ZooBuilds(farm)


@pytest.mark.xdist_group("zoo")
@pytest.mark.parametrize("name", wide(SMALL, [LARGEST, "tfc_w2a2"]))  # tfc_w1a1's class
def test_zoo_network_builds_with_no_blueprint_and_matches_torch(zoo, name):
    assert_built_and_matches_torch(zoo[name])


@pytest.mark.xdist_group("zoo")
def test_zoo_build_is_named_after_its_model(zoo):
    assert zoo["resnet8"].report["name"] == "resnet8"


def layers(result, op_type: str) -> list[str]:
    final = onnx.load(os.path.join(result.output_dir, "final.onnx"))
    return [n.name for n in final.graph.node if n.op_type == op_type]


@pytest.mark.xdist_group("zoo")
def test_topologies_become_their_own_layers(zoo):
    assert layers(zoo["tfc_w1a1"], "MVAU_hls")  # XNOR/popcount layers
    assert layers(zoo["mobilenet_block"], "VVAU_hls") or layers(zoo["mobilenet_block"], "VVAU_rtl")
    assert layers(zoo["resnet8"], "DuplicateStreams_hls") and layers(zoo["resnet8"], "Pool_hls")
    assert layers(zoo["residual_identity"], "ElementwiseAdd_hls")
    assert layers(zoo["encoder_mlp"], "LayerNorm_hls") or layers(
        zoo["encoder_mlp"], "LayerNorm_rtl"
    )
    assert layers(zoo["kws_conv1d"], "ConvolutionInputGenerator_rtl")


# Joins, resizes and depth-to-space streamlining used to leave on floats (with everything
# after them on the host), and the layer each becomes.
JOIN_LAYERS = {
    "concat_branches": "StreamingConcat_hls",
    "upsample": "UpsampleNearestNeighbour_hls",
    "concat_w5_a3a6": "StreamingConcat_hls",
    "concat_shared_w3a2": "StreamingConcat_hls",
    "upsample_x3_w6a3": "UpsampleNearestNeighbour_hls",
    "espcn": "StreamingDepthToSpace_rtl",
    "espcn_x3_w3a5": "StreamingDepthToSpace_rtl",
}


def assert_joined_in_hardware(result, name: str) -> None:
    """The join, resize or depth-to-space is its layer; the host keeps only the input's
    layout change, an image output's (not two frame buffers in hardware), and the output's
    scale."""
    assert len(layers(result, JOIN_LAYERS[name])) == 1
    host = [(n["op_type"], n["side"]) for n in result.report["cpu_nodes"]["nodes"]]
    image_out = [("Transpose", "after")] if name.startswith("espcn") else []
    assert host == [("Transpose", "before"), *image_out, ("Mul", "after")]
    assert not layers(result, "InnerShuffle_rtl") + layers(result, "OuterShuffle_hls")


@pytest.mark.xdist_group("zoo")
@pytest.mark.parametrize("name", ["concat_branches", "upsample", "espcn"])
def test_a_concat_of_branches_and_an_upsampling_are_hardware_layers(zoo, name):
    """``torch.cat`` of two branches with their own scales and ``nn.Upsample`` become FINN's
    StreamingConcat and UpsampleNearestNeighbour, ESPCN's ``nn.PixelShuffle`` brainsmith's
    StreamingDepthToSpace. Before, streamlining left the branch scales and NCHW transposes
    in front of them, so they and everything after them ran on the host."""
    assert_joined_in_hardware(zoo[name], name)


UNET_LEVELS = {"unet": 2, "unet_d3_w3a5": 3, "unet_d1_w5a2": 1}


def assert_skips_joined_in_hardware(result, levels: int) -> None:
    """Each level's skip feeds its pool and its Concat in hardware (the stream duplicated),
    each up path is an upsampling layer; the host keeps the layout changes of the input and
    of the image output, and the output's scale."""
    for op_type in ("StreamingConcat_hls", "UpsampleNearestNeighbour_hls", "Pool_hls"):
        assert len(layers(result, op_type)) == levels, op_type
    assert len(layers(result, "DuplicateStreams_hls")) == levels
    host = [(n["op_type"], n["side"]) for n in result.report["cpu_nodes"]["nodes"]]
    assert sorted(host) == [("Mul", "after"), ("Transpose", "after"), ("Transpose", "before")]


@pytest.mark.xdist_group("zoo")
def test_a_unet_s_skips_keep_their_producers_and_are_joined_in_hardware(zoo):
    """A skip's quantizer is read by the next level and by the Concat of the up path. Before,
    its scale, moved past the fork, stayed in front of the channels-last max pool:
    everything after ran on the host and ``hardware_inference`` removed the Concat's
    producer ("left tensors that no node produces")."""
    assert_skips_joined_in_hardware(zoo["unet"], UNET_LEVELS["unet"])


@pytest.mark.xdist_group("zoo")
def test_encoder_attention_softmax_and_norms_are_hardware_layers(zoo):
    """Multi-head attention: the q/k/v and output projections, scores and weighted values
    as matrix layers, the softmax and both LayerNorms as their own layers, nothing on the
    host."""
    result = zoo["encoder_layer"]
    assert len(layers(result, "HWSoftmax_rtl")) == 1
    assert len(layers(result, "LayerNorm_rtl")) == 2
    assert len(layers(result, "MVAU_rtl") + layers(result, "MVAU_hls")) == 8
    assert result.report["cpu_nodes"]["count"] == 0


@pytest.mark.wide  # the zoo's largest network (test_encoder_attention_... builds one layer)
@pytest.mark.xdist_group("zoo")
def test_bert_tiny_has_every_part_in_hardware_and_is_verified_in_quantizer_steps(zoo):
    """Two encoder layers, hidden 128: attention, softmax, norms and the MLP in hardware.
    Hundreds of quantizer inputs per sample lie within float noise of a rounding boundary
    after the float LayerNorm/Softmax; the few a step rounds the other way are found and
    counted as ties, with no tolerance chosen for the model, and the final design matches
    torch's vectors but for such ties."""
    report = zoo["bert_tiny"].report
    kinds = {layer["op_type"] for layer in report["layers"]}
    assert {"MVAU", "LayerNorm", "HWSoftmax", "ElementwiseAdd"} <= kinds
    assert report["cpu_nodes"]["count"] == 0
    assert report["verify_tolerance"]["atol"] is None
    checks = {s["name"]: s["verification"] for s in report["steps"] if "verification" in s}
    assert all(c["errors"] == 0 for c in checks.values())
    assert checks["qonnx_to_finn"]["ties"] > 0 and checks["qonnx_to_finn"]["max_error"] > 0.01
    assert not any("tolerance" in note for note in report["notes"])
    final = list(checks.values())[-1]["user"]  # torch's vectors: equal but for ties
    assert final["errors"] == 0 and (final["max_error"] < 1e-4 or final["ties"] > 0)


@pytest.mark.xdist_group("zoo")
def test_backend_rule_puts_narrow_or_fused_matrix_layers_in_luts(zoo):
    """1-bit layers and layers with fused thresholds are HLS (LUTs); resnet8's 4-bit
    classifier, which has no thresholds, is RTL (DSP packing)."""
    assert zoo["tfc_w1a1"].totals["DSP"] == 0
    assert {
        layer["backend"] for layer in zoo["tfc_w1a1"].report["layers"] if layer["op_type"] == "MVAU"
    } == {"hls"}
    backends = [
        layer["backend"] for layer in zoo["resnet8"].report["layers"] if layer["op_type"] == "MVAU"
    ]
    assert backends[-1] == "rtl" and set(backends[:-1]) == {"hls"}


def exported(tmp_path_factory, wide: bool) -> Path:
    """The fresh exports of one tier (``WIDE_VARIANTS`` or the others), once per process;
    make test's tier with the networks of the A2Q and refusal tests below (``EXPORTED_TOO``)."""

    def make() -> Path:
        folder = tmp_path_factory.mktemp("variants")
        chosen = {k: v for k, v in VARIANTS.items() if (k in WIDE_VARIANTS) == wide}
        export(folder, chosen if wide else {**chosen, **EXPORTED_TOO}, raw=["a2q_raw"])
        return folder

    return once(f"variants wide={wide}", make)


@pytest.fixture(scope="module")
def variants(hub, tmp_path_factory):
    return exported(tmp_path_factory, wide=False)


@pytest.fixture(scope="module")
def wide_variants(hub, tmp_path_factory):
    return exported(tmp_path_factory, wide=True)


def variant(request, name: str) -> Path:
    """The folder holding fresh export ``name``."""
    return request.getfixturevalue("wide_variants" if name in WIDE_VARIANTS else "variants")


@pytest.mark.xdist_group("zoo-fresh")
@pytest.mark.parametrize("name", wide([name for name in VARIANTS if name != PACKED], WIDE_VARIANTS))
def test_fresh_export_nobody_tuned_for_builds_and_matches_torch(request, tmp_path, name):
    result = build(variant(request, name) / f"{name}.onnx", tmp_path / "out")
    assert_built_and_matches_torch(result)
    if name in JOIN_LAYERS:
        assert_joined_in_hardware(result, name)
    if name in UNET_LEVELS:
        assert_skips_joined_in_hardware(result, UNET_LEVELS[name])
    if name in BIPOLAR_BEFORE_WEIGHTS:  # 2x - 1 moved into the next layer, past its pools
        after = {n["op_type"] for n in result.report["cpu_nodes"]["nodes"] if n["side"] == "after"}
        assert after <= {"Mul", "Add"}, after  # only the output's scale and bias on the host


@pytest.mark.xdist_group("zoo-fresh")
def test_a_packed_q_k_v_projection_becomes_three_matrix_layers(variants, tmp_path):
    """Brevitas's QuantMultiheadAttention packs q, k and v into one projection by default
    and slices it; no kernel takes a Slice, so the slices and the 34 nodes after them ran on
    the host. The product is split by its weight's columns, and the whole encoder is
    hardware, verified against torch after each step."""
    result = build(variants / f"{PACKED}.onnx", tmp_path / "out")
    assert_built_and_matches_torch(result)
    assert result.report["cpu_nodes"]["count"] == 0  # before: 35
    from qonnx.core.modelwrapper import ModelWrapper

    final = ModelWrapper(str(tmp_path / "out" / "final.onnx"))
    matrices = [n for n in final.graph.node if n.op_type.startswith("MVAU")]
    assert len(matrices) == 4 + 2 + 2  # q, k, v, output; two attention products; the MLP


@pytest.mark.xdist_group("zoo-fresh")
def test_encoder_folded_for_a_target_keeps_its_attention_products_streamed(hub, tmp_path):
    """Folding for 100,000 fps: the products of two computed operands (scores, weighted
    values) get wider PE/SIMD but keep their streamed operand (``mem_mode: dynamic``); folding
    once gave them on-chip weight memory, and code generation failed."""
    result = build(
        ZOO_DIR / "encoder_layer.onnx", tmp_path / "out", options={"target_fps": 100_000}
    )
    assert_built_and_matches_torch(result)
    final = onnx.load(os.path.join(result.output_dir, "final.onnx"))
    modes = {}
    for node in final.graph.node:
        if node.op_type.startswith("MVAU"):
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            modes[node.name] = (attrs["mem_mode"], attrs["PE"] * attrs["SIMD"])
    streamed = [folding for mode, folding in modes.values() if mode == b"dynamic"]
    assert len(streamed) == 2 and max(streamed) > 1, modes


A2Q = "espcn(channels=(10, 6), weight_bits=6, act_bits=6, image=6, accumulator_bits=14)"
BNN_PAD = "cnv(1, 1, channels=(8, 8), pool_after=(0,), fc=(16,), padding=1, image=8)"
# exported with make test's variants (one subprocess): the A2Q network raw and baked, and a
# padded binarized convolution
EXPORTED_TOO = {"a2q_raw": A2Q, "a2q_baked": A2Q, "bnn_pad": BNN_PAD}


@pytest.mark.xdist_group("zoo-fresh")
def test_an_accumulator_aware_export_builds_with_its_accumulators_once_baked(variants, tmp_path):
    """Brevitas exports accumulator-aware (A2Q) weights raw, without their pre-clipping scale
    and rounding: such an export stops at its first step, the hint naming A2Q. With its
    weights baked before export it builds, matches torch after each step, and its matrix
    layers keep within the 14-bit accumulators A2Q trained for."""
    with pytest.raises(BuildError) as caught:
        build(variants / "a2q_raw.onnx", tmp_path / "raw-out")
    assert caught.value.step == "cleanup"
    assert "the exported model itself does not match" in caught.value.reason
    assert "accumulator-aware (A2Q)" in caught.value.hint
    baked = build(variants / "a2q_baked.onnx", tmp_path / "out")
    assert_built_and_matches_torch(baked)
    final = onnx.load(os.path.join(baked.output_dir, "final.onnx"))
    widths = [
        DataType[onnx.helper.get_attribute_value(a).decode()].bitwidth()
        for node in final.graph.node
        if node.op_type.startswith("MVAU")
        for a in node.attribute
        if a.name == "accDataType"
    ]
    assert len(widths) == 3 and max(widths) <= 14, widths


@pytest.mark.xdist_group("zoo-fresh")
def test_padded_binarized_convolution_is_refused_by_name(variants, tmp_path):
    with pytest.raises(BuildError) as caught:
        build(variants / "bnn_pad.onnx", tmp_path / "out")
    assert caught.value.step == "streamline"
    assert "pads 1-bit (bipolar) activations" in caught.value.reason
    assert "without padding" in caught.value.hint


@pytest.mark.big
@pytest.mark.xdist_group("zoo-cnv")
@pytest.mark.parametrize("bits", [1, 2])
def test_full_size_cnv_builds_with_no_blueprint(hub, tmp_path, bits):
    """FINN's CNV at full CIFAR-10 size (exported here: 6 MB each), once end to end, folded
    for 100,000 fps (FINN's SetFolding stops at 7,972 and 15,944 fps on this part); in
    ``make test-big`` with the other full-size networks (``make test`` builds CNV-like
    networks at small size)."""
    name = f"cnv_w{bits}a{bits}"
    export(tmp_path, {name: f"cnv({bits}, {bits})"})
    result = build(tmp_path / f"{name}.onnx", tmp_path / "out", options={"target_fps": 100_000})
    assert_built_and_matches_torch(result)
    assert result.report["target"]["met"], result.report["target"]
    assert result.totals["DSP"] == 0  # 1- and 2-bit layers are LUT-based (HLS)
    assert layers(result, "MVAU_hls") and not layers(result, "MVAU_rtl")


@pytest.mark.big
@pytest.mark.timeout(3600)  # one compile for the sizing and the check: about 8 minutes
def test_full_size_cnv_in_rtl_sizes_its_fifos_and_runs_at_finn_s_estimate(hub, tmp_path):
    """FINN's CNV w2a2 at full size with every layer RTL: FIFOs sized by simulation, the
    stitched accelerator bit-exact in Verilator at FINN's estimated pace (within the report's
    stated tolerance). About 8 minutes on 2 cores (``python -m benchmarks.rtlsim``: 456 s):
    ``make test-big``, not ``make test``."""
    export(tmp_path, {"cnv_w2a2": "cnv(2, 2)"})
    blueprint = tmp_path / "cnv_rtl.yaml"
    blueprint.write_text(f"name: cnv_w2a2_rtl\nextends: {REPO / 'blueprints/residual_rtl.yaml'}\n")
    model = tmp_path / "cnv_w2a2.onnx"
    result = brainsmith.build(
        str(model), str(blueprint), str(tmp_path / "out"), verify="rtlsim",
        input_npy=str(tmp_path / "cnv_w2a2_input.npy"),
        expected_npy=str(tmp_path / "cnv_w2a2_expected.npy"),
    )  # fmt: skip
    report = result.report
    assert report["status"] == "ok" and {x["backend"] for x in report["layers"]} == {"rtl"}
    sizing = json.loads((Path(result.output_dir) / "finn/report/fifo_sizing.json").read_text())
    estimated = report["performance"]["max_cycles"]
    assert sizing["sized"] and abs(sizing["cycles_per_frame"] / estimated - 1) <= 0.1
    stitched = report["rtlsim"]["stitched"]
    assert stitched["status"] == "match" and stitched["within_tolerance"], stitched
    assert all(layer["status"] == "match" for layer in report["rtlsim"]["layers"])


@pytest.mark.big
@pytest.mark.timeout(1800)
def test_an_encoder_at_microsoft_brainsmith_s_demo_size_meets_its_v80_target_verified(
    hub, tmp_path
):
    """microsoft/Brainsmith's BERT demo layer (hidden 384, 12 heads, FFN 1536, sequence 128,
    8-bit) for its V80 at its 3,000 fps target within the part's resources (estimates), with
    no blueprint, verified after each step
    against torch (``python -m benchmarks.big_networks bert_demo``: about 4 minutes on 2
    cores): ``make test-big``, not ``make test``."""
    export(tmp_path, {"bert_demo": "bert_demo()"})
    options = {"target_fps": 3000, "fpga_part": "xcv80-lsva4737-2MHP-e-S"}
    result = build(tmp_path / "bert_demo.onnx", tmp_path / "out", options=options)
    assert_built_and_matches_torch(result)
    assert result.report["target"]["met"], result.report["target"]
    used = result.report["utilisation"]  # the XCV80's resource table: within the part
    assert used["source"] and max(p for p in used["percent"].values() if p) < 100, used


def test_expected_outputs_in_any_shape_of_the_right_size(hub, tmp_path):
    """FINN's own test data: one label per sample, (N,), for an output of shape (1, 1)."""
    model = ZOO_DIR / "tfc_w1a1.onnx"
    expected = np.load(ZOO_DIR / "tfc_w1a1_expected.npy")
    flat = tmp_path / "flat.npy"
    np.save(flat, expected.reshape(-1))
    result = brainsmith.build(
        str(model),
        None,
        str(tmp_path / "out"),
        verify="final",
        input_npy=str(ZOO_DIR / "tfc_w1a1_input.npy"),
        expected_npy=str(flat),
    )
    assert result.status == "ok"
    last = [s for s in result.report["steps"] if s.get("verification")][-1]
    assert last["verification"]["user"]["max_error"] < 1e-4


def test_model_made_2d_beforehand_is_accepted_and_builds(hub, tmp_path):
    """A 1D network converted with QONNX's Change3DTo4DTensors has 1-entry dilations, which
    onnxruntime refuses; FINN reads it, and so does the build (completing them)."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.change_3d_tensors_to_4d import Change3DTo4DTensors
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    from finn.transformation.qonnx.convert_qonnx_to_finn import ConvertQONNXtoFINN

    model = cleanup_model(ModelWrapper(str(ZOO_DIR / "kws_conv1d.onnx")))
    model = model.transform(ConvertQONNXtoFINN()).transform(Change3DTo4DTensors())
    model.save(str(tmp_path / "kws_4d.onnx"))
    inputs = np.load(ZOO_DIR / "kws_conv1d_input.npy")
    np.save(tmp_path / "kws_4d_input.npy", inputs[..., None])
    np.save(tmp_path / "kws_4d_expected.npy", np.load(ZOO_DIR / "kws_conv1d_expected.npy"))
    built = build(tmp_path / "kws_4d.onnx", tmp_path / "out")
    assert_built_and_matches_torch(built)
    assert any("dilations/strides/pads" in note for note in built.report.get("notes", []))


CONV_NETWORKS = [
    "kws_conv1d",
    "residual_identity",
    "mobilenet_block",
    "resnet8",
    "tcn",
    "jet_tagger",
]
BIASED_CLASSIFIERS = ("mobilenet_block", "resnet8", "jet_tagger")  # a classifier with a bias
FRESH_CONV_NETWORKS = ["residual_w6a2", "cnv_w3a5_pool", "kws_w2a3_padded"]


@pytest.mark.xdist_group("zoo-fresh")
@pytest.mark.parametrize(
    "name",
    wide(
        CONV_NETWORKS + FRESH_CONV_NETWORKS,
        ["resnet8", "residual_w6a2", "kws_w2a3_padded", "cnv_w3a5_pool", "tcn"],
    ),
)  # (ResNet-8 and a pooled CNV all RTL are built by test_fifo_sizing too)
def test_prefer_rtl_makes_every_layer_rtl(request, tmp_path, name):
    """--prefer rtl: thresholds become their own layers so 4-bit matrix layers can be RTL;
    pooling, which FINN has only in HLS, is brainsmith's RTL; the layout changes of a
    residual's fork and join happen on the host or not at all (no shuffle layer, which FINN
    has only in HLS); the design still matches torch."""
    model = (ZOO_DIR if name in CONV_NETWORKS else variant(request, name)) / f"{name}.onnx"
    result = build(model, tmp_path / "out", prefer="rtl")
    assert_built_and_matches_torch(result)
    backends = {(layer["op_type"], layer["backend"]) for layer in result.report["layers"]}
    assert {backend for _, backend in backends} == {"rtl"}, sorted(backends)
    assert ("MVAU", "rtl") in backends and ("Thresholding", "rtl") in backends
    if name in BIASED_CLASSIFIERS:  # the output's scale and bias stay on the host, as in FINN
        assert not {op for op, _ in backends if op.startswith("Elementwise")}, backends
        after = [n["op_type"] for n in result.report["cpu_nodes"]["nodes"] if n["side"] == "after"]
        assert after == ["Mul", "Add"], after
    # all RTL, so the default flow sizes the FIFOs by simulation: float layers (a residual's
    # scale, ElementwiseMul) are simulated in exact single precision, and the sized design
    # keeps pace and matches Python bit for bit
    sizing = json.loads((tmp_path / "out" / "finn" / "report" / "fifo_sizing.json").read_text())
    assert sizing["sized"] is True, sizing.get("reason")
    assert sizing["cycles_per_frame"] <= sizing["interval"] + 1
    assert sizing["matches_python"] is True, sizing


@pytest.mark.xdist_group("zoo-fresh")
def test_the_transformer_blueprint_builds_a_fresh_encoder_from_the_command_line(variants, tmp_path):
    """`brainsmith build MODEL blueprints/transformer.yaml` on an encoder nobody tuned for
    (4 heads, dimension 48, 6 bits): every node in hardware, verified after each step. (The
    command runs in this process: its subject is the blueprint, not the process.)"""
    from tests.support.processes import invoke

    model = variants / "encoder_h4_w6a6.onnx"
    done = invoke("build", model, REPO / "blueprints" / "transformer.yaml",
                  "-o", tmp_path / "out", "--input", variants / "encoder_h4_w6a6_input.npy",
                  "--expected", variants / "encoder_h4_w6a6_expected.npy")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cpu_nodes"]["count"] == 0
    assert {"MVAU", "LayerNorm", "HWSoftmax"} <= {x["op_type"] for x in report["layers"]}
    verified = [s for s in report["steps"] if "verification" in s]
    assert len(verified) == len(DEFAULT_STEPS) and all(s["verification"]["ok"] for s in verified)
    assert all(s["verification"]["errors"] == 0 for s in verified)
    assert "verification tolerance" not in done.stdout
