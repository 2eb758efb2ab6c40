"""Totals that leave layers out are lower bounds, and an exploration treats them as such: a
variant's ``lower_bounds`` come from its report.json's ``incomplete``; a variant whose
objective is a lower bound is shown but not ranked; a constraint on a lower bound is judged
only when every value at or above the bound gives the same answer; the page and the
terminal write "≥" before every such total."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import brainsmith
from brainsmith.blueprint.space import Constraint, Search
from brainsmith.dse.results import effects, judge, lower_bounds, metrics, variant_facts
from tests.conftest import once

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
RTL = {"LUT": ["MVAU_rtl_0", "MVAU_rtl_1"], "DSP": ["Thresholding_rtl_0", "Thresholding_rtl_1"]}
HLS = {"DSP": ["Thresholding_rtl_0"]}
RTL_REASON = "LUT is a lower bound (MVAU_rtl_0, MVAU_rtl_1 not estimated by FINN)"


def report(fps: float, lut: int, dsp: int, incomplete: dict[str, list[str]]) -> dict:
    """A build's report.json, as far as an exploration reads it."""
    return {
        "status": "ok",
        "layers": [{"name": name, "op_type": "MVAU", "backend": "rtl"} for name in RTL["LUT"]],
        "totals": {"LUT": lut, "BRAM_18K": 0, "URAM": 0, "DSP": dsp},
        "incomplete": incomplete,
        "performance": {
            "estimated_fps": fps,
            "estimated_latency_ns": 1e9 / fps,
            "max_cycles_layer": "MVAU_rtl_1",
        },
        "target": None,
        "utilisation": None,
    }


def entry(index: int, backend: str, built: dict) -> dict:
    """A variant as explore.json records it before judging."""
    return {"id": f"v{index:02d}", "index": index, "status": "ok",
            "choices": {"backends.matmul": backend, "build.target_fps": built["performance"]["estimated_fps"]},
            "metrics": metrics(built), "lower_bounds": lower_bounds(built), **variant_facts(built)}  # fmt: skip


def mlp_like() -> list[dict]:
    """mlp_explore's distinct designs: RTL matrix layers without LUT estimates."""
    return [
        entry(0, "rtl", report(195312.5, 552, 2, RTL)),
        entry(2, "rtl", report(1250000.0, 552, 7, RTL)),
        entry(4, "rtl", report(10000000.0, 730, 50, RTL)),
        entry(6, "hls", report(97656.25, 1326, 0, HLS)),
        entry(8, "hls", report(1250000.0, 2034, 0, HLS)),
        entry(10, "hls", report(10000000.0, 8166, 0, HLS)),
    ]


def search(constraints: tuple[str, ...] = (), objectives=(("fps", "max"), ("LUT", "min"))):
    parsed = []
    for text in constraints:
        metric, op, bound = text.split()
        parsed.append(Constraint(metric, op, float(bound)))
    return Search(constraints=tuple(parsed), objectives=tuple(objectives))


def by_id(entries: list[dict]) -> dict[str, dict]:
    return {e["id"]: e for e in entries}


def test_lower_bounds_are_the_reports_incomplete_totals():
    assert lower_bounds(report(1e6, 552, 7, RTL)) == RTL
    assert lower_bounds(report(1e6, 2034, 0, {})) == {}
    assert lower_bounds({"status": "ok", "totals": {"LUT": 1}}) == {}  # an older report


def test_a_variant_whose_objective_is_a_lower_bound_is_shown_but_not_ranked():
    entries = mlp_like()
    judge(entries, search())
    found = by_id(entries)
    assert [e["id"] for e in entries if e["pareto"]] == ["v06", "v08", "v10"]
    for rtl in ("v00", "v02", "v04"):
        assert found[rtl]["unranked"] == RTL_REASON
        assert not found[rtl]["pareto"] and found[rtl]["front"] is None
    for hls in ("v06", "v08", "v10"):  # DSP is a lower bound there, but not an objective
        assert found[hls]["unranked"] is None and found[hls]["front"] is not None
    order = [e["id"] for e in sorted(entries, key=lambda e: e["rank"])]
    assert order == ["v10", "v08", "v06", "v00", "v02", "v04"]  # the ranked first


def test_an_objective_that_is_a_lower_bound_everywhere_ranks_nobody():
    entries = mlp_like()
    judge(entries, search(objectives=(("fps", "max"), ("DSP", "min"))))
    assert not any(e["pareto"] for e in entries)
    assert by_id(entries)["v10"]["unranked"] == (
        "DSP is a lower bound (Thresholding_rtl_0 not estimated by FINN)"
    )
    assert all(e["unranked"] and e["front"] is None for e in entries)


def test_a_constraint_on_a_lower_bound_is_judged_only_when_the_bound_decides_it():
    entries = [
        entry(2, "rtl", report(1250000.0, 552, 7, RTL)),
        entry(3, "rtl", report(1250000.0, 25000, 7, RTL)),
        entry(8, "hls", report(1250000.0, 2034, 0, HLS)),
    ]
    judge(entries, search(("LUT <= 20000", "LUT >= 500", "LUT >= 600", "LUT < 552")))
    low, high, complete = entries
    verdicts = [(c["constraint"], c["ok"]) for c in low["constraints"]]
    assert verdicts == [("LUT <= 20000", None), ("LUT >= 500", True), ("LUT >= 600", None),
                        ("LUT < 552", False)]  # fmt: skip
    assert low["constraints"][0]["reason"] == f"not judged: {RTL_REASON}"
    assert low["feasible"] is False  # LUT < 552 fails whatever the real LUT
    assert [c["ok"] for c in high["constraints"]] == [False, True, True, False]
    assert [c["ok"] for c in complete["constraints"]] == [True, True, True, False]
    assert all(c.get("reason") is None for c in complete["constraints"])


def test_a_variant_not_judged_is_neither_feasible_nor_infeasible_and_ranks_between():
    entries = mlp_like()
    judge(entries, search(("LUT <= 20000", "fps >= 100000")))
    found = by_id(entries)
    assert [found[i]["feasible"] for i in ("v00", "v02", "v04")] == [None] * 3
    assert [found[i]["feasible"] for i in ("v06", "v08", "v10")] == [False, True, True]
    order = [e["id"] for e in sorted(entries, key=lambda e: e["rank"])]
    assert order == ["v10", "v08", "v00", "v02", "v04", "v06"]
    assert [e["id"] for e in entries if e["pareto"]] == ["v08", "v10"]


def test_a_mean_over_lower_bounds_is_a_lower_bound():
    entries = mlp_like()
    judge(entries, search())
    (backend,) = effects(entries, {"backends.matmul": ["rtl", "hls"]})
    rtl, hls = backend["values"]
    assert rtl["lower_bounds"] == ["LUT", "DSP"] and hls["lower_bounds"] == ["DSP"]
    assert rtl["LUT"] == pytest.approx((552 + 552 + 730) / 3)


# mlp_explore.yaml explored for real: matrix layers as MVAU_rtl, whose LUTs FINN does not
# estimate, against MVAU_hls, whose it does.


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """Explored once per test process (its tests share one xdist group)."""
    from brainsmith.plugin.manager import reset_plugin_system

    def make():
        root = tmp_path_factory.mktemp("bounds")
        (root / "config.yaml").write_text("plugin_system: {}\n")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("BRAINSMITH_CACHE_DIR", str(root))
            patch.setenv("BRAINSMITH_CONFIG", str(root / "config.yaml"))
            reset_plugin_system()
            result = brainsmith.explore(
                MLP, str(REPO / "blueprints" / "mlp_explore.yaml"), str(root / "out"), workers=0
            )
        reset_plugin_system()
        return result

    return once("explore-bounds", make)


def with_lut_bound(result) -> list[dict]:
    return [v for v in result.variants if v["lower_bounds"].get("LUT")]


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_each_variant_carries_its_reports_incomplete_totals(explored):
    for variant in explored.variants:
        built = json.loads(Path(explored.output_dir, variant["folder"], "report.json").read_text())
        assert variant["lower_bounds"] == built["incomplete"], variant["id"]
    on_disk = json.loads(Path(explored.json_path).read_text())
    assert [v["lower_bounds"] for v in on_disk["variants"]] == [
        v["lower_bounds"] for v in explored.variants
    ]


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_no_lower_bound_is_ranked_or_passes_a_limit(explored):
    objectives = list(explored.data["objectives"])
    for variant in explored.variants:
        bounded = [m for m in objectives if m in variant["lower_bounds"]]
        if bounded and not variant["same_design_as"]:
            assert not variant["pareto"] and variant["front"] is None, variant["id"]
            assert variant["unranked"].startswith(f"{bounded[0]} is a lower bound ("), variant
        for check in variant["constraints"]:
            metric = check["constraint"].split()[0]
            if metric in variant["lower_bounds"] and "<" in check["constraint"]:
                assert check["ok"] is not True, (variant["id"], check)
    assert explored.pareto and all(not v["lower_bounds"].get("LUT") for v in explored.pareto)


def row_of(page: str, variant: str) -> str:
    return next(r for r in page.split("<tr") if f">{variant}</a>" in r)


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_rtl_matrix_layers_are_estimated_so_mlp_explore_ranks_every_variant(explored):
    """brainsmith's cost model gives MVAU_rtl its LUTs: every total of mlp_explore is complete,
    so its RTL variants are ranked and judged on their numbers."""
    assert not any(v["lower_bounds"] for v in explored.variants)
    rtl = [v for v in explored.variants if v["choices"].get("backends.matmul") == "rtl"]
    built = [v for v in explored.variants if v["status"] == "ok" and not v["same_design_as"]]
    assert rtl and all(v["front"] is not None and not v["unranked"] for v in built)
    assert all(c["ok"] is not None for v in explored.variants for c in v["constraints"])
    assert any(v["pareto"] for v in rtl)  # the cheaper matrix layers, now counted


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_the_page_marks_every_lower_bound_and_says_what_is_estimated(explored):
    page = Path(explored.html_path).read_text()
    assert "FINN's analytical estimates" in html.unescape(page)
    for variant in with_lut_bound(explored):
        row, lut = row_of(page, variant["id"]), variant["metrics"]["LUT"]
        assert f">≥ {lut:,}<" in row and f">{lut:,}<" not in row, row
        assert "not ranked" in row and "not judged" in row, row
        if not variant["same_design_as"]:  # one point per design, in each plot
            assert page.count(f"data-bound='{variant['id']}'") == 2
            assert f"LUT ≥ {lut:,}" in page
    assert "lower bound" in page[page.index("class='legend'") :][:600]
    effects_part = page[page.index("What each choice changed") :]
    rtl = next(
        x
        for e in explored.data["effects"]
        if e["dimension"] == "backends.matmul"
        for x in e["values"]
        if x["value"] == "rtl"
    )
    bound = "≥ " if rtl.get("lower_bounds") else ""
    assert f"{bound}{rtl['LUT']:,.0f}" in effects_part


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_the_terminal_summary_says_what_is_not_ranked_or_judged(explored, capsys):
    from brainsmith.cli.explore import print_summary

    print_summary(explored.data)
    out = capsys.readouterr().out
    bounded = [v for v in with_lut_bound(explored) if not v["same_design_as"]]
    if bounded:
        assert f"  not ranked  {', '.join(v['id'] for v in bounded)}: {RTL_REASON}" in out, out
    else:
        assert "not ranked" not in out and "not judged" not in out, out
    pareto = [line for line in out.splitlines() if line.startswith("  pareto")]
    assert len(pareto) == len([v for v in explored.variants if v["pareto"]])
    for line, variant in zip(pareto, explored.pareto, strict=True):
        for metric in variant["lower_bounds"]:
            assert f"{metric} ≥ " in line, line


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_the_documented_summary_is_what_mlp_explore_prints(explored, capsys):
    from brainsmith.cli.explore import print_summary

    print_summary(explored.data)
    printed = capsys.readouterr().out.splitlines()
    docs = (REPO / "docs" / "explore.md").read_text()
    block = docs[docs.index("$ brainsmith explore examples/models/mlp_4bit.onnx") :]
    documented = block[: block.index("```")].splitlines()[2:]
    kinds = ("counted", "pareto", "not", "no", "constraints")
    judged = [x for x in documented if x.split()[0] in kinds]
    assert len(judged) == 5 and judged == [x for x in printed if x in judged], printed

    def varying(line: str) -> str:
        """The line with the seconds it took and the output folder left out."""
        line = re.sub(r" in [\d.]+ s$", " in ... s", line)
        return re.sub(r"^(  (?:results|report)\s+)\S*/", r"\1.../", line)

    assert [varying(x) for x in documented] == [varying(x) for x in printed]


@pytest.mark.slow
@pytest.mark.xdist_group("explore-bounds")  # one exploration per process
def test_the_documented_python_example_prints_what_mlp_explore_gives(explored):
    """docs/explore.md's python example (not run there: it explores on a local cluster) shows
    what its print lines print for this exploration of the same model and blueprint."""
    from tests.test_docs_blocks import blocks, output_problems, printed, shown

    doc = REPO / "docs" / "explore.md"
    (block,) = [b for b in blocks(doc) if b.lang == "python" and "mlp_explore.yaml" in b.body]
    assert '"examples/models/mlp_4bit.onnx", "blueprints/mlp_explore.yaml"' in block.body
    assert len([item for item in shown(block) if item.output is not None]) == 3
    assert output_problems(shown(block), printed(block, {"result": explored})) == []
