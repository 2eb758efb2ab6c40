"""A Lattice ECP5 part's capacities read from nextpnr, and single layers synthesised by Yosys
``synth_ecp5`` within the error of the models fitted to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from brainsmith.frameworks.finn import rtl_costs
from tests.support.tiers import breadth

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
PART = "LFE5U-85F-6BG381C"


def test_the_lfe5u_85f_capacities_are_read_from_nextpnr_once():
    from brainsmith.place_route.capacities import part_capacities
    from brainsmith.place_route.flow import cache_root
    from brainsmith.place_route.parts import ecp5_part

    found = part_capacities(ecp5_part(PART))
    # the ECP5-85F's LUTs, flip-flops, 18x18 multipliers and 18 Kbit block RAMs (FPGA-DS-02012)
    assert found.available == {"LUT4": 83_640, "FF": 83_640, "MULT18": 156, "EBR": 208}
    assert found.part == PART and found.source.startswith("nextpnr-ecp5 "), found
    entries = {e: e.stat().st_mtime_ns for e in Path(cache_root()).glob("capacities-*.json")}
    assert entries, "no capacities cached"
    assert part_capacities(ecp5_part(PART)) == found  # from the cache: nothing written again
    assert {e: e.stat().st_mtime_ns for e in entries} == entries


def test_the_shipped_ecp5_models_are_the_fitted_kinds_with_their_errors():
    shipped = rtl_costs.ecp5_coefficients()
    assert set(shipped) == set(rtl_costs.ECP5_TERMS) == set(rtl_costs.ECP5_KINDS)
    for kind, resources in shipped.items():
        assert tuple(resources) == rtl_costs.ECP5_RESOURCES
        for resource, model in resources.items():
            assert tuple(model["terms"]) == rtl_costs.ECP5_TERMS[kind][resource]
            assert len(model["coefficients"]) == len(model["terms"])
            assert model["max_error"] is not None and model["held_out_max_error"] is not None


def single_layer(kind: str, attributes: dict):
    """A layer of the sweep's builders, made for the stand-in part a Lattice build has."""
    import benchmarks.synth_fit as sweep
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.planning.lattice import STAND_IN_PART

    prepare_finn()
    sweep.MODEL_PART = STAND_IN_PART
    try:
        return sweep.BUILDERS[kind](**attributes)
    finally:
        sweep.MODEL_PART = sweep.PART


# layers of no point of the sweep: products in MULT18X18D, a binary search of thresholds
LAYERS = breadth(
    [
        ("MVAU_rtl", {"mw": 40, "mh": 12, "simd": 10, "pe": 6, "wbits": 6, "abits": 4}),
        ("Thresholding_rtl", {"channels": 24, "pe": 6, "ibits": 8, "obits": 3}),
    ]
)


@pytest.mark.parametrize(("kind", "attributes"), LAYERS)
def test_a_layer_synthesised_for_ecp5_is_within_the_error_its_fit_reports(
    hub, tmp_path, kind, attributes
):
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.planning.lattice import STAND_IN_PART
    from brainsmith.synthesis.run import cache_root, synthesise_layer
    from brainsmith.synthesis.sources import synthesis_design
    from brainsmith.synthesis.yosys import find_yosys

    model = single_layer(kind, attributes).transform(PrepareIP(STAND_IN_PART, 5.0))
    node = model.graph.node[0]
    design = synthesis_design(model, node)
    result = synthesise_layer(design, "ecp5", find_yosys(), cache_root(), str(tmp_path / "y"))
    assert result.counts is not None, result.reason
    assert set(result.counts) == {"LUT4", "FF", "MULT18", "EBR"}, result.counts
    estimated = rtl_costs.ecp5_estimate(getCustomOp(node), model)
    assert estimated is not None
    for resource, fitted in rtl_costs.ecp5_coefficients()[kind].items():
        allowed = max(fitted["max_error"], fitted["held_out_max_error"] or 0.0)
        measured = result.counts[resource]
        error = abs(estimated[resource] - measured) / max(measured, 1)
        assert error <= allowed, (resource, estimated[resource], measured, allowed)
    assert result.counts["LUT4"] > 0 and result.counts["FF"] > 0
