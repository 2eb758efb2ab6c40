"""Encoders in RTL: with brainsmith's OuterShuffle in SystemVerilog beside FINN's RTL
InnerShuffle, a Brevitas encoder built with ``--prefer rtl`` has no HLS layer (the head
split and merge were FINN's HLS-only OuterShuffle), every RTL layer matches Python in
Verilator, and the design says what still keeps it from being simulated whole."""

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


def test_every_rtl_layer_of_the_encoder_matches_python_in_verilator(encoder_rtl):
    """The head shuffles and the attention products (their second operand replayed for each
    input vector, as FINN's own simulation of the layer does) match Python at the estimated
    pace; float layers are named as not simulated. FINN's InnerShuffle at SIMD 1 does not
    compile in Verilator (a zero-width rotation index), so it is the one failure allowed."""
    result = verify_build_folder(encoder_rtl.output_dir)
    checked = [x for x in result.layers if x.op_type in ("OuterShuffle_rtl", "MVAU_rtl")]
    assert len(checked) > 8 and all(x.status == "match" for x in checked), [
        x.as_dict() for x in checked
    ]
    for layer in checked:
        assert layer.cycles_per_frame <= layer.estimated_cycles * 1.1, layer.as_dict()
    failed = [x for x in result.layers if x.failed]
    assert all(x.op_type == "InnerShuffle_rtl" and "compile" in x.reason for x in failed), [
        x.as_dict() for x in failed
    ]


def test_the_encoder_s_fifos_say_why_the_design_is_not_simulated_whole(encoder_rtl):
    """FINN's matrix layer of two streams takes its second operand (keys, values) whole for
    every query row; until a layer replays it, the stitched design would stall, and sizing
    says so instead of simulating."""
    path = Path(encoder_rtl.output_dir) / "finn" / "report" / "fifo_sizing.json"
    sizing = json.loads(path.read_text())
    assert sizing["sized"] is False
    assert "multiplies two streams" in sizing["reason"] and "replays" in sizing["reason"]
