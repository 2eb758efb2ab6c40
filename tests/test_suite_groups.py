"""``make test``'s workers keep each ``xdist_group`` on one worker, so a network a group's
module fixture builds is built once per run, not once per worker."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def make_test_options() -> list[str]:
    """The worker options of the Makefile's ``test`` target (``-n 2 --dist loadgroup``)."""
    line = re.search(
        r"^test:.*\n\t@\$\(PY\) -m pytest (.*)$", (REPO / "Makefile").read_text(), re.M
    )
    assert line, "the Makefile's test target runs pytest"
    words = line.group(1).split()
    options = []
    for flag in ("-n", "--dist"):
        assert flag in words, f"make test passes {flag}"
        options += [flag, words[words.index(flag) + 1]]
    return options


def test_a_group_runs_on_one_worker(tmp_path: Path):
    record = tmp_path / "workers"
    record.mkdir()
    (tmp_path / "test_grouped.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import pytest

            @pytest.mark.xdist_group("one")
            @pytest.mark.parametrize("case", range(6))
            def test_case(case):
                worker = os.environ["PYTEST_XDIST_WORKER"]
                open(os.path.join({str(record)!r}, f"{{case}}-{{worker}}"), "w").close()
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *make_test_options()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {name.split("-", 1)[1] for name in (p.name for p in record.iterdir())}
    assert len(list(record.iterdir())) == 6
    assert len(workers) == 1, f"one group ran on workers {sorted(workers)}"


FARM_TESTS = """
import json, os
from pathlib import Path

import pytest
import pytest

REPO = Path({repo!r})
RECORD = Path({record!r})
MLP, BLUEPRINT = REPO / "examples/models/mlp_4bit.onnx", REPO / "blueprints/mlp.yaml"


def shared(farm):  # its first step is enough: what is tested is the sharing
    return farm.build(MLP, BLUEPRINT, verify="none", stop_after=1)


@pytest.mark.xdist_group("one")
def test_one(farm):
    (RECORD / "one").write_text(shared(farm).output_dir)


@pytest.mark.xdist_group("two")
def test_two(farm, tmp_path):
    result = shared(farm)
    (RECORD / "two").write_text(result.output_dir)
    mine = farm.copy(result, tmp_path / "mine")  # a copy is the test's own to change
    Path(mine.output_dir, "report.json").write_text("{{}}")
    if os.environ.get("TAMPER"):
        Path(result.output_dir, "checkpoint.json").write_text("changed")
"""


def run_farm(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--basetemp", str(tmp_path / "base"), *make_test_options(), str(tmp_path / "test_farm.py")],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.slow
def test_a_build_two_groups_ask_for_is_built_once_and_a_change_to_it_fails_the_run(tmp_path):
    record = tmp_path / "record"
    record.mkdir()
    (tmp_path / "test_farm.py").write_text(FARM_TESTS.format(repo=str(REPO), record=str(record)))
    run = run_farm(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    one, two = ((record / name).read_text() for name in ("one", "two"))
    assert one == two and Path(one).parent == tmp_path / "base" / "shared" / "farm"
    assert len([p for p in Path(one).parent.iterdir() if p.is_dir()]) == 1  # built once

    run = run_farm(tmp_path, TAMPER="1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "changed 1 file(s) of the run's shared builds" in run.stdout
    assert f"{Path(one).name}/checkpoint.json" in run.stdout


def test_the_profile_reads_each_test_s_group_and_seconds_from_junit_xml(tmp_path: Path):
    """``make test-profile``: xdist's ``@group`` suffix, parameters holding "@" of their own."""
    from benchmarks.suite_profile import read_junit, summed

    (tmp_path / "run.xml").write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_x[2]@rtlsim" time="3.5"><properties>'
        '<property name="cpu_s" value="3.25"/><property name="processes" value="2"/>'
        "</properties></testcase>"
        '<testcase classname="tests.test_a" name="test_y[user@host/0]" time="1.0"/>'
        '<testcase classname="tests.test_b" name="test_z@rtlsim" time="2.0">'
        '<failure message="assert 1 == 2"/></testcase>'
        "</testsuite></testsuites>"
    )
    cases = read_junit(tmp_path / "run.xml")
    assert [(c["id"], c["group"]) for c in cases] == [
        ("tests.test_a::test_x[2]", "rtlsim"),
        ("tests.test_a::test_y[user@host/0]", "(none)"),
        ("tests.test_b::test_z", "rtlsim"),
    ]
    assert cases[2]["outcome"] == "failure" and cases[2]["message"] == "assert 1 == 2"
    assert (cases[0]["cpu_s"], cases[0]["processes"]) == (3.25, 2)
    assert summed(cases, "group") == [
        {"group": "rtlsim", "tests": 2, "seconds": 5.5, "cpu_s": 3.2, "processes": 2},
        {"group": "(none)", "tests": 1, "seconds": 1.0, "cpu_s": 0.0, "processes": 0},
    ]


def test_every_test_the_budget_names_exists_and_each_move_says_its_tier():
    """tests/budget.yaml's ``moved`` and ``long_tests`` name real tests (a renamed test
    would otherwise fall back into make test, or out of the list, unnoticed)."""
    import ast

    import yaml

    budget = yaml.safe_load((REPO / "tests" / "budget.yaml").read_text())
    named = [*budget["moved"], *(k.removeprefix("tests.") for k in budget["long_tests"])]
    missing = []
    for name in named:
        module, _, test = name.partition("::")
        path = REPO / "tests" / f"{module}.py"
        defined = ({n.name for n in ast.parse(path.read_text()).body
                    if isinstance(n, ast.FunctionDef)} if path.is_file() else set())  # fmt: skip
        if test.partition("[")[0] not in defined:
            missing.append(name)
    assert missing == []
    assert all(why.split(":")[0] in ("wide", "big") for why in budget["moved"].values())
    assert sum(budget["groups"].values()) <= budget["wall_minutes"] * 60 * 2


@pytest.mark.slow
def test_a_plugin_wheel_built_once_is_reused_by_content_and_rebuilt_when_a_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from tests.support.packages import build_wheel, write_project

    kept = tmp_path / "kept"
    monkeypatch.setenv("BRAINSMITH_TEST_TOOL_CACHE", str(kept))
    project = write_project(tmp_path / "src", "acme-wheel", "acme_wheel", "VALUE = 1\n")
    first = build_wheel(project, tmp_path / "one")
    assert len(list((kept / "wheels").iterdir())) == 1
    # the same files again: the kept wheel, byte for byte, and no pip run (pip is not on the
    # path the second time, so a build would fail)
    monkeypatch.setattr("tests.support.packages.PIP", [shutil.which("false")])
    again = build_wheel(project, tmp_path / "two")
    assert again.read_bytes() == first.read_bytes() and again.parent == tmp_path / "two"
    # one file changed: another key, so pip is asked to build it (and fails here)
    (project / "acme_wheel" / "__init__.py").write_text("VALUE = 2\n")
    with pytest.raises(subprocess.CalledProcessError):
        build_wheel(project, tmp_path / "three")
    assert len(list((kept / "wheels").iterdir())) == 1


def test_the_budget_flags_a_long_test_unless_it_is_listed_or_moved_to_another_tier():
    from benchmarks.suite_profile import over_budget

    budget = {"wall_minutes": 15, "processes": 300, "test_cpu_seconds": 30, "groups": {"(none)": 900},
              "long_tests": {"tests.test_a::test_listed": "why"},
              "moved": {"test_a::test_moved": "wide: why"}}  # fmt: skip
    cases = [{"id": f"tests.test_a::{name}", "seconds": 40.0, "cpu_s": 40.0}
             for name in ("test_listed", "test_moved[one]", "test_new")]  # fmt: skip
    run = {"wall_s": 600.0, "processes_started": 100, "cases": cases,
           "groups": [{"group": "(none)", "seconds": 120.0}]}  # fmt: skip
    assert over_budget(run, budget) == [
        "tests.test_a::test_new: 40 CPU-s, 40 s; over 30 s and not listed in tests/budget.yaml "
        "long_tests"
    ]


def test_the_wide_budget_flags_its_wall_time_and_each_test_that_belongs_in_the_big_tier():
    from benchmarks.suite_profile import over_budget

    budget = {"wide_wall_minutes": 25, "wide_test_seconds": 150}
    cases = [{"id": "tests.test_a::test_short", "seconds": 149.0},
             {"id": "tests.test_a::test_long[x]", "seconds": 151.0}]  # fmt: skip
    assert over_budget({"wall_s": 1500.0, "cases": cases[:1]}, budget, "wide") == []
    assert over_budget({"wall_s": 1501.0, "cases": cases}, budget, "wide") == [
        "the run: 25.0 min, over 25 min",
        "tests.test_a::test_long[x]: 151 s, over 150 s: move it to make test-big "
        '(tests/budget.yaml moved: "big: why")',
    ]
