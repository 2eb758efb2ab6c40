"""Estimates that never undercount and FINN warnings that are not stale: the shipped CNV
(Pool_hls, MVAU_hls and MVAU_rtl layers) and MLP built with ``brainsmith build`` as a user
runs it, with FINN's SetFolding run before the final folding (the order in which FINN's
throughput warnings go stale), and their summary, report.json and report.html."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from brainsmith.report.units import RESOURCES
from tests.support.browser import layout
from tests.support.models import MLP, REPO
from tests.support.processes import invoke

CNV = REPO / "examples" / "models" / "cnv.onnx"
# FINN's SetFolding first, then the blueprint's own folding: FINN's warnings are logged
# before the folding is final.
STEPS = ["cleanup", "qonnx_to_finn", "streamline", "hardware_inference", "specialize",
         "finn:step_target_fps_parallelization"]  # fmt: skip
FINN_NUMBERS = re.compile(r"Estimated: \d+ \(cyc/frame\), Target: \d+ \(cyc/frame\)")
VERDICT = "One or more nodes did not reach the target throughput."
LIMIT = "SIMD 1 is the largest divisor of IFMChannels 32 that fits (fully parallel)"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def build(work: Path, name: str, model: Path, parent: str, steps: list[str], *args: str):
    """``brainsmith build`` with a blueprint extending ``parent``: (result, report, html, out)."""
    blueprint = work / f"{name}.yaml"
    blueprint.write_text(
        f"name: {name}\nextends: {REPO / 'blueprints' / parent}\n"
        f"steps: {json.dumps(steps)}\nbuild:\n  verify: none\n"
    )
    out = work / name
    result = invoke("build", str(model), str(blueprint), "-o", str(out), "-q", *args, cwd=REPO,
                    env={"COLUMNS": "250"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    return result, report, (out / "report.html").read_text(), out


@pytest.fixture(scope="module")
def cnv(hub, tmp_path_factory):
    """The CNV at its blueprint's 100,000 fps: FINN folds, then the folding step."""
    work = tmp_path_factory.mktemp("cnv")
    return build(work, "cnv", CNV, "cnv.yaml", [*STEPS, "folding", "estimates", "codegen"])


@pytest.fixture(scope="module")
def mlp_missed(hub, tmp_path_factory):
    """The MLP folded by FINN alone for 100,000,000 fps: 2 cycles a frame, out of reach."""
    work = tmp_path_factory.mktemp("mlp")
    steps = [*STEPS, "estimates"]
    return build(work, "mlp", MLP, "mlp.yaml", steps, "--target-fps", "100000000")


def layer(report: dict, name: str) -> dict:
    return next(entry for entry in report["layers"] if entry["name"] == name)


def html_row(html: str, name: str) -> str:
    row = next(row for row in html.split("<tr>") if f">{name}</" in row.split("</td>")[0])
    return row.split("</tr>")[0]  # the last row of a table is followed by the page


# -- what FINN does not estimate ---------------------------------------------------------


def finn_stubs() -> dict[str, tuple[str, ...]]:
    """Per op type of FINN: the resources whose estimate is HWCustomOp's placeholder."""
    from finn.custom_op.fpgadataflow import hls, rtl
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

    methods = dict(zip(RESOURCES, ("lut", "bram", "uram", "dsp"), strict=True))
    found = {}
    for name, cls in {**hls.custom_op, **rtl.custom_op}.items():
        stubs = tuple(
            key
            for key, short in methods.items()
            if getattr(cls, f"{short}_estimation") is getattr(HWCustomOp, f"{short}_estimation")
        )
        if stubs:
            found[name] = stubs
    return found


def test_the_not_estimated_table_is_what_finns_code_says(cnv):
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.estimation.coverage import NOT_ESTIMATED

    expected = {**finn_stubs(), "MVAU_rtl": ("LUT",), "VVAU_rtl": ("LUT",)}
    assert {k: set(v) for k, v in NOT_ESTIMATED.items()} == {k: set(v) for k, v in expected.items()}
    assert "MVAU_hls" not in NOT_ESTIMATED  # its DSP 0 with resType lut is a real estimate
    # MVAU_rtl's LUT "estimate" is a fixed 0 whatever the folding, unlike its DSPs.
    _, _, _, out = cnv
    model = ModelWrapper(str(out / "final.onnx"))
    mvau = getCustomOp(model.get_nodes_by_op_type("MVAU_rtl")[0])
    part = "xcvc1902-vsva2197-2MP-e-S"
    luts, dsps = set(), set()
    for pe in (1, mvau.get_nodeattr("MH")):
        for simd in (1, mvau.get_nodeattr("MW")):
            mvau.set_nodeattr("PE", pe)
            mvau.set_nodeattr("SIMD", simd)
            luts.add(mvau.lut_estimation(part))
            dsps.add(mvau.dsp_estimation(part))
    assert luts == {0} and len(dsps) > 1


def test_layers_without_an_estimate_say_not_estimated_in_report_json(cnv):
    _, report, _, _ = cnv
    pools = [x for x in report["layers"] if (x["op_type"], x["backend"]) == ("Pool", "hls")]
    assert len(pools) == 2
    for pool in pools:
        assert pool["not_estimated"] == list(RESOURCES)
        assert all(pool[key] is None for key in RESOURCES) and pool["cycles"] > 0
    rtl = layer(report, "MVAU_rtl_0")  # its LUTs, which FINN does not estimate, brainsmith's
    assert rtl["not_estimated"] == [] and rtl["LUT"] > 0 and rtl["DSP"] >= 1
    assert rtl["estimated_by"] == {
        "LUT": "brainsmith", "BRAM_18K": "finn", "URAM": "finn", "DSP": "finn",
    }  # fmt: skip
    for hls in (x for x in report["layers"] if x["op_type"] == "MVAU" and x["backend"] == "hls"):
        assert hls["DSP"] == 0 and hls["not_estimated"] == []  # FINN's model says 0
    partial = report["incomplete"]
    assert set(partial["LUT"]) == {p["name"] for p in pools}
    assert set(partial["BRAM_18K"]) == {p["name"] for p in pools}
    estimated = sum(x["LUT"] for x in report["layers"] if x["LUT"] is not None)
    assert report["totals"]["LUT"] == estimated  # the number is kept; incomplete says more


def test_totals_say_at_least_in_the_summary_and_the_page(cnv):
    result, report, html, _ = cnv
    lut = report["totals"]["LUT"]
    assert f"resources   LUT at least {lut:,} (" in result.stdout
    assert "not estimated by FINN, so not in these totals: LUT of Pool_hls x2;" in (result.stdout)
    assert f"LUT at least {lut:,} (" in html
    assert "not estimated by FINN, so not in these totals: LUT of Pool_hls x2;" in html
    assert html_row(html, "Pool_hls_0").count("not estimated") == 4
    assert "not estimated" not in html_row(html, "MVAU_rtl_0")
    assert "not estimated" not in html_row(html, "MVAU_hls_0")


# -- FINN's throughput warnings after folding -------------------------------------------


def test_a_stale_throughput_warning_is_dropped_when_the_final_folding_meets_the_target(cnv):
    result, report, html, out = cnv
    log = (out / "build.log").read_text()
    assert VERDICT in log and FINN_NUMBERS.search(log)  # FINN did warn while folding
    assert "target 100,000 fps met" in result.stdout
    for text in (result.stdout, html, json.dumps(report["warnings"])):
        assert "did not reach the target throughput" not in text
        assert not FINN_NUMBERS.search(text)
    assert "FINN's folding logged before the folding was final are left out" in html
    goal = report["target"]
    assert goal["met"] and goal["over_target"] == [] and goal["finn_warnings_superseded"] >= 2
    assert all(x["cycles"] <= goal["target_cycles"] == 2000 for x in report["layers"])


def test_a_missed_target_shows_final_cycles_instead_of_finns_numbers(mlp_missed):
    result, report, html, out = mlp_missed
    log = (out / "build.log").read_text()
    stale = re.search(r"MVAU_rtl_0: .*Estimated: (\d+) \(cyc/frame\), Target: 2 ", log)
    assert stale is not None  # FINN's number from inside its search
    final = {x["name"]: x["cycles"] for x in report["layers"]}
    assert final["MVAU_rtl_0"] != int(stale.group(1))
    for text in (result.stdout, html, json.dumps(report["warnings"])):
        assert not FINN_NUMBERS.search(text) and "running second pass" not in text
    slow = {name: cycles for name, cycles in final.items() if cycles > 2}
    statement = (
        f"after folding, {len(slow)} layer(s) take more than the 2 cycles per frame the "
        "target allows: "
    )
    assert statement in result.stdout and statement in html
    assert f"MVAU_rtl_0 {final['MVAU_rtl_0']}" in result.stdout.split(statement)[1]
    goal = report["target"]
    assert not goal["met"] and goal["target_cycles"] == 2
    assert {x["name"]: x["cycles"] for x in goal["over_target"]} == slow
    assert any(w["message"] == VERDICT for w in report["warnings"])  # confirmed, so kept


def test_finns_open_files_stay_in_build_log_and_long_warnings_wrap_within_1280_pixels(
    cnv, tmp_path
):
    """FINN leaves a file open for each HLS layer it writes code for: a ResourceWarning per
    file in build.log, none in the report. A long message wraps instead of widening the
    page."""
    from brainsmith.report.html import render

    _, report, _, out = cnv
    logged = (out / "build.log").read_text().count("WARNING ResourceWarning: unclosed file")
    assert logged >= 4
    assert [w for w in report["warnings"] if w["source"] == "ResourceWarning"] == []
    deep = "/".join(["a_folder_with_a_long_name"] * 12)
    long = {"level": "WARNING", "source": "ResourceWarning", "count": 1,
            "message": f"unclosed file <_io.TextIOWrapper name='{deep}/top.cpp' mode='w'>"}  # fmt: skip
    page = out / "wide-warnings.html"
    page.write_text(render({**report, "warnings": [*report["warnings"], long]}, {}))
    found = layout(page, ["table.log"], tmp_path)
    assert found["page"] <= found["window"] == 1280 and found["found"] == ["table.log"], found


def test_warnings_are_kept_when_cycles_cannot_confirm_them():
    from brainsmith.report.contents import reassess_warnings, target

    warnings = [{"level": "WARNING", "source": "finn_logger", "message": VERDICT, "count": 1}]
    goal = target({"estimated_fps": 10.0}, 100, 5.0, [{"name": "a", "cycles": None}])
    assert goal is not None and goal["over_target"] is None
    assert reassess_warnings(warnings, goal) == (warnings, 0)
    assert reassess_warnings(warnings, None) == (warnings, 0)


# -- why the bottleneck is the bottleneck ----------------------------------------------


def folding_record(report: dict, cycles: int | None = None) -> dict:
    name = report["target"]["bottleneck"]
    final = cycles if cycles is not None else report["target"]["bottleneck_cycles"]
    return {
        "search": "brainsmith",
        "target_cycles": report["target"]["target_cycles"],
        "layers": {name: {"cycles": final, "limit": LIMIT}},
        "bottleneck": name,
        "limit": LIMIT,
    }


def summary(report: dict, capsys) -> str:
    from brainsmith.cli.build import print_summary

    capsys.readouterr()
    print_summary(report)
    return capsys.readouterr().out


def test_the_folding_records_limit_is_shown_next_to_the_bottleneck(cnv, tmp_path, capsys):
    from brainsmith.frameworks.finn.folding.record import read_record
    from brainsmith.report.contents import target
    from brainsmith.report.html import render

    _, report, html, out = cnv
    assert report["target"]["limit"] is None and "<th>bottleneck</th>" not in html
    assert "bottleneck  " not in summary(report, capsys)  # no record of a limit: nothing new
    reports = tmp_path / "report"
    shutil.copytree(out / "finn" / "report", reports)
    (reports / "folding.json").write_text(json.dumps(folding_record(report)))
    folding, problem = read_record(str(reports))
    assert problem is None
    goal = target(
        report["performance"], report["target_fps"], report["clock_ns"], report["layers"], folding
    )
    assert goal is not None and goal["limit"] == LIMIT and goal["folding_search"] == "brainsmith"
    updated = {**report, "target": goal}
    name, cycles = goal["bottleneck"], goal["bottleneck_cycles"]
    line = f"{name} takes {cycles:,} cycles per frame: {LIMIT}"
    assert f"bottleneck  {line}" in summary(updated, capsys)
    assert f"<tr><th>bottleneck</th><td>{line}</td></tr>" in render(updated, {})


def test_of_layers_tied_at_the_slowest_the_report_names_the_one_folding_names(cnv):
    """After balancing, many layers take the bottleneck's cycles; FINN's performance report
    names the first of them. The report names the one the folding record gives a reason for
    (before: BERT-tiny's report named DuplicateStreams_rtl_0 with no reason, while the
    record said OuterShuffle_rtl_7 was limited by the part's DSPs)."""
    from brainsmith.report.contents import target

    _, report, _, _ = cnv
    cycles, first = report["target"]["bottleneck_cycles"], report["target"]["bottleneck"]
    tied = next(x["name"] for x in report["layers"] if x["name"] != first)
    layers = [{**x, "cycles": cycles} if x["name"] == tied else x for x in report["layers"]]
    record = {
        "search": "brainsmith",
        "target_cycles": report["target"]["target_cycles"],
        "layers": {tied: {"cycles": cycles, "limit": LIMIT}},
        "bottleneck": tied,
        "limit": LIMIT,
        "cycles": cycles,
    }
    goal = target(report["performance"], report["target_fps"], report["clock_ns"], layers, record)
    assert goal is not None and goal["bottleneck"] == tied and goal["limit"] == LIMIT
    elsewhere = {**record, "bottleneck": "no_such_layer"}
    goal = target(
        report["performance"], report["target_fps"], report["clock_ns"], layers, elsewhere
    )
    assert goal is not None and goal["bottleneck"] == first


def test_a_record_of_another_folding_or_a_broken_one_adds_nothing(cnv, tmp_path):
    from brainsmith.frameworks.finn.folding.record import read_record
    from brainsmith.report.contents import bottleneck_limit

    _, report, _, _ = cnv
    cycles = report["target"]["bottleneck_cycles"]
    name = report["target"]["bottleneck"]
    stale = folding_record(report, cycles + 1)  # a later step changed that layer's folding
    assert bottleneck_limit(stale, name, cycles) is None
    overall = {"layers": {}, "bottleneck": name, "limit": LIMIT, "cycles": cycles}
    assert bottleneck_limit(overall, name, cycles) == LIMIT
    assert bottleneck_limit({**overall, "cycles": cycles + 1}, name, cycles) is None
    assert bottleneck_limit(overall, "another_layer", cycles) is None
    (tmp_path / "folding.json").write_text('{"search": "brainsmith", "layers": ')
    folding, problem = read_record(str(tmp_path))
    assert folding is None and problem is not None and str(tmp_path / "folding.json") in problem
    (tmp_path / "folding.json").write_text('["not", "a", "record"]')
    assert "has no 'layers' object" in (read_record(str(tmp_path))[1] or "")
    assert read_record(str(tmp_path / "nowhere")) == (None, None)
