"""One vocabulary for an accelerator's two speeds (``brainsmith.report.pace``): throughput,
frames streaming one every pipelined interval, and latency, one frame from its first input to
its last output, each labelled and at the clock the bitstream's PLL makes, in report.html,
the build's summary and ``brainsmith run`` alike; rendered from the run's real board build of
the shipped MLP (its bitstream cached with the run's other bitstreams)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.farm import REPO, lattice_mlp
from tests.support.processes import invoke


def test_the_words_of_each_speed():
    from brainsmith.report.pace import frames_per_second, microseconds, one_frame, streaming

    assert frames_per_second(61035.2) == "61,035 fps" and frames_per_second(6.912) == "6.91 fps"
    assert [microseconds(ns) for ns in (19032.0, 1800.0, 360.0, 123456.0)] == [
        "19.0 µs", "1.80 µs", "0.360 µs", "123 µs"
    ]  # fmt: skip
    assert streaming(2048.0) == "frames streaming, one every 2,048 cycles"
    assert one_frame(2379) == "one frame, 2,379 cycles from its first input to its last output"


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("&#x27;", "'")


@pytest.fixture(scope="module")
def board_build(farm) -> tuple[Path, dict]:
    folder = lattice_mlp(farm)
    return folder, json.loads((folder / "report.json").read_text())


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_a_board_builds_report_labels_throughput_and_latency_at_the_plls_clock(board_build, capsys):
    """The first card, the summary table and the terminal summary say "throughput" with the
    pipelined interval and "latency" with one frame's cycles, at the PLL's clock; FINN's
    estimate at the clock asked is labelled an estimate."""
    from brainsmith.cli.build import print_summary
    from brainsmith.clock import Clock
    from brainsmith.report.html import render
    from brainsmith.report.pace import frames_per_second, microseconds, one_frame, streaming

    report = board_build[1]
    perf, section = report["performance"], report["bitstream"]
    clock = Clock.from_mhz(perf["clock_mhz"])
    assert perf["clock_mhz"] == min(section["clock_mhz"], *section["fmax_mhz"].values())
    throughput = f"throughput {frames_per_second(perf['fps'])} at {clock}"
    interval, frame = streaming(perf["cycles_per_frame"]), one_frame(perf["latency_cycles"])

    page = render(report, {})
    card = page.split("<div class='verdict'>", 1)[1].split("<div class='verdict bitstream'>")[0]
    first = text_of(card.split("</div>", 1)[0])
    assert first.startswith(throughput) and interval in first, first
    assert f"latency {microseconds(perf['latency_ns'])} at {clock}" in first and frame in first
    rows = {k: text_of(v) for k, v in re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", page)}
    assert rows["throughput"].startswith(throughput.removeprefix("throughput ")), rows
    assert interval in rows["throughput"] and frame in rows["latency"]
    assert rows["estimated throughput"].startswith(frames_per_second(perf["estimated_fps"]))
    assert "estimated" in rows["estimated latency"]
    assert rows["clock"].endswith(f"asked; the PLL makes {Clock.from_mhz(section['clock_mhz'])}")

    print_summary(report)
    screen = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    said = next(i for i, line in enumerate(screen) if line.startswith("throughput "))
    assert screen[said].startswith(throughput) and interval in screen[said]
    assert screen[said + 1].startswith(f"latency {microseconds(perf['latency_ns'])} at {clock}")
    assert frame in screen[said + 1]


@pytest.mark.slow
@pytest.mark.xdist_group("synthesis")
def test_run_on_the_simulated_board_says_the_reports_throughput_and_its_own_latency(board_build):
    """``brainsmith run --simulate`` of a board build: throughput first, the very figure of
    the report (the PLL's clock over the build's interval), then the latency the design
    counted for one frame, both at the PLL's clock, in the report's words."""
    from brainsmith.clock import Clock
    from brainsmith.report.pace import frames_per_second, streaming

    folder, report = board_build
    perf = report["performance"]
    done = invoke("run", str(folder), "--simulate", cwd=REPO)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("accelerator at "))
    clock = Clock.from_mhz(report["bitstream"]["clock_mhz"])
    assert line.startswith(
        f"accelerator at {clock} (the bitstream's PLL): throughput "
        f"{frames_per_second(perf['fps'])}, {streaming(perf['cycles_per_frame'])} "
        "(the build's interval, Verilator); latency "
    ), line
    assert re.search(
        r"; latency [\d.]+ µs, one frame, [\d,]+ cycles from its first input to its last "
        r"output \(its own count\)$", line
    ), line  # fmt: skip
