"""``brainsmith blueprint validate`` and ``brainsmith blueprint show`` as a user runs them."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from brainsmith.cli import cli
from tests.test_blueprint_support import TOY_BLUEPRINT, use_toy_registry, write


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_validate_valid_blueprint_exits_zero_with_a_summary(tmp_path):
    path = write(tmp_path, "toy.yaml", TOY_BLUEPRINT)
    result = run("blueprint", "validate", str(path))
    assert result.exit_code == 0
    assert result.stdout == f"{path}: ok (2 kernels, 3 backends, 4 transforms, 2 steps)\n"


def test_validate_prints_one_line_per_problem_and_exits_one(tmp_path):
    path = write(tmp_path, "bad.yaml", "hw_compiler:\n  kernels: [ToyMatMull]\nsteps: [toy_frst]\n")
    result = run("blueprint", "validate", str(path))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [line.split(": error: ")[0] for line in lines] == [f"{path}:2:13", f"{path}:3:9"]
    assert "no kernel named 'ToyMatMull'" in lines[0]
    assert result.stderr == "1 of 1 blueprint(s) have errors\n"


def test_validate_checks_every_file_and_fails_if_any_is_invalid(tmp_path):
    good = write(tmp_path, "good.yaml", TOY_BLUEPRINT)
    bad = write(tmp_path, "bad.yaml", "steps: [toy_frst]\n")
    result = run("blueprint", "validate", str(bad), str(good))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith(f"{bad}:1:9: error: no step named 'toy_frst'")
    assert result.stdout.splitlines()[1].startswith(f"{good}: ok")


def test_validate_notes_skipped_optional_plugins(tmp_path):
    path = write(
        tmp_path, "bp.yaml", "hw_compiler: {transforms: ['~NotInstalled']}\nsteps: [toy_first]"
    )
    result = run("blueprint", "validate", str(path))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        f"{path}:1:28: note: optional transform 'NotInstalled' skipped: not installed"
    )


def test_validate_missing_file_is_a_problem_line(tmp_path):
    result = run("blueprint", "validate", str(tmp_path / "nothing.yaml"))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{tmp_path}/nothing.yaml: error: cannot read")


def test_show_prints_the_resolved_blueprint_as_yaml(tmp_path):
    write(tmp_path, "base.yaml", "build: {fpga_part: xc7z020clg400-1, clock_ns: 4.0}\n")
    path = write(
        tmp_path,
        "bp.yaml",
        "extends: base.yaml\nhw_compiler: {kernels: [toymatmul]}\nsteps: [toy_first]\n",
    )
    result = run("blueprint", "show", str(path))
    assert result.exit_code == 0
    shown = yaml.safe_load(result.stdout)
    assert shown["hw_compiler"]["kernels"] == [
        {"kernel": "user:ToyMatMul", "backends": ["user:ToyMatMulHLS", "user:ToyMatMulRTL"]}
    ]
    assert shown["steps"] == ["user:toy_first"]
    assert shown["build"]["clock_ns"] == 4.0 and "extends" not in shown


def test_show_json_matches_to_dict(tmp_path):
    from brainsmith.blueprint import load_blueprint

    path = write(tmp_path, "toy.yaml", TOY_BLUEPRINT)
    result = run("blueprint", "show", "--json", str(path))
    assert result.exit_code == 0
    assert json.loads(result.stdout) == load_blueprint(path).to_dict()


def test_show_invalid_blueprint_prints_problems_and_exits_one(tmp_path):
    path = write(tmp_path, "bad.yaml", "steps: [toy_frst]\n")
    result = run("blueprint", "show", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"{path}:1:9: error: no step named 'toy_frst'")
