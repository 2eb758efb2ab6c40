"""brainsmith's estimates of what FINN does not estimate in RTL layers (rtl_costs): the fitted
MVAU_rtl LUT model holds on a layer Yosys synthesises that the fit never saw; an all-RTL
build's report has a complete LUT total and names who estimated each number; the folding
search costs an RTL matrix layer's LUTs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import brainsmith
from brainsmith.frameworks.finn import rtl_costs

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
REPO = Path(__file__).resolve().parents[1]
PART = "xczu7ev-ffvc1156-2-e"


def mvau(**attributes):
    from benchmarks.synth_fit import mvau as single_mvau
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    return single_mvau(**attributes)


def test_the_shipped_models_are_the_fitted_kinds_with_their_errors():
    shipped = rtl_costs.coefficients()
    assert set(shipped) == set(rtl_costs.TERMS)
    for kind, resources in shipped.items():
        assert set(resources) == set(rtl_costs.TERMS[kind])
        for resource, model in resources.items():
            assert tuple(model["terms"]) == rtl_costs.TERMS[kind][resource]
            assert len(model["coefficients"]) == len(model["terms"])
            assert model["max_error"] is not None


def test_a_held_out_mvau_is_within_the_error_the_fit_reports(hub, tmp_path):
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys

    model = mvau(mw=40, mh=12, simd=10, pe=6, wbits=6, abits=4)  # no point of the sweep
    model = model.transform(PrepareIP(PART, 5.0))
    node = model.graph.node[0]
    result = synthesise_layer(
        synthesis_design(model, node), "xcup", find_yosys(), cache_root(), str(tmp_path / "y")
    )
    assert result.counts is not None, result.reason
    estimated = rtl_costs.estimate(getCustomOp(node))["LUT"]
    reported = rtl_costs.coefficients()["MVAU_rtl"]["LUT"]
    allowed = max(reported["max_error"], reported["held_out_max_error"])
    measured = result.counts["LUT"]
    assert abs(estimated - measured) / measured <= allowed, (estimated, measured, allowed)


@pytest.fixture(scope="module")
def mlp_report(hub, tmp_path_factory) -> dict:
    """report.json of the shipped 4-bit MLP, every layer RTL, for an UltraScale+ part."""
    out = tmp_path_factory.mktemp("mlp") / "out"
    brainsmith.build(
        str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
        str(REPO / "blueprints" / "mlp.yaml"),
        str(out),
        options={"fpga_part": PART},
        prefer="rtl",
        verify="none",
    )
    report: dict = json.loads((out / "report.json").read_text())
    return report


def test_an_all_rtl_mlp_has_a_complete_lut_total_with_its_sources(mlp_report):
    layers = mlp_report["layers"]
    assert {layer["backend"] for layer in layers} == {"rtl"}
    assert "LUT" not in mlp_report["incomplete"]
    matrix = [layer for layer in layers if layer["op_type"] == "MVAU"]
    assert matrix
    for layer in matrix:
        assert layer["estimated_by"]["LUT"] == "brainsmith"
        assert layer["estimated_by"]["DSP"] == "brainsmith"  # counted as the RTL packs them
        assert layer["LUT"] > 0 and "LUT" not in layer["not_estimated"]
    for layer in layers:
        assert set(layer["estimated_by"]) | set(layer["not_estimated"]) == {
            "LUT", "BRAM_18K", "URAM", "DSP",
        }  # fmt: skip
    for key in ("LUT", "DSP"):  # brainsmith's numbers in place of FINN's, not beside them
        assert mlp_report["totals"][key] == pytest.approx(sum(x[key] for x in layers), abs=1)


def test_the_folding_search_costs_an_rtl_matrix_layer_s_luts(hub):
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.folding.search import estimate, fold
    from brainsmith.frameworks.finn.parts import part_resources

    model = mvau(mw=64, mh=32, simd=1, pe=1, wbits=4, abits=4)
    layer = getCustomOp(model.graph.node[0])
    assert layer.lut_estimation(PART) == 0  # FINN's
    assert estimate(layer, PART)["LUT"] > 0
    found = part_resources(PART)
    assert found is not None
    result = fold(model, 64, PART, found[0])
    assert result.totals["LUT"] > 0
    slow = estimate(layer, PART)["LUT"]
    layer.set_nodeattr("SIMD", 64)
    layer.set_nodeattr("PE", 32)
    assert estimate(layer, PART)["LUT"] > slow  # more parallel costs more


def test_an_rtl_matrix_layer_s_dsps_are_counted_as_its_rtl_packs_them(hub):
    """On a DSP48 part FINN estimates ceil(PE / 4) * SIMD DSPs whatever the bit widths; its
    RTL packs as many PEs into one DSP as the datapath holds products of that width. The
    count equals Yosys' on every MVAU_rtl point of the sweep, where FINN's is off on 7 of 17
    (2x on every 8-bit layer), and the folding search and the report use it."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.folding.search import estimate

    sweep = json.loads((REPO / "benchmarks" / "results" / "synth_fit.json").read_text())
    points = [p for p in sweep["points"] if p["kind"] == "MVAU_rtl"]
    assert len(points) == 17
    finn_off = 0
    for point in points:
        a = point["attributes"]
        layer = getCustomOp(
            mvau(mw=a["mw"], mh=a["mh"], simd=a["simd"], pe=a["pe"], wbits=a["wbits"],
                 abits=a["abits"]).graph.node[0]
        )  # fmt: skip
        assert rtl_costs.mvau_dsps(layer, sweep["part"]) == point["counts"]["DSP"], a
        assert estimate(layer, sweep["part"])["DSP"] == point["counts"]["DSP"], a
        finn_off += layer.dsp_estimation(sweep["part"]) != point["counts"]["DSP"]
    assert finn_off == 7
    assert rtl_costs.mvau_dsps(layer, "xcvc1902-vsva2197-2MP-e-S") is None  # DSP58: FINN's


@pytest.mark.parametrize("kind", ["StreamingFIFO_rtl", "StreamingDataWidthConverter_rtl"])
def test_every_fifo_and_converter_of_the_sweep_is_within_25_percent_of_yosys(hub, kind):
    """The report's LUTs of each FIFO (shift register, LUT-RAM and block RAM storage) and
    RTL width converter of the sweep, against Yosys' counts on UltraScale+ and 7-series
    (synth_fit.json). FINN's FIFO estimate is up to 89 % off on the same points."""
    import numpy as np
    from qonnx.custom_op.registry import getCustomOp

    from benchmarks.synth_fit import BUILDERS
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    sweep = json.loads((REPO / "benchmarks" / "results" / "synth_fit.json").read_text())
    points = [p for p in sweep["points"] if p["kind"] == kind]
    assert len(points) >= 14
    for index, point in enumerate(points):
        np.random.seed(index)
        model = BUILDERS[kind](**point["attributes"])
        layer = getCustomOp(model.graph.node[0])
        for part, counts in ((PART, point["counts"]), ("xc7z020clg400-1", point["counts_xc7"])):
            estimated = rtl_costs.estimate(layer, part, model, report=True)["LUT"]
            measured = counts["LUT"]
            assert abs(estimated - measured) <= 0.25 * measured, (part, point["attributes"])
