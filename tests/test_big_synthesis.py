"""The shipped networks measured: each built with every layer RTL for an UltraScale+ part and
synthesised by Yosys (``brainsmith build MODEL [BLUEPRINT] --prefer rtl --synth``, no
verification). Every layer is synthesised (but those FINN has in HLS only, named with their
reason), the report's ``synthesis`` section is complete,
every layer has Yosys' counts and, where it has an estimate, its error, and no estimated
total says "at least". The big tier (``make test-big``): the four small networks take
minutes each on two cores, FINN's full-size CNV w2a2 longer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brainsmith.report.measured import as_estimated
from tests.support.models import REPO, export_zoo

PART = "xczu7ev-ffvc1156-2-e"
MODELS = REPO / "examples" / "models"
BLUEPRINTS = REPO / "blueprints"
ESTIMATED = ("LUT", "DSP", "BRAM_18K", "URAM")
NETWORKS = {
    "cnv": (MODELS / "cnv.onnx", BLUEPRINTS / "cnv.yaml"),
    "conv_pad": (MODELS / "conv_pad.onnx", BLUEPRINTS / "conv_pad.yaml"),
    "residual": (MODELS / "residual.onnx", BLUEPRINTS / "residual.yaml"),
    "resnet8": (MODELS / "zoo" / "resnet8.onnx", None),
    "mobilenet_block": (MODELS / "zoo" / "mobilenet_block.onnx", None),
}
pytestmark = [pytest.mark.big, pytest.mark.slow, pytest.mark.xdist_group("synthesis")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """The module's private synthesis cache."""
    folder = tmp_path_factory.mktemp("synthesis-cache")
    os.chmod(folder, 0o700)
    return folder


def build_synthesised(model: Path, blueprint: Path | None, out: Path, cache: Path) -> dict:
    """``brainsmith build MODEL [BLUEPRINT] --prefer rtl --synth`` for the part: its report and
    summary."""
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache), "COLUMNS": "200"}
    args = [str(model), *([str(blueprint)] if blueprint else [])]
    result = subprocess.run(
        [sys.executable, "-m", "brainsmith.cli", "build", *args, "--prefer", "rtl", "--synth",
         "--part", PART, "--verify", "none", "-o", str(out)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=3600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return {"report": json.loads((out / "report.json").read_text()), "stdout": result.stdout}


@pytest.fixture(scope="module", params=list(NETWORKS))
def network(request, hub, cache, tmp_path_factory) -> dict:
    model, blueprint = NETWORKS[request.param]
    return build_synthesised(model, blueprint, tmp_path_factory.mktemp(request.param), cache)


@pytest.fixture(scope="module")
def cnv_w2a2(hub, cache, tmp_path_factory) -> dict:
    """FINN's CNV w2a2 at full size, exported from the zoo into a private folder."""
    folder = tmp_path_factory.mktemp("cnv_w2a2")
    model = export_zoo("cnv_w2a2", folder)
    return build_synthesised(model, None, folder / "out", cache)


# Layers FINN has only in HLS (a depthwise VVAU off Versal): no RTL to synthesise, so these
# networks are measured but for them, each named with its reason. (A classifier's output
# scale and bias, FINN's HLS ElementwiseMul/Add off Versal, stay on the host.)
HLS_ONLY = {
    "mobilenet_block": {"VVAU"},
}


def assert_rtl_measured_hls_named(built: dict, kinds: set[str]) -> None:
    report = built["report"]
    assert report["status"] == "ok"
    hls = {x["name"] for x in report["layers"] if x["backend"] == "hls"}
    assert hls and {x["op_type"] for x in report["layers"] if x["name"] in hls} <= kinds
    section = report["synthesis"]
    for layer in section["layers"]:
        if layer["name"] in hls:
            assert layer["status"] == "not synthesised" and layer["reason"].startswith("HLS:")
        else:
            assert layer["status"] == "synthesised", (layer["name"], layer["reason"])
    assert not section["complete"] and "the others are listed below" in built["stdout"]
    rtl = [x for x in report["layers"] if x["name"] not in hls]
    assert all(x["measured"]["LUT"] > 0 for x in rtl)
    # every RTL layer estimated (FINN has no DSP model for its HLS elementwise layers)
    assert {n for names in report["incomplete"].values() for n in names} <= hls


def assert_measured_completely(built: dict) -> None:
    report, stdout = built["report"], built["stdout"]
    assert report["status"] == "ok"
    assert {layer["backend"] for layer in report["layers"]} == {"rtl"}
    section = report["synthesis"]
    failed = [f"{x['name']}: {x['status']}: {x['reason']}" for x in section["layers"]
              if x["status"] != "synthesised"]  # fmt: skip
    assert not failed, failed
    assert section["complete"] and section["part"] == PART and section["family"] == "xcup"
    assert {x["name"] for x in section["layers"]} == {x["name"] for x in report["layers"]}
    for layer in report["layers"]:
        counts = layer["measured"]
        assert counts["LUT"] > 0, layer["name"]
        estimated = [
            key for key in ESTIMATED
            if layer.get(key) is not None and key not in layer.get("not_estimated", ())
        ]  # fmt: skip
        measured = as_estimated(counts)
        assert set(layer["estimate_error"]) == {k for k in estimated if measured[k]}, layer
    for key in section["totals"]:
        assert sum(x["measured"][key] for x in report["layers"]) == section["totals"][key]
    assert not report["incomplete"], report["incomplete"]  # no total "at least"
    assert all(section["estimated"][key] is not None for key in ESTIMATED), section["estimated"]
    totals = as_estimated(section["totals"])
    assert set(section["estimate_error"]) == {key for key in ESTIMATED if totals[key]}
    summary = "\n".join(line for line in stdout.splitlines() if line.startswith("  "))
    assert "at least" not in summary, summary


def test_every_layer_of_the_shipped_network_is_measured(network, request):
    name = request.node.callspec.params["network"]
    if name in HLS_ONLY:
        assert_rtl_measured_hls_named(network, HLS_ONLY[name])
    else:
        assert_measured_completely(network)


@pytest.mark.timeout(7200)
def test_every_layer_of_the_full_size_cnv_w2a2_is_measured(cnv_w2a2):
    assert_measured_completely(cnv_w2a2)
