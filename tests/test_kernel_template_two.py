"""``brainsmith new kernel NAME --inputs 2``: a layer of two input streams (``in0_V``,
``in1_V``); its package shares the one-input template's plumbing, installs as a wheel, passes
its own tests in Python and Verilator, and a model with the two-input op builds with no
blueprint, verified at every step. Other input counts are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.support.packages import build_wheel, pip_install_target
from tests.support.processes import invoke, run_brainsmith

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("kernel-template-two")

OP_TYPE, DIST, MODULE = "AcmeLow", "acme-low", "acme_low"
TIMEOUT = 600
SHARED = ["pyproject.toml", f"{MODULE}/__init__.py", f"{MODULE}/rtl.py", "tests/conftest.py"]


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    """``brainsmith ARGS`` as a process of its own (a fresh environment sees the plugin)."""
    return run_brainsmith(*args, timeout=TIMEOUT, env=env or dict(os.environ), cwd=cwd)


def new(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``brainsmith new ARGS`` in this process: (exit code, stdout, stderr)."""
    ran = invoke("new", *args, cwd=cwd)
    return ran.returncode, ran.stdout, ran.stderr


def new_package(folder: Path, *options: str) -> Path:
    code, _, err = new("kernel", OP_TYPE, "-o", str(folder), *options)
    assert code == 0, err
    return folder


def min_model(path: Path, shape: list[int], datatypes: tuple[str, str]) -> Path:
    """An ONNX ``Min`` of two integer graph inputs of one shape, as an exporter writes it."""
    graph = helper.make_graph(
        [helper.make_node("Min", ["a", "b"], ["y"], name="Min_0")],
        "smaller",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    for name, datatype in zip(("a", "b"), datatypes, strict=True):
        annotation = onnx.TensorAnnotation(tensor_name=name)
        annotation.quant_parameter_tensor_names.add(key="finn_datatype", value=datatype)
        graph.quantization_annotation.append(annotation)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


# -- the command ---------------------------------------------------------------------------
def test_other_input_counts_are_refused_and_nothing_is_written(tmp_path):
    for count in ("3", "0"):
        code, _, err = new("kernel", OP_TYPE, "--inputs", count, cwd=tmp_path)
        assert code == 2 and "Invalid value for '--inputs'" in err, err
        assert f"'{count}' is not one of '1', '2'" in err, err
    assert list(tmp_path.iterdir()) == []
    from brainsmith.scaffold import ScaffoldError, new_kernel

    with pytest.raises(ScaffoldError, match="1 or 2 input streams, not 3"):
        new_kernel(OP_TYPE, tmp_path / DIST, inputs=3)
    assert list(tmp_path.iterdir()) == []


def test_the_help_names_the_two_input_variant():
    code, out, err = new("kernel", "--help")
    assert code == 0, err
    text = " ".join(out.split())  # as click wraps it
    assert "--inputs [1|2]" in text and "ports in0_V and in1_V" in text, text
    assert "brainsmith new kernel AcmeMin --inputs 2" in text, text


def test_two_inputs_share_the_plumbing_and_differ_in_the_layer(tmp_path):
    one = new_package(tmp_path / "one")
    two = new_package(tmp_path / "two", "--inputs", "2")
    files = sorted(str(p.relative_to(two)) for p in two.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(one)) for p in one.rglob("*") if p.is_file())
    for name in files:
        same = (one / name).read_text() == (two / name).read_text()
        assert same == (name in SHARED), name  # the README says what each layer does
    readme = (two / "README.md").read_text()
    assert "an ONNX `Min` of two computed integer tensors" in readme and "@" not in readme
    wrapper = (two / MODULE / "hdl" / f"{MODULE}_wrapper.v").read_text()
    for port in ("in0_V_TDATA", "in0_V_TREADY", "in1_V_TDATA", "in1_V_TVALID", "out0_V_TDATA"):
        assert port in wrapper, port
    assert "in1_V" not in (one / MODULE / "hdl" / f"{MODULE}_wrapper.v").read_text()


def test_the_two_input_package_is_lint_clean_by_its_own_settings(tmp_path):
    project = new_package(tmp_path / DIST, "--inputs", "2")
    ruff = [sys.executable, "-m", "ruff"]
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run([*ruff, *command], cwd=project, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


# -- the package, installed ----------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The two-input package, built as a wheel and pip-installed into a folder of its own."""
    root = tmp_path_factory.mktemp("template-two")
    project = new_package(root / DIST, "--inputs", "2")
    site = root / "site"
    pip_install_target(build_wheel(project, root / "dist"), site)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"root": root, "project": project, "env": {**os.environ, "PYTHONPATH": path}}


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
    assert "12 passed" in result.stdout and "skipped" not in result.stdout, result.stdout


@pytest.mark.slow
def test_a_model_with_the_two_input_op_builds_and_verifies_at_every_step(installed):
    root, env = installed["root"], installed["env"]
    model = min_model(root / "smaller.onnx", [1, 6, 12], ("INT5", "UINT4"))
    out = root / "out"
    code, stdout, stderr = run_cli("build", str(model), "-o", str(out), "--verify", "each", env=env)
    assert code == 0, stdout + stderr
    report = json.loads((out / "report.json").read_text())
    (layer,) = report["layers"]
    assert (layer["op_type"], layer["backend"]) == (OP_TYPE, "rtl")
    assert [read["bits"] for read in layer["reads"]] == [5, 4]  # in0: INT5, in1: UINT4
    # min of INT5 and UINT4 lies in [-16, 15]: INT5; PE * (compared 5 + out 5) LUTs
    assert layer["output_datatype"] == "INT5" and layer["LUT"] == 10 * layer["PE"]
    assert layer["not_estimated"] == [] and report["cpu_nodes"]["count"] == 0
    assert report["verify"] == "each" and report["status"] == "ok"
    checked = [s for s in report["steps"] if s.get("verification")]
    assert len(checked) >= 5 and all(s["verification"]["ok"] for s in checked)
    assert all(s["verification"]["max_error"] == 0 for s in checked)
    assert all(s["status"] in ("ok", "skipped") for s in report["steps"])
    final = onnx.load(out / "final.onnx").graph
    assert [n.op_type for n in final.node] == [f"{OP_TYPE}_rtl"]
    assert list(final.node[0].input) == [i.name for i in final.input]  # two streams in
