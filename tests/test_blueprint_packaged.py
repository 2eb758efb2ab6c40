"""``extends: brainsmith:NAME``: the blueprints brainsmith ships, extended by name from any
folder; a relative ``extends`` stays a file beside the blueprint, and a missing one suggests
only similar names that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import brainsmith
from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.cli import cli
from tests.test_blueprint_support import use_toy_registry, write

REPO = Path(__file__).resolve().parents[1]
PACKAGED = Path(brainsmith.__file__).parent / "blueprints"
DOCS = (REPO / "docs" / "blueprints.md").read_text()
FIRST = re.search(r"```yaml\n(# file: my-mlp\.yaml\n.*?)```", DOCS, re.S)


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


def only_problem(path: Path) -> str:
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    assert len(err.value.problems) == 1, err.value.problems
    return str(err.value.problems[0])


def test_docs_first_blueprint_works_alone_in_a_users_folder(tmp_path, monkeypatch):
    assert FIRST is not None
    write(tmp_path, "my-mlp.yaml", FIRST[1])
    monkeypatch.chdir(tmp_path)
    blueprint = load_blueprint("my-mlp.yaml")
    assert blueprint.chain == (str(tmp_path / "my-mlp.yaml"), str(PACKAGED / "base.yaml"))
    assert blueprint.build is not None and blueprint.build.fpga_part == "xcvc1902-vsva2197-2MP-e-S"
    assert blueprint.build.target_fps == 1000000
    assert [s.qualified_name for s in blueprint.steps][:2] == [
        "brainsmith:cleanup",
        "brainsmith:qonnx_to_finn",
    ]


def test_every_packaged_blueprint_ships_inside_the_package_and_extends_by_name(tmp_path):
    names = sorted(p.stem for p in PACKAGED.glob("*.yaml"))
    assert {"base", "default"} <= set(names)
    for name in names:
        path = write(tmp_path, f"{name}-child.yaml", f"extends: brainsmith:{name}\n")
        assert load_blueprint(path).chain[1] == str(PACKAGED / f"{name}.yaml")


def test_base_default_and_the_repos_base_resolve_to_the_same_build(tmp_path):
    def resolved(extends: str) -> dict:
        path = write(tmp_path, "child.yaml", f"name: child\nextends: {extends}\n")
        return load_blueprint(path).to_dict()

    base = resolved("brainsmith:base")
    assert resolved("brainsmith:default") == base
    assert resolved(str(REPO / "blueprints" / "base.yaml")) == base


def test_relative_extends_is_still_a_file_beside_the_blueprint(tmp_path):
    base = write(tmp_path, "base.yaml", "steps: [toy_first]\n")
    path = write(tmp_path, "bp.yaml", "extends: base.yaml\n")
    blueprint = load_blueprint(path)
    assert blueprint.chain == (str(path), str(base))
    assert [s.qualified_name for s in blueprint.steps] == ["user:toy_first"]


def test_unknown_packaged_name_is_an_error_listing_the_packaged_names(tmp_path):
    path = write(tmp_path, "bp.yaml", "name: child\nextends: brainsmith:bse\n")
    assert only_problem(path) == (
        f"{path}:2:10: error: no blueprint 'brainsmith:bse' ships with brainsmith; expected "
        "one of brainsmith:base, brainsmith:default; did you mean 'brainsmith:base'?"
    )


def test_packaged_name_is_a_name_never_a_path(tmp_path):
    path = write(tmp_path, "bp.yaml", "extends: brainsmith:../../../pyproject\n")
    problem = only_problem(path)
    assert problem.startswith(f"{path}:1:10: error: no blueprint 'brainsmith:../../../pyproject'")
    assert "expected one of brainsmith:base, brainsmith:default" in problem


def test_missing_base_suggests_the_packaged_one_not_unrelated_files(tmp_path):
    write(tmp_path, "bad_yaml.yaml", "steps: [toy_first]\n")
    path = write(tmp_path, "my-mlp.yaml", "name: my-mlp\nextends: base.yaml\n")
    assert only_problem(path) == (
        f"{path}:2:10: error: cannot read '{tmp_path}/base.yaml': file not found; expected a "
        "blueprint YAML file; did you mean 'brainsmith:base'?"
    )


def test_missing_base_with_nothing_similar_suggests_nothing(tmp_path):
    write(tmp_path, "bad_yaml.yaml", "steps: [toy_first]\n")
    path = write(tmp_path, "bp.yaml", "extends: shared-options.yaml\n")
    assert only_problem(path).endswith("expected a blueprint YAML file")


def test_show_prints_a_blueprint_extending_brainsmith_base_resolved(tmp_path, monkeypatch):
    write(tmp_path, "my-mlp.yaml", FIRST[1] if FIRST else "")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["blueprint", "show", "my-mlp.yaml"])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.stdout)
    assert "extends" not in shown
    assert shown["name"] == "my-mlp"
    assert shown["steps"][0] == "brainsmith:cleanup"
    assert shown["build"]["fpga_part"] == "xcvc1902-vsva2197-2MP-e-S"
    assert shown["hw_compiler"]["kernels"][0] == {
        "kernel": "brainsmith:matmul",
        "backends": ["brainsmith:MatMulRTL"],
    }
