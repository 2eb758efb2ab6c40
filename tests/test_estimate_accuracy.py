"""The first screen's LUT and DSP estimates against Yosys' counts committed by
``benchmarks/estimate_accuracy.py`` (README's quick-start network and the shipped MLP, on a
7-series and an UltraScale+ part; the shipped networks held out of every fit in make
test-wide) and ``benchmarks/synth_fit.py`` (single layers): each network's LUT and DSP
estimates within 15 % of Yosys, every layer's DSPs and a 7-series matrix layer's as Yosys
counts them, thresholds within 26 % (the sweep's and the networks'); and one layer synthesised
here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]
REPO = Path(__file__).resolve().parents[1]
MEASURED = json.loads((REPO / "benchmarks" / "results" / "estimate_accuracy.json").read_text())
RUNS = {(run["network"], run["part"]): run for run in MEASURED["runs"]}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, list[str]]:
    """The networks' build arguments (README's quick-start network exported here)."""
    from benchmarks.estimate_accuracy import networks

    return networks(tmp_path_factory.mktemp("networks"), tuple(dict.fromkeys(n for n, _ in RUNS)))


def built(farm, exported: dict[str, list[str]], network: str, part: str) -> dict:
    """report.json of ``network`` built for ``part`` as the benchmark builds it (no synthesis,
    which does not change the estimates), from the run's shared builds: one per network and
    part, read only."""
    model, *blueprint = exported[network]
    result = farm.build(
        model, blueprint[0] if blueprint else None, options={"fpga_part": part},
        prefer="rtl", verify="none",
    )  # fmt: skip
    report: dict = json.loads((Path(result.output_dir) / "report.json").read_text())
    return report


@pytest.mark.parametrize(
    "network, part",
    [  # the networks held out of every fit (CNV and the others) in make test-wide
        pytest.param(*key, marks=[pytest.mark.wide] if RUNS[key].get("held_out") else [])
        for key in sorted(RUNS)
    ],
)
def test_a_network_s_estimate_is_within_15_percent_of_yosys(hub, farm, exported, network, part):
    run = RUNS[(network, part)]
    report = built(farm, exported, network, part)
    estimates = {layer["name"]: layer for layer in report["layers"]}
    for layer in run["layers"]:  # each layer's DSPs as Yosys counts them
        assert estimates[layer["name"]]["DSP"] == layer["yosys"]["DSP"], layer
    for layer in (x for x in run["layers"] if x["kind"] == "Thresholding_rtl"):
        # within 26 %: the MLP's input quantizer (15 float thresholds shared by 64 channels,
        # memories of 1 to 8 words) was 230 LUTs against 150 before the memories' depth and
        # differing bits were counted, now 188 (+25 %)
        estimated, measured = estimates[layer["name"]]["LUT"], layer["yosys"]["LUT"]
        assert abs(estimated - measured) <= 0.26 * measured, (layer["name"], estimated)
    for key in ("DSP", "LUT"):
        measured = sum(layer["yosys"][key] for layer in run["layers"])
        estimated = sum(estimates[layer["name"]][key] for layer in run["layers"])
        assert abs(estimated - measured) <= 0.15 * max(measured, 1), (key, estimated, measured)


def test_a_7_series_matrix_layer_s_dsps_are_yosys_count(hub, farm, exported):
    """The Pynq-Z1 example: MVAU_rtl_0 (PE 8, SIMD 2, 4-bit narrow-range weights and 4-bit
    activations) packs 4 products per DSP48E1 (FINN's RTL drops the sign bit's room for
    narrow weights), as Yosys counts: 4 DSPs, not 6."""
    part = "xc7z020clg400-1"
    run = RUNS[("mlp_4bit", part)]
    report = built(farm, exported, "mlp_4bit", part)
    estimates = {layer["name"]: layer for layer in report["layers"]}
    matrix = [layer for layer in run["layers"] if layer["kind"] == "MVAU_rtl"]
    assert matrix
    for layer in matrix:
        assert estimates[layer["name"]]["DSP"] == layer["yosys"]["DSP"], layer
    assert report["totals"]["DSP"] == sum(layer["yosys"]["DSP"] for layer in run["layers"])


def thresholds_layer(attributes: dict, seed: int):
    """A single Thresholding_rtl layer as ``benchmarks/synth_fit.py`` sweeps it."""
    import numpy as np

    from benchmarks.synth_fit import thresholding
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    np.random.seed(seed)
    return thresholding(**attributes)


def report_luts(model) -> float:
    """The LUTs the report gives the model's one layer: brainsmith's where it replaces
    FINN's estimate, else FINN's."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn import rtl_costs

    layer = getCustomOp(model.graph.node[0])
    found = rtl_costs.estimate(layer, "xczu7ev-ffvc1156-2-e", model, report=True)
    return float(found.get("LUT", layer.lut_estimation("xczu7ev-ffvc1156-2-e")))


def test_every_thresholding_layer_of_the_sweep_is_within_26_percent_of_yosys(hub):
    """Integer and float inputs, thresholds per channel and shared, random and power-of-two
    scales, thresholds narrower than the input, memories of one word to 8 LUTs per bit, small
    layers (synth_fit.json's counts): 23 of 24 within 21 %, 8 PEs of 2-bit outputs 26 % over
    (the model before: 6 beyond 25 %, up to +104 %). FINN's estimate is its threshold memory
    in LUT-RAM, up to 22x the count (a float input's 255 thresholds shared by every channel,
    which FINN counts once per channel)."""
    sweep = json.loads((REPO / "benchmarks" / "results" / "synth_fit.json").read_text())
    points = [p for p in sweep["points"] if p["kind"] == "Thresholding_rtl"]
    assert any(p["attributes"].get("po2") for p in points) and len(points) >= 24
    for index, point in enumerate(points):
        estimated = report_luts(thresholds_layer(point["attributes"], index))
        measured = point["counts"]["LUT"]
        assert abs(estimated - measured) <= 0.26 * measured, (point["attributes"], estimated)


def test_a_float_input_s_thresholds_synthesised_here_are_within_25_percent(hub, tmp_path):
    """The quick-start network's input quantizer (64 float32 inputs to INT8, Brevitas'
    thresholds of scale 1/128 shared by every channel), not a point of the sweep: Yosys runs
    here, and its count is within 5 % of the network's layer the benchmark committed."""
    import numpy as np
    from finn.transformation.fpgadataflow.prepare_ip import PrepareIP

    from brainsmith.hardware.synthesis.layer_sources import synthesis_design
    from brainsmith.hardware.synthesis.run import cache_root, synthesise_layer
    from brainsmith.hardware.synthesis.yosys import find_yosys

    attributes = {"channels": 64, "pe": 1, "ibits": 32, "obits": 8, "floats": True}
    model = thresholds_layer({**attributes, "shared": True}, 0)
    node = model.graph.node[0]
    steps = np.arange(255, dtype=np.float32)
    model.set_initializer(node.input[1], ((steps - 127.5) / 128)[None, :])
    estimated = report_luts(model)
    model = model.transform(PrepareIP("xczu7ev-ffvc1156-2-e", 5.0))
    result = synthesise_layer(
        synthesis_design(model, model.graph.node[0]), "xcup", find_yosys(), cache_root(),
        str(tmp_path / "y"),
    )  # fmt: skip
    assert result.counts is not None, result.reason
    measured = result.counts["LUT"]
    committed = RUNS[("quick_start", "xczu7ev-ffvc1156-2-e")]["layers"][0]
    assert committed["name"] == "Thresholding_rtl_0"  # Brevitas' thresholds: rounded floats
    assert abs(committed["yosys"]["LUT"] - measured) <= 0.05 * measured
    assert abs(estimated - measured) <= 0.25 * measured, (estimated, measured)
