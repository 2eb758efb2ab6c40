"""The output folder: operating-system errors as ``error: ... try: ...`` with exit code 2,
``--force`` only for brainsmith's own folders, a blueprint's ``output_dir`` confined to its
project, and a full disk never reported as a build (real ``ulimit -f`` and a real tmpfs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import onnx
import pytest

from brainsmith.builder import BuildError
from brainsmith.builder.outdir import prepare_output_dir
from tests.support.models import MLP, REPO
from tests.support.processes import Ran, invoke
from tests.support.tiers import wide

BLUEPRINT = REPO / "blueprints" / "mlp.yaml"

MARKER = ".brainsmith-build"  # what marks a folder as made by brainsmith build
BUILD = [sys.executable, "-m", "brainsmith.cli", "build"]


def cli(*args: str, cwd: Path = REPO, shell_prefix: str = "") -> subprocess.CompletedProcess | Ran:
    """``brainsmith build ARGS`` in this process; with ``shell_prefix`` (a limit the shell
    sets, as ``ulimit -f 12;``) a process of its own."""
    if not shell_prefix:
        return invoke("build", *args, cwd=cwd, env={"COLUMNS": "200"})
    env = {**os.environ, "COLUMNS": "200", "PYTHONDONTWRITEBYTECODE": "1"}
    command = [*BUILD, *args]
    if shell_prefix:  # e.g. "ulimit -f 12; " run in the same process before brainsmith
        quoted = " ".join(f"'{part}'" for part in command)
        command = ["bash", "-c", f"{shell_prefix} exec {quoted}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def assert_clean_error(result: subprocess.CompletedProcess | Ran, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "\nerror: " in f"\n{result.stderr}" and "\n  try: " in result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# --- operating-system errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "words"),
    [
        ("/proc/brainsmith-out", ["does not exist and cannot be created"]),
        ("/etc/passwd/out", ["is a file, not a folder"]),
    ],
)
def test_unusable_output_path_is_an_error_not_a_traceback(folder, words):
    result = cli(str(MLP), str(BLUEPRINT), "-o", folder)
    assert_clean_error(result, folder, *words)


def test_dangling_symlink_as_output_folder_is_an_error(tmp_path):
    (tmp_path / "out").symlink_to(tmp_path / "gone" / "away")
    result = cli(str(MLP), str(BLUEPRINT), "-o", str(tmp_path / "out"))
    assert_clean_error(result, "symbolic link", "does not exist")


def in_mount_namespace(script: str) -> subprocess.CompletedProcess:
    """Run ``script`` (sh) in a private mount namespace where it may mount a tmpfs."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux unshare to mount a private tmpfs")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are not available here: {probe.stderr.decode().strip()}")
    env = {**os.environ, "COLUMNS": "200", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=300
    )


def test_read_only_file_system_is_an_error(tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    command = " ".join(f"'{p}'" for p in [*BUILD, MLP, BLUEPRINT, "-o", mount / "out"])
    result = in_mount_namespace(f"mount -t tmpfs -o ro,size=1m none '{mount}' && exec {command}")
    assert_clean_error(result, "read-only", "try: choose another output folder (-o OUTDIR)")


def test_force_on_the_working_directory_is_refused_and_moves_nothing(tmp_path):
    (tmp_path / "thesis.tex").write_text("years of work")
    result = cli(str(MLP), str(BLUEPRINT), "-o", ".", "--force", cwd=tmp_path)
    assert_clean_error(result, "was not made by brainsmith build", MARKER)
    assert (tmp_path / "thesis.tex").read_text() == "years of work"
    assert [p.name for p in tmp_path.parent.iterdir() if p.name.startswith(tmp_path.name)] == [
        tmp_path.name
    ]


# --- --force --------------------------------------------------------------------------------


def test_force_refuses_a_folder_brainsmith_did_not_make(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(BuildError) as caught:
        prepare_output_dir(str(mine), force=True)
    assert caught.value.exit_code == 2 and MARKER in caught.value.reason
    assert (mine / "notes.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_force_moves_a_previous_build_aside_even_from_inside_it(tmp_path, monkeypatch):
    out = tmp_path / "out"
    prepare_output_dir(str(out))
    (out / "report.json").write_text("{}")
    monkeypatch.chdir(out)
    moved = prepare_output_dir(".", force=True).moved_aside
    assert moved and Path(moved, "report.json").is_file()
    assert (out / MARKER).is_file() and not (out / "report.json").exists()


def test_force_never_moves_the_builds_own_inputs_aside(tmp_path):
    out = tmp_path / "out"
    prepare_output_dir(str(out))
    shutil.copy(MLP, out / "model.onnx")
    with pytest.raises(BuildError) as caught:
        prepare_output_dir(str(out), force=True, keep=(str(out / "model.onnx"),))
    assert "an input of this build" in caught.value.reason
    assert (out / "model.onnx").is_file()


WAITING_STEP = """\
import os
import time

from brainsmith.plugin.core import step


@step(name="wait_for_release")
def wait_for_release(model, cfg):
    open(os.environ["WAITING"], "w").close()
    end = time.monotonic() + 120
    while not os.path.exists(os.environ["RELEASE"]) and time.monotonic() < end:
        time.sleep(0.2)
    return model
"""


def test_a_second_build_into_a_busy_folder_is_refused_and_touches_nothing(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "waiting.py").write_text(WAITING_STEP)
    blueprint = tmp_path / "wait.yaml"
    blueprint.write_text(f"name: wait\nextends: {BLUEPRINT}\nsteps: [wait_for_release, cleanup]\n")
    out, waiting, release = tmp_path / "out", tmp_path / "waiting", tmp_path / "release"
    env = {**os.environ, "BRAINSMITH_PLUGIN_DIRS": str(plugins), "WAITING": str(waiting),
           "RELEASE": str(release)}  # fmt: skip
    first = subprocess.Popen([*BUILD, str(MLP), str(blueprint), "-o", str(out)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        for _ in range(600):
            if waiting.exists() or first.poll() is not None:
                break
            time.sleep(0.2)
        assert waiting.exists(), first.communicate()
        before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        second = subprocess.run([*BUILD, str(MLP), str(blueprint), "-o", str(out), "--force"],
                                env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert_clean_error(second, f"output folder {out} is in use by another build")
        assert f"(build, pid {first.pid} on " in second.stderr
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    finally:
        release.touch()
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stdout + stderr
    assert json.loads((out / "report.json").read_text())["status"] == "ok"
    assert not list(tmp_path.glob("*.old-*")) and not list(tmp_path.glob("*.lock"))


def test_python_api_errors_name_python_arguments_not_flags(tmp_path):
    import brainsmith

    out = tmp_path / "out"
    prepare_output_dir(str(out))
    (out / "report.json").write_text("{}")
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MLP), str(BLUEPRINT), str(out))
    text = str(caught.value)
    assert "force=True" in text and "output_dir=" in text
    assert "--force" not in text and "-o OUTDIR" not in text


# --- the blueprint's output_dir -----------------------------------------------------------


@pytest.mark.parametrize("value", ["../../..", "~/victim", "$HOME/victim", "/tmp", "."])
def test_blueprint_output_dir_must_stay_inside_its_project(tmp_path, value):
    from brainsmith.blueprint import BlueprintError, load_blueprint

    project = tmp_path / "project"
    (project / "blueprints").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = project / "blueprints" / "bp.yaml"
    path.write_text(f"name: bp\nextends: {BLUEPRINT}\nbuild:\n  output_dir: '{value}'\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(str(path))
    (problem,) = caught.value.problems
    assert problem.line == 4 and "build.output_dir" in problem.message
    assert "-o FOLDER" in problem.message or "not expanded" in problem.message


def test_blueprint_output_dir_through_a_symlink_out_of_the_project_is_refused(tmp_path):
    from brainsmith.blueprint import BlueprintError, load_blueprint

    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "escape").symlink_to(Path.home())
    path = project / "bp.yaml"
    path.write_text(f"name: bp\nextends: {BLUEPRINT}\nbuild:\n  output_dir: escape/.ssh\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(str(path))
    assert "outside the blueprint's project" in caught.value.problems[0].message


def test_blueprint_output_dir_is_relative_to_the_blueprint(tmp_path):
    from brainsmith.blueprint import load_blueprint

    project = tmp_path / "project"
    (project / "blueprints").mkdir(parents=True)
    (project / ".git").mkdir()
    path = project / "blueprints" / "bp.yaml"
    path.write_text(f"name: bp\nextends: {BLUEPRINT}\nbuild:\n  output_dir: ../build-out/bp\n")
    assert load_blueprint(str(path)).build.output_dir == str(project / "build-out" / "bp")


# --- a full disk --------------------------------------------------------------------------


def check_outcome(folder: Path, result: subprocess.CompletedProcess) -> dict | None:
    """Never exit 0 on a write failure; what is left is complete or absent."""
    report_path = folder / "report.json"
    if result.returncode == 0:
        report = json.loads(report_path.read_text())
        assert report["status"] == "ok"
        return report
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "\n  try: " in result.stderr
    if not folder.exists():  # refused before the build began
        return None
    report = json.loads(report_path.read_text())
    assert report["status"] == "failed", report
    assert report["error"]["reason"] in result.stderr
    for model in folder.rglob("*.onnx"):
        onnx.load(model)  # every model left is whole
    html = folder / "report.html"
    assert not html.exists() or html.read_text().rstrip().endswith("</html>")
    assert not list(folder.rglob(".*.partial"))
    return report


@pytest.mark.slow
@pytest.mark.parametrize("limit_kib", wide([9, 13, 30], [13]))  # 13: a step's model, as 9
def test_file_size_limit_fails_the_build_with_a_report(tmp_path, limit_kib):
    """ulimit -f: at 9 and 13 KiB a step's model cannot be written, at 30 KiB report.html."""
    out = tmp_path / "out"
    result = cli(str(MLP), str(BLUEPRINT), "-o", str(out), "-q",
                 shell_prefix=f"ulimit -f {limit_kib};")  # fmt: skip
    report = check_outcome(out, result)
    assert report is not None and report["status"] == "failed"
    assert "file-size limit" in report["error"]["reason"]
    assert "ulimit -f" in report["error"]["hint"]


def test_a_limit_below_the_reserve_refuses_the_folder_up_front(tmp_path):
    out = tmp_path / "out"
    result = cli(str(MLP), str(BLUEPRINT), "-o", str(out), shell_prefix="ulimit -f 4;")
    assert_clean_error(result, "file-size limit")
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("size", wide(["100k", "200k", "400k"], ["200k"]))
def test_full_disk_fails_the_build_with_a_report(tmp_path, size):
    """A real tmpfs of ``size`` fills up in different steps; each time report.json says
    failed with the reason, and nothing cut off is left."""
    mount = tmp_path / "disk"
    mount.mkdir()
    out = mount / "out"
    command = " ".join(f"'{p}'" for p in [*BUILD, MLP, BLUEPRINT, "-o", out, "-q"])
    checker = textwrap.dedent(f"""
        import json, subprocess, sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from tests.test_build_outdir import check_outcome
        result = subprocess.CompletedProcess([], int(sys.argv[1]), "", open(sys.argv[2]).read())
        report = check_outcome(Path({str(out)!r}), result)
        print(json.dumps(report and report["error"]))
    """)
    (tmp_path / "check.py").write_text(checker)
    result = in_mount_namespace(
        f"mount -t tmpfs -o size={size} none '{mount}' || exit 99; "
        f"{command} 2> '{tmp_path}/err'; code=$?; "
        f"exec '{sys.executable}' '{tmp_path}/check.py' $code '{tmp_path}/err'"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    error = json.loads(result.stdout.strip().splitlines()[-1])
    assert error is not None and "the disk is full" in error["reason"]
    assert "free space" in error["hint"]
