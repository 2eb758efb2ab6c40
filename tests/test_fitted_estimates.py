"""The fitted cost models (rtl_costs.json) where no Yosys runs: brainsmith's RTL layers take
their LUTs from the fitted model, not their former hand-written formulas; FINN's RTL sliding
window gets a fitted DSP count of 0; report.json says who estimated each number and counts
each once."""

from __future__ import annotations

import json

import pytest

from brainsmith.frameworks.finn import rtl_costs

PART = "xczu7ev-ffvc1156-2-e"
OWN = (
    "DuplicateStreams_rtl", "Pool_rtl", "IntAdd_rtl", "GlobalAccPool_rtl", "LabelSelect_rtl",
    "WidthConverter_rtl",
)  # fmt: skip


@pytest.fixture(scope="module")
def layers(hub):
    """One layer of each fitted kind but the matrix and threshold layers (built as the sweep
    builds them), by kind."""
    from qonnx.custom_op.registry import getCustomOp

    from benchmarks import synth_fit
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.plugin import get_registry

    prepare_finn()
    for name in ("DuplicateStreamsRTL", "PoolRTL", "IntAddRTL", "GlobalAccPoolRTL",
                 "LabelSelectRTL"):  # fmt: skip
        get_registry().get("backend", name)
    models = {
        "ConvolutionInputGenerator_rtl": synth_fit.swg(8, 4, 3, 8, 4),
        "DuplicateStreams_rtl": synth_fit.duplicate(16, 4, 4, 3),
        "Pool_rtl": synth_fit.pool(16, 8, 4, 2, "AccPool"),
        "IntAdd_rtl": synth_fit.int_add(32, 8, 6),
        "GlobalAccPool_rtl": synth_fit.global_acc_pool(32, 4, 4, 4),
        "LabelSelect_rtl": synth_fit.label_select(32, 4, 3, 8),
        "WidthConverter_rtl": synth_fit.width_converter(24, 3, 4, 4),
    }
    return {kind: (model, getCustomOp(model.graph.node[0])) for kind, model in models.items()}


def by_hand(kind: str, layer) -> float:
    """The model's value computed here from rtl_costs.json's coefficients."""
    model = rtl_costs.coefficients()[kind]["LUT"]
    terms = rtl_costs.features(layer)
    value = sum(c * terms[t] for c, t in zip(model["coefficients"], model["terms"], strict=True))
    return float(round(max(0.0, value)))


def test_brainsmith_s_rtl_layers_have_fitted_lut_models_with_their_errors():
    for kind in OWN:
        model = rtl_costs.coefficients()[kind]["LUT"]
        assert tuple(model["terms"]) == rtl_costs.TERMS[kind]["LUT"]
        assert model["held_out_max_error"] is not None


@pytest.mark.parametrize("kind", OWN)
def test_a_brainsmith_rtl_layer_s_luts_are_its_fitted_model(layers, kind):
    from benchmarks.synth_fit import HANDWRITTEN

    _, layer = layers[kind]
    luts = layer.lut_estimation(PART)
    assert luts == by_hand(kind, layer) == rtl_costs.fitted(layer, "LUT") > 0
    assert luts != HANDWRITTEN[kind](layer)  # not the formula it had before the fit
    assert rtl_costs.estimate(layer) == {}  # its own method gives it: counted once


def test_the_rtl_sliding_window_s_dsps_are_fitted_and_the_report_takes_its_fitted_luts(layers):
    _, swg = layers["ConvolutionInputGenerator_rtl"]
    assert rtl_costs.estimate(swg) == {"DSP": 0.0}  # the folding search keeps FINN's LUTs
    found = rtl_costs.estimate(swg, report=True)  # FINN's buffer-as-LUTs is +93 % off
    assert found["LUT"] == rtl_costs.fitted(swg, "LUT") and found["LUT"] > 0
    assert "LUT" in rtl_costs.REPLACED["ConvolutionInputGenerator_rtl"]


def test_report_json_takes_the_fitted_estimates_and_says_who_made_them(layers, tmp_path):
    from finn.analysis.fpgadataflow.res_estimation import res_estimation

    from brainsmith.frameworks.finn.estimation.estimates import estimates

    found = {}
    for kind in ("ConvolutionInputGenerator_rtl", "IntAdd_rtl", "Pool_rtl"):
        model, layer = layers[kind]
        resources = model.analysis(lambda m: res_estimation(m, PART))  # FINN's estimate step
        resources["total"] = resources[layer.onnx_node.name]
        (tmp_path / "estimate_layer_resources.json").write_text(json.dumps(resources))
        found[kind] = estimates(str(tmp_path), model)
    swg = found["ConvolutionInputGenerator_rtl"]["layers"][0]
    assert swg["DSP"] == 0 and swg["not_estimated"] == []
    assert swg["estimated_by"] == {
        "LUT": "brainsmith", "BRAM_18K": "finn", "URAM": "finn", "DSP": "brainsmith",
    }  # fmt: skip
    _, layer = layers["ConvolutionInputGenerator_rtl"]
    assert swg["LUT"] == rtl_costs.fitted(layer, "LUT")
    assert found["ConvolutionInputGenerator_rtl"]["totals"]["LUT"] == swg["LUT"]  # in place
    for kind in ("IntAdd_rtl", "Pool_rtl"):
        report = found[kind]
        (row,) = report["layers"]
        _, layer = layers[kind]
        assert row["LUT"] == by_hand(kind, layer) and row["not_estimated"] == []
        assert row["estimated_by"]["LUT"] == "brainsmith"
        assert report["totals"]["LUT"] == row["LUT"]  # counted once
