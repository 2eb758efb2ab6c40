"""Variants counted differently are marked and compared like for like: a variant whose FIFOs
were sized by simulation counts its FIFOs and width converters, one that kept FINN's depths
(an HLS layer, or ``size_fifos: false``) has neither in its design yet. Each variant records
how its totals were counted; an exploration whose variants differ ranks them, draws them and
averages them on their compute layers, and its table, terminal summary and page say so."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import brainsmith
from brainsmith.dse.results import judge
from tests.conftest import once
from tests.support.browser import screenshot
from tests.test_explore_judging import search

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
SPACE = f"""\
name: mlp_counting
extends: {REPO / "blueprints" / "mlp.yaml"}
design_space:
  backends: {{matmul: [rtl, hls]}}
  build: {{size_fifos: [true, false]}}
search:
  objectives: {{fps: max, LUT: min}}
"""
PLUMBING = ("StreamingFIFO", "StreamingDataWidthConverter")
RESOURCES = ("LUT", "BRAM_18K", "URAM", "DSP")


def entry(index: int, fps: float, lut: int, counting: dict | None) -> dict:
    """A built variant as the judging reads it."""
    found = {"fps": fps, "latency_ns": 1.0, "LUT": lut, "BRAM_18K": 0, "URAM": 0, "DSP": 1}
    made = {"id": f"v{index:02d}", "index": index, "status": "ok", "design": str(index),
            "choices": {}, "metrics": found}  # fmt: skip
    if counting is not None:
        made["counting"] = counting
    return made


def counting(fifos: bool, compute_lut: int) -> dict:
    return {"fifo_depths": "sized by simulation" if fifos else "FINN's", "fifos": fifos,
            "width_converters": fifos, "resources": "estimated", "measured": False,
            "compute": {"LUT": compute_lut, "BRAM_18K": 0, "URAM": 0, "DSP": 1}}  # fmt: skip


def test_totals_counted_alike_are_compared_as_they_are():
    from brainsmith.dse.counting import compare

    entries = [entry(0, 1e6, 1000, counting(True, 700)), entry(1, 1e6, 900, counting(True, 600))]
    found = compare(entries)
    judge(entries, search())
    assert found["alike"] and found["compared_on"] == "totals"
    assert [e["compared"]["LUT"] for e in entries] == [1000, 900]
    assert [e["id"] for e in entries if e["pareto"]] == ["v01"]


def test_unlike_totals_are_ranked_on_their_compute_layers():
    """v00 counts its FIFOs (1,000 LUT, 700 in compute layers), v01 does not (900): on
    totals v01 would win; on the layers both count, v00 does."""
    from brainsmith.dse.counting import compare

    entries = [entry(0, 1e6, 1000, counting(True, 700)), entry(1, 1e6, 900, counting(False, 900))]
    found = compare(entries)
    judge(entries, search())
    assert not found["alike"] and found["compared_on"] == "compute layers"
    assert [e["compared"]["LUT"] for e in entries] == [700, 900]
    assert [e["id"] for e in entries if e["pareto"]] == ["v00"]
    assert [k["variants"] for k in found["kinds"]] == [["v00"], ["v01"]]
    assert "FIFOs" in found["differs"] and "v00" in found["differs"] and "v01" in found["differs"]
    for e in entries:  # constraints judge the totals, as counted
        assert e["metrics"]["LUT"] in (1000, 900)


def test_variants_without_a_record_are_compared_as_they_are():
    from brainsmith.dse.counting import compare

    entries = [entry(0, 1e6, 1000, None), entry(1, 1e6, 900, None)]
    assert compare(entries)["alike"]
    assert [e["compared"]["LUT"] for e in entries] == [1000, 900]


# mlp.yaml explored for real over matrix backends and size_fifos: RTL with sized FIFOs (and
# width converters), RTL with FINN's depths, HLS (FINN's depths whatever size_fifos says).


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """Explored once per test process (its tests share one xdist group)."""

    def make():
        root = tmp_path_factory.mktemp("counting")
        (root / "space.yaml").write_text(SPACE)
        return brainsmith.explore(MLP, str(root / "space.yaml"), str(root / "out"), workers=0)

    return once("explore-counting", make)


def by_choice(result) -> dict[tuple[str, bool], dict]:
    return {
        (v["choices"]["backends.matmul"], v["choices"]["build.size_fifos"]): v
        for v in result.variants
    }


def report_of(result, variant: dict) -> dict:
    return json.loads(Path(result.output_dir, variant["folder"], "report.json").read_text())


@pytest.mark.slow
@pytest.mark.xdist_group("explore-counting")  # one exploration per process
def test_each_variant_records_how_its_totals_were_counted(explored):
    variants = by_choice(explored)
    assert all(v["status"] == "ok" for v in variants.values())
    sized = variants[("rtl", True)]["counting"]
    assert sized["fifo_depths"] == "sized by simulation"
    assert sized["fifos"] and sized["width_converters"] and sized["resources"] == "estimated"
    for key in (("rtl", False), ("hls", True), ("hls", False)):
        kept = variants[key]["counting"]
        assert kept["fifo_depths"] == "FINN's", key
        assert not kept["fifos"] and not kept["width_converters"], key
    for variant in variants.values():  # compute layers: the totals less FIFOs and converters
        built = report_of(explored, variant)
        for resource in RESOURCES:
            plumbing = sum(
                layer[resource] or 0 for layer in built["layers"] if layer["op_type"] in PLUMBING
            )
            compute = variant["counting"]["compute"][resource]
            assert compute == pytest.approx(built["totals"][resource] - plumbing), variant["id"]
    # the same RTL layers, counted with and without their FIFOs: equal once equalised
    with_fifos, without = variants[("rtl", True)], variants[("rtl", False)]
    assert with_fifos["metrics"]["LUT"] > without["metrics"]["LUT"]
    assert with_fifos["counting"]["compute"] == without["counting"]["compute"]


@pytest.mark.slow
@pytest.mark.xdist_group("explore-counting")  # one exploration per process
def test_unlike_variants_are_ranked_and_averaged_on_their_compute_layers(explored):
    data = json.loads(Path(explored.json_path).read_text())
    counted = data["counting"]
    assert not counted["alike"] and counted["compared_on"] == "compute layers"
    sized = by_choice(explored)[("rtl", True)]["id"]
    kinds = {tuple(k["variants"]): k for k in counted["kinds"]}
    assert any(ids == (sized,) for ids in kinds), kinds
    assert sorted(i for ids in kinds for i in ids) == sorted(v["id"] for v in data["variants"])
    for variant in data["variants"]:
        assert variant["compared"]["LUT"] == variant["counting"]["compute"]["LUT"]
        assert variant["compared"]["fps"] == variant["metrics"]["fps"]
    backend = next(e for e in data["effects"] if e["dimension"] == "backends.matmul")
    assert backend["compared_on"] == "compute layers"
    for value in backend["values"]:
        group = [v for v in data["variants"] if v["choices"]["backends.matmul"] == value["value"]]
        mean = sum(v["counting"]["compute"]["LUT"] for v in group) / len(group)
        assert value["LUT"] == pytest.approx(mean), value


@pytest.mark.slow
@pytest.mark.xdist_group("explore-counting")  # one exploration per process
def test_the_terminal_summary_says_what_differs_and_marks_each_variant(explored, capsys):
    from brainsmith.cli.explore import print_summary

    print_summary(explored.data)
    out = capsys.readouterr().out
    counted = [line for line in out.splitlines() if line.startswith("  counted ")]
    assert len(counted) == 1, out
    assert "not like for like" in counted[0] and "compute layers" in counted[0], counted
    sized = by_choice(explored)[("rtl", True)]["id"]
    assert sized in counted[0], counted
    for line in (x for x in out.splitlines() if x.startswith("  pareto")):
        variant = next(v for v in explored.variants if f"pareto      {v['id']}" in line)
        assert f"[{variant['counting']['tag']}]" in line, line


@pytest.mark.slow
@pytest.mark.xdist_group("explore-counting")  # one exploration per process
def test_the_page_marks_each_variants_counting_and_plots_compute_layers(explored, tmp_path):
    page = html.unescape(Path(explored.html_path).read_text())
    assert "<th>counted</th>" in page
    for variant in explored.variants:
        row = next(r for r in page.split("<tr") if f">{variant['id']}</a>" in r)
        assert f">{variant['counting']['tag']}<" in row, row
    legend = page[page.index("class='legend'") :][:1500]
    assert "not like for like" in legend and "compute layers" in legend
    assert "fps against LUT (compute layers)" in page
    assert "mean LUT (compute layers)" in page
    uncounted = [v["id"] for v in explored.variants if not v["counting"]["fifos"]]
    points = set(re.findall(r"data-uncounted='(v\d+)'", page))
    drawn = {v["id"] for v in explored.variants if not v["same_design_as"]}
    assert points == set(uncounted) & drawn and points
    screenshot(Path(explored.html_path), "explore-counting", tmp_path)
