"""The folding of the Gowin and iCE40 families costed in their parts' own resources: an
iCE40's in models fitted to Yosys ``synth_ice40`` (products in logic cells, 4 Kbit block
RAMs), a single layer synthesised for iCE40 within the error of its fit, the iCEBreaker's
build folded to fit its logic cells where FINN's stand-in would have needed three times the
part; a Gowin part's in ECP5's models scaled to what its nextpnr places."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import brainsmith
from brainsmith.frameworks.finn import rtl_costs
from brainsmith.hardware.place_route.ecp5 import ECP5
from brainsmith.hardware.place_route.gowin import GOWIN
from brainsmith.hardware.place_route.ice40 import ICE40
from tests.test_ecp5_costs import BLUEPRINT, FOLDING_STEP, MLP, single_layer

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]


@pytest.mark.parametrize("family", [ECP5, ICE40], ids=lambda family: family.name)
def test_the_shipped_models_are_the_fitted_kinds_with_their_errors(family):
    shipped = rtl_costs.family_coefficients(family.cost_models)
    terms = rtl_costs.TERMS_OF[family.cost_models]
    assert set(shipped) == set(terms) == set(rtl_costs.FAMILY_KINDS)
    for kind, resources in shipped.items():
        assert tuple(resources) == rtl_costs.FAMILY_RESOURCES
        for resource, model in resources.items():
            assert tuple(model["terms"]) == terms[kind][resource]
            assert len(model["coefficients"]) == len(model["terms"])
            assert model["max_error"] is not None and model["held_out_max_error"] is not None
    if (
        family is ICE40
    ):  # products in logic cells: a wide product's cells grow with its factors' bits
        assert "PE*SIMD*hard_products*w_bits*in_bits" in shipped["MVAU_rtl"]["LUT4"]["terms"]


def test_a_weight_memory_on_an_ice40_is_counted_in_4_kbit_block_rams():
    """A matrix layer's 1,024 words of 16 bits fill four SB_RAM40_4K (256 x 16 each), where an
    ECP5 needs one DP16KD (1,024 x 18)."""
    assert rtl_costs.ebr_blocks(1024, 16, rtl_costs.ICE40_EBR_SHAPES) == 4
    assert rtl_costs.ebr_blocks(1024, 16) == 1


def test_a_matrix_layer_synthesised_for_ice40_is_within_the_error_its_fit_reports(hub, tmp_path):
    """A matrix layer of no point of the sweep (6-bit weights, 4-bit activations)."""
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys
    from brainsmith.planning.lattice import STAND_IN_PART

    attributes = {"mw": 24, "mh": 6, "simd": 6, "pe": 3, "wbits": 6, "abits": 4}
    model = single_layer("MVAU_rtl", attributes).transform(PrepareIP(STAND_IN_PART, 5.0))
    node = model.graph.node[0]
    design = synthesis_design(model, node)
    result = synthesise_layer(design, "ice40", find_yosys(), cache_root(), str(tmp_path / "y"))
    assert result.counts is not None, result.reason
    assert result.counts["MULT18"] == 0 and result.counts["LUT4"] > 0, result.counts
    estimated = rtl_costs.family_estimate(getCustomOp(node), ICE40.cost_models, model)
    assert estimated is not None
    for resource in ("LUT4", "FF"):
        fitted = rtl_costs.family_coefficients(ICE40.cost_models)["MVAU_rtl"][resource]
        allowed = max(fitted["max_error"], fitted["held_out_max_error"] or 0.0)
        error = abs(estimated[resource] - result.counts[resource]) / result.counts[resource]
        assert error <= allowed, (resource, estimated[resource], result.counts[resource])


def test_the_icebreaker_build_folds_to_fit_the_up5k(hub, tmp_path):
    """blueprints/mlp.yaml asks 1,000,000 fps; at the iCEBreaker's 35 MHz every layer folded
    for 35 cycles needs more logic cells than the UP5K has, so the search folds slower, to
    the fastest folding within 90 % of them, and says the part stopped it."""
    result = brainsmith.build(
        str(MLP), str(BLUEPRINT), str(tmp_path / "out"), verify="none",
        options={"board": "icebreaker"}, stop_after=FOLDING_STEP,
    )  # fmt: skip
    record = json.loads(next(Path(result.output_dir).rglob("folding.json")).read_text())
    assert record["part"] == "ICE40UP5K-SG48", record  # as nextpnr-ice40 names it
    available = record["available"]
    assert available["LUT4"] == 5_280 and available["EBR"] == 30 and available["MULT18"] == 8
    totals = record["totals"]
    assert totals["LUT4"] <= 0.9 * available["LUT4"], totals
    assert record["limit"].startswith("the part: every layer folded for "), record["limit"]
    assert "LUT4 " in record["limit"], record["limit"]


def test_a_gowin_part_is_costed_in_ecp5_s_models_scaled_to_what_its_nextpnr_places(hub):
    """ECP5's models, each layer's LUT4 and FF multiplied by the measured scale
    (benchmarks.gowin_scale: nextpnr-himbaechel-gowin placed 2.36-2.41 LUT4 for each the
    models estimated), its multipliers and block RAMs one for one."""
    from qonnx.custom_op.registry import getCustomOp

    scales = rtl_costs.family_scales(GOWIN.cost_models)
    assert set(scales) == {"LUT4", "FF"} and scales["LUT4"] > 2 and scales["FF"] > 1
    assert rtl_costs.family_coefficients(GOWIN.cost_models) == rtl_costs.family_coefficients("ecp5")
    attributes = {"mw": 24, "mh": 6, "simd": 6, "pe": 3, "wbits": 6, "abits": 4}
    model = single_layer("MVAU_rtl", attributes)
    layer = getCustomOp(model.graph.node[0])
    ecp5 = rtl_costs.family_estimate(layer, "ecp5", model)
    gowin = rtl_costs.family_estimate(layer, GOWIN.cost_models, model)
    assert ecp5 is not None and gowin is not None
    assert gowin["LUT4"] == round(ecp5["LUT4"] * scales["LUT4"]) > ecp5["LUT4"]
    assert gowin["FF"] == round(ecp5["FF"] * scales["FF"])
    assert (gowin["MULT18"], gowin["EBR"]) == (ecp5["MULT18"], ecp5["EBR"])
