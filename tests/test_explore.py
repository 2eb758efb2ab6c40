"""brainsmith explore end to end on the shipped MLP: each variant a normal build equal to an
independent one, shared segments run once, a local Dask cluster giving the same results,
failures recorded without stopping the others, Ctrl-C, --resume and the report in Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

import brainsmith
from brainsmith.blueprint import load_blueprint
from brainsmith.dse import ExploreError
from tests.support.browser import dump_dom, layout, screenshot
from tests.support.processes import brainsmith as cli
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
SMALL = f"""\
name: mlp_small
extends: {REPO / "blueprints" / "mlp.yaml"}
build: {{size_fifos: false}}  # FINN's FIFO depths: the sizing is test_fifo_sizing's
design_space:
  backends: {{matmul: [rtl, hls]}}
  build: {{target_fps: [100000, 1000000]}}
search:
  constraints: ["LUT <= 1500"]
  objectives: {{fps: max, LUT: min}}
"""
BROKEN_PLUGINS = """\
from qonnx.transformation.base import Transformation

from brainsmith.plugin.core import transform


@transform(name="FailOnPurpose")
class FailOnPurpose(Transformation):
    def apply(self, model):
        raise RuntimeError("this transform always fails")


@transform(name="EndTheProcess")
class EndTheProcess(Transformation):
    def apply(self, model):
        import os

        os._exit(3)  # as a crash or the out-of-memory killer would


@transform(name="DoubleFirstWeights")
class DoubleFirstWeights(Transformation):
    def apply(self, model):
        for node in model.graph.node:
            weights = model.get_initializer(node.input[1]) if len(node.input) > 1 else None
            if weights is not None:
                model.set_initializer(node.input[1], 2 * weights)
                break
        return model, False
"""

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("explore")]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A private plugin cache and config for the module's explorations, and a plugin folder
    holding two broken transforms."""
    from brainsmith.plugin.manager import reset_plugin_system

    root = tmp_path_factory.mktemp("hub")
    os.chmod(root, 0o700)
    (root / "config.yaml").write_text("plugin_system: {}\n")
    (root / "plugins").mkdir()
    (root / "plugins" / "broken.py").write_text(BROKEN_PLUGINS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BRAINSMITH_CACHE_DIR", str(root))
        patch.setenv("BRAINSMITH_CONFIG", str(root / "config.yaml"))
        reset_plugin_system()
        yield root
    reset_plugin_system()


@pytest.fixture(scope="module")
def space(hub) -> Path:
    path = hub / "mlp_small.yaml"
    path.write_text(SMALL)
    return path


@pytest.fixture(scope="module")
def in_process(space, hub):
    return brainsmith.explore(MLP, str(space), str(hub / "in-process"), workers=0)


@pytest.fixture(scope="module")
def on_dask(space, hub):
    return brainsmith.explore(MLP, str(space), str(hub / "dask"), workers=2)


def by_id(result) -> dict[str, dict]:
    return {v["id"]: v for v in result.variants}


def test_every_variant_is_a_normal_build_with_metrics(in_process):
    data = json.loads(Path(in_process.json_path).read_text())
    assert data["status"] == "complete" and len(data["variants"]) == 4
    for variant in data["variants"]:
        assert variant["status"] == "ok" and variant["error"] is None
        assert set(variant["metrics"]) == {"fps", "latency_ns", "LUT", "BRAM_18K", "URAM", "DSP"}
        folder = Path(in_process.output_dir, variant["folder"])
        report = json.loads((folder / "report.json").read_text())
        assert report["status"] == "ok" and (folder / "final.onnx").is_file()
        assert (folder / "report.html").is_file()
        assert report["steps"][8]["verification"]["ok"]  # verify: final, as mlp.yaml says
        assert variant["metrics"]["fps"] == report["performance"]["estimated_fps"]


def without_code(layers: list[dict]) -> list[dict]:
    """The layers without their generated-code folders, which FINN names at random."""
    return [{k: v for k, v in layer.items() if k != "code"} for layer in layers]


def test_each_variant_equals_an_independent_build(in_process, space, tmp_path):
    blueprint = load_blueprint(space)
    for variant in in_process.variants:
        alone = brainsmith.build(
            MLP,
            blueprint.design_space.apply(blueprint, variant["index"]),
            str(tmp_path / variant["id"]),
        )
        mine = json.loads(Path(in_process.output_dir, variant["folder"], "report.json").read_text())
        assert without_code(mine["layers"]) == without_code(alone.report["layers"]), variant["id"]
        assert mine["performance"] == alone.report["performance"], variant["id"]
        assert [s["status"] for s in mine["steps"]] == [s["status"] for s in alone.report["steps"]]


def test_shared_segments_run_once_and_feed_every_branch(in_process):
    data = in_process.data
    shared = [s for s in data["segments"] if s["shared"]]
    assert [(s["first_step"], s["last_step"], len(s["variants"])) for s in shared] == [
        (1, 3, 4),
        (4, 5, 2),
        (4, 5, 2),
    ]
    # 7 segments ran; the 4 variants used 3 each (12 uses), so 5 uses were reuses
    assert (data["segments_run"], data["segments_reused"]) == (7, 5)
    assert (data["steps_run"], data["steps_without_reuse"]) == (3 + 2 * 2 + 4 * 8, 4 * 13)
    root = shared[0]
    assert (
        len(
            list(Path(in_process.output_dir, root["folder"], "intermediate_models").glob("0*.onnx"))
        )
        == 3
    )
    for variant in in_process.variants:  # each variant's report points at the shared models
        steps = json.loads(
            Path(in_process.output_dir, variant["folder"], "report.json").read_text()
        )["steps"]
        assert steps[0]["model"] == f"../../{root['folder']}/intermediate_models/01_cleanup.onnx"
        assert steps[5]["model"] == "intermediate_models/06_folding.onnx"


def test_constraints_and_the_pareto_front_are_judged(in_process):
    variants = by_id(in_process)
    for v in variants.values():  # a lower bound within the limit decides nothing
        lut = v["metrics"]["LUT"]
        judged = (False if lut > 1500 else None) if "LUT" in v["lower_bounds"] else lut <= 1500
        assert v["feasible"] is judged
        assert [(c["constraint"], c["ok"]) for c in v["constraints"]] == [("LUT <= 1500", judged)]
    ranked = [v for v in variants.values() if v["feasible"] and not v["unranked"]]
    for v in ranked:  # on what every variant counts (compute layers: RTL and HLS differ)
        better = [
            o
            for o in ranked
            if o["compared"]["fps"] >= v["compared"]["fps"]
            and o["compared"]["LUT"] <= v["compared"]["LUT"]
            and (o["compared"]["fps"], o["compared"]["LUT"])
            != (v["compared"]["fps"], v["compared"]["LUT"])
        ]
        assert v["pareto"] == (not better), v["id"]
    assert not any(v["pareto"] for v in variants.values() if v not in ranked)
    ranks = [v["rank"] for v in in_process.variants]
    assert ranks == [1, 2, 3, 4] and in_process.variants[0]["pareto"] == bool(ranked)


def test_local_dask_cluster_gives_the_same_results_as_in_process(in_process, on_dask):
    assert on_dask.data["executor"] == {"executor": "dask-local", "workers": 2}
    local, dask = by_id(in_process), by_id(on_dask)
    assert {k: v["metrics"] for k, v in dask.items()} == {k: v["metrics"] for k, v in local.items()}
    assert {k: v["pareto"] for k, v in dask.items()} == {k: v["pareto"] for k, v in local.items()}
    assert on_dask.data["segments_run"] == 7
    workers = {s["worker"] for s in on_dask.data["segments"]}
    assert workers and workers <= {"0", "1"}  # on the cluster's workers; which is the scheduler's


def test_a_failing_variant_is_recorded_and_the_others_finish(hub, tmp_path, monkeypatch):
    from brainsmith.plugin.manager import reset_plugin_system

    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(hub / "plugins"))  # for the workers too
    reset_plugin_system()
    path = tmp_path / "broken.yaml"
    path.write_text(
        SMALL.replace(
            "  build: {target_fps: [100000, 1000000]}",
            "  transforms_phased:\n"
            "    pre_hw: [[RemoveInferenceNoOps], [RemoveInferenceNoOps, FailOnPurpose]]\n"
            "    post_hw: [[], [DoubleFirstWeights]]",
        ).replace("backends: {matmul: [rtl, hls]}", "backends: {matmul: [rtl]}")
    )
    result = brainsmith.explore(MLP, str(path), str(tmp_path / "out"), workers=2)
    by_choice = {
        ("FailOnPurpose" in str(v["choices"]), "DoubleFirstWeights" in str(v["choices"])): v
        for v in result.variants
    }
    good = by_choice[False, False]
    assert good["status"] == "ok" and good["metrics"]["fps"] == 1250000
    wrong = by_choice[False, True]
    assert wrong["status"] == "failed" and not wrong["failed_in"]
    assert "verification failed" in wrong["error"]["reason"]
    assert Path(result.output_dir, wrong["report"]).is_file()
    broken = [by_choice[True, False], by_choice[True, True]]
    assert len(broken) == 2
    for variant in broken:  # failed once, in their shared streamline segment
        assert variant["status"] == "failed" and variant["failed_in"].startswith("s")
        assert variant["error"]["step"] == "streamline"
        assert "this transform always fails" in variant["error"]["reason"]
        assert (
            variant["report"].startswith("segments/")
            and Path(result.output_dir, variant["report"]).is_file()
        )
    assert result.data["status"] == "complete"


def test_a_variant_that_kills_its_worker_is_recorded_and_the_others_finish(
    hub, tmp_path, monkeypatch
):
    from brainsmith.plugin.manager import reset_plugin_system

    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(hub / "plugins"))
    reset_plugin_system()
    path = tmp_path / "deadly.yaml"
    path.write_text(
        SMALL.replace(
            "  build: {target_fps: [100000, 1000000]}",
            "  transforms_phased:\n    post_hw: [[], [EndTheProcess]]",
        ).replace("backends: {matmul: [rtl, hls]}", "backends: {matmul: [rtl]}")
    )
    # The local cluster's scheduler runs here: a task whose worker dies is tried once more
    # (not Dask's 3 times), then recorded; the nannies here saw how the process ended.
    result = brainsmith.explore(MLP, str(path), str(tmp_path / "out"), workers=2)
    fine, deadly = sorted(result.variants, key=lambda v: "EndTheProcess" in str(v["choices"]))
    assert fine["status"] == "ok" and fine["metrics"]["fps"] == 1250000
    assert deadly["status"] == "failed" and deadly["error"]["step"] == "folding"
    assert deadly["error"]["reason"] == "the worker running it died: it exited with status 3"
    assert "--resume" in deadly["error"]["hint"] and deadly["report"] == ""
    assert not Path(result.output_dir, deadly["folder"], "explore-node.json").exists()


def test_resume_runs_only_what_is_missing(in_process, space, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(in_process.output_dir, out, symlinks=True)
    missing = in_process.variants[-1]
    shutil.rmtree(out / missing["folder"])
    result = brainsmith.explore(MLP, str(space), str(out), workers=0, resume=True)
    variants = by_id(result)
    assert variants[missing["id"]]["reused"] is False and variants[missing["id"]]["status"] == "ok"
    assert all(v["reused"] for k, v in variants.items() if k != missing["id"])
    assert (result.data["segments_run"], result.data["segments_reused"]) == (1, 2)
    assert {k: v["metrics"] for k, v in variants.items()} == {
        k: v["metrics"] for k, v in by_id(in_process).items()
    }


def test_a_non_empty_output_folder_needs_resume_or_force(space, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ExploreError) as caught:
        brainsmith.explore(MLP, str(space), str(tmp_path), workers=0)
    assert caught.value.exit_code == 2 and "not empty" in caught.value.reason
    assert "resume=True" in caught.value.hint and "output_dir=" in caught.value.hint
    assert "--" not in caught.value.hint and os.listdir(tmp_path) == ["keep.txt"]


def test_the_command_names_its_own_flags_for_a_non_empty_output_folder(space, tmp_path):
    """The same refusal from the command speaks in flags, for a folder an earlier build or
    exploration made (which --force may move aside)."""
    (tmp_path / ".brainsmith-build").write_text("made by brainsmith build\n")
    (tmp_path / "explore.json").write_text("{}")
    ran = invoke("explore", MLP, space, "-o", tmp_path, "--workers", "0")
    code, err = ran.returncode, ran.stderr
    assert code == 2 and "is not empty" in err, err
    for flag in ("--resume", "-o OUTDIR", "--force"):
        assert flag in err, err
    assert "force=True" not in err and "output_dir=" not in err and "resume=True" not in err


def test_a_blueprint_without_a_design_space_is_refused(tmp_path):
    with pytest.raises(ExploreError) as caught:
        brainsmith.explore(MLP, str(REPO / "blueprints" / "mlp.yaml"), str(tmp_path / "o"))
    assert "no design_space" in caught.value.reason and "brainsmith build" in caught.value.hint


def test_ctrl_c_cancels_cleanly_and_resume_finishes(hub, space, tmp_path):
    out = tmp_path / "out"
    command = ["explore", MLP, str(space), "-o", str(out), "--workers", "2"]
    process = cli(*command, start_new_session=True)
    workers = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            workers = psutil.Process(process.pid).children(recursive=True) or workers
            record = out / "explore.json"
            if record.is_file() and any(
                v["status"] == "ok" for v in json.loads(record.read_text())["variants"]
            ):
                break
            time.sleep(0.2)
        assert process.poll() is None, process.communicate()
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "error: interrupted" in stderr and "--resume" in stderr
    assert "Traceback" not in stderr
    data = json.loads((out / "explore.json").read_text())
    assert data["status"] == "interrupted"
    statuses = [v["status"] for v in data["variants"]]
    assert "ok" in statuses and set(statuses) <= {"ok", "cancelled"}
    assert workers and not [p for p in workers if _alive(p)]
    resumed = invoke(*command, "--resume", "--quiet")  # the resume in this process
    stdout = resumed.stdout
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads((out / "explore.json").read_text())
    assert [v["status"] for v in data["variants"]] == ["ok"] * 4
    assert sum(v["reused"] for v in data["variants"]) == statuses.count("ok")  # kept, not rebuilt
    assert "4 of 4 variants built" in stdout


def _alive(process: psutil.Process) -> bool:
    try:
        process.wait(timeout=60)
    except psutil.TimeoutExpired:
        return True
    except psutil.NoSuchProcess:
        return False
    return False


def test_report_html_shows_the_ranked_table_and_a_linked_pareto_plot(in_process, tmp_path):
    page = Path(in_process.html_path).read_text()
    assert 'src="http' not in page and "<script" not in page
    dom = dump_dom(Path(in_process.html_path), tmp_path)
    for variant in in_process.variants:  # a point per design in each plot, linked to its report
        points = 0 if variant["same_design_as"] else 2
        assert len(re.findall(rf"data-variant=\"{variant['id']}\"", dom)) == points
        assert f'href="{variant["report"]}"' in dom
    for link in set(re.findall(r'href="([^"]+)"', dom)):
        assert Path(in_process.output_dir, link).is_file(), link
    assert dom.count("<tr") >= 4 + 1 and "LUT &lt;= 1500" in dom
    png = screenshot(Path(in_process.html_path), "explore-mlp_small", tmp_path)  # (kept too)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]).round(2), axis=0)) > 20
    wanted = ["table.variants", "table.effects", "svg circle.pareto"]
    found = layout(Path(in_process.html_path), wanted, tmp_path)
    assert found["page"] <= found["window"] == 1280 and found["found"] == wanted, found


def test_cli_explores_and_prints_the_pareto_front(hub, in_process, space, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(in_process.output_dir, out, symlinks=True)
    ran = invoke("explore", MLP, space, "-o", out, "--resume", "--workers", "0", "-q")
    stdout = ran.stdout
    assert ran.returncode == 0, ran.stderr
    assert "explored mlp_small: 4 of 4 variants built, 0 failed" in stdout
    assert "segments    0 run, 0 reused" in stdout
    for variant in in_process.pareto:
        assert f"pareto      {variant['id']}" in stdout
    assert f"report      {out}/report.html" in stdout


LATTICE_SPACE = f"""\
name: mlp_lattice
extends: {REPO / "blueprints" / "mlp.yaml"}
build: {{size_fifos: false, clock_ns: 20}}
design_space:
  build: {{target_fps: [10000, 20000]}}
"""


def test_board_builds_every_variant_for_that_board(tmp_path):
    """``explore --board ulx3s-85f``: each variant is a build for the board, as ``build
    --board`` makes it (its ECP5 part in the report, every layer RTL)."""
    space = tmp_path / "space.yaml"
    space.write_text(LATTICE_SPACE)
    out = tmp_path / "out"
    ran = invoke("explore", MLP, space, "-o", out, "--workers", "0", "--board", "ulx3s-85f", "-q")
    assert ran.returncode == 0, ran.stderr
    variants = json.loads((out / "explore.json").read_text())["variants"]
    assert len(variants) == 2
    for variant in variants:
        report = json.loads((out / variant["folder"] / "report.json").read_text())
        assert (report["fpga_part"], report["board"]) == ("LFE5U-85F-6BG381C", "ulx3s-85f")
        assert {layer["backend"] for layer in report["layers"]} == {"rtl"}


@pytest.mark.parametrize(
    ("space", "flags", "said"),
    [
        (LATTICE_SPACE, ["--board", "ulx3s-86f"], "ECP5, Gowin, iCE40 or GateMate board: ulx3s-12f"),
        (LATTICE_SPACE.replace("target_fps: [10000, 20000]", "fpga_part: [xc7z020clg400-1, "
                               "xczu7ev-ffvc1156-2-e]"),
         ["--board", "ulx3s-85f"], "--board and the design space's build.fpga_part both"),
        (LATTICE_SPACE, ["--board", "ulx3s-85f", "--part", "xc7z020clg400-1"], "both"),
    ],
    ids=["unknown", "space-varies-it", "part-and-board"],
)  # fmt: skip
def test_a_target_that_cannot_be_used_is_refused_before_anything_runs(tmp_path, space, flags,
                                                                      said):  # fmt: skip
    path = tmp_path / "space.yaml"
    path.write_text(space)
    ran = invoke("explore", MLP, path, "-o", tmp_path / "out", "--workers", "0", *flags)
    assert ran.returncode == 2 and said in ran.stderr, ran.stderr
    assert not (tmp_path / "out").exists()
