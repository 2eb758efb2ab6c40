"""``build.bitstream``: after the last step, the stitched accelerator made into the Lattice
board's bitstream behind the host link (``brainsmith.hardware.place_route.board_run``, as
``brainsmith bitstream`` makes it) at the build's clock: ``BUILD/bitstream/<board>.bit``, its
run folder ``BUILD/bitstream/run/`` and report.json's ``bitstream``; then its netlist is
checked at gate level against the RTL (``brainsmith.hardware.board.gate_level``: a difference
fails the build). A Nexus part's (no board) is placed, routed and packed as ``brainsmith
place-route`` does, on pins of brainsmith's choosing: ``BUILD/bitstream/<part>.bit``. A
missed clock is a result, not a failure (``brainsmith.builder.refold`` builds again for a
slower clock, as ``build.refold_rounds`` allows); a tool that fails fails the build with its
first error and log.

``performance_at_clock`` turns the result into the throughput and latency at the clock the
design runs at (the PLL's, or the Fmax nextpnr reached when it is lower), from the cycles the
stitched simulation measured (Verilator) or else FINN's estimate.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from brainsmith.blueprint.choices import lattice_board
from brainsmith.builder.refold import (
    MARGIN,
    failed_record,
    fallback_mhz,
    settled_mhz,
    settled_record,
    slower_clock_ns,
)
from brainsmith.clock import Clock
from brainsmith.hardware.board.boards import BoardError, board
from brainsmith.hardware.place_route.board_run import BoardRunError, bitstream_of_build
from brainsmith.planning.errors import BuildError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.builder.state import BuildRun
    from brainsmith.hardware.board.boards import Board
    from brainsmith.hardware.board.streams import Streams
    from brainsmith.hardware.design import Design
    from brainsmith.report_schema import (
        BitstreamSection,
        ClockedPerformance,
        NetlistCheckSection,
        Performance,
        RtlsimSection,
    )

FIFO_RECORD = "fifo_sizing.json"  # brainsmith.steps.fifos.RECORD, in FINN's report folder
ESTIMATE_RECORD = "estimate_network_performance.json"  # FINN's, in its report folder
STOP_WAIT = 10.0  # seconds a stopped compile of the gate-level check's simulators is waited for


def make_bitstream(run: BuildRun, model: ModelWrapper) -> None:
    """The board's (or the Lattice part's) bitstream of ``run``'s stitched design into
    ``run.bitstream``; BuildError (exit 1) when it cannot be made. At a clock brainsmith
    chose, a bitstream that misses it is made again at a slower clock the same folding
    reaches (``refold.settled_mhz``), the round before recorded in ``run.refolds``; a build
    falling back on the round before one whose tools failed is placed at once at the clock
    that round reached (``refold.fallback_mhz``), and where its tools fail there too, at its
    own clock, where it routed (timing not met: a bitstream rather than none)."""
    began = time.perf_counter()
    name = lattice_board(run.plan.build.board) or ""
    if not name:
        _part_bitstream(run, model, began)
        return
    try:
        target = board(name, linked=True)
    except BoardError as exc:
        raise BuildError("bitstream", str(exc), exc.hint) from exc
    design = _design(run, model)
    build = _streams(run, model, design)
    own = run.plan.build.clock.mhz
    mhz: float | None = fallback_mhz(run.refolds, target) or own
    while mhz is not None:
        asked = mhz
        try:
            data, mhz = _board_round(run, model, target, design, build, asked, began)
        except BuildError as exc:
            if not (exc.tools_failed and _falls_back(run) and asked != own):
                raise
            run.refolds.append(failed_record(Clock.from_mhz(asked).ns, exc.reason,
                                             _round_seconds(run), refolded=False))  # fmt: skip
            run.notes.append(_placed_where_it_routed(run, asked))
            mhz = own
        began = time.perf_counter()
    data["refolds"] = list(run.refolds)
    for key in ("bitstream", "netlist"):
        data[key] = os.path.relpath(data[key], run.output_dir)
    run.bitstream = data  # type: ignore[assignment]  # BitstreamResult.as_dict() and words


def _board_round(
    run: BuildRun,
    model: ModelWrapper,
    target: Board,
    design: Design,
    build: Streams | str,
    mhz: float,
    began: float,
) -> tuple[dict[str, Any], float | None]:
    """(one round's bitstream section at ``mhz``, the clock it is made again at or None),
    its netlist checked at gate level when it is the build's (and brainsmith models the
    cells of its family)."""
    from brainsmith.hardware.place_route.bitstream import family_of

    if not family_of(target).gate_level:
        build = (
            f"brainsmith simulates {modelled_cells()} cells at gate level, not {target.family} ones"
        )
    boards = Precompiled(build, target)  # compiled on the core nextpnr leaves idle
    try:
        run.progress.note(f"placing and routing for {target.name} at {Clock.from_mhz(mhz)} ...")
        data = _made(run, began, lambda say: bitstream_of_build(
            run.output_dir, design, model, target, mhz, say, boards.synthesised,
        ))  # fmt: skip
        again = None if _falls_back(run) else _settled(run, data, target)
        if again is not None:
            clock = Clock.from_mhz(again)
            data["netlist_check"] = unchecked(run, (
                f"timing not met: made again at {clock}, the PLL's clock below the Fmax "
                "reached, with the same folding; that netlist is checked"
            ))  # fmt: skip
            run.refolds.append(settled_record(data, _round_seconds(run)))
            run.notes.append(_settled_note(run, data, again))
            run.progress.note(f"placing again at {clock}, the folding kept (the clock was "
                              "brainsmith's default) ...")  # fmt: skip
        elif _kept(run, data):
            data["netlist_check"] = check_netlist(run, build, target, data)
        else:  # this round's netlist is thrown away
            reason = (
                "timing not met: the build runs again for a slower clock, whose netlist is checked"
            )
            data["netlist_check"] = unchecked(run, reason)
    finally:
        boards.stop()
    return data, again


def _placed_where_it_routed(run: BuildRun, mhz: float) -> str:
    """Why a build falling back on a round that routed runs at that round's own clock."""
    return (
        f"clock: placed at {Clock.from_mhz(mhz)}, that folding failed in the tools too; the "
        f"bitstream is that folding at its own {run.plan.build.clock}, where it routed before "
        "but missed the clock: try another --target-fps or --clock-ns"
    )


def _settled(run: BuildRun, data: dict[str, Any], target: Board) -> float | None:
    """The clock a round at brainsmith's default clock is made again at with its folding,
    or None (``refold.settled_mhz``; the cycles a frame FINN's estimate or the simulation's,
    whichever is more). A folding already short of the target fps (the part or a layer
    stopped it) is kept whatever it then makes: folded again for a slower clock, it would
    stop at the same point."""
    if not run.plan.clock_chosen:
        return None
    cycles = max(
        float(_simulated(run.rtlsim, run.report_dir).get("cycles_per_frame") or 0),
        float(_estimated(run.report_dir).get("max_cycles") or 0),
    )
    fps = None if _out_of_reach(run) else run.plan.build.target_fps
    return settled_mhz(data, target, len(run.refolds), cycles, fps)


def _out_of_reach(run: BuildRun) -> bool:
    """Whether the folding stopped short of the build's target fps at its clock."""
    record = run.context.folding
    return bool(record and record["cycles"] > record["target_cycles"])


def _settled_note(run: BuildRun, data: dict[str, Any], mhz: float) -> str:
    """Why the bitstream runs at ``mhz``, not at the clock brainsmith chose."""
    fps = run.plan.build.target_fps
    if fps and _out_of_reach(run):
        kept = f" (already short of {fps:,} fps: a slower clock would fold no further)"
    else:
        kept = f" ({fps:,} fps still met)" if fps else ""
    return (
        f"clock: the bitstream runs at {Clock.from_mhz(mhz)}: nextpnr reached "
        f"{min(data['fmax_mhz'].values()):.1f} MHz of the {Clock.from_mhz(data['clock_mhz'])} "
        f"brainsmith chose, so it was placed again at the PLL's clock {MARGIN:.0%} below that, "
        f"the folding for {run.plan.build.clock} kept"
        + kept
        + " rather than the build run again for a more parallel one"
    )


def _round_seconds(run: BuildRun) -> float:
    """The seconds of the round now ending: the command's so far, less the rounds' before."""
    before = sum(float(cast(float, done.get("seconds") or 0.0)) for done in run.refolds)
    return time.perf_counter() - run.started_at - before


def _estimated(report_dir: str) -> dict[str, Any]:
    """FINN's estimate of the network's performance ({} when it wrote none)."""
    try:
        with open(os.path.join(report_dir, ESTIMATE_RECORD)) as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


class Precompiled:
    """The two simulated boards the gate-level check compares, compiled in a thread (rtlsim's
    compile cache) while Yosys and nextpnr, one core each, make the bitstream: the RTL's from
    the start, the netlist's as soon as Yosys has written it (``synthesised``, a copy of it
    taken first: the run folder is published when the tools end). The check takes them from
    the cache, waiting on its lock while one compiles. ``stop`` gives them up, the compiler
    killed; a compile that fails is left to the check, which compiles again and says why."""

    def __init__(self, build: Streams | str, target: Board) -> None:
        self.stopped, self.written = threading.Event(), threading.Event()
        self.netlist: tuple[str, int] | None = None  # the copy and its clocks per bit
        self.folder = tempfile.mkdtemp(prefix="brainsmith-netlist-")
        self.thread = threading.Thread(
            target=self._compile, args=(build, target), name="brainsmith-gate-level", daemon=True
        )
        if not isinstance(build, str):
            self.thread.start()

    def synthesised(self, netlist: str, clocks_per_bit: int) -> None:
        copy = os.path.join(self.folder, os.path.basename(netlist))
        with contextlib.suppress(OSError):
            shutil.copyfile(netlist, copy)
            self.netlist = (copy, clocks_per_bit)
        self.written.set()

    def _compile(self, build: Streams, target: Board) -> None:
        from brainsmith.hardware.board.gate_level import netlist_design
        from brainsmith.hardware.board.simulated import compile_board

        with contextlib.suppress(Exception):  # the check compiles it again, and says why
            compile_board(build, stop=self.stopped)
        self.written.wait()
        if self.netlist is not None and not self.stopped.is_set():
            netlist, clocks_per_bit = self.netlist
            with contextlib.suppress(Exception):
                design = netlist_design(netlist, target)
                compile_board(build, clocks_per_bit, design, stop=self.stopped)

    def stop(self) -> None:
        """Its compiler killed (within a fraction of a second); a thread still waiting for
        the cache's lock, held by another process, is left after ``STOP_WAIT`` seconds: it
        stops before compiling anything, and as a daemon it ends with the process."""
        self.stopped.set()
        self.written.set()
        if self.thread.is_alive():
            self.thread.join(STOP_WAIT)
        shutil.rmtree(self.folder, ignore_errors=True)


def _design(run: BuildRun, model: ModelWrapper) -> Design:
    """The description of ``run``'s stitched accelerator; BuildError (exit 2) naming why it
    has none."""
    from brainsmith.builder.design import described
    from brainsmith.hardware.place_route.board_run import refuse_hls

    try:
        refuse_hls(model)
    except BoardRunError as exc:
        raise BuildError("bitstream", str(exc), exc.hint) from exc
    design = described(run, model)
    if isinstance(design, str):
        raise BuildError(
            "bitstream",
            f"the build has no whole accelerator in RTL to make a bitstream of: {design}",
            "build with --prefer rtl (every layer RTL) and leave build.size_fifos on",
        )
    return design


def _streams(run: BuildRun, model: ModelWrapper, design: Design) -> Streams | str:
    """The build's streams as its host link and driver see them, or why the gate-level check
    cannot run on it."""
    from brainsmith.hardware.board.streams import DriverError, streams_of

    try:
        return streams_of(run.output_dir, design, model, run.context.dataflow_parent)
    except DriverError as exc:
        return exc.reason


def _part_bitstream(run: BuildRun, model: ModelWrapper, began: float) -> None:
    """The bitstream of ``run``'s Lattice part alone (a Nexus part: its pins brainsmith's
    choice, ``part_bitstream_of_build``) into ``run.bitstream``; BuildError (exit 1) when it
    cannot be made. Its netlist is not checked at gate level where brainsmith has no models
    of its family's cells (``Family.gate_level``)."""
    from brainsmith.builder.lattice import family_of, lattice_part_of
    from brainsmith.hardware.place_route.board_run import part_bitstream_of_build

    family, part = family_of(lattice_part_of(run.plan.build) or "")
    clock = run.plan.build.clock
    run.progress.note(f"placing, routing and packing for {part.name} at {clock} ...")
    design = _design(run, model)
    data = _made(run, began, lambda say: part_bitstream_of_build(
        run.output_dir, design, model, family, part, clock.mhz, say,
    ))  # fmt: skip
    if _kept(run, data):
        reason = (
            f"brainsmith simulates {modelled_cells()} cells at gate level, not {family.name} ones"
        )
    else:
        reason = "timing not met: the build runs again for a slower clock"
    data["netlist_check"] = unchecked(run, reason)
    data["refolds"] = list(run.refolds)
    data["bitstream"] = os.path.relpath(data["bitstream"], run.output_dir)
    run.bitstream = data  # type: ignore[assignment]  # a board's bitstream section, no board


def modelled_cells() -> str:
    """The families whose cells brainsmith simulates at gate level, by name."""
    from brainsmith.hardware.place_route.families import BUILT_IN

    return " and ".join(family.name for family in BUILT_IN if family.gate_level)


def check_netlist(
    run: BuildRun, build: Streams | str, target: Board, data: dict[str, Any]
) -> NetlistCheckSection:
    """The bitstream's netlist checked at gate level against the RTL of ``build`` (or why it
    cannot be: ``brainsmith.hardware.board.gate_level``); BuildError (exit 1) when they differ.
    A check that cannot run (no Verilator, a cell brainsmith has no model of) is reported, not
    fatal."""
    from brainsmith.hardware.board.gate_level import check_netlist as check
    from brainsmith.hardware.board.streams import DriverError

    if isinstance(build, str):
        return unchecked(run, build)
    run.progress.note("checking the bitstream's netlist at gate level (Verilator) ...")
    try:
        found = check(build, data["netlist"], target, data["clocks_per_bit"])
    except DriverError as exc:
        return unchecked(run, exc.reason)
    if not found.passed:
        raise BuildError(
            "bitstream",
            f"the bitstream's netlist does not compute what its RTL computes: "
            f"{found.first_difference} ({found.frames} frames simulated at gate level)",
            f"report this as a bug with {os.path.relpath(data['netlist'], run.output_dir)}: "
            "Yosys mapped the design to other logic than its RTL; do not load this bitstream",
        )
    run.progress.note(
        f"netlist: {found.frames} frames bit for bit equal to the RTL at gate level "
        + ("(the same netlist, RTL and frames checked before)" if found.cached
           else f"in {found.seconds:.1f} s")
    )  # fmt: skip
    return {**found.as_dict(), "ran": True, "reason": ""}  # type: ignore[typeddict-item]


def unchecked(run: BuildRun, reason: str) -> NetlistCheckSection:
    """The gate-level check's section when it did not run, and why (said as the build goes)."""
    run.progress.note(f"the netlist was not checked: {reason}")
    return {"ran": False, "passed": False, "frames": 0, "words": 0, "seconds": 0.0,
            "first_difference": "", "reason": reason, "cached": False}  # fmt: skip


def clock_run_at(section: BitstreamSection) -> float:
    """The clock the design runs at: the PLL's, or the Fmax reached when that is lower."""
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    return section["clock_mhz"] if section["met"] or not fmax else min(section["clock_mhz"], fmax)


def performance_at_clock(
    section: BitstreamSection,
    estimate: Performance,
    rtlsim: RtlsimSection | None,
    report_dir: str,
) -> ClockedPerformance | None:
    """fps and latency at the clock the design runs at, each with its source: the cycles the
    stitched simulation measured (``rtlsim``, else the FIFO sizing's record in
    ``report_dir``: "Verilator"), else FINN's estimate ("estimate"); None without cycles."""
    measured = _simulated(rtlsim, report_dir)
    cycles = measured.get("cycles_per_frame") or estimate.get("max_cycles")
    latency = measured.get("latency_cycles") or estimate.get("critical_path_cycles")
    if not cycles:
        return None
    mhz = clock_run_at(section)
    clock = Clock.from_mhz(mhz)
    cycles_source = "Verilator" if measured.get("cycles_per_frame") else "estimate"
    latency_source = "Verilator" if measured.get("latency_cycles") else "estimate"
    note = None
    if not section["met"]:
        note = (
            f"timing not met: the figures are at the {clock} nextpnr reached, not the "
            f"{Clock.from_mhz(section['clock_mhz'])} the PLL makes"
        )
    clocked: ClockedPerformance = {
        "fps": round(mhz * 1e6 / cycles, 1),
        "fps_source": f"nextpnr clock, {cycles_source} cycles",
        "latency_ns": round(latency * clock.ns, 1) if latency else None,
        "latency_source": f"nextpnr clock, {latency_source} cycles",
        "clock_mhz": round(mhz, 3),
        "clock_source": "nextpnr",
        "cycles_per_frame": cycles,
        "cycles_source": cycles_source,
        "latency_cycles": latency,
        "clock_note": note,
    }
    _add_beside(clocked, section, mhz)
    return clocked


def _add_beside(found: ClockedPerformance, section: BitstreamSection, mhz: float) -> None:
    """The figures beside the accelerator's fps at ``mhz`` added to ``found``: the pace the
    design's own counter gave (the gate-level check's BENCH: N frames back to back less the
    first alone, over the N - 1 after it) and the frames a second the host link carries, each
    with its source."""
    check = section.get("netlist_check")
    if check and check["ran"] and check["passed"]:
        frames, cycles = check.get("bench_frames", 0), check.get("bench_cycles", 0)
        alone = check.get("latency_cycles", 0)
        if frames > 1 and cycles > alone > 0:
            found["counted_fps"] = round(mhz * 1e6 * (frames - 1) / (cycles - alone), 1)
            found["counted_source"] = (
                f"the link's counter, simulated: {frames} frames back to back in {cycles:,} "
                f"cycles, the first alone in {alone:,}"
            )
    if section.get("link_fps"):
        found["link_fps"] = section["link_fps"]
        found["link_source"] = f"UART {section['baud']:,} baud, two requests outstanding"


def _simulated(rtlsim: RtlsimSection | None, report_dir: str) -> dict[str, Any]:
    """Cycles per frame and latency of the stitched simulation: verify-rtl's, else the
    FIFO sizing's ({} when neither simulated the design)."""
    stitched = rtlsim.get("stitched") if rtlsim else None
    if stitched and stitched.get("cycles_per_frame"):
        return {
            "cycles_per_frame": stitched.get("cycles_per_frame"),
            "latency_cycles": stitched.get("latency_cycles"),
        }
    try:
        with open(os.path.join(report_dir, FIFO_RECORD)) as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or not record.get("sized"):
        return {}
    return {key: record.get(key) for key in ("cycles_per_frame", "latency_cycles")}


def _made(
    run: BuildRun, began: float, make: Callable[[Callable[[str], None]], dict[str, Any]]
) -> dict[str, Any]:
    """The bitstream section ``make`` returns (given the progress line to say each stage
    on), with the build's refold rounds; BuildError (exit 1) when it could not be made. Its
    progress line says the file, status, Fmax, the clock (the PLL's, or the one asked for a
    part alone) and the time."""
    try:
        data = make(lambda text: run.progress.note(text + " ..."))
    except BoardRunError as exc:
        raise BuildError("bitstream", str(exc), exc.hint, tools_failed=exc.failed) from exc
    clock = (f"{Clock.from_mhz(data['clock_mhz'])} made" if data["board"]
             else f"{run.plan.build.clock} asked")  # fmt: skip
    fmax = min(data["fmax_mhz"].values(), default=0.0)
    run.progress.note(
        f"bitstream {os.path.relpath(data['bitstream'], run.output_dir)}: {data['status']} "
        f"({fmax:.1f} MHz reached, {clock}) in {time.perf_counter() - began:.1f} s"
        + (" (cached)" if data["cached"] else "")
    )
    data["refold_rounds"] = run.plan.build.refold_rounds
    return data


def _kept(run: BuildRun, data: dict[str, Any]) -> bool:
    """Whether this round's bitstream is the build's: its clock met, no round left, or the
    build falls back on the round before one whose tools failed."""
    return (
        _falls_back(run)
        or slower_clock_ns(data, run.plan.build.period_ns, len(run.refolds)) is None
    )


def _falls_back(run: BuildRun) -> bool:
    """Whether the round before this build's tools failed (``refold.fallback_mhz``)."""
    return bool(run.refolds and run.refolds[-1].get("failed"))
