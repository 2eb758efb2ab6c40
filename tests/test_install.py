"""The set-up's edges: torch for the CPU from a pip that sees only the default index, and
Jupyter for the example notebook, installed on demand by ``make notebook``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.packages import pip_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install")]

REPO = Path(__file__).resolve().parents[1]
TORCH = REPO / "requirements" / "torch.txt"


def default_index_only() -> dict[str, str]:
    """This environment with pip's configuration and its PIP_* sources left out: pip sees
    PyPI (and what a requirement file names) and nothing else."""
    kept = {"PIP_CERT", "PIP_DEFAULT_TIMEOUT"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in kept}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def resolve(requirements: Path, report: Path, **extra: str) -> subprocess.CompletedProcess:
    """pip's resolution of ``requirements`` for a fresh install (nothing installed)."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--report", str(report), "-r", str(requirements)],
        env=pip_env(base={**default_index_only(), **extra}), capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def installs(report: Path) -> dict[str, str]:
    found = json.loads(report.read_text())["install"]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in found}


def test_the_bootstrap_installs_torch_from_its_cpu_requirement_first():
    script = (REPO / "scripts" / "bootstrap.sh").read_text()
    # the CPU requirement, or the same without PyTorch's index when that does not answer
    assert "torch_requirements=requirements/torch.txt" in script
    assert 'grep -v -- "--extra-index-url" requirements/torch.txt > "$torch_requirements"' in script
    first = script.index('-r "$torch_requirements"')
    assert first < script.index("-r requirements/lock.txt")
    assert "requirements/torch.txt" in script.split("want=", 1)[1].split("\n", 1)[0]


def test_a_pip_that_sees_only_the_default_index_gets_the_cpu_torch_or_stops(tmp_path):
    """PyPI's Linux torch wheels pull the CUDA libraries (nvidia-*, triton): the requirement
    names the CPU build (``+cpu``, on PyTorch's CPU index), so pip resolves that or fails
    naming it, never the CUDA build."""
    result = resolve(TORCH, tmp_path / "report.json")
    if result.returncode == 0:
        found = installs(tmp_path / "report.json")
        assert found["torch"] == "2.13.0+cpu"
        assert [name for name in found if name.startswith(("nvidia-", "triton", "cuda-"))] == []
    else:
        said = "No matching distribution found for torch==2.13.0+cpu"
        assert said in result.stderr, result.stderr[-3000:]


@pytest.mark.wide  # a fallback's breadth: the default resolve is checked in make test
def test_a_folder_holding_the_cpu_wheel_is_the_documented_fallback(tmp_path):
    """Without PyPI's CUDA packages or PyTorch's index: ``PIP_FIND_LINKS`` naming a folder with
    the CPU wheel (here the folder this machine's pip takes it from)."""
    folders = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split() if Path(p).is_dir()]
    wheels = [w for folder in folders for w in folder.glob("torch-2.13.0+cpu-*.whl")]
    if not wheels:
        pytest.skip("no folder of PIP_FIND_LINKS holds torch-2.13.0+cpu here")
    result = resolve(TORCH, tmp_path / "report.json", PIP_FIND_LINKS=str(wheels[0].parent))
    assert result.returncode == 0, result.stderr[-3000:]
    found = installs(tmp_path / "report.json")
    assert found["torch"] == "2.13.0+cpu"
    assert [name for name in found if name.startswith(("nvidia-", "triton", "cuda-"))] == []


@pytest.mark.wide  # an optional install; the notebook's cells run in test_quickstart_notebook
def test_make_notebook_installs_jupyter_on_demand_and_the_notebook_runs_in_it(tmp_path):
    """``make jupyter`` (what ``make notebook`` runs before opening JupyterLab) installs
    JupyterLab into a virtualenv that lacks it, and the quickstart notebook executes there
    with Jupyter's own kernel, from a folder outside the clone."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ours = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "_development.pth").write_text(f"{REPO}\n{ours}\n")
    jupyter = venv / "bin" / "jupyter"
    assert not jupyter.exists()
    make = ["make", "-s", "jupyter", f"VENV={venv}", "BOOT=true"]
    done = subprocess.run(make, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    version = subprocess.run([str(jupyter), "lab", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("4."), version.stderr
    again = subprocess.run(make, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout + again.stderr == ""  # once only
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    executed = subprocess.run(
        [str(jupyter), "nbconvert", "--to", "notebook", "--execute", "--output-dir", str(work),
         "--ExecutePreprocessor.timeout=900", str(REPO / "examples" / "quickstart.ipynb")],
        cwd=work, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert executed.returncode == 0, executed.stderr[-3000:]
    cells = json.loads((work / "quickstart.ipynb").read_text())["cells"]
    outputs = [out for cell in cells if cell["cell_type"] == "code" for out in cell["outputs"]]
    assert outputs and not [out for out in outputs if out["output_type"] == "error"]
