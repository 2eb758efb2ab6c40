"""The folding of every open family costed in its parts' own resources, in models fitted to
Yosys' synthesis of single layers for that family: an iCE40's (products in logic cells, 4
Kbit block RAMs), a Gowin's (a flip-flop's pass-through LUT counted), a GateMate's (CPE
halves, 20 Kbit block RAM halves, its CC_MULT multipliers counted); a single layer synthesised for each
within the error of its fit, the cells counted as each family's nextpnr counted them in
whole builds, the iCEBreaker's build folded to fit its logic cells where FINN's stand-in
would have needed three times the part, a GateMate build costed on its CPE halves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import brainsmith
from brainsmith.frameworks.finn import rtl_costs
from brainsmith.hardware.place_route.ecp5 import ECP5
from brainsmith.hardware.place_route.gatemate import GATEMATE
from brainsmith.hardware.place_route.gowin import GOWIN
from brainsmith.hardware.place_route.ice40 import ICE40
from brainsmith.hardware.synthesis import gatemate, gowin
from tests.test_ecp5_costs import BLUEPRINT, FOLDING_STEP, MLP, single_layer

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]


OPEN = [ECP5, ICE40, GOWIN, GATEMATE]
LOGIC_PRODUCTS = (ICE40,)  # the families whose products are all logic cells


@pytest.mark.parametrize("family", OPEN, ids=lambda family: family.name)
def test_the_shipped_models_are_the_fitted_kinds_with_their_errors(family):
    shipped = rtl_costs.family_coefficients(family.cost_models)
    logic = family in LOGIC_PRODUCTS
    terms = rtl_costs.LOGIC_PRODUCT_TERMS if logic else rtl_costs.FAMILY_TERMS
    assert set(shipped) == set(terms) == set(rtl_costs.FAMILY_KINDS)
    for kind, resources in shipped.items():
        assert tuple(resources) == rtl_costs.FAMILY_RESOURCES
        for resource, model in resources.items():
            assert tuple(model["terms"]) == terms[kind][resource]
            assert len(model["coefficients"]) == len(model["terms"])
            assert model["max_error"] is not None and model["held_out_max_error"] is not None
    if family in LOGIC_PRODUCTS:  # a wide product's logic grows with its factors' bits
        assert "PE*SIMD*hard_products*w_bits*in_bits" in shipped["MVAU_rtl"]["LUT4"]["terms"]


def test_a_weight_memory_is_counted_in_the_family_s_own_block_rams():
    """A matrix layer's 1,024 words of 16 bits fill four SB_RAM40_4K (256 x 16 each) of an
    iCE40, where an ECP5 needs one DP16KD (1,024 x 18); each family's models name its shapes
    (from its synthesis module) and whether it has distributed RAM."""
    from brainsmith.hardware.synthesis.yosys import OPEN_FAMILIES

    ice40_shapes, ice40_luts = rtl_costs.family_memories(ICE40.cost_models)
    assert rtl_costs.ebr_blocks(1024, 16, ice40_shapes) == 4 and ice40_luts == 0
    assert rtl_costs.ebr_blocks(1024, 16) == 1
    for family in (ICE40, GOWIN, GATEMATE):
        module = OPEN_FAMILIES[family.cost_models]
        assert rtl_costs.family_memories(family.cost_models) == (
            module.BLOCK_RAM_SHAPES, module.DISTRIBUTED_RAM_LUTS)  # fmt: skip


@pytest.mark.parametrize("family", [ICE40, GOWIN, GATEMATE], ids=lambda family: family.name)
def test_a_matrix_layer_synthesised_for_the_family_is_within_the_error_its_fit_reports(
    hub, tmp_path, family
):
    """A matrix layer of no point of the sweep (6-bit weights, 4-bit activations), synthesised
    for the family its models are named after."""
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
    yosys = find_yosys()
    result = synthesise_layer(design, family.cost_models, yosys, cache_root(), str(tmp_path))
    assert result.counts is not None, result.reason
    assert result.counts["LUT4"] > 0 and result.counts["FF"] > 0, result.counts
    if family is ICE40:  # no SB_MAC16; a Gowin's products are its MULT9X9
        assert result.counts["MULT18"] == 0, result.counts
    elif family is GOWIN:
        assert result.counts["MULT18"] == 18, result.counts  # PE * SIMD products
    estimated = rtl_costs.family_estimate(getCustomOp(node), family.cost_models, model)
    assert estimated is not None
    for resource in ("LUT4", "FF"):
        fitted = rtl_costs.family_coefficients(family.cost_models)["MVAU_rtl"][resource]
        allowed = max(fitted["max_error"], fitted["held_out_max_error"] or 0.0)
        error = abs(estimated[resource] - result.counts[resource]) / result.counts[resource]
        assert error <= allowed, (resource, estimated[resource], result.counts[resource])


# Yosys' cells of two whole board builds and what nextpnr placed of them
# (benchmarks.board_families, 30 November): the jet tagger on the Tang Primer 20K, the shipped
# MLP on the CCGM1A1 (tests/test_place_route_gatemate.py's build)
JET_TAGGER_GOWIN = {
    "ALU": 926, "DFF": 1718, "DFFC": 3, "DFFE": 2315, "DFFR": 429, "DFFRE": 305, "DFFS": 108,
    "DFFSE": 31, "LUT1": 288, "LUT2": 392, "LUT3": 753, "LUT4": 2920, "MULT9X9": 4,
    "MUX2_LUT5": 987, "MUX2_LUT6": 272, "MUX2_LUT7": 94, "MUX2_LUT8": 32, "RAM16SDP4": 58,
    "SPX9": 11, "rPLL": 1,
}  # fmt: skip
JET_TAGGER_PLACED = {"LUT4": 8_664, "DFF": 4_909, "MULT9X9": 4, "BSRAM": 11}
MLP_GATEMATE = {
    "CC_ADDF": 470, "CC_BRAM_20K": 5, "CC_BUFG": 1, "CC_DFF": 2013, "CC_L2T4": 525,
    "CC_L2T5": 141, "CC_LUT1": 229, "CC_LUT2": 328, "CC_MULT": 2, "CC_MX2": 365,
    "CC_MX4": 330,
}  # fmt: skip
MLP_PLACED = {"CPE_LT": 3_311, "CPE_FF": 2_013, "RAM_HALF": 5}


def test_gowin_cells_are_counted_as_nextpnr_placed_them_a_lut_at_most_more():
    """Each flip-flop is counted with the pass-through LUT nextpnr may give it: the LUT4
    count bounds what was placed, within 10 %; flip-flops, multipliers and block RAMs are
    exact."""
    counted, other = gowin.counts(JET_TAGGER_GOWIN)
    placed = JET_TAGGER_PLACED
    assert placed["LUT4"] <= counted["LUT4"] <= 1.1 * placed["LUT4"], counted
    assert (counted["FF"], counted["MULT18"], counted["EBR"]) == (4_909, 4, 11)
    assert "ALU" in other and "MUX2_LUT5" in other and "LUT4" not in other


def test_gatemate_cells_are_counted_as_the_cpe_halves_nextpnr_placed():
    counted, other = gatemate.counts(MLP_GATEMATE)
    assert abs(counted["LUT4"] - MLP_PLACED["CPE_LT"]) <= 0.02 * MLP_PLACED["CPE_LT"], counted
    assert (counted["FF"], counted["EBR"]) == (MLP_PLACED["CPE_FF"], MLP_PLACED["RAM_HALF"])
    assert counted["MULT18"] == 2 and other == {"CC_BUFG": 1}


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


@pytest.mark.parametrize(
    ("options", "capacities"),
    [
        ({"board": "tang-primer-20k"}, {"LUT4": 20_736, "FF": 15_552, "MULT18": 96, "EBR": 46}),
        ({"fpga_part": "CCGM1A1"}, {"LUT4": 40_960, "FF": 40_960, "EBR": 64}),
    ],
    ids=["gowin", "gatemate"],
)
def test_a_gowin_or_gatemate_build_is_folded_in_its_own_models_on_its_parts_resources(
    hub, tmp_path, options, capacities
):
    """The folding record names the part's capacities in the models' names (a Gowin MULT9 as
    their MULT18, a BSRAM as their EBR; a GateMate's CPE halves as their LUT4, its block RAM
    halves as their EBR, and no multiplier, which a GateMate has none of)."""
    result = brainsmith.build(
        str(MLP), str(BLUEPRINT), str(tmp_path / "out"), verify="none", options=options,
        stop_after=FOLDING_STEP,
    )  # fmt: skip
    record = json.loads(next(Path(result.output_dir).rglob("folding.json")).read_text())
    available = record["available"]
    assert {k: available.get(k) for k in capacities} == capacities, available
    assert "MULT18" in available or "MULT18" not in capacities  # no GateMate multiplier
    totals = record["totals"]
    assert 0 < totals["LUT4"] <= 0.9 * available["LUT4"], totals
