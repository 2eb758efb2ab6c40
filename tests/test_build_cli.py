"""``brainsmith build`` and ``python -m scripts.demo`` as a user runs them: exit codes,
messages on stderr, the summary on stdout, FINN's chatter kept out of both."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.processes import Ran, invoke

# the module fixture is made once: every test of the module on one worker
pytestmark = pytest.mark.xdist_group("build-cli")

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
BRAINSMITH = [sys.executable, "-m", "brainsmith.cli"]


def run(args: list[str], cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def cli(*args: str) -> Ran:
    """``brainsmith ARGS`` in-process, from the repository as ``run`` starts it."""
    return invoke(*args, env={"COLUMNS": "200"}, cwd=REPO)


def test_missing_model_exits_2_before_loading_finn(tmp_path):
    """The module's one build in a process of its own, as a user's shell starts it."""
    result = run(
        [
            *BRAINSMITH,
            "build",
            str(tmp_path / "nope.onnx"),
            str(BLUEPRINT),
            "-o",
            str(tmp_path / "out"),
        ]
    )
    assert result.returncode == 2
    assert "nope.onnx does not exist" in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_invalid_blueprint_exits_2_with_its_location(tmp_path):
    blueprint = tmp_path / "bad.yaml"
    blueprint.write_text(
        "name: bad\nbuild:\n  fpga_part: xcvc1902-vsva2197-2MP-e-S\n  verify: sometimes\n"
    )
    result = cli("build", str(MLP), str(blueprint), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "bad.yaml:4:" in result.stderr and "verify" in result.stderr


def test_non_empty_output_folder_exits_2(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("keep me")
    result = cli("build", str(MLP), str(BLUEPRINT), "-o", str(out))
    assert result.returncode == 2
    assert "is not empty" in result.stderr and "try: choose another output folder" in result.stderr
    assert "--force" not in result.stderr  # not a folder brainsmith made: --force would refuse
    assert (out / "old.txt").read_text() == "keep me"


def test_previous_build_folder_exits_2_and_suggests_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".brainsmith-build").write_text("made by brainsmith build\n")
    (out / "report.json").write_text("{}")
    result = cli("build", str(MLP), str(BLUEPRINT), "-o", str(out))
    assert result.returncode == 2
    assert "is not empty" in result.stderr and "--force" in result.stderr


@pytest.mark.slow
def test_wrong_expected_output_fails_naming_the_step(tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper

    model = ModelWrapper(str(MLP))
    shape = model.get_tensor_shape(model.graph.input[0].name)
    out_shape = model.get_tensor_shape(model.graph.output[0].name)
    np.save(tmp_path / "x.npy", np.zeros(shape, dtype=np.float32))
    np.save(tmp_path / "y.npy", np.full(out_shape, 100.0, dtype=np.float32))
    result = cli(
        "build",
        str(MLP),
        str(BLUEPRINT),
        "-o",
        str(tmp_path / "out"),
        "--input",
        str(tmp_path / "x.npy"),
        "--expected",
        str(tmp_path / "y.npy"),
        "--verify",
        "each",
        "--quiet",
    )
    assert result.returncode == 1, result.stderr
    assert "build failed in step 'cleanup'" in result.stderr
    # the first step's model already differs: the export, not a step (before: only "outputs
    # differ from --expected", which did not say that no build step was involved)
    assert "the exported model itself does not match --expected" in result.stderr
    assert "differs by up to 100.1 (100.1% of the largest, 100)" in result.stderr
    assert "not from a build step" in result.stderr and "eval mode" in result.stderr
    assert "try:" in result.stderr and result.stdout == ""
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed" and report["error"]["step"] == "cleanup"
    html = (tmp_path / "out" / "report.html").read_text()
    row = next(r for r in html.split("<tr") if "<td>cleanup</td>" in r)
    assert "class='failed'" in row
    assert "generated inputs: ok, max error" in row
    assert "your vectors: MISMATCH (beyond tolerance), max error 100" in row


@pytest.mark.slow
def test_demo_builds_the_mlp_and_prints_a_summary(tmp_path):
    result = run([sys.executable, "-m", "scripts.demo", "--output-root", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    for text in (
        "built mlp",
        "throughput",
        "latency",
        "resources   LUT",
        "verified",
        "skipped     create_stitched_ip",
        "report.html",
    ):
        assert text in result.stdout
    assert "Assuming" not in result.stdout + result.stderr  # FINN's warnings go to build.log
    assert "[8/13] codegen: ok" in result.stderr  # plain progress lines when not a terminal
    assert "[9/13] fifo_depths: ok" in result.stderr
    assert "[10/13] hw_ipgen: ok" in result.stderr  # FINN's steps named like brainsmith's
    assert "step_" not in result.stdout + result.stderr
    # the shipped example ends without a warning: its output's scale and bias are a note
    assert "warning" not in result.stdout, result.stdout
    assert "note        the output's floating-point scale and bias (Mul, Add)" in result.stdout
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith("mlp-") and (folder / "report.json").is_file()
    assert "Assuming 2D input is NC" in (folder / "build.log").read_text()
    names = [s["name"] for s in json.loads((folder / "report.json").read_text())["steps"]]
    assert names[9:] == [  # report.json keeps the plugins' names
        "step_hw_ipgen", "step_set_fifo_depths", "step_create_stitched_ip",
        "step_out_of_context_synthesis",
    ]  # fmt: skip
    page = (folder / "report.html").read_text()
    assert "<td>hw_ipgen</td>" in page and "<td>step_hw_ipgen</td>" not in page


def test_build_without_a_blueprint_takes_overrides_from_the_command_line(tmp_path):
    out = tmp_path / "out"
    result = cli(
        "build",
        str(MLP),
        "-o",
        str(out),
        "--target-fps",
        "200000",
        "--clock-ns",
        "4",
        "--prefer",
        "rtl",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    assert "built mlp_4bit" in result.stdout and "target 200,000 fps met" in result.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["clock_ns"] == 4.0 and report["blueprint"]["hw_compiler"]["prefer"] == "rtl"
    assert {layer["backend"] for layer in report["layers"]} == {"rtl"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--part", "xc7z0200-clg400-1"], "did you mean 'xc7z020clg400-1'"),
        (["--target-fps", "0"], "--target-fps: build.target_fps is the number 0; expected a whole"),
        (["--clock-ns", "-5"], "--clock-ns: build.clock_ns is the number -5.0; expected"),
    ],
)
def test_bad_overrides_exit_2_naming_the_flag(tmp_path, args, message):
    result = cli("build", str(MLP), "-o", str(tmp_path / "out"), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_options_given_to_the_api_are_checked_as_a_blueprints_are():
    """One set of checks: a value the blueprint refuses is refused by name through the API,
    a nested option becomes the blueprint's typed value."""
    from brainsmith.blueprint.options import FoldingOptions
    from brainsmith.builder import BuildError
    from brainsmith.planning.plan import load_plan
    from brainsmith.planning.shaping import DEFAULT_BLUEPRINT, with_overrides

    plan = load_plan(DEFAULT_BLUEPRINT)
    for given, message in [
        ({"target_fps": 0}, "options['target_fps']: build.target_fps is the number 0"),
        ({"folding": {"search": "nope"}}, "build.folding.search is the text 'nope'"),
        ({"verify_samples": "x"}, "build.verify_samples is the text 'x'"),
        ({"foo": 1}, "options['foo']: unknown build option 'foo'; expected one of fpga_part"),
        # the command line's name of an option is not one of the API's: named as given
        ({"part": "x"}, "options['part']: unknown build option 'part'; expected one of fpga_"),
    ]:
        with pytest.raises(BuildError) as caught:
            with_overrides(plan, given, None)
        assert message in caught.value.reason and caught.value.exit_code == 2
    folded = with_overrides(plan, {"folding": {"search": "finn"}, "target_fps": 5}, None)
    assert folded.build.folding == FoldingOptions(search="finn") and folded.build.target_fps == 5


@pytest.fixture(scope="module")
def mlp_vectors(tmp_path_factory) -> tuple[Path, Path]:
    """Four inputs for the shipped MLP and the original model's outputs for them."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    folder = tmp_path_factory.mktemp("vectors")
    model = ModelWrapper(str(MLP))
    name, out = model.graph.input[0].name, model.graph.output[0].name
    x = np.random.default_rng(0).uniform(-1, 1, (4, 64)).astype(np.float32)
    y = np.concatenate([execute_onnx(model, {name: row[None]})[out] for row in x])
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", y)
    return folder / "x.npy", folder / "y.npy"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("final", r"verified    the final model: max error \S+ on 16 generated inputs, \S+ on your "
                  r"4 vectors; 0 errors in quantizer steps"),
        ("each", r"verified    each of (\d+) steps run \((\d+) unchanged, not re-run\): max error "
                 r"\S+ on 16 generated inputs, \S+ on your 4 vectors; 0 errors in quantizer steps"),
        ("none", r"verified    the final model against your 4 vectors only \(verify: none\): max "
                 r"error \S+"),
    ],
)  # fmt: skip
def test_the_summary_says_in_words_what_each_verify_mode_checked(tmp_path, mlp_vectors, mode, said):
    """``verify: final`` (the default) checks the final model, ``each`` every step run, ``none``
    only the user's vectors; the summary says which, never a count of steps that reads as
    "every step" (before: "verified    1 step(s)" for the default)."""
    x, y = mlp_vectors
    out = tmp_path / "out"
    result = cli("build", str(MLP), "-o", str(out), "--input", str(x), "--expected", str(y),
                 "--verify", mode, "--no-size-fifos", "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [text for text in result.stdout.splitlines() if text.startswith("  verified")]
    found = re.fullmatch("  " + said, line)
    assert found, line
    steps = json.loads((out / "report.json").read_text())["steps"]
    checks = [step["verification"] for step in steps if step.get("verification")]
    ran = [step for step in steps if step["status"] == "ok"]
    if mode == "each":
        assert len(checks) == len(ran) == int(found[1]) > 1
        assert sum(1 for check in checks if check.get("unchanged")) == int(found[2])
    else:
        assert len(checks) == 1 and checks[0]["user"]["samples"] == 4


AGE = """
import sys, time
sys.argv[0] = {argv0!r}
time.sleep(1.0)
from brainsmith.cli.build import process_started
started = process_started()
print("none" if started is None else time.perf_counter() - started)
"""


@pytest.mark.parametrize(("argv0", "command"), [("/venv/bin/brainsmith", True), ("-c", False)])
def test_the_brainsmith_command_times_its_build_from_the_process_start(argv0, command):
    """``brainsmith build`` counts the build's seconds from its process' start (a build once
    said 838.4 s of a 1,950 s command), so the interpreter's start and the imports are in
    them; a caller in a process of its own (a notebook, a test) is timed from its call."""
    ran = subprocess.run([sys.executable, "-c", AGE.format(argv0=argv0)], capture_output=True,
                         text=True, check=True, timeout=120)  # fmt: skip
    said = ran.stdout.strip()
    if not command:
        assert said == "none", said
        return
    assert 1.0 <= float(said) < 60.0, said  # the sleep and the interpreter's start
