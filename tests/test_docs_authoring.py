"""docs/authoring.md is executable: its files are written, packaged and its snippets run."""

from __future__ import annotations

import re
import textwrap

from tests.conftest import REPO, run_python
from tests.support.packages import PluginVenv, build_wheel

DOC = REPO / "docs" / "authoring.md"
BLOCK = re.compile(r"```(python|toml)\n(.*?)```", re.S)


def blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text())


def write_files(root, kinds=("my_plugins",)) -> None:
    for _, body in blocks():
        first = body.splitlines()[0]
        if first.startswith("# file: ") and first[8:].startswith(kinds):
            path = root / first[8:].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)


def snippets(needs_package: bool) -> list[str]:
    found = []
    for lang, body in blocks():
        if lang != "python" or body.startswith("# file: "):
            continue
        if body.startswith("# needs: acme-fpga-plugins") == needs_package:
            found.append(body)
    return found


def test_every_usage_snippet_runs(tmp_path):
    write_files(tmp_path)
    runnable = snippets(needs_package=False)
    assert len(runnable) >= 3
    for code in runnable:
        result = run_python(code, cwd=tmp_path)
        assert result.returncode == 0, f"{code}\n{result.stderr[-3000:]}"


def test_packaging_example_builds_installs_and_works(tmp_path):
    project = tmp_path / "acme"
    project.mkdir()
    write_files(project, kinds=("pyproject.toml", "acme_plugins"))
    toml = (project / "pyproject.toml").read_text()
    # Installed without dependencies: brainsmith is already in the environment.
    (project / "pyproject.toml").write_text(toml.replace('dependencies = ["brainsmith"]\n', ""))
    project = project.rename(tmp_path / "acme-fpga-plugins")
    venv = PluginVenv(tmp_path / "venv")
    venv.install(build_wheel(project, tmp_path / "dist"))
    (code,) = snippets(needs_package=True)
    result = venv.run(textwrap.dedent(code), env={}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
