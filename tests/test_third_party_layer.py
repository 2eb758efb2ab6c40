"""A hardware layer from a pip-installed plugin package, end to end: registered where QONNX
and FINN look by brainsmith itself, built without a blueprint and verified at every step,
loaded again by every fresh process that reads the build (verify-rtl, a continued
checkpoint, check), a clear error naming the layer type and the package once the package is
gone, and verification that names the step whose output first differs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from brainsmith.blueprint.schema import DEFAULT_STEPS
from tests.conftest import REPO, once, run_python
from tests.support.layers import DIST, MODULE, OP_TYPE, PLUGIN_SOURCE, int_clip_model
from tests.support.packages import build_wheel, pip_install_target, write_project
from tests.support.processes import Ran, run_brainsmith

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]
TIMEOUT = 300
BACKEND_OP = f"{OP_TYPE}_rtl"


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> dict:
    """The plugin package built as a wheel and pip-installed into a folder of its own, and
    the model using its layer."""

    def make() -> dict:
        root = tmp_path_factory.mktemp("acme")
        project = write_project(root / "src", DIST, MODULE, PLUGIN_SOURCE)
        site = root / "site"
        pip_install_target(build_wheel(project, root / "dist"), site)
        return {"site": site, "model": int_clip_model(root / "clip.onnx")}

    return once("third-party package", make)


def with_package(package: dict, **extra: str) -> dict:
    """The environment of a process with the package installed."""
    path = os.pathsep.join(filter(None, [str(package["site"]), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def without_package() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run_cli(*args: str, env: dict) -> tuple[int, str, str]:
    return run_brainsmith(*args, timeout=TIMEOUT, env=env)


def build_in_process(env: dict, cwd: Path, **args) -> dict:
    """``brainsmith.build(**args)`` in a fresh interpreter: its result or its BuildError."""
    return in_one_process(env, cwd, {"build": args})["build"]


IN_ONE_PROCESS = """
import json, os, sys, traceback
sys.path.insert(0, os.environ["REPO"])
import brainsmith
from brainsmith.builder import BuildError
from brainsmith.builder.checkpoint import Checkpoint
from brainsmith.plugin.manager import reset_plugin_system
from tests.support.processes import invoke

done = {}
for name, what in json.loads(os.environ["COMMANDS"]).items():
    if isinstance(what, list):  # brainsmith WORDS, as the command line runs them
        try:
            ran = invoke(*what)
            done[name] = [ran.returncode, ran.stdout, ran.stderr]
        except BaseException:
            done[name] = [None, "", traceback.format_exc()]
        continue
    args = dict(what)  # brainsmith.build(**args)
    start = Checkpoint.load(args.pop("start")) if "start" in args else None
    reset_plugin_system()  # discovered again, as a fresh process discovers
    try:
        result = brainsmith.build(start=start, **args)
        done[name] = {"status": result.status, "output_dir": result.output_dir}
    except BuildError as exc:
        done[name] = {"step": exc.step, "reason": exc.reason, "hint": exc.hint,
                      "exit_code": exc.exit_code}
with open(os.environ["DONE"], "w") as file:
    json.dump(done, file)
"""


def in_one_process(env: dict, cwd: Path, commands: dict[str, list | dict]) -> dict:
    """Each of ``commands`` (name -> ``brainsmith`` words, or ``brainsmith.build`` keyword
    arguments) in order, in one fresh interpreter with ``env`` exactly (without_package()
    has no PYTHONPATH): name -> ``Ran`` for words, the build's result or BuildError for
    arguments. One interpreter loads FINN and the plugins once for all of them."""
    done = cwd / "done.json"
    done.unlink(missing_ok=True)  # (a build_in_process before, in the same folder)
    result = subprocess.run(
        [sys.executable, "-c", IN_ONE_PROCESS],
        env={**env, "REPO": str(REPO), "DONE": str(done),
             "COMMANDS": json.dumps(commands, default=str)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT * len(commands),
    )  # fmt: skip
    assert result.returncode == 0 and done.is_file(), result.stderr[-3000:]
    return {
        name: Ran(*outcome) if isinstance(outcome, list) else outcome
        for name, outcome in json.loads(done.read_text()).items()
    }


@pytest.fixture(scope="module")
def ran(package, clamped, tmp_path_factory) -> dict:
    """What this module's tests read, made in one process with the package installed:
    ``build`` (``brainsmith build clip.onnx --verify each``, no blueprint; its folder
    ``built``), the clamped networks built and ``check`` on each model."""

    def make() -> dict:
        root = tmp_path_factory.mktemp("ran")
        finn_only = root / "finn_only.yaml"
        finn_only.write_text(
            "name: finn_only\nextends: brainsmith:base\nhw_compiler:\n"
            "  kernels: [Thresholding, MVAU, ElementwiseMul]\n"
        )
        clip, clamp = str(package["model"]), str(clamped["clamped"])
        commands: dict[str, list | dict] = {
            "build": ["build", clip, "-o", str(root / "built"), "--verify", "each"]
        }
        for name, model in clamped.items():
            vectors = [str(model.with_name(f"{name}_{kind}.npy")) for kind in ("input", "expected")]
            commands[f"build {name}"] = [
                "build", str(model), "-o", str(root / name), "--verify", "each",
                "--input", vectors[0], "--expected", vectors[1],
            ]  # fmt: skip
        commands |= {
            "check clip": ["check", clip, "--json"],
            "check clamped": ["check", clamp, "--json"],
            "check clamped finn_only": ["check", clamp, str(finn_only), "--json"],
            "check clamped excluded": ["check", clamp, "--exclude", OP_TYPE, "--json"],
            "check clamped misspelt": ["check", clamp, "--exclude", "AcmeClp"],
        }
        outcomes = in_one_process(with_package(package), root, commands)
        return {**outcomes, "built": root / "built", "root": root}

    return once("third-party commands", make)


@pytest.fixture(scope="module")
def built(ran) -> Path:
    """`brainsmith build clip.onnx --verify each` with the package installed, no blueprint."""
    code, stdout, stderr = astuple(ran["build"])
    assert code == 0, stdout + stderr
    return ran["built"]


def astuple(ran: Ran) -> tuple[int, str, str]:
    return ran.returncode, ran.stdout, ran.stderr


# -- what brainsmith registers -------------------------------------------------------------
def test_loading_the_plugins_registers_the_layers_where_qonnx_and_finn_look(package, tmp_path):
    result = run_python(
        f"""
        from brainsmith.frameworks.finn.env import prepare_finn
        prepare_finn()
        import finn.custom_op.fpgadataflow as kernels
        from finn.custom_op.fpgadataflow import hls, rtl
        from onnx import helper
        from qonnx.custom_op.registry import getCustomOp
        from brainsmith.plugin.manager import get_plugin_manager

        finn_own = dict(kernels.custom_op), dict(hls.custom_op), dict(rtl.custom_op)
        registry = get_plugin_manager().registry()
        for spec in registry.specs("kernel") + registry.specs("backend"):
            if spec.framework in ("brainsmith", "{DIST}"):
                registry.load(spec)
        kernel, backend = kernels.custom_op["{OP_TYPE}"], rtl.custom_op["{BACKEND_OP}"]
        assert kernel is registry.get("kernel", "{OP_TYPE}")
        assert backend.__name__ == "{BACKEND_OP}"
        assert backend.__bases__ == (registry.get("backend", "AcmeClipRTL"),)
        node = helper.make_node("{BACKEND_OP}", ["x"], ["y"],
                                domain="finn.custom_op.fpgadataflow.rtl")
        assert type(getCustomOp(node)) is backend
        node = helper.make_node("{OP_TYPE}", ["x"], ["y"], domain="finn.custom_op.fpgadataflow")
        assert type(getCustomOp(node)) is kernel
        # FINN's own entries stay (brainsmith's LayerNorm backends subclass FINN's)
        for before, table in zip(finn_own, (kernels.custom_op, hls.custom_op, rtl.custom_op)):
            assert all(table[name] is cls for name, cls in before.items())
        assert hls.custom_op["LayerNorm_hls"].__module__.startswith("finn.")
        print("ok")
        """,
        env=with_package(package),
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def test_a_third_party_layer_builds_without_a_blueprint_verified_at_every_step(built):
    report = json.loads((built / "report.json").read_text())
    assert report["status"] == "ok"
    verified = [s for s in report["steps"] if "verification" in s]
    assert len(verified) == len(DEFAULT_STEPS)
    assert all(s["verification"]["ok"] and s["verification"]["max_error"] == 0 for s in verified)
    from qonnx.core.modelwrapper import ModelWrapper

    final = ModelWrapper(str(built / "final.onnx"))
    assert [(n.op_type, n.domain) for n in final.graph.node] == [
        (BACKEND_OP, "finn.custom_op.fpgadataflow.rtl")
    ]
    recorded = json.loads(final.get_metadata_prop("brainsmith.layer_plugins"))
    assert recorded[BACKEND_OP]["plugin"] == f"{DIST}:AcmeClipRTL"
    assert recorded[BACKEND_OP]["distribution"] == DIST
    assert recorded[BACKEND_OP]["version"] == "1.0.0"
    assert recorded[OP_TYPE]["plugin"] == f"{DIST}:{OP_TYPE}"
    assert (
        f"layer {BACKEND_OP} is provided by backend {DIST}:AcmeClipRTL "
        f"(pip package {DIST} 1.0.0)" in report["notes"]
    )


def test_a_layer_without_finns_port_names_keeps_finns_fifo_depths_and_says_why(built):
    notes = json.loads((built / "report.json").read_text())["notes"]
    reason = next(n for n in notes if n.startswith("FIFO depths: FINN's, not sized"))
    assert f"{BACKEND_OP}_0: its top module {BACKEND_OP}_0 has no port ap_clk, " in reason


def test_check_shows_the_third_party_layer_and_its_backend(ran):
    code, out, err = astuple(ran["check clip"])
    assert code == 0, out + err
    nodes = json.loads(out)["nodes"]
    assert [(n["op_type"], n["placement"], n["backend"]) for n in nodes] == [
        (OP_TYPE, "hardware", BACKEND_OP)
    ]


# -- fresh processes reading the build -----------------------------------------------------
def test_verify_rtl_in_a_fresh_process_loads_the_plugin_of_the_layers(built, package):
    code, out, err = run_cli("verify-rtl", str(built), env=with_package(package))
    assert "KeyError" not in err and "not found in domain" not in err
    # the layer's class was found: its placeholder RTL is a plugin matter, not a lookup's
    assert f"{BACKEND_OP}_0" in out and "has no port ap_clk" in out, out + err
    assert code == 2 and "no layer was simulated, so nothing was checked" in err, out + err


def test_verify_rtl_without_the_package_names_the_layer_type_and_the_package(built):
    code, out, err = run_cli("verify-rtl", str(built), env=without_package())
    assert code == 2, out + err
    assert "Traceback" not in err and "KeyError" not in err
    assert f"({BACKEND_OP})" in err and f"pip package {DIST} 1.0.0" in err
    assert f"pip install {DIST}==1.0.0" in err


def test_a_checkpoint_continues_in_a_fresh_process_that_loads_the_plugin(package, tmp_path):
    model = str(package["model"])
    first_folder = tmp_path / "first"
    first = build_in_process(
        with_package(package), tmp_path, model=model, output_dir=str(first_folder), stop_after=5
    )
    assert first["status"] == "stopped", first
    saved = json.loads((first_folder / "checkpoint.json").read_text())
    assert saved["layer_plugins"][BACKEND_OP]["distribution"] == DIST
    rest = build_in_process(
        with_package(package),
        tmp_path,
        model=model,
        output_dir=str(tmp_path / "rest"),
        start=str(first_folder),
        verify="each",
    )
    assert rest["status"] == "ok", rest
    report = json.loads((tmp_path / "rest" / "report.json").read_text())
    assert all(s["verification"]["ok"] for s in report["steps"] if "verification" in s)
    gone = build_in_process(
        without_package(),
        tmp_path,
        model=model,
        output_dir=str(tmp_path / "gone"),
        start=str(first_folder),
    )
    assert gone["step"] == "setup" and gone["exit_code"] == 2, gone
    assert f"({BACKEND_OP})" in gone["reason"] and f"pip package {DIST}" in gone["reason"]
    assert f"pip install {DIST}==1.0.0" in gone["hint"]


# -- verification names the step whose output first differs -------------------------------
STEPS = """\
from onnx import helper
from brainsmith.plugin.core import step


@step(name="narrow_clip")
def narrow_clip(model, cfg):
    clip = model.get_nodes_by_op_type("Clip")[0]
    model.set_initializer(clip.input[2], model.get_initializer(clip.input[2]) - 1)
    return model


@step(name="mislabel_half")
def mislabel_half(model, cfg):
    # x * 0.5 * 2: the same function, but the halves are annotated as integers
    clip = model.get_nodes_by_op_type("Clip")[0]
    source = clip.input[0]
    for name, value in (("half", 0.5), ("two", 2.0)):
        model.set_initializer(name, __import__("numpy").array(value, "float32"))
    graph = model.graph
    graph.node.insert(0, helper.make_node("Mul", [source, "half"], ["halved"], name="Halve"))
    graph.node.insert(1, helper.make_node("Mul", ["halved", "two"], ["whole"], name="Double"))
    clip.input[0] = "whole"
    from qonnx.core.datatype import DataType
    from qonnx.transformation.infer_shapes import InferShapes

    model = model.transform(InferShapes())
    model.set_tensor_datatype("halved", DataType["INT8"])
    model.set_tensor_datatype("whole", DataType["INT8"])
    return model
"""
FLOW = "[cleanup, qonnx_to_finn, {step}, streamline, hardware_inference, specialize, folding, estimates, codegen]"


def blueprint(tmp_path: Path, step: str) -> str:
    path = tmp_path / f"{step}.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: {step}
        extends: {REPO / "blueprints" / "base.yaml"}
        steps: {FLOW.format(step=step)}
        """)
    )
    return str(path)


VERIFY_MODES = ["final", "rtlsim"]


@pytest.fixture(scope="module")
def corrupted(package, tmp_path_factory) -> dict:
    """Builds with the package installed and a user plugin folder of corrupting steps, in
    one process: ``narrow_clip`` verified in each of ``VERIFY_MODES`` and ``mislabel_half``
    verified at every step; name -> (the build's BuildError or result, its folder)."""

    def make() -> dict:
        root = tmp_path_factory.mktemp("corrupted")
        folder = root / "steps"
        folder.mkdir()
        (folder / "corrupting.py").write_text(STEPS)  # a user plugin folder
        env = with_package(package, BRAINSMITH_PLUGIN_DIRS=str(folder))
        model = str(package["model"])
        builds = {
            mode: {"model": model, "blueprint": blueprint(root, "narrow_clip"),
                   "output_dir": str(root / mode), "verify": mode}
            for mode in VERIFY_MODES
        }  # fmt: skip
        builds["mislabel_half"] = {
            "model": model,
            "blueprint": blueprint(root, "mislabel_half"),
            "output_dir": str(root / "mislabel_half"),
            "verify": "each",
        }
        outcomes = in_one_process(env, root, builds)
        return {name: (outcomes[name], Path(args["output_dir"])) for name, args in builds.items()}

    return once("third-party corrupted builds", make)


@pytest.mark.parametrize("mode", VERIFY_MODES)
def test_a_difference_found_at_the_end_names_the_step_that_made_it(corrupted, mode):
    error, out = corrupted[mode]
    assert error.get("step") == "narrow_clip", error
    assert "verification failed" in error["reason"] and "traced back" in error["reason"]
    assert f"build.verify: {mode}" in error["reason"]
    assert "03_narrow_clip.onnx" in error["hint"] and "02_qonnx_to_finn.onnx" in error["hint"]
    assert not weakening(error["hint"])
    report = json.loads((out / "report.json").read_text())
    steps = {s["name"]: s for s in report["steps"]}
    assert report["error"]["step"] == "narrow_clip"
    assert steps["narrow_clip"]["status"] == "failed"
    assert steps["narrow_clip"]["verification"]["max_error"] >= 1
    assert steps["streamline"]["status"] == "ok"
    assert steps["codegen"]["status"] == "failed" and "narrow_clip" in steps["codegen"]["reason"]


def test_a_model_that_cannot_run_gets_advice_on_what_to_inspect(corrupted):
    error, _ = corrupted["mislabel_half"]
    assert error.get("step") == "mislabel_half", error
    assert "cannot be executed for verification" in error["reason"]
    assert "Rounding error" in error["reason"]
    assert "inspect" in error["hint"] and "halved" in error["hint"]
    assert "03_mislabel_half.onnx" in error["hint"]
    assert not weakening(error["hint"])


def weakening(hint: str) -> bool:
    """Advice to verify less or more loosely instead of finding the cause."""
    return any(
        text in hint
        for text in ("verify: none", "verify: final", "verify_atol", "verify_rtol", "--verify none")
    )


def test_exploration_workers_load_the_plugin_of_the_shared_segment(package, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(
        textwrap.dedent(f"""\
        name: clip_space
        extends: {REPO / "blueprints" / "base.yaml"}
        design_space:
          build: {{target_fps: [50000000, 200000000]}}
        """)
    )
    out = tmp_path / "dse"
    code, stdout, stderr = run_cli(
        "explore", str(package["model"]), str(space), "-o", str(out), "--workers", "2", "-q",
        env=with_package(package),
    )  # fmt: skip
    assert code == 0, stdout + stderr
    assert "2 of 2 variants built" in stdout
    for variant in sorted((out / "variants").iterdir()):
        report = json.loads((variant / "report.json").read_text())
        assert report["status"] == "ok"
        assert any(f"backend {DIST}:AcmeClipRTL" in note for note in report["notes"])


# -- a kernel whose pattern a rewrite of its package exposes --------------------------------
CLAMPED = {  # a Brevitas export clamping a quantized ReLU: the Clip reads the scaled floats
    "clamped": "clamped_mlp()",
    "clamped_w3a3": "clamped_mlp(features=10, hidden=20, weight_bits=3, act_bits=3, steps=(1, 5))",
}


@pytest.fixture(scope="module")
def clamped(tmp_path_factory) -> dict[str, Path]:
    def make() -> dict[str, Path]:
        folder = tmp_path_factory.mktemp("clamped")
        lines = "".join(
            f"zoo.export_network({name!r}, folder, seed=5, make=lambda: zoo.{call})\n"
            for name, call in CLAMPED.items()
        )
        result = run_python(
            "from pathlib import Path\nimport examples.zoo as zoo\n"
            f"folder = Path({str(folder)!r})\n" + lines,
            cwd=REPO,
            timeout=TIMEOUT,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return {name: folder / f"{name}.onnx" for name in CLAMPED}

    return once("third-party clamped exports", make)


def check_json(ran: Ran) -> list[dict]:
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return json.loads(ran.stdout)["nodes"]


@pytest.mark.parametrize("name", list(CLAMPED))
def test_a_kernels_rewrite_takes_a_brevitas_clamp_into_hardware_with_no_blueprint(ran, name):
    # brainsmith build clamped.onnx -o OUT --verify each --input X --expected Y
    code, stdout, stderr = astuple(ran[f"build {name}"])
    assert code == 0, stdout + stderr
    out = ran["root"] / name
    report = json.loads((out / "report.json").read_text())
    verified = [s for s in report["steps"] if "verification" in s]
    assert verified and all(s["verification"]["ok"] for s in verified)
    assert all(s["verification"]["user"]["max_error"] <= 1e-5 for s in verified)
    layers = [layer["op_type"] for layer in report["layers"]]
    assert OP_TYPE in layers, layers
    assert "Clip" not in json.dumps(report["cpu_nodes"])


def test_check_names_an_installed_kernel_that_would_take_a_host_node_after_its_rewrite(ran):
    auto = {n["op_type"]: n for n in check_json(ran["check clamped"])}
    assert "Clip" not in auto and auto[OP_TYPE]["kernel"] == f"{DIST}:{OP_TYPE}"
    # with a blueprint listing FINN's kernels only (ran's finn_only.yaml)
    listed = {n["op_type"]: n for n in check_json(ran["check clamped finn_only"])}
    reason = listed["Clip"]["reason"]
    assert listed["Clip"]["placement"] == "after", listed
    assert (
        f"{DIST}:{OP_TYPE} (by InferAcmeClip after its rewrite MoveScalarMulPastClip) would "
        "take it: add it to the blueprint's kernels" in reason
    ), reason
    excluded = {n["op_type"]: n for n in check_json(ran["check clamped excluded"])}
    assert excluded["Clip"]["placement"] == "after"
    assert "would take it, but the blueprint excludes it" in excluded["Clip"]["reason"]


def test_exclude_names_an_unknown_kernel_with_a_suggestion(ran):
    code, out, err = astuple(ran["check clamped misspelt"])  # check clamped.onnx --exclude AcmeClp
    assert code == 2, out + err
    assert "--exclude" in err and "AcmeClip" in err and "Traceback" not in err
