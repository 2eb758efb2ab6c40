"""Encoders in RTL: with brainsmith's OuterShuffle in SystemVerilog beside FINN's RTL
InnerShuffle, a Brevitas encoder built with ``--prefer rtl`` has no HLS layer (the head
split and merge were FINN's HLS-only OuterShuffle), every RTL layer matches Python in
Verilator, and the whole encoder is simulated and FIFO-sized at FINN's estimated pace, bit
for bit against Python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brainsmith.commands.rtl_verification import verify_build_folder
from tests.test_zoo import assert_built_and_matches_torch, build, export

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("zoo-fresh")]


@pytest.fixture(scope="module")
def encoder_rtl(hub, tmp_path_factory):
    """A fresh Brevitas encoder nobody tuned for (3 heads, dimension 48, sequence 10, 6-bit
    weights and activations) built with --prefer rtl for 50,000 fps, verified after each
    step against torch."""
    folder = tmp_path_factory.mktemp("encoder_rtl")
    export(folder, {"encoder": "encoder(dim=48, heads=3, hidden=72, sequence=10, "
                               "weight_bits=6, act_bits=6)"})  # fmt: skip
    return build(
        folder / "encoder.onnx", folder / "out", prefer="rtl", options={"target_fps": 50_000}
    )


def test_an_encoder_with_prefer_rtl_has_no_hls_layer_and_matches_torch(encoder_rtl):
    assert_built_and_matches_torch(encoder_rtl)
    kinds = {(layer["op_type"], layer["backend"]) for layer in encoder_rtl.report["layers"]}
    assert {backend for _, backend in kinds} == {"rtl"}, sorted(kinds)
    assert ("OuterShuffle", "rtl") in kinds and ("InnerShuffle", "rtl") in kinds
    assert encoder_rtl.report["performance"]["estimated_fps"] >= 50_000


def test_the_report_says_how_far_finn_s_rtl_float_arithmetic_takes_the_outputs(encoder_rtl):
    """Verification compares the exact softmax and LayerNorm, what the network is meant to
    compute; on the last verified step the outputs are computed once more as FINN's RTL
    computes them, and the report and a note say how far that takes them."""
    measured = [
        step["verification"]["rtl_arithmetic"]
        for step in encoder_rtl.report["steps"]
        if "rtl_arithmetic" in step.get("verification", {})
    ]
    assert len(measured) == 1, measured
    assert 0 < measured[0]["max_error"] < 1.0 and measured[0]["samples"] > 0, measured
    notes = [n for n in encoder_rtl.report["notes"] if "FINN's RTL softmax and LayerNorm" in n]
    assert len(notes) == 1 and f"{measured[0]['max_error']:.3g}" in notes[0], notes


@pytest.mark.big  # about 11 minutes of Verilator: make test-big
def test_every_rtl_layer_of_the_encoder_and_the_whole_simulate_in_verilator(encoder_rtl):
    """Every layer alone: the head shuffles, FINN's InnerShuffle (at SIMD 1 too) and the
    attention products (their second operand loaded once per head and replayed for every
    query row by FINN's dynamic loader, as in the stitched design), the float elementwise
    layers and FINN's RTL softmax and LayerNorm match Python bit for bit. So does the whole
    encoder, at FINN's estimated pace within 10 %."""
    result = verify_build_folder(encoder_rtl.output_dir)
    assert not [x.as_dict() for x in result.layers if x.status != "match"]
    paced = [x for x in result.layers if x.op_type.endswith(("Shuffle_rtl", "MVAU_rtl"))]
    assert len(paced) > 10 and {"InnerShuffle_rtl", "OuterShuffle_rtl"} <= {
        x.op_type for x in paced
    }
    for layer in paced:
        assert layer.cycles_per_frame <= layer.estimated_cycles * 1.1, layer.as_dict()
    assert {"HWSoftmax_rtl", "LayerNorm_rtl"} <= {x.op_type for x in result.layers}
    whole = result.stitched
    assert whole["status"] == "match", whole
    assert whole["within_tolerance"] is True, whole


def test_the_encoder_s_fifos_are_sized_by_simulating_it_whole(encoder_rtl):
    """The all-RTL encoder is FIFO-sized in Verilator: the sized design keeps FINN's
    estimated pace and gives Python's outputs bit for bit."""
    path = Path(encoder_rtl.output_dir) / "finn" / "report" / "fifo_sizing.json"
    sizing = json.loads(path.read_text())
    assert sizing["sized"] is True, sizing.get("reason")
    assert sizing["cycles_per_frame"] <= sizing["estimated_cycles_per_frame"] * 1.1
    assert sizing["frames"] > sizing["latency_cycles"] / sizing["interval"]  # steady fills
