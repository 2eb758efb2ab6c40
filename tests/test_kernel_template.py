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
from tests.support.packages import build_wheel, pip_install_target
from tests.support.processes import run_brainsmith

OP_TYPE = "AcmeSat"  # a name of the test's own: the docs' example is AcmeClip
DIST, MODULE = "acme-sat", "acme_sat"
TIMEOUT = 600


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    return run_brainsmith(*args, timeout=TIMEOUT, env=env or dict(os.environ), cwd=cwd)


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
    code, _, err = run_cli("new", "kernel", "acme_sat", cwd=tmp_path)
    assert code == 2 and "not a CamelCase op type" in err and "AcmeClip" in err
    occupied = tmp_path / "taken"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    code, _, err = run_cli("new", "kernel", OP_TYPE, "-o", str(occupied))
    assert code == 2 and "already exists" in err and "-o" in err
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]  # untouched
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # nothing half-written


def test_the_written_package_is_lint_clean_by_its_own_settings(tmp_path):
    code, _, err = run_cli("new", "kernel", OP_TYPE, "-o", str(tmp_path / DIST))
    assert code == 0, err
    ruff = [sys.executable, "-m", "ruff"]
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run(
            [*ruff, *command], cwd=tmp_path / DIST, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_new_kernel_writes_the_package_named_after_the_op(tmp_path):
    code, out, err = run_cli("new", "kernel", OP_TYPE, cwd=tmp_path)
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
    code, _, err = run_cli("new", "kernel", OP_TYPE, "-o", str(root / DIST))
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
    (layer,) = report["layers"]
    # 480 values a frame, at most 80 cycles at 200 MHz: PE 10 of 20 channels (PE 5 takes 96)
    assert (layer["op_type"], layer["backend"], layer["PE"]) == (OP_TYPE, "rtl", 10)
    assert layer["cycles"] == 48 and layer["LUT"] == 10 * (6 + 5) and layer["not_estimated"] == []
    assert report["target"]["met"] is True
    assert all(s["status"] in ("ok", "skipped") for s in report["steps"])
    assert report["rtlsim"]["ok"] is True
    assert [entry["status"] for entry in report["rtlsim"]["layers"]] == ["match"]
    code, stdout, stderr = run_cli("verify-rtl", str(out), env=env)  # a fresh process
    assert code == 0, stdout + stderr
    assert "1 RTL layer(s) match" in stdout


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
