"""Checkpoints: a build stopped after N steps and continued elsewhere gives the same design
as one build, and only a checkpoint of the same steps can be continued."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.builder.checkpoint import FILE, Checkpoint

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
BLUEPRINT = str(REPO / "blueprints" / "mlp.yaml")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The MLP built once whole, and once as steps 1-5 plus a continuation."""
    from brainsmith.plugin.manager import reset_plugin_system

    root = tmp_path_factory.mktemp("checkpoint")
    os.chmod(root, 0o700)
    (root / "config.yaml").write_text("plugin_system: {}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BRAINSMITH_CACHE_DIR", str(root))
        patch.setenv("BRAINSMITH_CONFIG", str(root / "config.yaml"))
        reset_plugin_system()
        whole = brainsmith.build(MLP, BLUEPRINT, str(root / "whole"), verify="each")
        head = brainsmith.build(MLP, BLUEPRINT, str(root / "head"), verify="each", stop_after=5)
        tail = brainsmith.build(
            MLP,
            BLUEPRINT,
            str(root / "tail"),
            verify="each",
            start=Checkpoint.load(head.output_dir),
        )
        yield whole, head, tail
    reset_plugin_system()


def test_a_stopped_build_leaves_a_checkpoint_instead_of_a_design(builds):
    _, head, _ = builds
    folder = Path(head.output_dir)
    assert head.report["status"] == "stopped" and (folder / FILE).is_file()
    assert not (folder / "final.onnx").exists() and not (folder / "report.json").exists()
    assert [r.name for r in head.checkpoint.records] == [
        "cleanup",
        "qonnx_to_finn",
        "streamline",
        "hardware_inference",
        "specialize",
    ]
    assert head.checkpoint.model.endswith("intermediate_models/05_specialize.onnx")
    assert head.checkpoint.dataflow_parent.endswith("intermediate_models/dataflow_parent.onnx")


def test_a_continued_build_equals_one_build(builds):
    whole, _, tail = builds
    assert tail.status == "ok"
    assert tail.performance == whole.performance and tail.totals == whole.totals

    def layers(result) -> list[dict]:  # the generated-code folders have random names
        return [
            {k: v for k, v in layer.items() if k != "code"} for layer in result.report["layers"]
        ]

    assert layers(tail) == layers(whole)
    statuses = [(s["name"], s["status"]) for s in tail.report["steps"]]
    assert statuses == [(s["name"], s["status"]) for s in whole.report["steps"]]


def test_a_continued_build_reports_the_checkpoints_steps_with_their_models(builds):
    _, head, tail = builds
    steps = json.loads(Path(tail.report_path).read_text())["steps"]
    for step in steps[:5]:  # run in the stopped build, verified there, models left there
        assert step["verification"]["ok"]
        assert (Path(tail.output_dir) / step["model"]).resolve().parent == Path(
            head.output_dir, "intermediate_models"
        ).resolve()
    assert steps[5]["model"] == "intermediate_models/06_folding.onnx"
    assert Path(tail.output_dir, "finn", "report", "estimate_layer_resources.json").is_file()


def test_a_checkpoint_of_other_steps_is_refused(builds, tmp_path):
    _, head, _ = builds
    other = tmp_path / "other.yaml"
    other.write_text(f"extends: {BLUEPRINT}\nsteps: [cleanup, streamline, qonnx_to_finn]\n")
    with pytest.raises(BuildError) as caught:
        brainsmith.build(MLP, str(other), str(tmp_path / "out"), start=head.checkpoint)
    assert caught.value.exit_code == 2
    assert "do not begin this build's steps" in caught.value.reason


def test_an_incomplete_checkpoint_cannot_be_loaded(tmp_path):
    (tmp_path / FILE).write_text('{"version": 1, "records": [')
    with pytest.raises(ValueError, match="no usable checkpoint"):
        Checkpoint.load(str(tmp_path))
