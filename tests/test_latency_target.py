"""Folding for a latency (``build.target_latency_ns``, ``--target-latency``): the cheapest
folding of brainsmith's search whose estimated latency meets the target, the fastest one when
none does, and the report's verdict, measured when the whole design was simulated."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from qonnx.core.modelwrapper import ModelWrapper

import brainsmith
from brainsmith.blueprint.options import check_given
from brainsmith.frameworks.finn.folding.search import (
    COSTED,
    critical_path_cycles,
    fold_for_latency,
    layer_cycles,
)
from brainsmith.frameworks.finn.parts import part_resources
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
JET = REPO / "examples" / "models" / "zoo" / "jet_tagger.onnx"
PART = "xcvc1902-vsva2197-2MP-e-S"
AVAILABLE = part_resources(PART)[0]
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


@pytest.fixture(scope="module")
def specialized(hub, tmp_path_factory):
    """The jet tagger (a Brevitas export) built up to its backends, before folding."""
    folder = tmp_path_factory.mktemp("latency")
    head = brainsmith.build(str(JET), None, str(folder / "head"), stop_after=5, verify="none")
    return ModelWrapper(head.checkpoint.model)


def test_a_tighter_latency_folds_further_and_each_target_is_met(specialized):
    from brainsmith.frameworks.finn.folding.search import _Search

    reached, costs = [], []
    for target in (400, 120, 40, 20):
        model = copy.deepcopy(specialized)
        found = fold_for_latency(model, target, PART, AVAILABLE, budget=10**6)
        assert found["met"] and found["critical_path_cycles"] <= target, found
        assert found["critical_path_cycles"] == critical_path_cycles(model)
        assert max(layer_cycles(model).values()) <= found["layer_budget"]
        reached.append(found["critical_path_cycles"])
        totals = _Search(PART, AVAILABLE).totals(model)
        costs.append(sum(totals[k] / AVAILABLE[k] for k in COSTED if AVAILABLE.get(k)))
    assert reached == sorted(reached, reverse=True) and len(set(reached)) == len(reached)
    assert costs == sorted(costs)  # each tighter target costs at least as much


def test_a_latency_out_of_reach_gets_the_fastest_folding_and_says_it_is_missed(specialized):
    fastest = copy.deepcopy(specialized)
    fold_for_latency(fastest, 1, PART, AVAILABLE, budget=1)
    model = copy.deepcopy(specialized)
    found = fold_for_latency(model, 2, PART, AVAILABLE, budget=10**6)
    assert not found["met"] and found["layer_budget"] == 1
    assert found["critical_path_cycles"] == critical_path_cycles(fastest) > 2


def test_the_option_is_checked_as_a_blueprint_s():
    values, problems = check_given({"target_latency_ns": 250})
    assert values == {"target_latency_ns": 250} and not problems
    for bad in (0, -5, "soon"):
        _, problems = check_given({"target_latency_ns": bad})
        assert "target_latency_ns" in problems, bad
        assert "nanoseconds" in problems["target_latency_ns"][0]


def test_build_target_latency_from_the_command_line_is_reported_with_its_verdict(hub, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = invoke(
        "build", str(JET), "--target-latency", "400", "--verify", "none", "-o", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    goal = report["latency_target"]
    assert goal["target_latency_ns"] == 400 and goal["measured_latency_ns"] is None
    assert goal["met"] and goal["estimated_latency_ns"] <= 400
    folding = json.loads((out / "finn" / "report" / "folding.json").read_text())
    assert folding["latency"]["target_cycles"] == 80  # 400 ns at 5 ns
    assert (
        folding["latency"]["critical_path_cycles"] == report["performance"]["critical_path_cycles"]
    )
    latency = next(line for line in stdout.splitlines() if line.strip().startswith("latency"))
    assert "target 400 ns estimated met" in latency, latency
    assert report["blueprint"]["build"]["target_latency_ns"] == 400


def test_a_latency_target_and_a_crashed_simulation_are_on_the_first_screen():
    """The latency verdict uses the simulated latency when there is one; a design that crashed
    in its whole simulation (FINN's VVAU_rtl asserting under back-pressure, in an all-RTL
    DS-CNN) is a warning, not a note, since it may not work on a board."""
    from brainsmith.hardware.rtlsim.layer_design import CRASHED
    from brainsmith.report.contents import latency_target
    from brainsmith.report.text import latency_text, warning_lines

    performance = {"estimated_latency_ns": 330.0, "critical_path_cycles": 66}
    rtlsim = {"stitched": {"latency_cycles": 141}}
    goal = latency_target(performance, 400.0, rtlsim, 5.0)
    assert goal == {"target_latency_ns": 400.0, "estimated_latency_ns": 330.0,
                    "critical_path_cycles": 66, "measured_latency_ns": 705.0, "met": False}  # fmt: skip
    report = {"performance": performance, "clock_ns": 5.0, "rtlsim": rtlsim, "latency_target": goal}
    assert latency_text(report).endswith("estimated 66 cycles; target 400 ns measured MISSED)")
    assert latency_target(performance, 400.0)["met"] is True  # not simulated: the estimate
    crash = (f"FIFO depths: FINN's, not sized by simulation: {CRASHED} (sized FIFOs): the "
             "simulator exited with code 1: \n[0] %Error: mvu_vvu_axi.sv:376: Assertion failed")  # fmt: skip
    lines = warning_lines({"notes": [crash]})
    assert lines == [
        f"{CRASHED} (sized FIFOs): the simulator exited with code 1: %Error: mvu_vvu_axi.sv:376: "
        "Assertion failed; it may not work on a board (brainsmith verify-rtl BUILD simulates "
        "each layer on its own)"
    ]
