"""The execution tree: variants share the steps before the first step that reads one of
their differing choices; steps brainsmith does not know are never shared."""

from __future__ import annotations

import textwrap
from pathlib import Path

from brainsmith.blueprint import load_blueprint
from brainsmith.dse.tree import build_tree, counts, step_keys
from brainsmith.dse.variants import expand

REPO = Path(__file__).resolve().parents[1]
MLP_BLUEPRINT = REPO / "blueprints" / "mlp.yaml"


def variants_of(tmp_path: Path, text: str, root: str = "model"):
    path = tmp_path / "space.yaml"
    path.write_text(f"extends: {MLP_BLUEPRINT}\n" + textwrap.dedent(text))
    variants = expand(load_blueprint(path))
    for variant in variants:
        variant.keys = step_keys(variant.plan, root)
    return variants


def first_difference(a, b) -> int:
    """The index of the first step whose key differs (the branch point)."""
    return next(i for i, (x, y) in enumerate(zip(a.keys, b.keys, strict=True)) if x != y)


def test_pre_hw_alternatives_branch_at_streamline(tmp_path):
    a, b = variants_of(
        tmp_path, "design_space:\n  transforms_phased:\n    pre_hw: [[], [RemoveInferenceNoOps]]\n"
    )
    assert a.plan.steps[first_difference(a, b)] == "streamline"


def test_target_fps_alternatives_share_everything_before_folding(tmp_path):
    a, b = variants_of(tmp_path, "design_space:\n  build:\n    target_fps: [1000, 2000]\n")
    assert a.plan.steps[first_difference(a, b)] == "folding"


def test_a_matrix_backend_that_changes_threshold_layers_branches_at_hardware_inference(tmp_path):
    # RTL-only matrix layers need standalone thresholds, which hardware_inference makes
    a, b = variants_of(tmp_path, "design_space:\n  backends:\n    matmul: [rtl, hls]\n")
    assert a.plan.steps[first_difference(a, b)] == "hardware_inference"


def test_a_threshold_backend_branches_only_at_specialize(tmp_path):
    a, b = variants_of(tmp_path, "design_space:\n  backends:\n    finn:Thresholding: [rtl, hls]\n")
    assert a.plan.steps[first_difference(a, b)] == "specialize"


def test_steps_brainsmith_does_not_know_are_never_shared(tmp_path):
    a, b = variants_of(
        tmp_path,
        """
        steps: [cleanup, finn:step_tidy_up, qonnx_to_finn, streamline, hardware_inference,
                specialize, folding, estimates, codegen]
        design_space:
          build:
            target_fps: [1000, 2000]
        """,
    )
    assert first_difference(a, b) == 1  # FINN's own step reads the whole (differing) blueprint


def test_an_edited_folding_file_is_another_input(tmp_path):
    folding = tmp_path / "folding.json"
    folding.write_text("{}")
    text = "build: {folding_config: folding.json}\ndesign_space:\n  build:\n    target_fps: [1000, 2000]\n"
    before = variants_of(tmp_path, text)[0].keys
    folding.write_text('{"Defaults": {}}')
    after = variants_of(tmp_path, text)[0].keys
    index = next(i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y)
    assert index == 5  # folding, the step that reads the file


def test_another_model_changes_every_key(tmp_path):
    text = "design_space:\n  build:\n    target_fps: [1000, 2000]\n"
    one = variants_of(tmp_path, text, root="model-a")[0]
    two = variants_of(tmp_path, text, root="model-b")[0]
    assert all(x != y for x, y in zip(one.keys, two.keys, strict=True))


def test_tree_runs_shared_prefixes_once(tmp_path):
    variants = variants_of(
        tmp_path,
        """
        design_space:
          backends:
            matmul: [rtl, hls]
          build:
            target_fps: [1000, 2000, 3000]
        """,
    )
    (root,) = build_tree(variants)
    assert root.shared and (root.start, root.stop) == (0, 3) and len(root.variants) == 6
    assert [len(c.variants) for c in root.children] == [3, 3]
    for branch in root.children:
        assert (branch.start, branch.stop) == (3, 5)  # hardware_inference, specialize
        assert [leaf.id for leaf in branch.children] == [v.id for v in branch.variants]
        assert all(leaf.start == 5 and not leaf.shared for leaf in branch.children)
    tree = counts([root])
    assert (tree.variants, tree.segments, tree.shared) == (6, 9, 3)
    assert tree.steps_without_reuse == 6 * 13
    assert tree.steps_run == 3 + 2 * 2 + 6 * 8


def test_variants_that_agree_on_every_step_still_get_a_folder_each(tmp_path):
    from dataclasses import replace

    one = variants_of(tmp_path, "design_space:\n  build:\n    target_fps: [1000, 2000]\n")[0]
    twin = replace(one, id="v99", index=99)
    roots = build_tree([one, twin])
    (root,) = roots
    assert root.stop == len(one.keys)  # every step shared
    assert [(leaf.id, leaf.start, leaf.stop) for leaf in root.children] == [
        (one.id, root.stop, root.stop),
        ("v99", root.stop, root.stop),
    ]
