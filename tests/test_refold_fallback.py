"""A refold round whose tools fail falls back on the round before it (``builder.refold``):
the rounds' order, folders and records, with each round's build a function that makes or
fails that round's folder; the build itself falling back is
``test_bitstream_build.py::test_a_build_falling_back_on_the_round_that_routed_is_placed_below_its_fmax``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brainsmith.builder.refold import fallback_mhz, refold_notes, refolded
from brainsmith.builder.result import BuildResult
from brainsmith.planning.errors import BuildError

CRASH = "nextpnr-himbaechel-gatemate crashed with seed 1 and with seed 2 (wasm trap)"


def _missed(folder: Path, clock_ns: float, fmax: float, seconds: float) -> BuildResult:
    """A finished round in ``folder`` whose bitstream missed ``clock_ns``, reaching ``fmax``."""
    report: Any = {
        "status": "ok",
        "clock_ns": clock_ns,
        "seconds": seconds,
        "bitstream": {
            "met": False,
            "clock_mhz": round(1000 / clock_ns, 3),
            "fmax_mhz": {"clk": fmax},
            "refold_rounds": 2,
        },
    }
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(report))
    return BuildResult(str(folder), report)


class Rounds:
    """Each round's build in turn: ``plan`` is what each call does, "crash" (its tools
    fail), "refuse" (a step fails) or "met" (its bitstream meets its clock)."""

    def __init__(self, folder: Path, plan: list[str]) -> None:
        self.folder, self.plan = folder, plan
        self.calls: list[tuple[float, list[dict[str, Any]]]] = []

    def __call__(self, clock_ns: float, rounds: list[dict[str, Any]]) -> BuildResult:
        self.calls.append((clock_ns, rounds))
        what = self.plan[len(self.calls) - 1]
        self.folder.mkdir()
        if what == "met":
            report: Any = {"status": "ok", "clock_ns": clock_ns, "bitstream": {"met": True}}
            (self.folder / "report.json").write_text(json.dumps(report))
            return BuildResult(str(self.folder), report)
        (self.folder / "report.json").write_text(json.dumps({"status": "failed", "seconds": 900}))
        if what == "crash":
            raise BuildError("bitstream", CRASH, "see nextpnr.log", tools_failed=True)
        raise BuildError("folding", "the layers do not fit", "ask fewer fps")


def test_a_round_whose_tools_fail_falls_back_on_the_round_before_it(tmp_path):
    out = tmp_path / "out"
    first = _missed(out, 22.222, 36.8, seconds=360)
    builds = Rounds(out, ["crash", "met"])
    result = refolded(first, builds)
    assert result.report["bitstream"]["met"]
    (refold_ns, before), (again_ns, rounds) = builds.calls
    assert refold_ns > 22.222 and again_ns == 22.222  # folded slower, then round 1's again
    assert [r.get("failed") for r in rounds] == [None, CRASH]
    assert rounds[0] == before[0] and rounds[1]["seconds"] == 540.0  # 900 less round 1's 360
    assert rounds[1]["fmax_mhz"] == 0.0 and rounds[1]["clock_ns"] == refold_ns
    kept = tmp_path / "out.round-2-failed"
    assert json.loads((kept / "report.json").read_text())["status"] == "failed"
    assert not (tmp_path / "out.round-1").exists()  # round 1 is built again, not kept
    notes = refold_notes([], rounds, again_ns)
    assert "round 2, folded for" in notes[0] and CRASH in notes[0]
    assert "round 1's folding for 45.0 MHz again" in notes[0] and "36.8 MHz" in notes[0]


def test_a_fallback_that_fails_too_names_both_failures_and_both_folders(tmp_path):
    out = tmp_path / "out"
    first = _missed(out, 22.222, 36.8, seconds=360)
    with pytest.raises(BuildError) as raised:
        refolded(first, Rounds(out, ["crash", "crash"]))
    error = raised.value
    assert "building round 1's folding again, as round 2's tools failed" in error.reason
    assert str(tmp_path / "out.round-1") in error.hint  # the round that routed, kept
    assert str(tmp_path / "out.round-2-failed") in error.hint
    assert (tmp_path / "out.round-1" / "report.json").is_file()


def test_a_round_failing_other_than_in_its_tools_is_not_fallen_back_on(tmp_path):
    out = tmp_path / "out"
    first = _missed(out, 22.222, 36.8, seconds=360)
    builds = Rounds(out, ["refuse"])
    with pytest.raises(BuildError) as raised:
        refolded(first, builds)
    assert len(builds.calls) == 1 and raised.value.step == "folding"
    assert str(tmp_path / "out.round-1") in raised.value.hint
    assert not (tmp_path / "out.round-2-failed").exists()


def test_the_fallback_clock_is_the_boards_pll_below_the_fmax_the_round_before_reached():
    from brainsmith.hardware.board.boards import board

    gatemate = board("gatemate-a1-evb", linked=True)
    routed = {"fmax_mhz": 36.8, "clock_ns": 22.222}
    failed = {"fmax_mhz": 0.0, "clock_ns": 28.6, "failed": CRASH}
    mhz = fallback_mhz([routed, failed], gatemate)
    assert mhz is not None and mhz <= 36.8 * 0.95
    assert mhz == gatemate.pll(36.8 * 0.95, at_most=True).output_mhz
    assert fallback_mhz([routed], gatemate) is None  # no round failed
    assert fallback_mhz([failed], gatemate) is None  # none before it
