"""Judging an exploration: variants that built the same design are merged (the first stands
for the others, which never sit on the Pareto front beside it), and the effect of each
dimension is told, down to "changed nothing"."""

from __future__ import annotations

from pathlib import Path

from brainsmith.blueprint import load_blueprint
from brainsmith.dse.results import design_digest, effects, judge

REPO = Path(__file__).resolve().parents[1]
MINIMIZE = ["finn:MinimizeAccumulatorWidth"]


def search():
    return load_blueprint(REPO / "blueprints" / "mlp_explore.yaml").design_space.search


def variant(index: int, backend: str, post_hw: list, fps: float, lut: int, design: str) -> dict:
    return {"id": f"v{index:02d}", "index": index, "status": "ok", "design": design,
            "choices": {"backends.matmul": backend, "transforms_phased.post_hw": post_hw},
            "metrics": {"fps": fps, "LUT": lut, "DSP": 1, "latency_ns": 1.0,
                        "BRAM_18K": 0, "URAM": 0}}  # fmt: skip


def space(same_for_hls: bool = True) -> list[dict]:
    return [
        variant(0, "rtl", [], 1e6, 500, "rtl"),
        variant(1, "rtl", MINIMIZE, 1e6, 500, "rtl"),
        variant(2, "hls", [], 1.2e6, 900, "hls"),
        variant(3, "hls", MINIMIZE, 1.2e6, 900 if same_for_hls else 880,
                "hls" if same_for_hls else "hls-narrower"),
    ]  # fmt: skip


def test_variants_of_one_design_are_merged_and_ranked_together():
    entries = space()
    judge(entries, search())
    by_id = {e["id"]: e for e in entries}
    assert by_id["v01"]["same_design_as"] == "v00" and by_id["v00"]["same_design"] == ["v01"]
    assert by_id["v03"]["same_design_as"] == "v02"
    assert [e["id"] for e in entries if e["pareto"]] == ["v00", "v02"]  # once each
    ranks = sorted((e["rank"], e["id"]) for e in entries)
    assert [i for _, i in ranks] in (["v02", "v03", "v00", "v01"], ["v00", "v01", "v02", "v03"])
    assert by_id["v01"]["front"] == by_id["v00"]["front"]


def test_a_choice_that_changed_no_design_says_so():
    entries = space()
    judge(entries, search())
    dimensions = {"backends.matmul": ["rtl", "hls"], "transforms_phased.post_hw": [[], MINIMIZE]}
    found = {e["dimension"]: e for e in effects(entries, dimensions)}
    post_hw, backend = found["transforms_phased.post_hw"], found["backends.matmul"]
    assert post_hw["changed_nothing"] and post_hw["pairs"] == post_hw["same_design_pairs"] == 2
    assert not backend["changed_nothing"] and backend["same_design_pairs"] == 0
    rtl = next(v for v in backend["values"] if v["value"] == "rtl")
    assert rtl == {"value": "rtl", "variants": 2, "fps": 1e6, "LUT": 500.0, "DSP": 1.0,
                   "lower_bounds": []}  # fmt: skip


def test_a_choice_that_changed_one_design_has_an_effect():
    entries = space(same_for_hls=False)
    judge(entries, search())
    assert next(e for e in entries if e["id"] == "v03")["same_design_as"] is None
    dimensions = {"transforms_phased.post_hw": [[], MINIMIZE]}
    (post_hw,) = effects(entries, dimensions)
    assert not post_hw["changed_nothing"] and post_hw["same_design_pairs"] == 1


def test_the_design_digest_is_what_was_built_not_where():
    layer = {"name": "MVAU_0", "op_type": "MVAU", "backend": "rtl", "PE": 2, "SIMD": 4,
             "code": "variants/v00/finn/build/code_gen_MVAU_0"}  # fmt: skip
    report = {"layers": [layer], "performance": {"estimated_fps": 1e6}, "totals": {"LUT": 5}}
    moved = {**report, "layers": [{**layer, "code": "variants/v01/finn/build/x"}]}
    refolded = {**report, "layers": [{**layer, "PE": 4}]}
    assert design_digest(report) == design_digest(moved) != design_digest(refolded)
