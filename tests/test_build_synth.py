"""``brainsmith build --synth``: after the last step every RTL layer is synthesised with
Yosys, and report.json, report.html and the summary show the counts beside the estimates."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import once
from tests.support.models import MLP, REPO
from tests.support.processes import Ran, invoke

PART = "xczu7ev-ffvc1156-2-e"
BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synthesis")]


def build(out, *args: str, cache=None) -> Ran:
    """``brainsmith build MLP ARGS -o out`` in this process."""
    env = {"COLUMNS": "200", **({"BRAINSMITH_CACHE_DIR": str(cache)} if cache else {})}
    return invoke("build", str(MLP), *args, "-o", str(out), env=env, cwd=REPO)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The synthesis cache both builds share, one per test process (as the first build)."""
    return once("build-synth cache", lambda: tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory, cache):
    """The MLP built all RTL and synthesised, once per test process."""

    def make() -> tuple:
        out = tmp_path_factory.mktemp("synth") / "mlp"
        args = (str(BLUEPRINT), "--prefer", "rtl", "--part", PART, "--synth")
        result = build(out, *args, cache=cache)
        assert result.returncode == 0, result.stderr
        return out, json.loads((out / "report.json").read_text()), result.stdout

    return once("build-synth mlp", make)


def test_every_rtl_layer_is_measured_beside_its_estimate(synthesised):
    _, report, _ = synthesised
    section = report["synthesis"]
    assert section["family"] == "xcup" and section["part"] == PART and section["complete"]
    assert {x["status"] for x in section["layers"]} == {"synthesised"}
    layers = {x["name"]: x for x in report["layers"]}
    assert set(layers) == {x["name"] for x in section["layers"]}
    for name, layer in layers.items():
        counts = layer["measured"]
        assert counts["LUT"] > 0 and counts["FF"] > 0, name
        for key, error in layer["estimate_error"].items():  # against FINN's own number
            assert error == round((layer[key] - counts[key]) / counts[key], 4), (name, key)
        if layer["op_type"] == "MVAU":  # FINN's 0 LUT replaced by brainsmith's model, measured
            assert counts["DSP"] > 0 and layer["estimated_by"]["LUT"] == "brainsmith"
            assert "LUT" in layer["estimate_error"]
    assert section["totals"]["LUT"] == sum(x["measured"]["LUT"] for x in layers.values())


def test_the_summary_and_the_page_say_what_was_measured_and_what_estimated(synthesised):
    out, report, stdout = synthesised
    measured = next(line for line in stdout.splitlines() if line.startswith("  measured"))
    assert f"LUT {report['synthesis']['totals']['LUT']:,}" in measured
    count = len(report["synthesis"]["layers"])  # the MLP's 4 and its sized FIFOs, converters
    assert count > 4 and "at least" not in measured
    assert f"{count} of {count} layers synthesised" in measured
    assert any(line.startswith("  estimated   LUT ") for line in stdout.splitlines())
    page = (out / "report.html").read_text()
    lut = report["synthesis"]["totals"]["LUT"]
    assert f"<tr><th>resources (measured by Yosys)</th><td>LUT {lut:,}, FF " in page
    assert f"<tr><th>resources (estimated)</th><td>LUT {report['totals']['LUT']:,} (" in page
    assert "<th>measured (Yosys)</th>" in page
    # the meters: the share of the part measured beside the share estimated, FF included
    assert f"measured share of {PART} (Yosys synth_xilinx, out of context)</div>" in page
    assert f"</span></span> {lut:,} (" in page and "<b>FF</b> <span class='track measured'>" in page
    # the picture: each layer's LUTs as synthesised
    matrix = next(x for x in report["layers"] if x["op_type"] == "MVAU")
    picture = (out / "dataflow.svg").read_text()
    assert f"{matrix['measured']['LUT']:,} LUT" in picture
    assert f"{matrix['name']} · measured (Yosys): LUT {matrix['measured']['LUT']:,}" in picture


@pytest.fixture(scope="module")
def again(tmp_path_factory, cache, synthesised):
    """The same build again on the cache the first one filled, once per test process: the
    second build both tests below read."""

    def make() -> tuple:
        out = tmp_path_factory.mktemp("again") / "mlp"
        args = (str(BLUEPRINT), "--prefer", "rtl", "--part", PART, "--synth")
        return out, build(out, *args, cache=cache)

    return once("build-synth again", make)


def test_a_second_build_takes_every_layer_from_the_cache(synthesised, again):
    _, report, _ = synthesised
    out, result = again
    assert result.returncode == 0, result.stderr
    second = json.loads((out / "report.json").read_text())["synthesis"]
    assert all(x["cached"] for x in second["layers"])
    assert second["totals"] == report["synthesis"]["totals"]


def test_yosys_is_started_as_the_synthesis_begins_and_said_as_such(again):
    """Yosys' start (long the first time after installing) is announced where it happens,
    after the last step, not shown as loading FINN and the model."""
    _, result = again
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()  # a pipe: one plain line per event
    starting = lines.index("starting Yosys (the first run after installing takes about a minute)")
    last_step = max(i for i, line in enumerate(lines) if re.match(r"\[\d+/\d+\] ", line))
    assert lines.index("loading FINN and the model ...") < last_step < starting, lines
    assert any("s of it starting Yosys" in line for line in lines[starting:]), lines


def test_a_part_yosys_cannot_map_stops_the_build_before_its_first_step(tmp_path):
    result = build(tmp_path / "out", "--synth")  # the default blueprint's part is a Versal
    assert result.returncode == 2, result.stderr
    assert "build.synth" in result.stderr and f"--part {PART}" in result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed" and all(s["status"] == "pending" for s in report["steps"])


def test_build_synth_takes_true_or_false_only(tmp_path):
    blueprint = tmp_path / "synth.yaml"
    blueprint.write_text(f"name: synth\nextends: {BLUEPRINT}\nbuild:\n  synth: 3\n")
    result = build(tmp_path / "out", str(blueprint))
    assert result.returncode == 2
    assert "build.synth is the number 3; expected true to synthesise" in result.stderr


@pytest.mark.big  # a second synthesis of every layer, about 3 minutes: make test-big
def test_a_board_of_the_7_series_is_measured_with_its_own_cells(tmp_path, cache):
    blueprint = tmp_path / "pynq.yaml"
    blueprint.write_text(
        f"name: pynq\nextends: {BLUEPRINT}\nbuild:\n  fpga_part: null\n  board: Pynq-Z1\n"
        "  synth: true\n"
    )
    result = build(tmp_path / "out", str(blueprint), "--prefer", "rtl", cache=cache)
    assert result.returncode == 0, result.stderr
    section = json.loads((tmp_path / "out" / "report.json").read_text())["synthesis"]
    assert section["part"] == "xc7z020clg400-1" and section["family"] == "xc7"
    assert section["complete"], [x["reason"] for x in section["layers"]]
    matrix = [x for x in section["layers"] if x["op_type"] == "MVAU_rtl"]
    assert matrix and all(x["counts"]["DSP"] > 0 for x in matrix)  # DSP48E1, a blackbox
    count = len(section["layers"])
    assert f"family xc7, {count} of {count} layers synthesised)" in result.stdout
