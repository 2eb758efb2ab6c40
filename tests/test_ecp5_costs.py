"""A Lattice ECP5 build's folding costed in the part's own resources: the part's capacities
read from nextpnr, single layers synthesised by Yosys ``synth_ecp5`` within the error of the
models fitted to them, the search fitting the part's LUT4, FF, MULT18 and EBR, and a design
over the part refused before place and route, naming each resource."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.frameworks.finn import rtl_costs
from brainsmith.hardware.place_route.ecp5 import ECP5
from tests.support.tiers import breadth

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
PART = "LFE5U-85F-6BG381C"
FOLDING_STEP = 6  # blueprints/mlp.yaml's steps: cleanup ... specialize, folding
ABSURD_FPS = 100_000_000  # a frame a cycle at 5 ns is 200 million


def test_the_lfe5u_85f_capacities_are_read_from_nextpnr_once():
    from brainsmith.hardware.place_route.capacities import part_capacities
    from brainsmith.hardware.place_route.flow import cache_root
    from brainsmith.hardware.place_route.parts import ecp5_part

    found = part_capacities(ecp5_part(PART))
    # the ECP5-85F's LUTs, flip-flops, 18x18 multipliers and 18 Kbit block RAMs (FPGA-DS-02012)
    assert found.available == {"LUT4": 83_640, "FF": 83_640, "MULT18": 156, "EBR": 208}
    assert found.part == PART and found.source.startswith("nextpnr-ecp5 "), found
    entries = {e: e.stat().st_mtime_ns for e in Path(cache_root()).glob("capacities-*.json")}
    assert entries, "no capacities cached"
    assert part_capacities(ecp5_part(PART)) == found  # from the cache: nothing written again
    assert {e: e.stat().st_mtime_ns for e in entries} == entries


def single_layer(kind: str, attributes: dict):
    """A layer of the sweep's builders, made for the stand-in part a Lattice build has."""
    import benchmarks.synth_fit as sweep
    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.planning.lattice import STAND_IN_PART

    prepare_finn()
    sweep.register_own_backends()
    sweep.MODEL_PART = STAND_IN_PART
    try:
        return sweep.BUILDERS[kind](**attributes)
    finally:
        sweep.MODEL_PART = sweep.PART


def test_every_kind_of_the_sweep_has_an_ecp5_estimate_of_each_resource(hub):
    """A layer of each kind, as the sweep makes it, gets a count of each ECP5 resource: a
    layer with a ``mem_mode`` but no weights (IntAdd) included."""
    from qonnx.custom_op.registry import getCustomOp

    import benchmarks.synth_fit as sweep

    for kind in rtl_costs.FAMILY_KINDS:
        model = single_layer(kind, sweep.SWEEP[kind][0][0])
        found = rtl_costs.family_estimate(getCustomOp(model.graph.node[0]), ECP5.cost_models, model)
        assert found is not None and set(found) == set(rtl_costs.FAMILY_RESOURCES), (kind, found)
        assert found["LUT4"] > 0 and all(value >= 0 for value in found.values()), (kind, found)


# layers of no point of the sweep: products in MULT18X18D, a binary search of thresholds, a
# sliding window, a FIFO in block RAM
LAYERS = breadth(
    [
        ("MVAU_rtl", {"mw": 24, "mh": 6, "simd": 6, "pe": 3, "wbits": 6, "abits": 4}),
        ("MVAU_rtl", {"mw": 40, "mh": 12, "simd": 10, "pe": 6, "wbits": 6, "abits": 4}),
        ("Thresholding_rtl", {"channels": 24, "pe": 6, "ibits": 8, "obits": 3}),
        (
            "ConvolutionInputGenerator_rtl",
            {"channels": 12, "simd": 6, "kernel": 3, "dim": 10, "bits": 4},
        ),
        ("StreamingFIFO_rtl", {"depth": 1500, "channels": 8, "pe": 8, "bits": 6}),
    ]
)


@pytest.mark.parametrize(("kind", "attributes"), LAYERS)
def test_a_layer_synthesised_for_ecp5_is_within_the_error_its_fit_reports(
    hub, tmp_path, kind, attributes
):
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys
    from brainsmith.planning.lattice import STAND_IN_PART

    model = single_layer(kind, attributes).transform(PrepareIP(STAND_IN_PART, 5.0))
    node = model.graph.node[0]
    design = synthesis_design(model, node)
    result = synthesise_layer(design, "ecp5", find_yosys(), cache_root(), str(tmp_path / "y"))
    assert result.counts is not None, result.reason
    assert set(result.counts) == {"LUT4", "FF", "MULT18", "EBR"}, result.counts
    estimated = rtl_costs.family_estimate(getCustomOp(node), ECP5.cost_models, model)
    assert estimated is not None
    for resource, fitted in rtl_costs.family_coefficients(ECP5.cost_models)[kind].items():
        allowed = max(fitted["max_error"], fitted["held_out_max_error"] or 0.0)
        measured = result.counts[resource]
        error = abs(estimated[resource] - measured) / max(measured, 1)
        assert error <= allowed, (resource, estimated[resource], measured, allowed)
    assert result.counts["LUT4"] > 0 and result.counts["FF"] > 0


def lattice_options(fps: int, search: str) -> dict:
    return {"board": "ulx3s-85f", "target_fps": fps, "folding": {"search": search}}


def test_the_search_on_a_lattice_board_fits_the_parts_own_resources(hub, tmp_path):
    """At 100 million frames per second every layer fully parallel would need 2,368
    products, each an 18x18 multiplier: 15 times the ECP5-85F's 156. The search folds for
    the fewest cycles whose estimate fits 90 % of each of the part's resources, read from
    nextpnr (before: folded for the stand-in's DSP48E1 slices and LUT6)."""
    result = brainsmith.build(
        str(MLP), str(BLUEPRINT), str(tmp_path / "out"), verify="none",
        options=lattice_options(ABSURD_FPS, "brainsmith"), stop_after=FOLDING_STEP,
    )  # fmt: skip
    record = json.loads(next(Path(result.output_dir).rglob("folding.json")).read_text())
    assert record["part"] == PART, record
    available = record["available"]
    assert available == {"LUT4": 83_640, "FF": 83_640, "MULT18": 156, "EBR": 208}
    totals = record["totals"]
    assert set(totals) == set(available), totals  # never LUT6 figures
    assert all(totals[key] <= 0.9 * available[key] for key in available), totals
    # folded just enough: twice the products, half the cycles, would be over 90 % of the part
    assert 2 * totals["MULT18"] > 0.9 * available["MULT18"], totals
    assert record["limit"].startswith("the part: every layer folded for "), record["limit"]
    assert "MULT18 " in record["limit"] and PART in record["limit"], record["limit"]


def test_a_design_over_the_lattice_part_is_refused_before_place_and_route(hub, tmp_path):
    """FINN's SetFolding does not fit a design to the part: at 100 million frames per second
    the MLP's 336 products need twice the ECP5-85F's 18x18 multipliers. The estimates step
    refuses it, naming each resource over with what it uses and what the part has, before
    any code is generated, placed or routed."""
    out = tmp_path / "out"
    with pytest.raises(BuildError) as caught:
        brainsmith.build(
            str(MLP), str(BLUEPRINT), str(out), verify="none",
            options={**lattice_options(ABSURD_FPS, "finn"), "bitstream": True},
        )  # fmt: skip
    error = caught.value
    assert error.step == "estimates", error
    assert error.reason.startswith(f"the design does not fit {PART}: it is estimated to need")
    assert "MULT18 " in error.reason and "156 available" in error.reason, error.reason
    assert "LUT " not in error.reason and "DSP" not in error.reason, error.reason
    assert "--target-fps" in error.hint and "a board with a larger part" in error.hint
    assert not (out / "bitstream").exists()
