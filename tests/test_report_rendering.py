"""How report.html and the terminal summary show a build's figures, from report.json contents
as a build writes them (README's quick-start network on the default part): words kept whole,
Python's own noise left out, charts in whole blocks with every layer named, measured and
estimated resources on rows of their own, percentages not rounded up, latency beside fps."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest

from brainsmith.frameworks.finn.build_log import finn_warnings
from brainsmith.report.charts import render_charts
from brainsmith.report.html import render
from tests.support.browser import broken_words

SITE = "/work/main/.venv/lib/python3.11/site-packages"
CODE = "/home/me/my_net_build/finn/build/code_gen_ipgen_MVAU_hls_0_17ztf73n"
WARNINGS = [  # README's quick-start build.log, as finn_warnings reads it
    {"level": "WARNING", "source": "UserWarning", "count": 1,
     "message": "The GemmToMatMul transformation only offers explicit support for version 9 of "
                "the Gemm node, but the ONNX version of the supplied model is 20. Thus the "
                "transformation may fail or return incomplete results. "
                f"({SITE}/qonnx/transformation/gemm_to_matmul.py:57)"},
    {"level": "WARNING", "source": "UserWarning", "count": 1,
     "message": f"Assuming 2D input is NC ({SITE}/qonnx/transformation/infer_data_layouts.py:160)"},
    {"level": "WARNING", "source": "finn_logger", "count": 1,
     "message": "ElementwiseMul_0: lhs_dtype changing from INT32 to INT12"},
    {"level": "WARNING", "source": "ResourceWarning", "count": 1,
     "message": f"unclosed file <_io.TextIOWrapper name='{CODE}/top_MVAU_hls_0.cpp' mode='w' "
                f"encoding='UTF-8'> ({SITE}/finn/custom_op/fpgadataflow/hlsbackend.py:165)"},
]  # fmt: skip

LAYERS = [  # its layers' estimates, as the charts get them
    {"name": "Thresholding_rtl_0", "LUT": 434, "BRAM_18K": 0, "URAM": 0, "DSP": 0, "cycles": 64},
    {"name": "MVAU_hls_0", "LUT": 371, "BRAM_18K": 1, "URAM": 0, "DSP": 0, "cycles": 2048},
    {"name": "MVAU_rtl_0", "LUT": 84, "BRAM_18K": 1, "URAM": 0, "DSP": 1, "cycles": 320},
    {"name": "ElementwiseMul_rtl_0", "LUT": 0, "BRAM_18K": 1, "URAM": 0, "DSP": None,
     "cycles": 10, "not_estimated": ["DSP"]},
    {"name": "ElementwiseAdd_rtl_0", "LUT": 0, "BRAM_18K": 1, "URAM": 0, "DSP": None,
     "cycles": 10, "not_estimated": ["DSP"]},
]  # fmt: skip

ZU7EV = {
    "part": "xczu7ev-ffvc1156-2-e",
    "source": "finn/util/platforms.py",
    "available": {"LUT": 230000, "FF": 460000, "BRAM_18K": 610, "URAM": 92, "DSP": 1728},
    "percent": {"LUT": 0.96, "FF": None, "BRAM_18K": 0.33, "URAM": 0.0, "DSP": 0.06},
}
MEASURED = {  # --synth: Yosys' counts of the same layers
    "tool": "Yosys 0.70", "part": "xczu7ev-ffvc1156-2-e", "family": "xcup", "seconds": 41.1,
    "complete": True,
    "totals": {"LUT": 485, "FF": 1061, "CARRY": 44, "DSP": 1, "BRAM_18K": 1, "BRAM_36K": 0,
               "URAM": 0},
    "estimated": {"LUT": 520.0, "BRAM_18K": 2.0, "URAM": 0.0, "DSP": 1.0},
    "estimate_error": {"LUT": 0.0722, "BRAM_18K": 1.0, "DSP": 0.0},
    "layers": [
        {"name": name, "op_type": name[:-2], "status": "synthesised", "reason": "",
         "counts": counts, "seconds": 20.0, "cached": False, "fixes": [], "log": None}
        for name, counts in (
            ("Thresholding_rtl_0", {"LUT": 374, "FF": 783, "CARRY": 28, "DSP": 0,
                                    "BRAM_18K": 0, "BRAM_36K": 0, "URAM": 0}),
            ("MVAU_rtl_0", {"LUT": 111, "FF": 278, "CARRY": 16, "DSP": 1, "BRAM_18K": 1,
                            "BRAM_36K": 0, "URAM": 0}),
        )
    ],
}  # fmt: skip
ESTIMATED = {"totals": {"LUT": 2208, "BRAM_18K": 2, "URAM": 0, "DSP": 1}, "incomplete": {},
             "utilisation": ZU7EV, "fpga_part": ZU7EV["part"], "clock_ns": 5.0}  # fmt: skip

PERFORMANCE = {"estimated_fps": 97656.25, "estimated_latency_ns": 12260.0, "max_cycles": 2048,
               "max_cycles_layer": "MVAU_hls_0", "critical_path_cycles": 2452}  # fmt: skip
FINISHED = {"seconds": 12.3, "setup_seconds": 3.9, "output_dir": "/home/me/my_net_build",
            "performance": PERFORMANCE, **ESTIMATED}  # fmt: skip


def report(**parts: object) -> dict:
    """A finished build's report.json with ``parts`` in place of its own."""
    found: dict = {"name": "my_net", "status": "ok", "steps": [], "layers": [], **parts}
    return found


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("width", [1280, 900])
def test_the_warnings_table_breaks_no_word(tmp_path: Path, width: int):
    """Levels, sources and the words of messages stay whole; a path wraps at its slashes."""
    page = tmp_path / "report.html"
    page.write_text(render(report(warnings=WARNINGS), {}))
    assert broken_words(page, "table.log td", tmp_path, width) == []


def package_folder(name: str) -> str:
    """Where the installed package ``name`` is."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    return str(Path(spec.origin).parent)


def test_resource_warnings_of_finn_and_qonnx_are_left_out_of_the_report(tmp_path: Path):
    """FINN leaves a file open for each HLS layer it writes code for: Python's ResourceWarning,
    nothing a user can act on, stays in build.log only; a plugin's is reported, one row for
    the files it left open from one line of code."""
    finn, qonnx = package_folder("finn"), package_folder("qonnx")
    plugin = "/home/me/plugins/my_kernel.py:12"
    log = tmp_path / "build.log"
    log.write_text(
        f"WARNING UserWarning: Assuming 2D input is NC ({qonnx}/transformation/infer_data_layouts.py:160)\n"
        "WARNING finn_logger: ElementwiseMul_0: lhs_dtype changing from INT32 to INT12\n"
        f"WARNING ResourceWarning: unclosed file <_io.TextIOWrapper name='{CODE}/top_MVAU_hls_0.cpp' "
        f"mode='w' encoding='UTF-8'> ({finn}/custom_op/fpgadataflow/hlsbackend.py:165)\n"
        f"WARNING ResourceWarning: unclosed file <_io.TextIOWrapper name='{CODE}/hls_syn_MVAU_hls_0.tcl' "
        f"mode='w' encoding='UTF-8'> ({finn}/custom_op/fpgadataflow/hlsbackend.py:202)\n"
        f"WARNING ResourceWarning: unclosed <socket.socket fd=3> ({qonnx}/util/basic.py:40)\n"
        f"WARNING ResourceWarning: unclosed file <_io.TextIOWrapper name='/tmp/a.v'> ({plugin})\n"
        f"WARNING ResourceWarning: unclosed file <_io.TextIOWrapper name='/tmp/b.v'> ({plugin})\n"
    )  # fmt: skip
    found = [(w["source"], w["count"]) for w in finn_warnings(str(log))]
    assert found == [("UserWarning", 1), ("finn_logger", 1), ("ResourceWarning", 2)]


def chart_texts(svg: str) -> dict[str, list[str]]:
    """Per chart of a figure, by its title's first word: the texts drawn in it (the SVG
    names each text it draws as paths in a comment, a chart's title after its ticks)."""
    charts: dict[str, list[str]] = {}
    drawn: list[str] = []
    for text in (t.strip() for t in re.findall(r"<!-- (.*?) -->", svg)):
        if " (total " in text:
            charts[text.split()[0]], drawn = drawn, []
        else:
            drawn.append(text)
    return charts


def test_every_resource_chart_names_the_layers_and_counts_whole_blocks():
    charts = chart_texts(render_charts(LAYERS)["resources"])
    assert sorted(charts) == ["BRAM_18K", "DSP", "LUT"]  # no layer uses URAM
    names = [layer["name"] for layer in LAYERS]
    for resource, texts in charts.items():
        assert [t for t in texts if t in names] == names, resource
        ticks = [t for t in texts if t not in names and t != "not estimated"]
        assert ticks and all(re.fullmatch(r"\d[\d,]*", t) for t in ticks), (resource, ticks)


def summary_rows(page: str) -> dict[str, str]:
    """The summary table of report.html: each row's heading and its cell's markup."""
    table = page.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    return dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table))


def test_measured_and_estimated_resources_are_rows_of_their_own():
    """With ``--synth`` the row called estimated holds the estimates only, the measured
    counts have a row that says so."""
    rows = summary_rows(render(report(**ESTIMATED, synthesis=MEASURED), {}))
    estimated = rows["resources (estimated)"]
    assert estimated.startswith("LUT 2,208 (0.96 %), BRAM_18K 2 (0.33 %)"), estimated
    assert "485" not in estimated and "Yosys" not in estimated
    measured = rows["resources (measured by Yosys)"]
    assert measured.startswith("LUT 485, FF 1,061, CARRY 44, BRAM_18K 1, URAM 0, DSP 1")
    assert list(rows).index("resources (measured by Yosys)") < list(rows).index(
        "resources (estimated)"
    )
    without = summary_rows(render(report(**ESTIMATED), {}))
    assert "resources (measured by Yosys)" not in without
    assert without["resources (estimated)"].startswith("LUT 2,208 (0.96 %)")


def terminal_summary(found: dict, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines ``brainsmith build`` prints when the build of ``found`` ends."""
    from brainsmith.cli.build import print_summary

    capsys.readouterr()
    print_summary(found)
    return capsys.readouterr().out.splitlines()


def test_percentages_are_not_rounded_up(capsys: pytest.CaptureFixture[str]):
    """0.96 % of the part is 0.96 %, not 1.0 %, in the terminal and on the page."""
    lines = terminal_summary(report(**FINISHED), capsys)
    resources = next(line for line in lines if line.startswith("  resources"))
    assert "LUT 2,208 (0.96 %), BRAM_18K 2 (0.33 %), URAM 0 (0.00 %)" in resources, resources
    page = render(report(**FINISHED), {})
    verdict = page.split("<div class='verdict'>", 1)[1].split("</div></div>", 1)[0]
    assert "2,208 (0.96 %)" in verdict
    assert "(0.96 %)" in summary_rows(page)["resources (estimated)"]


def test_a_share_is_never_rounded_to_a_figure_it_does_not_reach():
    from brainsmith.report.units import percent

    assert percent(0.96) == "0.96 %" and percent(99.96) == "99.96 %"
    assert percent(133.07) == "133.07 %" and percent(0.0) == "0.00 %"
    assert percent(0.0, used=3) == "< 0.01 %"  # three LUTs of a part with millions


SIMULATED = {"tool": "Verilator 5", "ok": True, "seconds": 20.0, "summary": "all match",
             "layers": [], "stitched": {"status": "match", "frames": 16, "cycles_per_frame": 2048.0,
                                        "latency_cycles": 2310, "latency_ns": 11550.0}}  # fmt: skip


def first_card_line(page: str) -> str:
    """The first line of report.html's first card, as text."""
    line = page.split("<div class='verdict'><div>", 1)[1].split("</div>", 1)[0]
    return re.sub(r"<[^>]+>", "", line)


@pytest.mark.parametrize(
    ("rtlsim", "said"),
    [
        (None, "latency 12.3 µs (2,452 cycles at 5 ns, estimated)"),
        (SIMULATED, "latency 11.6 µs (2,310 cycles at 5 ns, measured in simulation; "
                    "estimated 2,452 cycles)"),
    ],
)  # fmt: skip
def test_latency_is_beside_fps_on_the_first_card_and_in_the_first_lines(
    rtlsim: dict | None, said: str, capsys: pytest.CaptureFixture[str]
):
    found = report(**FINISHED, rtlsim=rtlsim)
    line = first_card_line(render(found, {}))
    head = "throughput 97,656 fps estimated (frames streaming, one every 2,048 cycles)"
    assert line.startswith(head) and line.endswith(f" · {said}"), line
    lines = terminal_summary(found, capsys)
    start = next(i for i, x in enumerate(lines) if x.startswith("  throughput  97,656 fps"))
    assert lines[start + 1] == "  " + said.replace("latency ", "latency     ", 1)


VERSAL = {**ESTIMATED, "fpga_part": "xcvc1902-vsva2197-2MP-e-S", "utilisation": None}


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        (ESTIMATED, "the resources are estimates: brainsmith synth /home/me/my_net_build counts "
                    "the RTL layers with Yosys; no tool checked the 5 ns clock"),
        (VERSAL, "the resources are estimates Yosys cannot count for xcvc1902-vsva2197-2MP-e-S "
                 "(no Versal family): build for an UltraScale+ part with --synth to measure them "
                 "(--part xczu7ev-ffvc1156-2-e); no tool checked the 5 ns clock"),
        ({**ESTIMATED, "synthesis": MEASURED}, "no tool checked the 5 ns clock"),
    ],
)  # fmt: skip
def test_the_first_screen_says_which_figures_no_tool_checked_and_how_to_measure_them(
    parts: dict, said: str, capsys: pytest.CaptureFixture[str]
):
    """A default build's LUT and DSP are estimates and its clock an assumption: the terminal
    summary and report.html's first card say so, and how to measure them here."""
    found = report(**{**FINISHED, **parts})
    lines = terminal_summary(found, capsys)
    unchecked = [line for line in lines if line.startswith("  unchecked   ")]
    assert len(unchecked) == 1 and unchecked[0].startswith(f"  unchecked   {said}"), lines
    assert unchecked[0].endswith("(no place and route ran)")
    page = render(found, {})
    verdict = page.split("<div class='verdict'>", 1)[1].split("</div></div>", 1)[0]
    assert f"unchecked: {said}" in html.unescape(re.sub(r"<[^>]+>", "", verdict))
