"""report.html of a board build folded again for a slower clock, rendered from the real
report.json of one (tests/data/ulx3s_refolded_mlp_report.json: ``brainsmith build
examples/models/mlp_4bit.onnx blueprints/mlp.yaml --board ulx3s-85f --bitstream --clock-ns 5
--target-fps 20000``, 200 MHz missed at 132.7 MHz, made again at the PLL's 125.0 MHz): the
part's resources as nextpnr counted them on the first screen, every round in the bitstream's
card, the stand-in's figures only in the details section, clocks to 0.1 MHz."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPORT = Path(__file__).parent / "data" / "ulx3s_refolded_mlp_report.json"


@pytest.fixture(scope="module")
def built() -> tuple[dict, str]:
    from brainsmith.report.html import render

    report = json.loads(REPORT.read_text())
    return report, render(report, {})


def between(page: str, start: str, end: str) -> str:
    return page.split(start, 1)[1].split(end, 1)[0]


def test_the_first_screen_shows_the_resources_nextpnr_placed(built):
    report, page = built
    first = between(page, "<div class='verdict'>", "<div class='verdict bitstream'>")
    placed = report["family_resources"]["placed"]
    assert list(placed) == ["LUT4", "FF", "MULT18", "EBR"]
    for key, counts in placed.items():
        meter = between(first, f"<b>{key}</b> <span class='track measured'>", "</span></span>")
        assert meter and f"{counts['used']:,} of {counts['available']:,} (" in first, key
    shown = page.replace(between(page, "<details class='stand-in'>", "</details>"), "")
    for finns in ("BRAM_18K", "URAM", "<b>LUT</b>", "<b>DSP</b>", "xc7z020clg400-1 ("):
        assert finns not in shown.split("<div class='notes'>")[0], finns


def test_the_bitstream_card_gives_every_round_with_its_clocks_fmax_and_seconds(built):
    report, page = built
    section = report["bitstream"]
    card = between(page, "<div class='verdict bitstream'>", "<div class='notes'>")
    (first,) = section["refolds"]
    assert (
        "<tr><td>1</td><td>200.0 MHz</td><td>200.0 MHz</td><td>132.7 MHz</td><td>not met: " in card
    )
    assert (
        f"<td>{first['seconds']:.0f} s</td><td>skipped (its netlist was thrown away)</td>" in card
    )
    last = report["seconds"] - first["seconds"]
    assert (
        "<tr><td>2 (this bitstream)</td><td>125.9 MHz</td><td>125.0 MHz</td><td>134.5 MHz</td>"
        f"<td>timing met</td><td>{last:.0f} s</td><td>passed</td></tr>"
    ) in card
    rows = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", card))
    assert rows["Fmax"] == "134.5 MHz (nextpnr)"
    assert rows["clock constraint"] == "125.0 MHz, the PLL&#x27;s nearest the 125.9 MHz asked"
    assert rows["critical path"].startswith("within host link, 7.43 ns")
    seconds = section["seconds"]
    assert rows["seconds"] == (
        f"synthesis {seconds['synth']:.1f} s, place and route {seconds['place_route']:.1f} s, "
        f"packing {seconds['pack']:.1f} s, reading back {seconds['unpack']:.1f} s, "
        f"gate-level check {section['netlist_check']['seconds']:.1f} s"
    )
    assert "bit for bit equal to the RTL simulation" in rows["gate-level check"]


def test_every_clock_on_the_page_is_given_to_a_tenth_of_a_megahertz(built):
    _, page = built
    said = re.findall(r"(\d[\d,.]*) ?MHz", page)
    assert said and all(re.fullmatch(r"\d+\.\d", mhz) for mhz in said), said


def test_throughput_and_latency_are_labelled_at_the_plls_clock(built):
    _, page = built
    first = re.sub(r"<[^>]+>", "", between(page, "<div class='verdict'><div>", "</div>"))
    assert first.startswith(
        "throughput 61,035 fps at 125.0 MHz (nextpnr clock, Verilator cycles): frames "
        "streaming, one every 2,048 cycles · estimated 61,496 fps at the 125.9 MHz asked"
    ), first
    assert first.endswith(
        "latency 19.0 µs at 125.0 MHz (nextpnr clock, Verilator cycles): one frame, 2,379 "
        "cycles from its first input to its last output"
    ), first
