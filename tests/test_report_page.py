"""report.html of a zoo convolutional network, looked at in headless Chromium at 1280 px as an
FPGA engineer first sees it: the verdict against the target, the bottleneck and its cause,
the dataflow picture and the layer table with every column, nothing scrolling sideways; the
screenshot is kept as a test artefact."""

from __future__ import annotations

from pathlib import Path

import pytest

import brainsmith
from tests.support.browser import layout, screenshot
from tests.support.models import REPO

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


@pytest.fixture(scope="module")
def page(hub, tmp_path_factory) -> Path:
    """The residual block of the zoo in RTL at a target no folding reaches."""
    out = tmp_path_factory.mktemp("page") / "out"
    result = brainsmith.build(
        str(REPO / "examples" / "models" / "zoo" / "residual_identity.onnx"), None, str(out),
        options={"target_fps": 10_000_000, "size_fifos": False},  # the page, not the sizing
        prefer="rtl",
    )  # fmt: skip
    assert result.report["target"]["limit"]  # the folding search says why it cannot go faster
    return out / "report.html"


def test_the_first_screen_shows_verdict_bottleneck_picture_and_every_layer_column(page, tmp_path):
    found = layout(page, [".verdict", "svg.dataflow", "table.layers", ".verdict .meter"], tmp_path)
    assert found["window"] == 1280 and found["page"] <= 1280, found
    assert found["scrolling"] == [], found  # the layer table shows every column
    assert len(found["found"]) == 4, found
    html = page.read_text()
    verdict = html[html.index("<div class='verdict'>") : html.index("<div class='warnings'>")]
    assert "target 10,000,000 fps missed" in verdict
    limited = next(line for line in verdict.split("</div>") if "limited by" in line)
    # the sliding window at FINN's most parallel folding (brainsmith's RTL global pool, once
    # left at PE 1 with 520 cycles, is folded by the search now)
    assert "ConvolutionInputGenerator_rtl_0: 102 cycles per frame (the target allows 20)" in limited
    assert "at its most parallel folding" in limited  # the cause, on the first screen
    screenshot(page, "report-residual_identity", tmp_path)


def test_a_note_about_brainsmiths_own_layer_is_not_styled_as_a_warning(page):
    """prefer: rtl takes brainsmith's RTL pooling: the page notes it, as a note (no warning
    colours), naming brainsmith rather than a pip package."""
    html = page.read_text()
    css = html.split("<style>")[1].split("</style>")[0]
    notes = html.split("<div class='notes'>")[1].split("</div>")[0]
    own = "layer GlobalAccPool_rtl is provided by backend brainsmith:GlobalAccPoolRTL"
    assert f"{own} (built into brainsmith)" in notes, notes
    warnings = html.split("<div class='warnings'>")[1].split("</div>")[0]
    assert own not in warnings
    rule = next(line for line in css.splitlines() if line.strip().startswith(".notes {"))
    assert "#fff8e1" not in rule and "#f0d58a" not in rule, rule  # the warnings' yellow
