"""The report in plain text, shared by report.html and the terminal summary: numbers, data
types, the warnings an engineer must read before trusting the numbers, latency and the
clocked figures, the bitstream's lines, the resource totals."""

from __future__ import annotations

import re

from brainsmith.clock import Clock, mhz_text
from brainsmith.hardware.place_route.critical_path import path_text
from brainsmith.hardware.rtlsim.layer_design import CRASHED
from brainsmith.report.pace import frames_per_second, microseconds, one_frame, streaming
from brainsmith.report.units import bits, finite, percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import (
        BitstreamSection,
        BuildReport,
        FamilyResources,
        Layer,
        PlacedCount,
        RefoldRound,
        Target,
    )


def number(value: object, unit: str = "") -> str:
    """Whole numbers with thousands separators, others to 3 significant digits; "-" for none
    and for anything that is not a finite number (a report from elsewhere may hold text
    where a number belongs: it never reaches a page)."""
    value = finite(value)
    if value is None:
        return "-"
    if float(value).is_integer() or abs(value) >= 1000:
        return f"{round(value):,}{unit}"
    return f"{value:.3g}{unit}"


def datatype(name: str) -> str:
    """A data type with its bit width where the name does not say it: BIPOLAR (1 bit)."""
    width = bits(name)
    return f"{name} ({width} bit)" if width and str(width) not in name else name


def warning_lines(report: BuildReport) -> list[str]:
    """What an engineer must know before trusting the numbers, in plain text."""
    found = (line(report) for line in WARNINGS)
    return [line for line in found if line]


def counted(kinds: dict[str, int]) -> str:
    """``{"Mul": 2, "Add": 1}`` as "Mul x2, Add"."""
    return ", ".join(f"{kind} x{n}" if n > 1 else kind for kind, n in kinds.items())


def _cpu_line(report: BuildReport) -> str | None:
    cpu = report.get("cpu_nodes")
    if not cpu or not cpu["count"] or cpu.get("output_scaling"):  # (that is a note)
        return None
    share = cpu.get("host_share")
    work = f"; they do {share:.0%} of the network's multiply-accumulates" if share else ""
    return (
        f"{cpu['count']} node(s) stay on the CPU, outside the accelerator: "
        f"{counted(cpu['op_types'])} (see {cpu['model']}){work}"
    )


def _crash_line(report: BuildReport) -> str | None:
    crashed = next((note for note in report.get("notes", []) if CRASHED in note), None)
    if not crashed:
        return None
    what = " ".join((CRASHED + crashed.partition(CRASHED)[2]).replace("[0] ", "").split())
    what = what if len(what) <= 240 else what[:239] + "…"
    return (
        f"{what}; it may not work on a board (brainsmith verify-rtl BUILD simulates each "
        "layer on its own)"
    )


def _missed_target_line(report: BuildReport) -> str | None:
    goal = report.get("target")
    if not goal or goal["met"]:
        return None
    return (
        f"target {number(goal['target_fps'])} fps missed: estimated "
        f"{number(goal['estimated_fps'])} fps; the slowest layer {goal['bottleneck']} takes "
        f"{number(goal['bottleneck_cycles'])} cycles per frame, the target allows "
        f"{number(goal['target_cycles'])}"
    )


def _over_target_line(report: BuildReport) -> str | None:
    goal = report.get("target")
    return over_target_line(goal) if goal and goal.get("over_target") else None


def bitstream_target(section: BitstreamSection) -> str:
    """What a bitstream was made for: ``BOARD (PART)``, or a part alone
    with the pins brainsmith chose (``LIFCL-40-9BG400C (no board; clk_osc on J2, ...)``)."""
    if section["board"]:
        return f"{section['board']} ({section['part']})"
    pins = re.findall(r"\w+ on \w+", str(section.get("placed", "")).split(";")[0])
    return f"{section['part']} (no board" + (f"; {', '.join(pins)})" if pins else ")")


def _timing_line(report: BuildReport) -> str | None:
    bitstream = report.get("bitstream")
    if not bitstream or bitstream["met"]:
        return None
    fmax = min(bitstream["fmax_mhz"].values(), default=0.0)
    return (
        f"timing not met on {bitstream['board'] or bitstream['part']}: nextpnr reached "
        f"{fmax:.1f} MHz, below the "
        f"{Clock.from_mhz(bitstream['clock_mhz'])} clock; the bitstream {bitstream['bitstream']} is "
        f"written, but run it at {fmax:.1f} MHz or less (or build with a longer clock_ns)"
    )


def _netlist_line(report: BuildReport) -> str | None:
    bitstream = report.get("bitstream")
    check = bitstream.get("netlist_check") if bitstream else None
    if not check or check["ran"]:
        return None
    return (
        f"the bitstream's netlist was not checked at gate level: {check['reason']}; the "
        "RTL was verified, the logic Yosys mapped it to was not"
    )


def _unestimated_line(report: BuildReport) -> str | None:
    missing = [layer["name"] for layer in report.get("layers", []) if not layer.get("estimated")]
    if not missing or report.get("status") != "ok":
        return None
    return (
        f"{len(missing)} layer(s) have no FINN estimate and are not in the totals: "
        + ", ".join(missing[:5])
        + (", ..." if len(missing) > 5 else "")
    )


def over_part_line(report: BuildReport) -> str:
    """The resources the design is estimated to use more of than the part has ("" if none);
    a Lattice build's in its part's own resources."""
    family = report.get("family_resources")
    if family:
        return _over_family_line(family)
    use = report.get("utilisation")
    shares = (use.get("percent") if use else None) or {}
    over = {key: share for key, share in shares.items() if share is not None and share > 100}
    if not over or not use:
        return ""
    totals = report.get("totals", {})
    items = ", ".join(
        f"{key} {number(totals.get(key))} ({percent(share)})" for key, share in over.items()
    )
    return (
        f"the design does not fit {use['part']}: it is estimated to use {items} of the part; "
        "lower build.target_fps (--target-fps) or choose a larger part (--part); brainsmith's "
        "folding search (build.folding.search: brainsmith) fits a design to "
        "build.folding.max_utilisation of the part"
    )


def _over_family_line(family: FamilyResources) -> str:
    """The resources of its Lattice part the design is estimated to use more of than the
    part has ("" if none)."""
    available = family.get("available") or {}
    over = []
    for key in family["resources"]:
        value = finite(family["totals"].get(key))
        if value is not None and available.get(key) and value > available[key]:
            over.append(f"{key} {number(value)} ({percent(100 * value / available[key])})")
    if not over:
        return ""
    return (
        f"the design does not fit {family['part']}: it is estimated to use {', '.join(over)} "
        "of the part; lower build.target_fps (--target-fps) or choose a board with a larger "
        "part (--board)"
    )


def over_target_line(goal: Target, shown: int = 5) -> str:
    """The layers slower than the target allows, with their final cycles."""
    slow = goal["over_target"] or []
    names = ", ".join(f"{x['name']} {number(x['cycles'])}" for x in slow[:shown])
    return (
        f"after folding, {len(slow)} layer(s) take more than the "
        f"{number(goal['target_cycles'])} cycles per frame the target allows: {names}"
        + (", ..." if len(slow) > shown else "")
    )


def bottleneck_line(goal: Target | None) -> str | None:
    """The bottleneck and why it cannot go faster, when the folding search recorded it."""
    if not goal or not goal.get("limit"):
        return None
    return (
        f"{goal['bottleneck']} takes {number(goal['bottleneck_cycles'])} cycles per frame: "
        f"{goal['limit']}"
    )


def latency_text(report: BuildReport) -> str | None:
    """One frame's latency in time and in cycles at the clock, and where it comes from:
    "12.3 µs (2,452 cycles at 5 ns, estimated)"; measured when the stitched design was
    simulated, with the estimate beside it."""
    perf, clock = report.get("performance") or {}, finite(report.get("clock_ns"))  # type: ignore[unreachable]  # a report.json read back may lack it
    simulated = _simulated_latency(report)
    estimated = finite(perf.get("critical_path_cycles"))
    cycles = simulated or estimated
    verdict = _latency_verdict(report)
    if clock and cycles:
        source = "measured in simulation" if simulated else "estimated"
        if simulated and estimated:
            source += f"; estimated {number(estimated)} cycles"
        return (
            f"{number(cycles * clock / 1000, ' µs')} ({number(cycles)} cycles at "
            f"{number(clock)} ns, {source}{verdict})"
        )
    nanoseconds = finite(perf.get("estimated_latency_ns"))
    return f"{number(nanoseconds / 1000, ' µs')} (estimated{verdict})" if nanoseconds else None


def _simulated_latency(report: BuildReport) -> float | None:
    """A frame's latency in cycles when the whole design was simulated."""
    rtlsim = report.get("rtlsim")
    stitched = rtlsim.get("stitched") if rtlsim else None
    return finite(stitched.get("latency_cycles")) if stitched else None


def _latency_verdict(report: BuildReport) -> str:
    """ "; target 20 ns estimated met", or "" without a latency target."""
    goal = report.get("latency_target")
    if not goal:
        return ""
    basis = "measured" if goal.get("measured_latency_ns") is not None else "estimated"
    return f"; target {number(goal['target_latency_ns'])} ns {basis} " + (
        "met" if goal["met"] else "MISSED"
    )


def clocked_lines(report: BuildReport) -> tuple[str, str | None] | None:
    """Throughput and latency at the clock the design runs at, with their sources, when a
    bitstream was made, in ``pace``'s words: ("12,345 fps at 48.0 MHz (nextpnr clock,
    Verilator cycles): frames streaming, one every 3,888 cycles", "20.8 µs at 48.0 MHz
    (nextpnr clock, Verilator cycles): one frame, 1,000 cycles from its first input to its
    last output"); else None."""
    perf = report.get("performance") or {}  # type: ignore[unreachable]  # a report.json read back may lack it
    fps, clock = finite(perf.get("fps")), Clock.read_mhz(perf.get("clock_mhz"))
    if not fps or not clock:
        return None
    first = f"{frames_per_second(fps)} at {clock} ({perf.get('fps_source', '')})"
    interval = finite(perf.get("cycles_per_frame"))
    first += f": {streaming(interval)}" if interval else ""
    if perf.get("clock_note"):
        first += f"; {perf['clock_note']}"
    nanoseconds, cycles = finite(perf.get("latency_ns")), finite(perf.get("latency_cycles"))
    latency = None
    if nanoseconds:
        latency = f"{microseconds(nanoseconds)} at {clock} ({perf.get('latency_source', '')})"
        latency += f": {one_frame(cycles)}" if cycles else ""
    return first, latency


def side_by_side(report: BuildReport) -> str | None:
    """The three paces of a bitstream build, each labelled: the accelerator's (its cycles a
    frame at the clock made), the one the design's own counter gave, and what the host link
    carries end to end; None when there is only the first."""
    perf = report.get("performance") or {}  # type: ignore[unreachable]  # a report.json read back may lack it
    fps, counted, link = (finite(perf.get(key)) for key in ("fps", "counted_fps", "link_fps"))
    if not fps or not (counted or link):
        return None
    said = [f"the accelerator {frames_per_second(fps)} ({perf.get('fps_source', '')})"]
    if counted:
        said.append(f"counted by the design {frames_per_second(counted)} "
                    f"({perf.get('counted_source', '')})")  # fmt: skip
    if link:
        said.append(f"through the link {frames_per_second(link)} ({perf.get('link_source', '')})")
    return " · ".join(said)


def bitstream_lines(
    section: BitstreamSection,
    placed: dict[str, PlacedCount] | None = None,
    build_seconds: float | None = None,
) -> list[str]:
    """The bitstream in lines: where and its timing, the critical path, the gate-level
    check, each refold round (``build_seconds``: the whole build's, whose rest is the last
    round's), the resources nextpnr placed (``placed``: under the family's names), the
    seconds per stage and the link."""
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stage_seconds(section))
    return [
        f"{section['bitstream']} for {bitstream_target(section)}: "
        f"{section['status']}, {mhz_text(fmax)} reached at {Clock.from_mhz(section['clock_mhz'])} (nextpnr)"
        + (" (cached)" if section["cached"] else ""),
        critical_path_line(section),
        *(
            [f"not read back: {section['tools']['read_back']}"]
            if "read_back" in section["tools"]
            else []
        ),
        netlist_line(section),
        *refold_lines(section, build_seconds),
        placed_line(section, placed),
        f"{stages}; UART {section['baud']:,} baud, {section['in_words']} words in and "
        f"{section['out_words']} out a frame",
    ]


# The stages of ``bitstream.seconds`` as the report names them
STAGES = {"synth": "synthesis", "place_route": "place and route", "pack": "packing",
          "unpack": "reading back", "place_route_again": "place and route with router1"}  # fmt: skip


def stage_seconds(section: BitstreamSection) -> list[tuple[str, float]]:
    """The seconds of each stage that made the bitstream, named (``STAGES``), then the
    gate-level check's when it ran."""
    found = [(STAGES.get(stage, stage), seconds) for stage, seconds in section["seconds"].items()]
    check = section.get("netlist_check")
    if check and check["ran"]:
        found.append(("gate-level check", check["seconds"]))
    return found


def placed_line(section: BitstreamSection, placed: dict[str, PlacedCount] | None = None) -> str:
    """What nextpnr placed: ``placed`` (LUT4, FF, MULT18, EBR) with their share of the part,
    then its other cells; without ``placed`` every cell type used, by nextpnr's names."""
    if placed is None:
        used = [_share_text(name, counts) for name, counts in sorted(section["resources"].items())
                if counts["used"]]  # fmt: skip
        return "used: " + ", ".join(used)
    named = [_share_text(name, counts) for name, counts in placed.items()]
    cells = {counts["cell"] for counts in placed.values()}
    others = [f"{name} {counts['used']:,}" for name, counts in sorted(section["resources"].items())
              if counts["used"] and name not in cells]  # fmt: skip
    return "placed: " + ", ".join(named) + ("; other cells " + ", ".join(others) if others else "")


def _share_text(name: str, counts: PlacedCount | dict[str, int]) -> str:
    """ "LUT4 2,521 of 83,640 (3.01 %)"."""
    used, available = counts["used"], counts["available"]
    share = f" ({percent(100 * used / available, used)})" if available else ""
    return f"{name} {used:,} of {available:,}{share}"


def refold_lines(section: BitstreamSection, build_seconds: float | None = None) -> list[str]:
    """Each round that missed its clock before this build, built again slower, and then
    this build's own round (its seconds the rest of ``build_seconds``)."""
    rounds = section.get("refolds") or []
    lines = [
        f"round {index}: {Clock.from_mhz(done['clock_mhz'])} asked, {round_reached(done)}: "
        f"{next_round(done)}" + (f" ({done['seconds']:.0f} s)" if "seconds" in done else "")
        for index, done in enumerate(rounds, start=1)
    ]
    if not rounds:
        return lines
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    own = last_round_seconds(section, build_seconds)
    return [
        *lines,
        f"round {len(rounds) + 1}: {Clock.from_mhz(section['asked_mhz'])} asked, "
        f"{Clock.from_mhz(section['clock_mhz'])} made, {mhz_text(fmax)} reached (nextpnr): "
        f"{section['status']}, this bitstream" + (f" ({own:.0f} s)" if own is not None else ""),
    ]


def round_reached(done: RefoldRound) -> str:
    """What a round before the build's reached: nextpnr's Fmax, or its tools' failure."""
    if done.get("failed"):
        return f"not placed ({done.get('failed')})"
    return f"{mhz_text(done['fmax_mhz'])} reached (nextpnr)"


def next_round(done: RefoldRound) -> str:
    """What followed a round that missed its clock: folded again, or (its folding kept, the
    clock brainsmith's) placed again; after one whose tools failed, the round before it
    built again."""
    if done.get("failed"):
        return "the folding that routed placed again"
    if done.get("refolded", True):
        return "folded again for a clock below it"
    return "placed again at a clock below it, the folding kept"


def last_round_seconds(section: BitstreamSection, build_seconds: float | None) -> float | None:
    """The seconds of the round that made ``section``'s bitstream: the build's, less the
    rounds' before it (None without the build's)."""
    if finite(build_seconds) is None:
        return None
    before = sum(finite(done.get("seconds")) or 0.0 for done in section.get("refolds") or [])
    return max(0.0, float(build_seconds or 0.0) - before)


def family_line(family: FamilyResources) -> str:
    """The layers' figures in the Lattice part's own resources, with their share of it:
    "LUT4 1,503 (1.80 %), FF 1,486 (1.78 %), MULT18 2 (1.28 %), EBR 1 (0.48 %) of PART";
    "at least" when layers have no model."""
    available = family.get("available") or {}
    prefix = "at least " if family.get("incomplete") else ""
    parts = []
    for key in family["resources"]:
        value = finite(family["totals"].get(key))
        share = 100 * value / available[key] if value is not None and available.get(key) else None
        shown = f" ({percent(share, value)})" if share is not None else ""
        parts.append(f"{key} {prefix}{number(value)}{shown}")
    return ", ".join(parts) + f" of {family['part']}"


def critical_path_line(section: BitstreamSection) -> str:
    """Where the slowest clock's critical path runs, by layer (nextpnr)."""
    path = section.get("critical_path")
    return f"critical path {path_text(path)} (nextpnr)" if path else "critical path: not reported"


def cell_models(part: str) -> str:
    """Whose cell models the gate-level check of a bitstream for ``part`` simulates: its
    family's."""
    from brainsmith.hardware.place_route.families import target
    from brainsmith.hardware.place_route.parts import UnknownPart

    try:
        return f"{target(part)[0].name} cell models"
    except UnknownPart:
        return "cell models"


def netlist_line(section: BitstreamSection) -> str:
    """What the gate-level check of the bitstream's netlist found."""
    check = section.get("netlist_check")
    if check is None:
        return "netlist: not checked at gate level"
    if not check["ran"]:
        return f"netlist: not checked at gate level: {check['reason']}"
    verdict = "bit for bit equal to" if check["passed"] else "different from"
    benched, cycles = check.get("bench_frames"), check.get("bench_cycles")
    bench = (f"; the first {benched} times back to back in the RTL's {cycles:,} cycles, "
             "its checksum too") if benched and cycles and check["passed"] else ""  # fmt: skip
    return (
        f"netlist: {check['frames']} frames at gate level (Verilator, "
        f"{cell_models(section['part'])}) "
        f"{verdict} the RTL simulation"
        + (f": {check['first_difference']}" if check["first_difference"] else "")
        + bench
        + (" (verdict of an earlier check of the same netlist, RTL and frames)"
           if check.get("cached") else "")
    )  # fmt: skip


def total_text(key: str, value: object, incomplete: dict[str, list[str]]) -> str:
    """One resource total: "LUT 552", or "LUT at least 552" when layers are not estimated."""
    return f"{key} {amount_text(key, value, incomplete)}"


def amount_text(key: str, value: object, incomplete: dict[str, list[str]]) -> str:
    """A resource total's amount: "552", or "at least 552" when layers are not estimated."""
    return f"at least {number(value)}" if incomplete.get(key) else number(value)


def incomplete_line(report: BuildReport) -> str | None:
    """Which layers FINN does not estimate, per resource, by kind: "LUT of Pool_hls x2"."""
    incomplete = report.get("incomplete") or {}
    if not incomplete:
        return None
    kinds = {layer["name"]: _kind(layer) for layer in report.get("layers", [])}
    parts = []
    for key, names in incomplete.items():
        counts: dict[str, int] = {}
        for name in names:
            counts[kinds.get(name) or name] = counts.get(kinds.get(name) or name, 0) + 1
        parts.append(f"{key} of {counted(counts)}")
    return "not estimated by FINN, so not in these totals: " + "; ".join(parts)


def _kind(layer: Layer) -> str:
    kind = layer.get("op_type") or ""
    return f"{kind}_{layer['backend']}" if kind and layer.get("backend") else kind


WARNINGS = (  # warning_lines' lines, in order
    _cpu_line,
    _crash_line,
    _missed_target_line,
    _over_target_line,
    over_part_line,
    _timing_line,
    _netlist_line,
    _unestimated_line,
)
