"""Why a layer is HLS: ``brainsmith check``, the build's notes and build.log give one reason,
FINN's whole explanation taken into account, and no advice repeats an option already given."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.models import MLP, REPO
from tests.support.processes import invoke

PART = "xczu7ev-ffvc1156-2-e"  # UltraScale+: FINN's RTL depthwise layers need a Versal
DEPTHWISE = REPO / "examples" / "models" / "zoo" / "mobilenet_block.onnx"
ASKED = ("--prefer", "rtl", "--part", PART)
REPEATED = re.compile(r"(build with|use|pass) (--prefer rtl|prefer: rtl)")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("check")]


def test_check_the_notes_and_build_log_agree_why_a_layer_is_hls(hub, tmp_path):
    code, out, err = invoke("check", str(DEPTHWISE), *ASKED, "--json", cwd=tmp_path)
    assert code == 0, err
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    hls = {name: n["reason"] for name, n in nodes.items() if n["backend"].endswith("_hls")}
    assert set(hls) == {"VVAU_0", "VVAU_1"}, nodes
    for reason in hls.values():
        assert "need a Versal part" in reason, reason
    outdir = tmp_path / "out"
    code, out, err = invoke("build", str(DEPTHWISE), *ASKED, "-o", str(outdir), cwd=tmp_path)
    assert code == 0, err
    report = json.loads((outdir / "report.json").read_text())
    notes = "\n".join(report["notes"])
    log = (outdir / "build.log").read_text()
    for name, reason in hls.items():
        assert f"{name}: {reason}" in notes, notes
        assert f"{name}: {reason}" in out + err
        assert any(name in line and reason in line for line in log.splitlines()), log
    assert not REPEATED.search(notes + out + err), notes
    finn = [w["message"] for w in report["warnings"] if "no RTL variant" in w["message"]]
    assert finn and all("only supported on Versal" in m for m in finn), finn  # all its lines


def test_advice_to_prefer_rtl_is_given_when_it_was_not_asked(hub, tmp_path):
    outdir = tmp_path / "out"
    code, _, err = invoke("build", str(MLP), "--part", PART, "-o", str(outdir), cwd=tmp_path)
    assert code == 0, err
    notes = "\n".join(json.loads((outdir / "report.json").read_text())["notes"])
    assert "HLS layers" in notes and REPEATED.search(notes), notes
