"""``brainsmith new kernel``: the package it writes is pip-installed as is; its own tests run
the layer in Python and Verilator; a model with the op builds with no blueprint, verifies at
every step and in Verilator, folds to a target and shows its estimates; a fresh process
verifies the build; listing its plugins imports nothing of it (nor FINN)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.conftest import run_python
from tests.support.packages import PIP, PluginVenv, build_wheel, pip_env, pip_install_target
from tests.support.processes import invoke, run_brainsmith
from tests.support.tiers import wide

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("kernel-template")

OP_TYPE = "AcmeSat"  # a name of the test's own: the docs' example is AcmeClip
DIST, MODULE = "acme-sat", "acme_sat"
TIMEOUT = 600


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    """``brainsmith ARGS`` as a process of its own (a fresh environment sees the plugin)."""
    return run_brainsmith(*args, timeout=TIMEOUT, env=env or dict(os.environ), cwd=cwd)


def new(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``brainsmith new ARGS`` in this process: (exit code, stdout, stderr)."""
    ran = invoke("new", *args, cwd=cwd)
    return ran.returncode, ran.stdout, ran.stderr


def clip_model(path: Path, shape: list[int], low: int, high: int, datatype: str) -> Path:
    """An ONNX ``Clip`` of integer data to constant bounds, as an exporter writes it."""
    bounds = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
              (("low", low), ("high", high))]  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Clip", ["x", "low", "high"], ["y"], name="Clip_0")],
        "saturate",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        bounds,
    )
    annotation = onnx.TensorAnnotation(tensor_name="x")
    annotation.quant_parameter_tensor_names.add(key="finn_datatype", value=datatype)
    graph.quantization_annotation.append(annotation)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


# -- the command ---------------------------------------------------------------------------
def test_new_kernel_refuses_a_bad_name_and_an_occupied_folder(tmp_path):
    code, _, err = new("kernel", "acme_sat", cwd=tmp_path)
    assert code == 2 and "not a CamelCase op type" in err and "AcmeClip" in err
    occupied = tmp_path / "taken"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    code, _, err = new("kernel", OP_TYPE, "-o", str(occupied))
    assert code == 2 and "already exists" in err and "-o" in err
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]  # untouched
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # nothing half-written


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("Brainsmith", "gives the Python package 'brainsmith', which exists already"),
        ("Finn", "gives the Python package 'finn', which exists already"),
        ("Qonnx", "gives the Python package 'qonnx', which exists already"),
        ("Os", "'os', which exists already (a module of Python's standard library)"),
        ("If", "gives the Python package 'if', a Python keyword"),
        ("Class", "gives the Python package 'class', a Python keyword"),
        ("None", "'None' is a Python keyword"),
        ("Module", "gives the SystemVerilog module 'module', a SystemVerilog keyword"),
        ("Logic", "gives the SystemVerilog module 'logic', a SystemVerilog keyword"),
        ("AcmeClip\n", "is not a CamelCase op type"),
    ],
)
def test_new_kernel_refuses_a_name_that_would_hide_a_module_or_not_parse(name, words, tmp_path):
    code, _, err = new("kernel", name, cwd=tmp_path)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert "try: choose a more specific name" in err or "CamelCase" in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_new_kernel_refuses_a_distribution_name_that_is_installed(tmp_path):
    code, _, err = new("kernel", OP_TYPE, "--dist", "brainsmith", cwd=tmp_path)
    assert code == 2 and "distribution 'brainsmith' is installed already" in err, err
    assert "would replace it" in err and not list(tmp_path.iterdir())


def test_the_written_package_is_lint_clean_by_its_own_settings(tmp_path):
    code, _, err = new("kernel", OP_TYPE, "-o", str(tmp_path / DIST))
    assert code == 0, err
    ruff = [sys.executable, "-m", "ruff"]
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run(
            [*ruff, *command], cwd=tmp_path / DIST, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_new_kernel_writes_the_package_named_after_the_op(tmp_path):
    code, out, err = new("kernel", OP_TYPE, cwd=tmp_path)
    assert code == 0, err
    root = tmp_path / DIST
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        f"{MODULE}/__init__.py",
        f"{MODULE}/hdl/{MODULE}.sv",
        f"{MODULE}/hdl/{MODULE}_wrapper.v",
        f"{MODULE}/infer.py",
        f"{MODULE}/kernel.py",
        f"{MODULE}/rtl.py",
        "pyproject.toml",
        "tests/conftest.py",
        f"tests/test_{MODULE}.py",
    ]
    text = "".join(p.read_text() for p in root.rglob("*") if p.is_file())
    assert "@OP_TYPE@" not in text and "@MODULE@" not in text and "@DIST@" not in text
    assert f"module {MODULE} #(" in (root / MODULE / "hdl" / f"{MODULE}.sv").read_text()
    python = shlex.quote(sys.executable)  # brainsmith's environment, not whichever pip is first
    assert f"{python} -m pip install -e '.[test]'" in out
    assert f"{python} -m pytest tests" in out


# -- the package, installed ----------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The generated package, built as a wheel and pip-installed into a folder of its own."""
    root = tmp_path_factory.mktemp("template")
    code, _, err = new("kernel", OP_TYPE, "-o", str(root / DIST))
    assert code == 0, err
    site = root / "site"
    pip_install_target(build_wheel(root / DIST, root / "dist"), site)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"root": root, "project": root / DIST, "env": {**os.environ, "PYTHONPATH": path}}


@pytest.mark.slow
def test_the_generated_tests_pass_in_python_and_verilator(installed):
    options = ["-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(  # from outside the project: the installed copy is tested
        [sys.executable, "-m", "pytest", *options, str(installed["project"] / "tests")],
        cwd=installed["root"],
        env=installed["env"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "11 passed" in result.stdout and "skipped" not in result.stdout, result.stdout


def test_listing_the_plugins_imports_neither_the_package_nor_finn(installed):
    result = run_python(
        f"""
        import sys
        from brainsmith.plugin import get_registry

        registry = get_registry()
        names = sorted(s.qualified_name for s in registry.specs() if s.framework == "{DIST}")
        print(names)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("{MODULE}", "finn"))
        print(loaded)
        """,
        env=installed["env"],
    )
    assert result.returncode == 0, result.stderr
    names, loaded = result.stdout.strip().splitlines()[-2:]
    assert names == str(
        sorted(f"{DIST}:{n}" for n in (OP_TYPE, f"{OP_TYPE}RTL", f"Infer{OP_TYPE}"))
    )
    assert loaded == "[]"


@pytest.mark.slow
def test_a_model_with_the_op_builds_folds_and_verifies_in_verilator_from_a_fresh_process(
    installed,
):
    root, env = installed["root"], installed["env"]
    model = clip_model(root / "saturate.onnx", [1, 24, 20], -6, 9, "INT6")
    out = root / "out"
    code, stdout, stderr = run_cli(
        "build", str(model), "-o", str(out), "--verify", "rtlsim", "--target-fps", "2500000",
        env=env,
    )  # fmt: skip
    assert code == 0, stdout + stderr
    report = json.loads((out / "report.json").read_text())
    (layer,) = [x for x in report["layers"] if x["op_type"] == OP_TYPE]
    assert {x["op_type"] for x in report["layers"]} <= {OP_TYPE, "StreamingFIFO"}  # sized
    # 480 values a frame, at most 80 cycles at 200 MHz: PE 10 of 20 channels (PE 5 takes 96)
    assert (layer["op_type"], layer["backend"], layer["PE"]) == (OP_TYPE, "rtl", 10)
    assert layer["cycles"] == 48 and layer["LUT"] == 10 * (6 + 5) and layer["not_estimated"] == []
    assert report["target"]["met"] is True
    assert all(s["status"] in ("ok", "skipped") for s in report["steps"])
    assert report["rtlsim"]["ok"] is True and report["rtlsim"]["stitched"]["status"] == "match"
    assert {entry["status"] for entry in report["rtlsim"]["layers"]} == {"match"}
    code, stdout, stderr = run_cli("verify-rtl", str(out), env=env)  # a fresh process
    assert code == 0, stdout + stderr
    assert f"{len(report['rtlsim']['layers'])} RTL layer(s) match" in stdout


@pytest.mark.slow
def test_a_target_out_of_reach_names_the_layer_and_its_declared_folding(installed):
    root, env = installed["root"], installed["env"]
    model = clip_model(root / "wide.onnx", [1, 8, 12], 0, 100, "UINT8")
    out = root / "unreachable"
    code, stdout, stderr = run_cli(
        "build", str(model), "-o", str(out), "--target-fps", "100000000", env=env
    )
    assert code == 0, stdout + stderr
    target = json.loads((out / "report.json").read_text())["target"]
    assert target["met"] is False and target["bottleneck"] == f"{OP_TYPE}_rtl_0"
    assert target["limit"] == "fully parallel: PE 12 of NumChannels 12"
    assert "fully parallel: PE 12 of NumChannels 12" in stdout


# -- pip install -e, as the command prints it ---------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mode", wide(["default", "compat", "strict"], ["compat", "strict"]))
def test_the_printed_editable_install_finds_the_kernel_and_its_tests_pass(tmp_path, mode):
    """``brainsmith new kernel AcmeClip``, the pip command it prints, then ``pytest tests`` and
    ``brainsmith plugins`` in the package folder, in a virtualenv of their own, for each of
    setuptools' editable modes: an import hook (default), the project folder on ``sys.path``
    (compat), a tree of links (strict). The console scripts put no folder of the package on
    ``sys.path``: only the editable install makes it found; an edit to its source is seen."""
    venv = PluginVenv(tmp_path / "venv")
    venv.add_scripts("brainsmith", "pytest")
    bin_dir = venv.root / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def run(*command: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )

    made = run(str(bin_dir / "brainsmith"), "new", "kernel", "AcmeClip", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    advice = [line for line in made.stdout.splitlines() if line.lstrip().startswith(("cd ", "/"))]
    lines = [shlex.split(line, comments=True) for line in advice]
    (project,) = [Path(line[1]) for line in lines if line[:1] == ["cd"]]
    (install,) = [line for line in lines if line[1:5] == ["-m", "pip", "install", "-e"]]
    assert install == [str(venv.python), "-m", "pip", "install", "-e", ".[test]"]
    options = [] if mode == "default" else ["--config-settings", f"editable_mode={mode}"]
    quick = ["-q", "--no-deps", "--no-build-isolation"]  # offline: all is in the environment
    installed = subprocess.run(
        [*install, *quick, *options], cwd=project, env=pip_env(venv.python, env),
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    hooks = sorted(p.name for p in venv.site.glob("__editable__*"))
    if mode == "default":
        assert "__editable___acme_clip_0_1_0_finder.py" in hooks, hooks
    else:
        assert hooks == ["__editable__.acme_clip-0.1.0.pth"], hooks
        links = list((project / "build").glob("__editable__.acme_clip-*"))
        assert bool(links) == (mode == "strict"), links

    # compat puts the project folder itself on sys.path: its RTL is where the default mode
    # finds it, so the Verilator half (the slow one) runs in the other two modes only
    only = ["-k", "not verilator"] if mode == "compat" else []
    tests = run(str(bin_dir / "pytest"), "tests", *only, cwd=project)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    passed = "8 passed" if only else "11 passed"
    assert passed in tests.stdout and "skipped" not in tests.stdout, tests.stdout
    health = run(str(bin_dir / "brainsmith"), "plugins", "health", cwd=project)
    assert health.returncode == 0, health.stdout + health.stderr
    assert "acme-clip yes" in health.stdout, health.stdout
    info = run(str(bin_dir / "brainsmith"), "plugins", "info", "AcmeClip", cwd=project)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "kernel acme-clip:AcmeClip" in info.stdout and "not loaded" in info.stdout

    kernel = project / "acme_clip" / "kernel.py"
    kernel.write_text(kernel.read_text().replace("Clips integers to", "Saturates integers to"))
    info = run(str(bin_dir / "brainsmith"), "plugins", "info", "AcmeClip", cwd=project)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "Saturates integers to [low, high]" in info.stdout, info.stdout
    if mode == "strict":
        return  # its links are made at install time: a new file needs a reinstall
    (project / "acme_clip" / "extra.py").write_text(
        "from brainsmith.plugin import step\n\n\n"
        "@step(name='acme_extra')\ndef acme_extra(model, cfg):\n    return model\n"
    )
    info = run(str(bin_dir / "brainsmith"), "plugins", "info", "acme_extra", cwd=project)
    assert info.returncode == 0 and "step acme-clip:acme_extra" in info.stdout, info.stdout


@pytest.mark.slow
def test_an_editable_install_whose_import_hook_never_ran_is_named_with_what_to_do(tmp_path):
    """``pip install -e --target`` used through ``PYTHONPATH``: the hook's ``.pth`` file is
    never read, so the package cannot be imported; health names it and the command to run."""
    project = tmp_path / DIST
    code, _, err = new("kernel", OP_TYPE, "-o", str(project))
    assert code == 0, err
    site = tmp_path / "site"
    quick = ["--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run(
        [*PIP, "install", *quick, "--target", str(site), "-e", str(project)],
        check=True,
        capture_output=True,
        env=pip_env(),
    )
    assert (site / f"__editable___{MODULE}_0_1_0_finder.py").is_file()
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    code, out, err = run_cli("plugins", "health", "--json", env=env, cwd=tmp_path)
    assert code == 1, out + err
    (broken,) = json.loads(out)["broken_plugins"]
    assert broken["plugin"] == f"{DIST} (entry point {MODULE} in brainsmith.plugin_packages)"
    assert "import hook" in broken["reason"] and "not active" in broken["reason"]
    assert f"{sys.executable} -m pip install -e {project}" in broken["reason"], broken
