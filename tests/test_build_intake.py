"""The build's front door: a bad model, bad vectors or a bad blueprint fails before FINN
loads, with an ``error: ... try: ...`` naming what is wrong, and writes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.models import (
    MLP,
    REPO,
    dynamic_axis,
    float_mlp,
    float_norm_softmax,
    mlp_with,
    node_domain,
)
from tests.support.processes import Ran, invoke

BLUEPRINT = REPO / "blueprints" / "mlp.yaml"

# Runs brainsmith.build in a fresh process and tells whether FINN was imported.
PROBE = """
import json, sys
import brainsmith
from brainsmith.builder import BuildError
args = json.loads(sys.argv[1])
try:
    brainsmith.build(*args["args"], **args["kwargs"])
    outcome = {"error": None}
except BuildError as exc:
    outcome = {"error": str(exc), "exit_code": exc.exit_code}
outcome["finn_loaded"] = "finn" in sys.modules
print(json.dumps(outcome))
"""


def build_in_process(*args: object, cwd: Path = REPO, **kwargs: object) -> dict:
    spec = json.dumps({"args": [str(a) for a in args], "kwargs": kwargs})
    result = subprocess.run(
        [sys.executable, "-c", PROBE, spec],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def cli(*args: str, cwd: Path = REPO) -> Ran:
    """``brainsmith ARGS`` in this process (``build_in_process`` starts one: it asks whether
    FINN was imported)."""
    return invoke(*args, cwd=cwd, env={"COLUMNS": "200"})


def refused(result: Ran, *words: str) -> None:
    """Exit code 2, ``error:``/``try:`` on stderr mentioning ``words``, no traceback."""
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and "\n  try: " in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# --- the model ----------------------------------------------------------------------------


def test_non_onnx_file_is_refused_before_finn_loads_and_leaves_no_folder(tmp_path):
    model = tmp_path / "notes.onnx"
    model.write_text("name: not a model\nsteps: [cleanup]\n" * 20)
    out = tmp_path / "out"
    outcome = build_in_process(model, BLUEPRINT, out)
    assert outcome["exit_code"] == 2 and "not an ONNX model" in outcome["error"]
    assert "try: " in outcome["error"] and not outcome["finn_loaded"]
    assert not out.exists()
    # and the next run with a real model is not blocked by a leftover folder
    assert (
        cli("build", str(MLP), str(BLUEPRINT), "-o", str(out), "--verify", "none").returncode == 0
    )


def test_empty_onnx_file_is_refused(tmp_path):
    model = tmp_path / "empty.onnx"
    model.write_bytes(b"")
    result = cli("build", str(model), str(BLUEPRINT), "-o", str(tmp_path / "out"))
    refused(result, "is empty (0 bytes)")
    assert not (tmp_path / "out").exists()


def test_node_with_an_unknown_domain_is_refused_before_anything_imports_it(tmp_path):
    (tmp_path / "payload_module.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('ran')\n"
    )
    model = mlp_with(tmp_path / "domain.onnx", node_domain("payload_module"))
    result = cli("build", str(model), str(BLUEPRINT), "-o", str(tmp_path / "out"), cwd=tmp_path)
    refused(result, "domain 'payload_module'", "import a Python module")
    assert not (tmp_path / "IMPORTED").exists()
    assert not (tmp_path / "out").exists()


def test_float_model_is_told_to_quantize_before_finn_loads(tmp_path):
    model = float_mlp(tmp_path / "float.onnx")
    outcome = build_in_process(model, BLUEPRINT, tmp_path / "out")
    assert outcome["exit_code"] == 2 and "is not quantized" in outcome["error"]
    assert "Gemm" in outcome["error"] and "Brevitas" in outcome["error"]
    assert "add a kernel" not in outcome["error"] and not outcome["finn_loaded"]
    assert not (tmp_path / "out").exists()


def test_float_model_with_only_float_kernels_passes_the_front_door(tmp_path):
    from brainsmith.intake.model import check_model

    checked = check_model(float_norm_softmax(tmp_path / "norm.onnx"))
    assert checked.notes == []


def test_dynamic_axis_other_than_batch_is_refused(tmp_path):
    model = mlp_with(tmp_path / "features.onnx", dynamic_axis(1, "features"))
    result = cli("build", str(model), str(BLUEPRINT), "-o", str(tmp_path / "out"))
    refused(result, "dynamic axis 1 ('features')", "fixed shapes")


@pytest.mark.slow
@pytest.mark.slow  # builds the MLP
def test_dynamic_batch_axis_is_fixed_to_one_with_a_note(tmp_path):
    model = mlp_with(tmp_path / "batch.onnx", dynamic_axis(0, "N"))
    result = cli("build", str(model), str(BLUEPRINT), "-o", str(tmp_path / "out"), "--quiet")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "ok"
    assert any("dynamic batch axis ('N')" in note for note in report["notes"])
    assert "note        input global_in had a dynamic batch axis ('N')" in result.stdout


# --- the vectors --------------------------------------------------------------------------


@pytest.fixture
def vectors(tmp_path):
    """Writes arrays as .npy files in tmp_path; returns their paths."""

    def save(name: str, array) -> Path:
        path = tmp_path / name
        np.save(path, array, allow_pickle=array.dtype == object)
        return path

    return save


def build_with(tmp_path, x: Path, y: Path) -> subprocess.CompletedProcess:
    out = tmp_path / "out"
    result = cli("build", str(MLP), str(BLUEPRINT), "-o", str(out), "--input", str(x),
                 "--expected", str(y))  # fmt: skip
    assert not out.exists()  # nothing written for bad vectors
    return result


def test_more_inputs_than_expected_outputs_names_expected(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((5, 64), np.float32))
    y = vectors("y.npy", np.zeros((1, 10), np.float32))
    refused(build_with(tmp_path, x, y), "--expected", "1 output(s)", "5 sample(s)")


def test_empty_input_names_input(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((0, 64), np.float32))
    y = vectors("y.npy", np.zeros((1, 10), np.float32))
    refused(build_with(tmp_path, x, y), "--input", "is empty")


def test_npz_archive_names_input(tmp_path, vectors):
    np.savez(tmp_path / "x.npz", x=np.zeros((1, 64), np.float32))
    y = vectors("y.npy", np.zeros((1, 10), np.float32))
    refused(build_with(tmp_path, tmp_path / "x.npz", y), "--input", ".npz archive")


def test_nan_in_expected_values_names_expected(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((2, 64), np.float32))
    expected = np.zeros((2, 10), np.float32)
    expected[1, 3] = np.nan
    y = vectors("y.npy", expected)
    refused(build_with(tmp_path, x, y), "--expected", "NaN")


def test_wrong_input_shape_names_input_and_the_model_shape(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((2, 63), np.float32))
    y = vectors("y.npy", np.zeros((2, 10), np.float32))
    refused(build_with(tmp_path, x, y), "--input", "(2, 63)", "(1, 64)")


def test_python_objects_are_never_unpickled(tmp_path, vectors):
    x = vectors("x.npy", np.array([{"not": "numbers"}], dtype=object))
    y = vectors("y.npy", np.zeros((1, 10), np.float32))
    refused(build_with(tmp_path, x, y), "--input", "Python objects")


def test_text_file_as_vectors_names_expected(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((1, 64), np.float32))
    (tmp_path / "y.npy").write_text("0 0 0 0 0 0 0 0 0 0\n")
    refused(build_with(tmp_path, x, tmp_path / "y.npy"), "--expected", "not a NumPy .npy file")


def test_vectors_are_checked_before_finn_loads(tmp_path, vectors):
    x = vectors("x.npy", np.zeros((5, 64), np.float32))
    y = vectors("y.npy", np.zeros((1, 10), np.float32))
    outcome = build_in_process(MLP, BLUEPRINT, tmp_path / "out", input_npy=str(x),
                               expected_npy=str(y))  # fmt: skip
    assert outcome["exit_code"] == 2 and not outcome["finn_loaded"]
    assert "expected_npy" in outcome["error"] and "--expected" not in outcome["error"]


def test_nan_outputs_count_as_a_mismatch():
    from brainsmith.verification.verifier import compare

    got = [[np.array([1.0, np.nan], np.float32)]]
    want = [[np.array([1.0, 2.0], np.float32)]]
    check = compare("user", got, want)
    assert not check.ok and check.max_error == float("inf")


# --- the blueprint ------------------------------------------------------------------------


def write_blueprint(tmp_path: Path, build: str, extra: str = "") -> Path:
    path = tmp_path / "bp.yaml"
    path.write_text(f"name: bp\nextends: {BLUEPRINT}\n{extra}build:\n{build}")
    return path


def test_misspelt_fpga_part_is_refused_with_did_you_mean(tmp_path):
    path = write_blueprint(tmp_path, "  fpga_part: xc7z0200-clg400-1\n")
    result = cli("blueprint", "validate", str(path))
    assert result.returncode == 1
    assert f"{path}:4:14: error: build.fpga_part 'xc7z0200-clg400-1'" in result.stdout
    assert "did you mean 'xc7z020clg400-1'?" in result.stdout


def test_unknown_board_is_refused_listing_finns_boards(tmp_path):
    path = write_blueprint(tmp_path, "  fpga_part: null\n  board: Pynq-Z9\n")
    result = cli("blueprint", "validate", str(path))
    assert result.returncode == 1
    assert "build.board 'Pynq-Z9' is not a board FINN knows" in result.stdout
    assert "Pynq-Z1" in result.stdout and "U250" in result.stdout
    assert "did you mean 'Pynq-Z2' or 'Pynq-Z1'?" in result.stdout


@pytest.mark.parametrize(
    "part",
    ["xc7z020clg400-1", "xcvc1902-vsva2197-2MP-e-S", "xcku5p-ffvb676-2-e", "xcvu9p-flgb2104-2-i"],
)
def test_real_parts_pass(tmp_path, part):
    path = write_blueprint(tmp_path, f"  fpga_part: {part}\n")
    result = cli("blueprint", "validate", str(path))
    assert result.returncode == 0, result.stdout


def test_part_tables_read_without_importing_finn_match_finn():
    from finn.util.basic import part_map
    from finn.util.platforms import platforms

    from brainsmith.frameworks.finn.facts import PLATFORM_RESOURCES
    from brainsmith.frameworks.finn.parts import boards, part_resources

    assert boards() == part_map
    for board, platform in platforms.items():
        totals = [sum(column) for column in zip(*platform().compute_resources, strict=True)]
        resources, source = part_resources(part_map[board])
        assert [resources[k] for k in PLATFORM_RESOURCES] == totals and "finn" in source


def test_blueprint_validate_does_not_import_finn(tmp_path):
    path = write_blueprint(tmp_path, "  board: Pynq-Z1\n  fpga_part: null\n")
    result = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom brainsmith.cli import cli\ntry:\n"
         f"    cli(['blueprint', 'validate', {str(path)!r}])\nexcept SystemExit:\n    pass\n"
         "print('FINN', 'finn' in sys.modules)"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "bp.yaml: ok" in result.stdout and "FINN False" in result.stdout


def test_empty_steps_list_is_refused(tmp_path):
    path = write_blueprint(tmp_path, "  target_fps: 1000\n", extra="steps: []\n")
    result = cli("blueprint", "validate", str(path))
    assert result.returncode == 1
    assert f"{path}:3:8: error: steps is an empty list" in result.stdout
    build = cli("build", str(MLP), str(path), "-o", str(tmp_path / "out"))
    assert build.returncode == 2 and "steps is an empty list" in build.stderr
    assert not (tmp_path / "out").exists()


# --- help ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["build"], ["blueprint", "validate"]])
def test_help_examples_name_files_that_exist(command):
    result = cli(*command, "--help")
    assert result.returncode == 0
    paths = re.findall(r"(?:examples|blueprints)/[\w./-]+\.(?:onnx|yaml)", result.stdout)
    for path in paths:
        assert (REPO / path).is_file(), f"`brainsmith {' '.join(command)} --help` names {path}"
    if command != ["blueprint", "validate"]:
        assert paths
