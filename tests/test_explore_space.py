"""Blueprint ``design_space:`` and ``search:``: validated like the rest of a blueprint
(every problem as file:line:column), expanded into variants, shown with their tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import brainsmith
from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.builder import BuildError
from brainsmith.cli import cli
from brainsmith.dse.variants import expand

REPO = Path(__file__).resolve().parents[1]
MLP_BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
SPACE = REPO / "blueprints" / "mlp_explore.yaml"


def write(folder: Path, text: str, name: str = "space.yaml") -> Path:
    path = folder / name
    path.write_text(f"extends: {MLP_BLUEPRINT}\n" + textwrap.dedent(text))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path)
    return [str(p) for p in caught.value.problems]


def test_variants_are_the_product_of_the_dimensions_in_written_order():
    blueprint = load_blueprint(SPACE)
    space = blueprint.design_space
    assert space.size == 12 and len(space.dimensions) == 3
    variants = expand(blueprint)
    assert [v.id for v in variants] == [f"v{i:02d}" for i in range(12)]
    assert variants[0].choices == {
        "backends.matmul": "rtl",
        "build.target_fps": 10000,
        "transforms_phased.post_hw": [],
    }
    assert variants[11].choices == {
        "backends.matmul": "hls",
        "build.target_fps": 10000000,
        "transforms_phased.post_hw": ["finn:MinimizeAccumulatorWidth"],
    }
    last = variants[11].plan
    matmul = next(k for k in last.kernels if k.name == "brainsmith:matmul")
    assert matmul.backends == ["brainsmith:MatMulHLS"] and matmul.backend_types == ["hls"]
    threshold = next(k for k in last.kernels if k.name == "finn:Thresholding")
    assert threshold.backend_types == ["rtl"]  # not varied: as the base blueprint says
    assert last.options.target_fps == 10000000 and last.options.period_ns == 5.0
    assert [t.name for t in last.post_hw] == ["finn:MinimizeAccumulatorWidth"]
    assert [t.name for t in last.pre_hw] == ["brainsmith:RemoveInferenceNoOps"]
    assert last.name == "mlp_explore-v11" and "design_space" not in last.blueprint


def test_random_strategy_picks_max_variants_reproducibly_with_full_space_ids(tmp_path):
    text = """
        design_space:
          build: {target_fps: [1000, 2000, 3000, 4000, 5000], clock_ns: [4.0, 5.0, 10.0]}
        search: {strategy: random, max_variants: 4, seed: SEED}
    """
    first = expand(load_blueprint(write(tmp_path, text.replace("SEED", "7"), "a.yaml")))
    again = expand(load_blueprint(write(tmp_path, text.replace("SEED", "7"), "b.yaml")))
    other = expand(load_blueprint(write(tmp_path, text.replace("SEED", "8"), "c.yaml")))
    assert len(first) == 4 and [v.id for v in first] == [v.id for v in again]
    assert [v.id for v in first] != [v.id for v in other]
    for variant in first:  # the id is the variant's place in the whole space
        fps, clock = divmod(variant.index, 3)
        assert variant.plan.options.target_fps == 1000 * (fps + 1)
        assert variant.plan.options.clock_ns == (4.0, 5.0, 10.0)[clock]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "design_space:\n  backends:\n    matmull: [rtl, hls]\n",
            ":4:14: error: no kernel named 'matmull'; expected a registered kernel",
        ),
        (
            "design_space:\n  backends:\n    softmax: [hls]\n",
            ":4:5: error: kernel brainsmith:softmax is not one of the blueprint's kernels",
        ),
        (
            "design_space:\n  backends:\n    matmul: [rtl, MatMulRTL]\n",
            ":4:19: error: design_space.backends.matmul[1] repeats alternative [0]",
        ),
        (
            "design_space:\n  backends:\n    matmul: [rtl, SoftmaxHLS]\n",
            "error: backend brainsmith:SoftmaxHLS implements kernel 'softmax', not brainsmith:matmul",
        ),
        (
            "design_space:\n  build:\n    target_fps: 1000\n",
            ":4:17: error: design_space.build.target_fps is the number 1000; expected a "
            "non-empty list of alternatives",
        ),
        (
            "design_space:\n  build:\n    clock_ns: [5, fast]\n",
            ":4:19: error: design_space.build.clock_ns[1] is the text 'fast'; expected the "
            "target clock period",
        ),
        (
            "design_space:\n  build:\n    output_dir: [a, b]\n",
            ":4:5: error: design_space.build.output_dir cannot vary",
        ),
        (
            "design_space:\n  build:\n    board: [Pynq-Z1, U250]\n",
            ":4:5: error: design_space.build.board varies while build sets fpga_part",
        ),
        (
            "design_space:\n  target_fps: [1000]\n",
            ":3:3: error: unknown key 'target_fps' in design_space; expected one of backends, "
            "build, transforms_phased; did you mean 'design_space.build.target_fps'?",
        ),
        (
            "design_space:\n  transforms_phased:\n    post_hw: [[], [MinimizeAccumulatorWidt]]\n",
            "error: no transform named 'MinimizeAccumulatorWidt'",
        ),
        ("design_space: {}\n", ":2:1: error: design_space has no alternatives"),
        (
            "search: {strategy: random, max_variants: 2}\n",
            ":2:1: error: search without design_space",
        ),
        (
            "design_space: {build: {target_fps: [1000, 2000]}}\nsearch: {seed: 3}\n",
            ":3:10: error: search.seed applies to strategy: random",
        ),
        (
            "design_space: {build: {target_fps: [1000, 2000]}}\nsearch: {strategy: random}\n",
            ":3:1: error: search.strategy random needs max_variants",
        ),
        (
            "design_space: {build: {target_fps: [1000]}}\nsearch:\n  constraints: [LUTS <= 9]\n",
            ":4:17: error: search.constraints[0] names no metric 'LUTS'; expected METRIC OP NUMBER",
        ),
        (
            "design_space: {build: {target_fps: [1000]}}\nsearch:\n  constraints: ['fps >= lots']\n",
            "error: search.constraints[0] compares with 'lots', not a number",
        ),
        (
            "design_space: {build: {target_fps: [1000]}}\nsearch:\n  objectives: {fps: maximum}\n",
            ":4:21: error: search.objectives.fps is the text 'maximum'; expected one of max, "
            "min; did you mean 'max'?",
        ),
    ],
)
def test_design_space_problems_name_file_line_and_column(tmp_path, text, expected):
    path = write(tmp_path, text)
    found = problems(path)
    assert any(p.startswith(str(path)) and expected in p for p in found), found


def test_every_design_space_problem_is_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        """
        design_space:
          backends: {matmul: [rtl, rtl]}
          build: {clock_ns: [fast]}
        search: {objectives: {power: min}}
        """,
    )
    assert len(problems(path)) == 3


def test_a_huge_exhaustive_space_is_refused_with_the_random_strategy_as_remedy(tmp_path):
    values = ", ".join(str(1000 + i) for i in range(101))
    path = write(
        tmp_path,
        f"design_space:\n  build:\n    target_fps: [{values}]\n    clock_ns: [{values}]\n",
    )
    (problem,) = problems(path)
    assert "10,201 variants, more than exhaustive search runs (10,000)" in problem
    assert "strategy: random" in problem


def test_show_prints_the_variant_count_and_tree_and_stays_a_valid_blueprint(tmp_path):
    result = CliRunner().invoke(cli, ["blueprint", "show", str(SPACE)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    comments = [line[2:] for line in result.output.splitlines() if line.startswith("# ")]
    assert comments[0].startswith("design space: 12 variants (exhaustive, 12 of 12)")
    assert comments[1] == "execution tree: 15 segments (3 shared), 103 step runs instead of 156"
    assert "12 variants: steps 1-3 cleanup, qonnx_to_finn, streamline" in comments[2]
    assert any("[backends.matmul=hls]" in line for line in comments)
    again = tmp_path / "shown.yaml"
    again.write_text(result.output)
    reloaded = load_blueprint(again)
    assert reloaded.design_space.to_dict() == load_blueprint(SPACE).design_space.to_dict()
    assert yaml.safe_load(result.output)["search"]["objectives"] == {"fps": "max", "LUT": "min"}


def test_validate_counts_the_variants():
    result = CliRunner().invoke(cli, ["blueprint", "validate", str(SPACE)])
    assert result.exit_code == 0 and result.output.strip().endswith(", 12 variants)")


def test_build_refuses_a_design_space_and_points_to_explore(tmp_path):
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(REPO / "examples/models/mlp_4bit.onnx"), str(SPACE), str(tmp_path))
    assert caught.value.exit_code == 2
    assert "design space of 12 variants" in caught.value.reason
    assert "brainsmith explore" in caught.value.reason


def test_show_explains_why_a_space_without_build_options_has_no_tree(tmp_path):
    path = tmp_path / "nobuild.yaml"
    path.write_text(
        "hw_compiler:\n  kernels: [matmul, finn:Thresholding]\n"
        "design_space:\n  backends: {matmul: [rtl, hls]}\n"
    )
    result = CliRunner().invoke(cli, ["blueprint", "show", str(path)], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == (
        "# design space: 2 variants; no tree: the blueprint has no build:"
    )


def test_backends_of_an_auto_kernel_vary_as_pinned_choices(tmp_path):
    """With kernels: auto, a design space may vary a kernel the blueprint does not list:
    each variant pins it; the other kernels stay automatic."""
    path = tmp_path / "auto.yaml"
    path.write_text(
        f"extends: {REPO / 'blueprints' / 'base.yaml'}\n"
        "design_space:\n  backends: {finn:Thresholding: [rtl, hls]}\n"
    )
    variants = expand(load_blueprint(path))
    assert [v.choices for v in variants] == [
        {"backends.Thresholding": "rtl"},
        {"backends.Thresholding": "hls"},
    ]
    for variant, style in zip(variants, ("rtl", "hls"), strict=True):
        pinned = [k for k in variant.plan.kernels if k.pinned]
        assert [(k.name, k.backend_types) for k in pinned] == [("finn:Thresholding", [style])]
        assert any(k.op_type == "VVAU" and not k.pinned for k in variant.plan.kernels)


def test_a_listed_kernel_outside_auto_is_still_refused_without_auto(tmp_path):
    path = write(tmp_path, "design_space:\n  backends: {finn:VVAU: [rtl, hls]}\n")
    assert any("is not one of the blueprint's kernels" in p for p in problems(path))
