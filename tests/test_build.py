"""brainsmith.build end to end: the shipped MLP and transformer block, verification
failures naming their step, the output-folder policy and the HTML report in Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import brainsmith
from brainsmith.builder import BuildError
from brainsmith.builder.outdir import prepare_output_dir
from tests.support.browser import screenshot

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "examples" / "models" / "mlp_4bit.onnx"
TRANSFORMER = REPO / "examples" / "models" / "transformer_block.onnx"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("build")]


def reference_vectors(folder: Path, count: int = 4) -> tuple[Path, Path]:
    """Inputs and the original QONNX model's outputs for them, as --input/--expected files."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    model = ModelWrapper(str(MLP))
    name, out = model.graph.input[0].name, model.graph.output[0].name
    shape = model.get_tensor_shape(name)
    x = np.random.default_rng(7).uniform(-1, 1, size=(count, *shape[1:])).astype(np.float32)
    y = np.concatenate([execute_onnx(model, {name: x[i : i + 1]})[out] for i in range(count)])
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", y)
    return folder / "x.npy", folder / "y.npy"


@pytest.fixture(scope="module")
def mlp(hub, tmp_path_factory):
    """The shipped MLP built once with its blueprint, verified after every step."""
    folder = tmp_path_factory.mktemp("mlp")
    x, y = reference_vectors(folder)
    result = brainsmith.build(
        str(MLP),
        str(REPO / "blueprints" / "mlp.yaml"),
        str(folder / "out"),
        verify="each",
        input_npy=str(x),
        expected_npy=str(y),
    )
    return result


def test_mlp_build_succeeds_and_reports(mlp):
    report = json.loads(Path(mlp.report_path).read_text())
    assert report["status"] == "ok" and report["error"] is None
    names = [s["name"] for s in report["steps"]]
    assert names[:8] == [
        "cleanup",
        "qonnx_to_finn",
        "streamline",
        "hardware_inference",
        "specialize",
        "folding",
        "estimates",
        "codegen",
    ]
    assert report["totals"]["LUT"] > 0
    assert report["performance"]["estimated_fps"] > 0
    assert report["performance"]["estimated_latency_ns"] > 0
    assert report["versions"]["finn"] and report["versions"]["qonnx"]
    assert report["blueprint"]["name"] == "mlp"


def test_every_step_is_verified_against_the_cleaned_model(mlp):
    for step in mlp.report["steps"][:8]:
        assert step["status"] == "ok" and step["seconds"] >= 0
        check = step["verification"]
        assert check["ok"] and check["samples"] == 16 and check["max_error"] < 1e-4
        assert check["user"]["ok"] and check["user"]["samples"] == 4


def test_hardware_steps_without_vivado_are_skipped_with_the_reason(mlp):
    skipped = [s for s in mlp.report["steps"] if s["status"] == "skipped"]
    assert {s["name"] for s in skipped} >= {
        "step_create_stitched_ip",
        "step_out_of_context_synthesis",
    }
    reasons = {s["name"]: s["reason"] for s in skipped}
    assert "sized already" in reasons.pop("step_set_fifo_depths")  # by fifo_depths, in Verilator
    assert all("XILINX_VIVADO" in reason for reason in reasons.values())


def test_only_the_blueprints_kernels_and_backends_are_used(mlp):
    layers = mlp.report["layers"]
    computing = {layer["op_type"] for layer in layers} - {
        "StreamingFIFO",
        "StreamingDataWidthConverter",
    }
    assert computing == {"MVAU", "Thresholding"}  # and the FIFOs and converters sized for them
    assert {layer["backend"] for layer in layers} == {"rtl"}  # mlp.yaml allows rtl only
    assert all(sum(layer[k] or 0 for k in ("LUT", "DSP", "BRAM_18K")) > 0 for layer in layers)


def test_output_folder_holds_models_and_reports(mlp):
    out = Path(mlp.output_dir)
    for name in ("report.json", "report.html", "build.log", "final.onnx", "final_parent.onnx"):
        assert (out / name).is_file(), name
    for step in mlp.report["steps"]:
        if step["status"] == "ok":
            assert (out / step["model"]).is_file()
    assert list((out / "finn" / "build").glob("code_gen_ipgen_*"))  # generated code


def test_report_html_renders_in_chromium(mlp, tmp_path):
    html = Path(mlp.html_path).read_text()
    for layer in mlp.report["layers"]:
        assert layer["name"] in html
    assert "<svg" in html and 'src="http' not in html  # charts inline, nothing fetched
    png = screenshot(Path(mlp.html_path), "build-report", tmp_path, width=1200, height=2000)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]).round(2), axis=0)
    assert len(colours) > 20  # text, tables and bars, not a blank page


def test_transformer_block_builds(hub, tmp_path):
    blueprint = REPO / "blueprints" / "transformer.yaml"
    result = brainsmith.build(str(TRANSFORMER), str(blueprint), str(tmp_path / "out"))
    assert result.status == "ok"
    kernels = {layer["op_type"] for layer in result.report["layers"]}
    assert {"LayerNorm", "HWSoftmax", "MVAU", "ElementwiseMul"} <= kernels
    final = [s for s in result.report["steps"] if s.get("verification")]
    assert final and final[-1]["verification"]["max_error"] < 1e-4


def test_step_that_changes_the_function_fails_naming_it(hub, tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "corrupt.py").write_text(
        textwrap.dedent("""\
        from brainsmith.plugin.core import step

        @step(name="double_first_weights")
        def double_first_weights(model, cfg):
            node = model.get_nodes_by_op_type("MatMul")[0]
            model.set_initializer(node.input[1], 2 * model.get_initializer(node.input[1]))
            return model
        """)
    )
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(plugins))
    from brainsmith.plugin.manager import reset_plugin_system

    reset_plugin_system()
    blueprint = tmp_path / "corrupt.yaml"
    blueprint.write_text(
        textwrap.dedent(f"""\
        name: corrupt
        extends: {REPO / "blueprints" / "mlp.yaml"}
        steps: [cleanup, qonnx_to_finn, double_first_weights, streamline]
        """)
    )
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MLP), str(blueprint), str(tmp_path / "out"), verify="each")
    error = caught.value
    assert error.step == "double_first_weights" and error.exit_code == 1
    assert "verification failed" in error.reason and "differ" in error.reason
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed" and report["error"]["step"] == "double_first_weights"
    failed = report["steps"][2]
    assert failed["status"] == "failed" and failed["verification"]["max_error"] > 1e-3
    assert report["steps"][3]["status"] == "pending"


def test_non_empty_output_folder_is_refused(hub, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(BuildError) as caught:
        brainsmith.build(str(MLP), str(REPO / "blueprints" / "mlp.yaml"), str(out))
    assert caught.value.exit_code == 2 and "not empty" in caught.value.reason
    assert "force" not in caught.value.hint  # not brainsmith's folder: force would refuse
    assert os.listdir(out) == ["keep.txt"]


def test_force_moves_a_previous_build_folder_aside(tmp_path):
    out = tmp_path / "out"
    prepare_output_dir(str(out))  # a build's folder, with its marker
    (out / "keep.txt").write_text("mine")
    moved = prepare_output_dir(str(out), force=True).moved_aside
    assert moved and Path(moved, "keep.txt").read_text() == "mine"
    assert out.is_dir() and sorted(os.listdir(out)) == [".brainsmith-build", ".brainsmith-reserve"]
    shutil.rmtree(moved)


def test_build_leaves_the_callers_stdout_and_logging_alone(tmp_path):
    """FINN replaces stdout and the root logging setup; a build must give both back."""
    code = f"""
        import io, logging, sys
        import brainsmith
        handler = logging.StreamHandler(io.StringIO())
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
        out, err = sys.stdout, sys.stderr
        result = brainsmith.build({str(MLP)!r}, {str(REPO / "blueprints" / "mlp.yaml")!r},
                                  {str(tmp_path / "out")!r})
        root = logging.getLogger()
        print(result.status, sys.stdout is out, sys.stderr is err,
              root.handlers == [handler], root.level == logging.WARNING)
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["ok", "True", "True", "True", "True"]  # no FINN chatter


# -- the result in Python: repr, HTML, run(x), BuildResult.load ----------------------------
def vectors_of(result) -> tuple[np.ndarray, np.ndarray]:
    """The fixture's inputs and the original QONNX model's outputs for them."""
    folder = Path(result.output_dir).parent
    return np.load(folder / "x.npy"), np.load(folder / "y.npy")


def test_result_repr_is_one_line_with_the_headline_figures(mlp):
    from brainsmith.report.text import number

    text = repr(mlp)
    fps = number(mlp.performance["estimated_fps"])
    assert "\n" not in text and len(text) < 200
    lut = number(mlp.report["totals"]["LUT"])  # the RTL matrix layers' LUTs: brainsmith's model
    assert text.startswith(f"<BuildResult mlp ok: {fps} fps, 1.92 µs, LUT {lut}, ")
    assert "BRAM_18K 0" in text and "DSP " in text and "at least" not in text
    assert text.endswith(f" in {mlp.output_dir}>")


def test_result_html_is_the_reports_first_screen(mlp):
    import re

    fragment = mlp._repr_html_()
    page = Path(mlp.html_path).read_text()
    verdict = re.search(r"<div class='verdict'>.*?</div></div>", page, re.S).group(0)
    assert verdict in fragment  # the same figures, meters and CPU line as the page's top
    assert "brainsmith build: mlp" in fragment and "(ok)" in fragment
    assert "report.html" in fragment and "href=" in fragment
    lowered = fragment.lower()
    assert "<script" not in lowered and "<html" not in lowered and "<body" not in lowered
    assert not re.search(r"\son\w+=", lowered)  # no event handlers
    assert ".brainsmith-build .verdict" in fragment  # the page's CSS, scoped to the fragment


def test_result_html_escapes_what_it_shows(mlp):
    from dataclasses import replace

    hostile = replace(mlp, report={**mlp.report, "name": "<img src=x onerror=alert(1)>"})
    fragment = hostile._repr_html_()
    assert "<img" not in fragment and "&lt;img src=x onerror=alert(1)&gt;" in fragment


def test_run_gives_the_original_models_outputs(mlp):
    x, y = vectors_of(mlp)
    got = mlp.run(x)
    assert got.shape == y.shape == (4, 10)
    assert np.allclose(got, y, atol=1e-4)
    assert mlp.run(x[0]).shape == (10,)  # one input without its batch axis
    assert np.allclose(mlp.run(x[:1]), y[:1], atol=1e-4)


def test_run_refuses_a_wrong_shape_naming_both(mlp):
    from brainsmith.builder import ResultError
    from brainsmith.errors import BrainsmithError

    with pytest.raises(ResultError) as caught:
        mlp.run(np.zeros((3, 65), np.float32))
    error = caught.value
    assert isinstance(error, BrainsmithError)
    assert "global_in" in error.reason and "(3, 65)" in error.reason and "(1, 64)" in error.reason
    assert "(N, 64)" in error.hint


def test_load_reopens_a_moved_build_in_a_fresh_process(mlp, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(mlp.output_dir, moved)
    x, y = vectors_of(mlp)
    np.save(tmp_path / "x.npy", x)
    code = f"""
        import numpy as np
        from brainsmith.builder import BuildResult
        result = BuildResult.load({str(moved)!r})
        print(repr(result))
        np.save({str(tmp_path / "got.npy")!r}, result.run(np.load({str(tmp_path / "x.npy")!r})))
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("<BuildResult mlp ok: ") and f"in {moved}>" in run.stdout
    assert np.allclose(np.load(tmp_path / "got.npy"), y, atol=1e-4)


def test_run_on_a_folder_moved_away_says_where_to_reopen_it(mlp, tmp_path):
    from brainsmith.builder import BuildResult, ResultError

    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(mlp.output_dir, first)
    result = BuildResult.load(str(first))
    assert result.status == "ok" and result.totals == mlp.totals
    first.rename(second)
    x, y = vectors_of(mlp)
    with pytest.raises(ResultError) as caught:
        result.run(x)
    assert str(first) in caught.value.reason and "moved or deleted" in caught.value.reason
    assert "BuildResult.load" in caught.value.hint
    assert np.allclose(BuildResult.load(str(second)).run(x), y, atol=1e-4)


def test_a_failed_build_loads_and_refuses_to_run(mlp, tmp_path):
    from brainsmith.builder import BuildResult, ResultError

    folder = tmp_path / "failed"
    shutil.copytree(mlp.output_dir, folder)
    (folder / "final.onnx").unlink()
    report = json.loads((folder / "report.json").read_text())
    report["status"] = "failed"
    report["error"] = {"step": "folding", "reason": "no folding fits", "hint": "lower it"}
    (folder / "report.json").write_text(json.dumps(report))
    result = BuildResult.load(str(folder))
    assert repr(result) == f"<BuildResult mlp failed in step folding in {folder}>"
    with pytest.raises(ResultError) as caught:
        result.run(vectors_of(mlp)[0])
    assert "failed in step 'folding'" in caught.value.reason
    assert "report.html" in caught.value.hint


def test_load_refuses_a_folder_that_holds_no_build(tmp_path):
    from brainsmith.builder import BuildResult, ResultError

    with pytest.raises(ResultError) as caught:
        BuildResult.load(str(tmp_path))
    assert "not a brainsmith build folder" in caught.value.reason
    with pytest.raises(ResultError) as caught:
        BuildResult.load(str(tmp_path / "nowhere"))
    assert "does not exist" in caught.value.reason


def test_a_stopped_build_says_where_it_stopped_and_does_not_run(hub, tmp_path):
    from brainsmith.builder import BuildResult, ResultError

    out = tmp_path / "stopped"
    blueprint = str(REPO / "blueprints" / "mlp.yaml")
    result = brainsmith.build(str(MLP), blueprint, str(out), stop_after=2)
    expected = f"<BuildResult mlp stopped after step 2 (qonnx_to_finn) in {out}>"
    assert repr(result) == expected
    assert "stopped after step 2 (qonnx_to_finn)" in result._repr_html_()
    with pytest.raises(ResultError) as caught:
        result.run(np.zeros((1, 64), np.float32))
    assert "stopped after step 2" in caught.value.reason and "start=" in caught.value.hint
    reopened = BuildResult.load(str(out))
    assert reopened.status == "stopped" and reopened.checkpoint is not None
    assert repr(reopened) == expected
