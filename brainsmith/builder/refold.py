"""``build.refold_rounds``: a bitstream that misses its clock is built again, the whole build
folded for a clock a little below the Fmax nextpnr reached (``MARGIN``), so the fps the report
leads with is met at a clock that closes, and the bitstream's PLL makes that clock. A few
rounds at most; each round's clock and Fmax are kept in ``bitstream.refolds``.

When the clock was brainsmith's default (no clock named), a round that misses is placed
again at the PLL's clock below that Fmax with its folding kept (``settled_mhz``; the build's
steps do not run again), unless that folding would then miss a target fps it meets now (one
already short of its target is kept: folded again, it would stop at the same point).

The round that missed is moved aside (``<folder>.round-N``) while the next one builds into the
folder, and removed when it is done; a round that fails leaves the one before it there,
named in the error. A round whose tools fail on its larger folding (nextpnr crashing with
both seeds, or running out of time) falls back on the round before it, which routed: that
folding is built once more and placed at the PLL's clock below the Fmax it reached
(``fallback_mhz``), the failed round recorded (``failed_record``) and its folder kept
beside the build (``<folder>.round-N-failed``) for its logs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from typing import Any

from brainsmith.clock import Clock
from brainsmith.planning.errors import BuildError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.builder.result import BuildResult
    from brainsmith.hardware.board.boards import Board

MARGIN = 0.05  # the next round asks for a clock this much below the Fmax reached
FAILED_CHARS = 300  # of a failed round's reason, in its record


def next_clock_ns(report: Any, rounds_done: int) -> float | None:
    """The clock period (ns) the next round folds for, or None when the bitstream met its
    clock, the rounds are used up or a slower clock would not help."""
    section = report.get("bitstream") if report.get("status") == "ok" else None
    if not section:
        return None
    return slower_clock_ns(section, float(report.get("clock_ns") or 0.0), rounds_done)


def slower_clock_ns(section: Any, clock_ns: float, rounds_done: int) -> float | None:
    """The clock period (ns) a round built at ``clock_ns`` whose bitstream ``section`` (met,
    fmax_mhz, refold_rounds) missed is built again for; None when it is not built again."""
    if section["met"] or rounds_done >= section.get("refold_rounds", 0):
        return None
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    if not fmax > 0:
        return None
    slower = math.ceil(Clock.from_mhz(fmax * (1.0 - MARGIN)).ns * 100) / 100
    return slower if slower > clock_ns else None


def settled_mhz(
    section: Any, board: Board, rounds_done: int, cycles: float, target_fps: float | None
) -> float | None:
    """The clock (MHz) a round at brainsmith's default clock whose bitstream ``section``
    missed is placed again at with its folding kept: ``board``'s PLL's nearest at or below
    the Fmax reached less ``MARGIN``. None when it met, the rounds are used up, or the
    folding's ``cycles`` a frame at that clock miss ``target_fps`` (it is folded again for
    the target instead)."""
    from brainsmith.hardware.board.clocking import PllError

    if section["met"] or rounds_done >= section.get("refold_rounds", 0):
        return None
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    if not fmax > 0:
        return None
    try:
        mhz = board.pll(fmax * (1.0 - MARGIN), at_most=True).output_mhz
    except PllError:
        return None
    if target_fps and not (cycles > 0 and mhz * 1e6 / cycles >= target_fps):
        return None
    return mhz


def fallback_mhz(rounds: list[dict[str, Any]], board: Board) -> float | None:
    """The clock (MHz) a build falling back on the round before a failed one (the last of
    ``rounds``) is placed at: ``board``'s PLL's nearest at or below that round's Fmax less
    ``MARGIN``. None when the last round did not fail or the PLL cannot make it."""
    from brainsmith.hardware.board.clocking import PllError

    if len(rounds) < 2 or not rounds[-1].get("failed"):
        return None
    try:
        return board.pll(float(rounds[-2]["fmax_mhz"]) * (1.0 - MARGIN), at_most=True).output_mhz
    except PllError:
        return None


def failed_record(
    clock_ns: float, reason: str, seconds: float, refolded: bool = True
) -> dict[str, Any]:
    """A round at ``clock_ns`` whose tools failed (``reason``, shortened) after ``seconds``:
    no clock made, no Fmax; ``refolded`` False: a folding that routed before, placed at
    another clock."""
    short = reason if len(reason) <= FAILED_CHARS else reason[: FAILED_CHARS - 3] + "..."
    return {
        "clock_ns": clock_ns,
        "clock_mhz": round(Clock.from_ns(clock_ns).mhz, 3),
        "fmax_mhz": 0.0,
        "met": False,
        "seconds": round(seconds, 1),
        "netlist_checked": False,
        "refolded": refolded,
        "failed": short,
    }


def settled_record(section: Any, seconds: float) -> dict[str, Any]:
    """A round whose bitstream ``section`` missed and was placed again slower, its folding
    kept (``refolded`` False): as ``round_record``, with its own ``seconds``."""
    return {
        "clock_ns": round(Clock.from_mhz(section["asked_mhz"]).ns, 3),
        "clock_mhz": section["clock_mhz"],
        "fmax_mhz": round(min(section["fmax_mhz"].values()), 3),
        "met": False,
        "seconds": round(seconds, 1),
        "netlist_checked": False,
        "refolded": False,
    }


def round_record(report: Any, seconds_before: float) -> dict[str, Any]:
    """What one round that missed its clock reached: its clock, the PLL's and the Fmax, its
    seconds (the build's, less the ``seconds_before`` of the rounds before it) and whether
    its netlist was checked at gate level."""
    section = report["bitstream"]
    asked = section.get("asked_mhz")  # a round placed again asked for another than the build's
    return {
        "clock_ns": round(Clock.from_mhz(asked).ns, 3) if asked else report["clock_ns"],
        "clock_mhz": section["clock_mhz"],
        "fmax_mhz": round(min(section["fmax_mhz"].values()), 3),
        "met": section["met"],
        "seconds": round(float(report.get("seconds") or 0.0) - seconds_before, 1),
        "netlist_checked": bool((section.get("netlist_check") or {}).get("ran")),
    }


def refold_notes(chosen: list[str], rounds: list[dict[str, Any]], clock_ns: float) -> list[str]:
    """The notes of a round built again at ``clock_ns`` after ``rounds``: its clock and why,
    then how the first round's was ``chosen`` (its "clock: ..." notes, as brainsmith's
    default says it)."""
    if not rounds:
        return []
    last = rounds[-1]
    if last.get("failed"):
        kept = rounds[-2]
        return [
            f"clock: round {len(rounds)}, folded for {Clock.from_ns(last['clock_ns'])}, could "
            f"not be placed ({last['failed']}): this is round {len(rounds) - 1}'s folding for "
            f"{Clock.from_ns(clock_ns)} again, placed at the PLL's clock {MARGIN:.0%} below the "
            f"{kept['fmax_mhz']:.1f} MHz it reached",
            *(f"round 1's {note}" for note in chosen),
        ]
    return [
        f"clock: {Clock.from_ns(clock_ns)}, {MARGIN:.0%} below the {last['fmax_mhz']:.1f} MHz "
        f"round {len(rounds)} reached at {Clock.from_mhz(last['clock_mhz'])} (nextpnr): the "
        "build was folded again for it",
        *(f"round 1's {note}" for note in chosen),
    ]


def chosen_clock(report: Any) -> list[str]:
    """A build's notes saying how its clock was chosen ("clock: ..."), as report.json has
    them."""
    return [note for note in report.get("notes") or [] if str(note).startswith("clock: ")]


def refolded(
    first: BuildResult, build_at: Callable[[float, list[dict[str, Any]]], BuildResult]
) -> BuildResult:
    """``first``, or the build of the last round ``build_at(clock_ns, rounds so far)`` made
    while the bitstream misses its clock and rounds remain; a round whose tools fail falls
    back on the one before it (``fallback_mhz``)."""
    result = first
    while True:  # the rounds so far: those the bitstream step placed again, then this one
        section: Any = result.report.get("bitstream") or {}
        rounds: list[dict[str, Any]] = list(section.get("refolds") or [])
        if (clock_ns := next_clock_ns(result.report, len(rounds))) is None:
            return result
        rounds.append(round_record(result.report, sum(r["seconds"] for r in rounds)))
        folder = result.output_dir
        aside = f"{folder}.round-{len(rounds)}"
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(folder, aside)
        try:
            result = build_at(clock_ns, list(rounds))
        except BuildError as exc:
            if not exc.tools_failed:
                raise _round_failed(exc, clock_ns, rounds, aside) from exc
            result = _fallen_back(exc, clock_ns, rounds, aside, folder, build_at)
            shutil.rmtree(aside, ignore_errors=True)
            return result
        shutil.rmtree(aside, ignore_errors=True)


def _fallen_back(
    failure: BuildError,
    clock_ns: float,
    rounds: list[dict[str, Any]],
    aside: str,
    folder: str,
    build_at: Callable[[float, list[dict[str, Any]]], BuildResult],
) -> BuildResult:
    """The build of the round before the one folded for ``clock_ns`` whose tools failed
    (``failure``): its folding again, placed slower; that failed round's folder kept beside
    it for its logs."""
    kept = f"{folder}.round-{len(rounds) + 1}-failed"
    seconds = float((_report_of(folder).get("seconds")) or 0.0)
    shutil.rmtree(kept, ignore_errors=True)
    os.replace(folder, kept)
    done = sum(r["seconds"] for r in rounds)
    rounds = [*rounds, failed_record(clock_ns, failure.reason, max(0.0, seconds - done))]
    try:
        return build_at(rounds[-2]["clock_ns"], rounds)
    except BuildError as exc:
        raise BuildError(
            exc.step,
            f"{exc.reason} (building round {len(rounds) - 1}'s folding again, as round "
            f"{len(rounds)}'s tools failed: {failure.reason})",
            f"{exc.hint}; the build that missed its clock is in {aside}, the failed round in "
            f"{kept}",
            exit_code=exc.exit_code,
            report=exc.report,
        ) from exc


def _round_failed(
    exc: BuildError, clock_ns: float, rounds: list[dict[str, Any]], aside: str
) -> BuildError:
    """The error of a round built again at ``clock_ns`` that failed, naming the round kept."""
    return BuildError(
        exc.step,
        f"{exc.reason} (building again at {clock_ns:g} ns, as the bitstream at "
        f"{Clock.from_mhz(rounds[-1]['clock_mhz'])} reached "
        f"{rounds[-1]['fmax_mhz']:.1f} MHz)",
        f"{exc.hint}; the build that missed its clock is in {aside}",
        exit_code=exc.exit_code,
        report=exc.report,
    )


def _report_of(folder: str) -> dict[str, Any]:
    """``folder``'s report.json as a dict ({} when unreadable)."""
    try:
        with open(os.path.join(folder, "report.json")) as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


__all__ = [
    "MARGIN",
    "chosen_clock",
    "failed_record",
    "fallback_mhz",
    "next_clock_ns",
    "refold_notes",
    "refolded",
    "round_record",
    "settled_mhz",
    "settled_record",
    "slower_clock_ns",
]
