"""The report tells the whole truth: the shipped transformer block built with the MLP
blueprint and a throughput target FINN's SetFolding cannot meet, run as a user runs it — from a folder
that holds its own ``matplotlib.py`` — and its terminal summary, report.json and
report.html (looked at in headless Chromium)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from tests.support.browser import layout, screenshot
from tests.support.models import REPO, TRANSFORMER

BRAINSMITH = str(Path(sys.executable).with_name("brainsmith"))
FAKE_MATPLOTLIB = (
    "import pathlib\n"
    "pathlib.Path(__file__).with_name('MATPLOTLIB_IMPORTED').write_text('imported')\n"
    "raise ImportError('a matplotlib.py in the working directory')\n"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(terminal result, report.json, report.html text, output folder, working folder)."""
    work = tmp_path_factory.mktemp("work")
    (work / "matplotlib.py").write_text(FAKE_MATPLOTLIB)
    blueprint = work / "fast.yaml"
    blueprint.write_text(  # FINN's SetFolding: its warnings and a target it misses
        f"name: fast\nextends: {REPO / 'blueprints' / 'mlp.yaml'}\nbuild:\n  target_fps: 10000000\n"
        "  folding: {search: finn}\n"
    )
    out = work / "out"
    result = subprocess.run(
        [BRAINSMITH, "build", str(TRANSFORMER), str(blueprint), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    return result, report, (out / "report.html").read_text(), out, work


pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def test_nodes_left_on_the_cpu_are_reported(built):
    result, report, html, _, _ = built
    cpu = report["cpu_nodes"]
    assert cpu["op_types"] == {"LayerNormalization": 1, "Mul": 1, "Softmax": 1}
    assert cpu["count"] == 3 and cpu["model"] == "final_parent.onnx"
    text = "3 node(s) stay on the CPU, outside the accelerator: LayerNormalization, Mul, Softmax"
    assert f"warning     {text}" in result.stdout
    assert text in html


def test_missed_target_fps_names_the_bottleneck_layer(built):
    result, report, html, _, _ = built
    goal = report["target"]
    assert goal["target_fps"] == 10_000_000 and goal["met"] is False
    assert goal["estimated_fps"] < goal["target_fps"]
    assert goal["bottleneck"] in {layer["name"] for layer in report["layers"]}
    assert goal["bottleneck_cycles"] > goal["target_cycles"] == 20  # 5 ns clock
    assert "target 10,000,000 fps MISSED" in result.stdout
    assert f"the slowest layer {goal['bottleneck']} takes" in result.stdout
    assert "target 10,000,000 fps missed" in html and "class='missed'" in html


def test_utilisation_is_a_percentage_of_the_part(built):
    result, report, html, _, _ = built
    use = report["utilisation"]
    assert use["part"] == "xcvc1902-vsva2197-2MP-e-S" and use["available"]["LUT"] == 899_840
    lut = report["totals"]["LUT"]
    assert use["percent"]["LUT"] == round(100 * lut / 899_840, 2) > 0
    assert use["percent"]["FF"] is None  # FINN does not estimate flip-flops
    assert "%) of xcvc1902-vsva2197-2MP-e-S" in result.stdout
    assert f"LUT {lut:,} ({use['percent']['LUT']:.2f} %)" in html  # MVAU_rtl: brainsmith's


def test_utilisation_of_a_board_part_uses_finns_platform_table():
    from brainsmith.report.contents import utilisation

    use = utilisation("xc7z020clg400-1", {"LUT": 5320, "BRAM_18K": 28, "URAM": 0, "DSP": 22})
    assert use["percent"] == {"LUT": 10.0, "FF": None, "BRAM_18K": 10.0, "URAM": None, "DSP": 10.0}
    assert use["source"] == "finn/util/platforms.py"
    assert utilisation("xcku5p-ffvb676-2-e", {"LUT": 1})["percent"] is None  # no table


def test_layers_show_data_types_bit_widths_and_memory_style(built):
    _, report, html, out, _ = built
    mvau = next(layer for layer in report["layers"] if layer["op_type"] == "MVAU")
    assert (mvau["input_datatype"], mvau["weight_datatype"]) == ("INT8", "INT4")
    assert (mvau["input_bits"], mvau["weight_bits"]) == (8, 4)
    assert mvau["output_bits"] == int(re.sub(r"\D", "", mvau["output_datatype"]))
    assert mvau["mem_mode"] == "internal_decoupled" and mvau["ram_style"] == "auto"
    assert (out / mvau["code"]).is_dir() and list((out / mvau["code"]).iterdir())
    for column in ("data types", "memory"):
        assert f"<th>{column}</th>" in html
    types = f"INT8 → {mvau['output_datatype']}, weights INT4"
    assert f"<td>{types}</td><td>internal_decoupled, auto</td>" in html


def test_finns_warnings_from_build_log_are_listed(built):
    result, report, html, out, _ = built
    message = "One or more nodes did not reach the target throughput."
    assert message in (out / "build.log").read_text()
    (entry,) = [w for w in report["warnings"] if w["message"] == message]
    assert entry["source"] == "finn_logger" and entry["count"] >= 1
    assert f"FINN        {message}" in result.stdout
    assert message in html and "Warnings in build.log" in html


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.hrefs += [value for name, value in attrs if tag == "a" and name == "href"]


def test_every_link_in_the_page_opens_a_file_of_the_build(built):
    from urllib.parse import unquote

    _, report, html, out, _ = built
    parser = Links()
    parser.feed(html)
    hrefs = {unquote(h) for h in parser.hrefs}
    for step in report["steps"]:
        if step["status"] == "ok":
            assert step["model"] in hrefs
    for layer in report["layers"]:
        assert f"{layer['code']}/" in hrefs
    assert {"final.onnx", "final_parent.onnx", "build.log", "finn/build/"} <= hrefs
    for href in hrefs:
        assert (out / href).exists(), href


def test_charts_leave_out_what_has_nothing_to_show(built):
    _, report, html, _, _ = built
    assert report["totals"]["URAM"] == 0
    assert "URAM (total" not in html and "LUT (total" in html


def test_a_report_without_layers_has_no_charts_and_says_so():
    from brainsmith.report.charts import render_charts
    from brainsmith.report.html import render

    assert render_charts([]) == {}
    assert render_charts([{"name": "a", "LUT": 0, "BRAM_18K": 0, "cycles": 0}]) == {}
    page = render({"name": "x", "status": "failed", "steps": [], "layers": []}, {})
    assert "<svg" not in page and "per layer" not in page
    assert "No hardware layers" in page


def test_the_page_links_the_folding_config_finn_s_reports_and_a_failed_step_s_model(tmp_path):
    from brainsmith.report.html import render

    (tmp_path / "finn" / "report").mkdir(parents=True)
    (tmp_path / "finn" / "auto_folding_config.json").write_text("{}")
    (tmp_path / "finn" / "report" / "op_and_param_counts.json").write_text("{}")
    (tmp_path / "intermediate_models").mkdir()
    (tmp_path / "intermediate_models" / "04_hardware_inference_failed.onnx").write_bytes(b"")
    report = {"name": "x", "status": "failed", "steps": [], "layers": []}
    page = render({**report, "output_dir": str(tmp_path)}, {})
    for path in (
        "finn/auto_folding_config.json",
        "finn/report/op_and_param_counts.json",
        "finn/report/",
        "intermediate_models/04_hardware_inference_failed.onnx",
    ):
        assert f"href='{path}'" in page or f'href="{path}"' in page, path


def test_a_resource_finn_does_not_estimate_is_labelled_not_drawn_as_zero():
    from brainsmith.report.charts import render_charts

    layers = [
        {"name": "MVAU_rtl_0", "LUT": None, "DSP": 4, "cycles": 64, "not_estimated": ["LUT"]},
        {"name": "Thresholding_rtl_0", "LUT": 120, "DSP": 0, "cycles": 32, "not_estimated": []},
    ]
    svg = render_charts(layers)["resources"]
    assert svg.count("not estimated") == 1 and "LUT (total at least 120)" in svg


def test_layers_without_estimates_are_shown_not_dropped(built, tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.estimation.estimates import estimates
    from brainsmith.report.html import render

    _, report, _, out, _ = built
    reports = tmp_path / "report"
    shutil.copytree(out / "finn" / "report", reports)
    missing = next(x["name"] for x in report["layers"] if x["op_type"] == "MVAU")
    for name in ("estimate_layer_resources.json", "estimate_layer_cycles.json"):
        data = json.loads((reports / name).read_text())
        del data[missing]
        (reports / name).write_text(json.dumps(data))
    model = ModelWrapper(str(out / "final.onnx"))
    model.get_node_from_name(missing).domain = "an.uninstalled.plugin"  # nothing can estimate it
    found = estimates(str(reports), model, str(out), report["fpga_part"])
    layer = next(entry for entry in found["layers"] if entry["name"] == missing)
    assert layer["estimated"] is False and layer["LUT"] is None and layer["cycles"] is None
    page = render({**report, **found}, {})
    assert "no FINN estimate (resources and cycles) for this layer" in page
    assert f"1 layer(s) have no FINN estimate and are not in the totals: {missing}" in page


def test_numbers_are_formatted_one_way():
    from brainsmith.report.text import number

    assert number(1562500.0, " fps") == "1,562,500 fps"
    assert number(3571428.57) == "3,571,429"
    assert number(4352) == "4,352" and number(1.92, " µs") == "1.92 µs"
    assert number(0.000482) == "0.000482" and number(None) == "-"


def test_the_chart_helper_does_not_import_the_working_folders_matplotlib(built):
    _, _, html, _, work = built
    assert not (work / "MATPLOTLIB_IMPORTED").exists()
    assert html.count("<svg") == 3  # two charts and the dataflow picture


def test_chart_worker_is_isolated_from_the_working_directory(tmp_path):
    (tmp_path / "matplotlib.py").write_text(FAKE_MATPLOTLIB)
    code = (
        "import json\n"
        "from brainsmith.report.charts import ChartWorker\n"
        "rows = [{'name': 'MVAU_0', 'LUT': 10, 'BRAM_18K': 1, 'URAM': 0, 'DSP': 2, 'cycles': 8}]\n"
        "worker = ChartWorker()\n"
        "worker.submit(rows)\n"
        "print(json.dumps(sorted(worker.charts(rows))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert not (tmp_path / "MATPLOTLIB_IMPORTED").exists(), result.stderr
    assert json.loads(result.stdout) == ["cycles", "resources"]


def test_report_with_warnings_renders_in_chromium(built, tmp_path):
    _, _, html, out, _ = built
    assert 'src="http' not in html and "<link" not in html  # nothing fetched
    png = screenshot(
        out / "report.html", "build-report-warnings", tmp_path, width=1300, height=1400
    )
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))[..., :3]
    colours = np.unique(pixels.reshape(-1, 3).round(2), axis=0)
    assert len(colours) > 20  # text, tables and bars, not a blank page
    warning_box = np.all(np.abs(pixels - np.array([1.0, 0.973, 0.882])) < 0.01, axis=-1)
    assert warning_box.sum() > 10_000  # the yellow warnings box at the top is visible
    assert warning_box[:400].any()


def test_a_warning_whose_message_follows_on_the_next_lines_is_shown_whole(tmp_path):
    from brainsmith.frameworks.finn.build_log import finn_warnings

    log = tmp_path / "build.log"
    log.write_text(
        "WARNING finn_logger: \nNode MVAU_hls_0: weight stream too wide\n  reverting SIMD\n"
        "WARNING finn_logger: one line\nWARNING finn_logger: \n\nINFO x: y\n"
    )
    assert [w["message"] for w in finn_warnings(str(log))] == [
        "Node MVAU_hls_0: weight stream too wide reverting SIMD",  # before: an empty line
        "one line",
    ]


def test_first_screen_says_if_it_is_fast_enough_what_limits_it_and_what_it_costs(built):
    from brainsmith.report.text import number

    _, report, html, _, _ = built
    goal, start = report["target"], html.index("<div class='verdict'>")
    assert start < html.index("<div class='warnings'>") < html.index('<table class="summary">')
    verdict = html[start : html.index("<div class='warnings'>")]
    assert "target 10,000,000 fps missed" in verdict
    assert (
        f"limited by {goal['bottleneck']}: {number(goal['bottleneck_cycles'])} cycles per "
        "frame (the target allows 20)" in verdict
    )
    assert "on the CPU, outside the accelerator: LayerNormalization, Mul, Softmax" in verdict
    shares = {k: v for k, v in report["utilisation"]["percent"].items() if v is not None}
    assert shares and all(f"<b>{k}</b>" in verdict and f"({v:.2f} %)" in verdict
                          for k, v in shares.items())  # fmt: skip


def test_the_dataflow_picture_is_written_and_shown(built):
    import xml.etree.ElementTree as ET

    from brainsmith.report.picture import PLUMBING

    _, report, html, out, _ = built
    picture = (out / "dataflow.svg").read_text()
    assert picture in html
    titles = {t.text for t in ET.fromstring(picture).iter("{http://www.w3.org/2000/svg}title")}
    assert titles == {x["name"] for x in report["layers"] if x["op_type"] not in PLUMBING}
    assert "bottleneck</text>" in picture and "on the CPU" in picture


def test_the_cycles_chart_draws_the_target_and_the_layers_over_it_in_red():
    from brainsmith.report.charts import OVER, render_charts
    from brainsmith.report.contents import chart_rows

    layers = [
        {"name": n, "estimated": True, "cycles": c, "LUT": 1} for n, c in (("a", 90), ("b", 40))
    ]
    assert OVER not in render_charts(chart_rows(layers))["cycles"]
    assert OVER in render_charts(chart_rows(layers), target_cycles=60)["cycles"]


def test_charts_drawn_again_in_one_process_are_the_ones_their_layers_give():
    """A process keeps the last charts it drew by what they show: the same layers give the
    same charts, a layer changed in any figure its own, and at most KEPT are kept."""
    from brainsmith.report import charts
    from brainsmith.report.contents import chart_rows

    def rows(cycles: int, lut: int = 1) -> list:
        return chart_rows([{"name": "a", "estimated": True, "cycles": cycles, "LUT": lut}])

    first = charts.render_charts(rows(90))
    assert charts.render_charts(rows(90)) == first
    assert charts.render_charts(rows(91))["cycles"] != first["cycles"]
    assert charts.render_charts(rows(90, lut=7))["resources"] != first["resources"]
    assert charts.render_charts(rows(90), target_cycles=60) != first
    for cycles in range(100, 100 + charts.KEPT + 1):
        charts.render_charts(rows(cycles))
    assert len(charts._DRAWN) == charts.KEPT
    again = charts.render_charts(rows(90))  # drawn anew once forgotten: the same but its ids
    ids = re.compile(r'(id="|#)[a-z]+[0-9a-f]{10}')  # matplotlib's svg ids
    assert {k: ids.sub("", v) for k, v in again.items()} == {
        k: ids.sub("", v) for k, v in first.items()
    }


def test_the_page_fits_1280_pixels(built, tmp_path):
    """Wide tables (layers, steps, RTL simulation) scroll inside their own box; the page
    itself never scrolls sideways."""
    from brainsmith.report.html import render

    _, report, _, _, _ = built
    names = [x["name"] for x in report["layers"]] + ["StreamingDataWidthConverter_rtl_0"]
    simulated = [  # as verify: rtlsim records each layer
        {"name": name, "op_type": name.rpartition("_")[0], "status": "match", "frames": 16,
         "cycles_per_frame": 192.0, "latency_cycles": 210, "estimated_cycles": 192,
         "compile_seconds": 0.001, "compile_cached": True, "estimate_error": 0.0}
        for name in names
    ]  # fmt: skip
    stitched = {"status": "match", "frames": 16, "layers": 56, "cycles_per_frame": 1772.0,
                "estimated_cycles_per_frame": 1797, "latency_cycles": 2390, "fps": 112866.8,
                "latency_ns": 11950.0, "estimate_error": -0.014, "estimate_tolerance": 0.1,
                "within_tolerance": True, "compile_seconds": 14.6, "compile_cached": False,
                "fifos": [{"name": f"StreamingFIFO_rtl_{i}", "after": a, "before": b,
                           "max_occupancy": 47} for i, (a, b) in enumerate(itertools.pairwise(names))]}  # fmt: skip
    section = {"tool": "Verilator 5", "seconds": 20.0, "summary": "all match",
               "layers": simulated, "stitched": stitched}  # fmt: skip
    page = tmp_path / "report.html"
    page.write_text(render({**report, "rtlsim": section}, {}))
    found = layout(page, ["table.layers"], tmp_path)
    assert found["window"] == 1280 and found["page"] <= found["window"], found


def test_layers_show_macs_parameters_and_the_cycles_over_the_target(built):
    _, report, html, out, _ = built
    counts = json.loads((out / "finn" / "report" / "op_and_param_counts.json").read_text())
    mvau = next(x for x in report["layers"] if x["op_type"] == "MVAU")
    found = counts[mvau["name"]]
    assert mvau["MACs"] == sum(v for k, v in found.items() if k.startswith("op_")) > 0
    assert mvau["params"] == sum(v for k, v in found.items() if k.startswith("param_")) > 0
    allowed = report["target"]["target_cycles"]
    slow = [x for x in report["layers"] if (x["cycles"] or 0) > allowed]
    assert slow and html.count("class='num missed'") == len(slow)
    assert f"over the {allowed} cycles the target allows" in html


def test_a_processs_later_builds_draw_their_charts_without_a_helper_process():
    code = (
        "import json\n"
        "from brainsmith.report.charts import ChartWorker\n"
        "rows = [{'name': 'MVAU_0', 'LUT': 10, 'BRAM_18K': 1, 'URAM': 0, 'DSP': 2, 'cycles': 8}]\n"
        "drawn = []\n"
        "for _ in range(3):\n"
        "    worker = ChartWorker()\n"
        "    drawn.append((worker.process is not None, sorted(worker.charts(rows))))\n"
        "print(json.dumps(drawn))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    charts = ["cycles", "resources"]
    assert json.loads(result.stdout) == [[True, charts], [False, charts], [False, charts]]
