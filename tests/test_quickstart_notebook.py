"""examples/quickstart.ipynb is valid nbformat 4 without stored outputs, and its code cells,
run in order as one script in a fresh interpreter from an empty folder, build the shipped
MLP, run it and match QONNX's execution of the original model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def cells() -> list[dict]:
    notebook = json.loads(NOTEBOOK.read_text())
    assert notebook["nbformat"] == 4 and isinstance(notebook["nbformat_minor"], int)
    assert notebook["metadata"]["kernelspec"]["language"] == "python"
    return notebook["cells"]


def source(cell: dict) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else text


def test_notebook_is_nbformat_4_without_outputs():
    found = cells()
    assert {c["cell_type"] for c in found} == {"markdown", "code"}
    for cell in found:
        assert isinstance(cell["metadata"], dict) and isinstance(cell["source"], list | str)
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            assert not any(
                line.lstrip().startswith(("%", "!")) for line in source(cell).split("\n")
            )
        else:
            assert "outputs" not in cell and "execution_count" not in cell


def test_notebook_runs_from_an_empty_folder(tmp_path):
    code = [source(c) for c in cells() if c["cell_type"] == "code"]
    script = tmp_path / "quickstart.py"
    script.write_text("\n\n".join(code) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=work, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "<BuildResult mlp ok: " in out
    assert "largest difference from QONNX: " in out
    assert "LUT" in out and "DSP" in out
    builds = list((work / "build-out").glob("mlp-*"))  # written where it runs, not the clone
    assert len(builds) == 1 and (builds[0] / "report.html").is_file()
