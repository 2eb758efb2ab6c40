"""report.html: one self-contained page (inline CSS and SVG) made from a report.json
dictionary and the template ``template.html`` next to this module."""

from __future__ import annotations

import html
import json
import os
import re
import string
from typing import cast
from urllib.parse import quote

from brainsmith.frameworks.finn.facts import step_label
from brainsmith.report.measured import as_estimated, error_line, measured_line, unsynthesised
from brainsmith.report.rtl_tables import rtlsim_html
from brainsmith.report.units import RESOURCES, bits, finite, percent
from brainsmith.rtlsim.sources import CRASHED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Literal

    from brainsmith.frameworks.finn.facts import Resource
    from brainsmith.report.schema import (
        BitstreamSection,
        BuildErrorEntry,
        BuildReport,
        FinnWarning,
        Layer,
        MeasuredLayer,
        Performance,
        StepEntry,
        SynthesisSection,
        Target,
        Verification,
    )

NONE = "<span class='none'>-</span>"


def render(report: BuildReport, charts: dict[str, str], picture: str | None = None) -> str:
    """The page for ``report``; ``charts`` as made by ``brainsmith.report.charts``,
    ``picture`` the dataflow SVG (``brainsmith.report.picture``)."""
    template = string.Template(_template())
    status, goal = report.get("status", ""), report.get("target")
    return template.substitute(
        title=_e(f"brainsmith build: {report.get('name', '')}"),
        status=_e(status),
        error=_drawn("error", lambda: _error(report.get("error"), status)),
        verdict=_drawn("performance", lambda: _verdict(report)),
        warnings=_drawn("warnings", lambda: _warnings(report)),
        summary=_drawn("summary", lambda: _summary(report), row=True),
        dataflow=_dataflow(picture),
        steps=_drawn("steps", lambda: _steps(report.get("steps", [])), row=True),
        layers=_drawn(
            "layers",
            lambda: _layers(report.get("layers", []), goal.get("target_cycles") if goal else None),
        ),
        charts=_charts(charts),
        rtlsim=_drawn("rtlsim", lambda: rtlsim_html(report.get("rtlsim"))),
        finn_warnings=_drawn("warnings", lambda: _finn_warnings(report.get("warnings", []), goal)),
        blueprint=_drawn(
            "blueprint", lambda: _e(json.dumps(report.get("blueprint", {}), indent=2))
        ),
        versions=_drawn(
            "versions",
            lambda: _e(", ".join(f"{k} {v}" for k, v in report.get("versions", {}).items())),
        ),
    )


# What drawing a section raises when report.json holds there what brainsmith never writes
# (text where a number belongs, a list for an object): a report from elsewhere.
MALFORMED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


def _drawn(part: str, draw: Callable[[], str], row: bool = False) -> str:
    """``draw()``, or a line naming report.json's ``part`` when it is not as brainsmith
    writes it (``row``: as a table row), so one malformed section never stops the page."""
    try:
        return draw()
    except MALFORMED:
        text = f"report.json's {_e(part)} is not as brainsmith writes it: not shown"
        if row:
            return f"<tr><td colspan='6' class='none'>{text}</td></tr>"
        return f"<p class='none'>{text}</p>"


def _template() -> str:
    with open(os.path.join(os.path.dirname(__file__), "template.html")) as handle:
        return handle.read()


SCOPE = "brainsmith-build"  # the class of the fragment's outer element


def first_screen(report: BuildReport, link: str | None = None, lines: Sequence[str] = ()) -> str:
    """The page's first screen as a self-contained HTML fragment (a notebook's view of a
    build): the template's top — title and status, error, verdict, warnings and notes, the
    summary without its file links — styled by the page's own CSS scoped to the fragment,
    ``lines`` (plain text) after the title and a link to the full page at ``link``. No
    scripts; every value escaped."""
    page = _template()
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    top = page.split("<body>", 1)[1].split("$dataflow", 1)[0]
    status = report.get("status", "")
    body = string.Template(top).substitute(
        title=_e(f"brainsmith build: {report.get('name', '')}"),
        status=_e(status),
        error="".join(f"<p>{_e(line)}</p>" for line in lines)
        + _drawn("error", lambda: _error(report.get("error"), status)),
        verdict=_drawn("performance", lambda: _verdict(report)),
        warnings=_drawn("warnings", lambda: _warnings(report)),
        summary=_drawn("summary", lambda: _summary(report, files=False), row=True)
        if "performance" in report
        else "",
    )
    more = f"<p>The full report: <a href='{_e(_href(link))}'>report.html</a></p>" if link else ""
    return f"<div class='{SCOPE}'><style>{_scoped(style)}</style>{body}{more}</div>"


def _scoped(css: str) -> str:
    """``css`` with every selector under the fragment's class (``body`` becomes it)."""

    def scope(match: re.Match[str]) -> str:
        selectors = [s.strip() for s in match.group(1).split(",")]
        scoped = [f".{SCOPE}" if s == "body" else f".{SCOPE} {s}" for s in selectors]
        return f"{', '.join(scoped)} {{{match.group(2)}}}"

    return re.sub(r"([^{}]+?)\s*\{([^{}]*)\}", scope, css.strip())


def _href(link: str) -> str:
    """``link`` (a ``file:`` URI or a relative path) as a link that can only be a file: a
    relative path whose first part holds a colon (a folder named ``javascript:x``) would be
    read as a URL scheme, so it starts with ``./``."""
    if link.startswith("file://"):  # Path.as_uri(): percent-encoded already
        return quote(link, safe=":/%")
    return "./" + quote(link.removeprefix("./"), safe="/")


def _e(value: object) -> str:
    return html.escape(str(value))


def breakable(text: str) -> str:
    """``text`` escaped, with a line break allowed after each ``/`` and ``_``: a long path
    wraps at its folders, and words only at their spaces."""
    return re.sub(r"([/_])", r"\1<wbr>", _e(text))


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


def _link(path: str, text: str | None = None) -> str:
    return f"<a href='{_e(quote(path))}'>{_e(text or path)}</a>"


def _error(error: BuildErrorEntry | None, status: str) -> str:
    if not error or status == "running":
        return ""
    what = "interrupted in" if status == "interrupted" else "failed in"
    hint = f"<p>Try: {_e(error['hint'])}</p>" if error.get("hint") else ""
    step = step_label(error.get("step", ""))
    return (
        f"<div class='error'><p><b>Build {what} step {_e(step)}:</b> "
        f"{_e(error.get('reason', ''))}</p>{hint}</div>"
    )


def warning_lines(report: BuildReport) -> list[str]:
    """What an engineer must know before trusting the numbers, in plain text."""
    lines = []
    cpu = report.get("cpu_nodes")
    if cpu and cpu["count"] and not cpu.get("output_scaling"):  # (that is a note)
        types = ", ".join(f"{t} x{n}" if n > 1 else t for t, n in cpu["op_types"].items())
        share = cpu.get("host_share")
        work = f"; they do {share:.0%} of the network's multiply-accumulates" if share else ""
        lines.append(
            f"{cpu['count']} node(s) stay on the CPU, outside the accelerator: {types} "
            f"(see {cpu['model']}){work}"
        )
    crashed = next((note for note in report.get("notes", []) if CRASHED in note), None)
    if crashed:
        what = " ".join((CRASHED + crashed.partition(CRASHED)[2]).replace("[0] ", "").split())
        what = what if len(what) <= 240 else what[:239] + "…"
        lines.append(
            f"{what}; it may not work on a board (brainsmith verify-rtl BUILD simulates each "
            "layer on its own)"
        )
    goal = report.get("target")
    if goal and not goal["met"]:
        lines.append(
            f"target {number(goal['target_fps'])} fps missed: estimated "
            f"{number(goal['estimated_fps'])} fps; the slowest layer {goal['bottleneck']} takes "
            f"{number(goal['bottleneck_cycles'])} cycles per frame, the target allows "
            f"{number(goal['target_cycles'])}"
        )
    if goal and goal.get("over_target"):
        lines.append(over_target_line(goal))
    over = over_part_line(report)
    if over:
        lines.append(over)
    bitstream = report.get("bitstream")
    if bitstream and not bitstream["met"]:
        fmax = min(bitstream["fmax_mhz"].values(), default=0.0)
        lines.append(
            f"timing not met on {bitstream['board']}: nextpnr reached {fmax:.1f} MHz, below the "
            f"{bitstream['clock_mhz']:g} MHz clock; the bitstream {bitstream['bitstream']} is "
            f"written, but run it at {fmax:.1f} MHz or less (or build with a longer clock_ns)"
        )
    check = bitstream.get("netlist_check") if bitstream else None
    if check and not check["ran"]:
        lines.append(
            f"the bitstream's netlist was not checked at gate level: {check['reason']}; the "
            "RTL was verified, the logic Yosys mapped it to was not"
        )
    missing = [layer["name"] for layer in report.get("layers", []) if not layer.get("estimated")]
    if missing and report.get("status") == "ok":
        lines.append(
            f"{len(missing)} layer(s) have no FINN estimate and are not in the totals: "
            + ", ".join(missing[:5])
            + (", ..." if len(missing) > 5 else "")
        )
    return lines


def over_part_line(report: BuildReport) -> str:
    """The resources the design is estimated to use more of than the part has ("" if none)."""
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
    perf, clock = report.get("performance") or {}, finite(report.get("clock_ns"))
    rtlsim = report.get("rtlsim")
    stitched = rtlsim.get("stitched") if rtlsim else None
    simulated = finite(stitched.get("latency_cycles")) if stitched else None
    estimated = finite(perf.get("critical_path_cycles"))
    cycles = simulated or estimated
    goal = report.get("latency_target")
    verdict = ""
    if goal:
        basis = "measured" if goal.get("measured_latency_ns") is not None else "estimated"
        verdict = f"; target {number(goal['target_latency_ns'])} ns {basis} " + (
            "met" if goal["met"] else "MISSED"
        )
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


def clocked_lines(report: BuildReport) -> tuple[str, str | None] | None:
    """Throughput and latency at the clock the design runs at, with their sources, when a
    bitstream was made: ("12,345 fps at 48.0 MHz (nextpnr clock, Verilator cycles)",
    "20.8 µs (1,000 cycles at 48.0 MHz; nextpnr clock, Verilator cycles)"); else None."""
    perf = report.get("performance") or {}
    fps, mhz = finite(perf.get("fps")), finite(perf.get("clock_mhz"))
    if not fps or not mhz:
        return None
    first = f"{number(fps)} fps at {mhz:.1f} MHz ({perf.get('fps_source', '')})"
    if perf.get("clock_note"):
        first += f"; {perf['clock_note']}"
    nanoseconds = finite(perf.get("latency_ns"))
    latency = None
    if nanoseconds:
        latency = (
            f"{number(nanoseconds / 1000, ' µs')} ({number(perf.get('latency_cycles'))} cycles "
            f"at {mhz:.1f} MHz; {perf.get('latency_source', '')})"
        )
    return first, latency


def bitstream_lines(section: BitstreamSection) -> list[str]:
    """The bitstream in three lines: where and its timing, the resources nextpnr reports
    used, the seconds per stage and the link."""
    fmax = min(section["fmax_mhz"].values(), default=0.0)
    used = [
        f"{name} {counts['used']:,} of {counts['available']:,}"
        + (
            f" ({percent(100 * counts['used'] / counts['available'])})"
            if counts["available"]
            else ""
        )
        for name, counts in sorted(section["resources"].items())
        if counts["used"]
    ]
    stages = ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in section["seconds"].items())
    return [
        f"{section['bitstream']} for {section['board']} ({section['part']}): "
        f"{section['status']}, {fmax:.1f} MHz reached at {section['clock_mhz']:g} MHz (nextpnr)"
        + (" (cached)" if section["cached"] else ""),
        critical_path_line(section),
        netlist_line(section),
        *refold_lines(section),
        "used: " + ", ".join(used),
        f"{stages}; UART {section['baud']:,} baud, {section['in_words']} words in and "
        f"{section['out_words']} out a frame",
    ]


def refold_lines(section: BitstreamSection) -> list[str]:
    """The rounds that missed their clock before this build, each built again slower."""
    return [
        f"round {index}: {done['clock_mhz']:g} MHz asked, {done['fmax_mhz']:.1f} MHz reached "
        f"(nextpnr): folded again for a clock below it"
        for index, done in enumerate(section.get("refolds") or [], start=1)
    ]


def critical_path_line(section: BitstreamSection) -> str:
    """Where the slowest clock's critical path runs, by layer (nextpnr)."""
    from brainsmith.place_route.critical_path import path_text

    path = section.get("critical_path")
    return f"critical path {path_text(path)} (nextpnr)" if path else "critical path: not reported"


def netlist_line(section: BitstreamSection) -> str:
    """What the gate-level check of the bitstream's netlist found."""
    check = section.get("netlist_check")
    if check is None:
        return "netlist: not checked at gate level"
    if not check["ran"]:
        return f"netlist: not checked at gate level: {check['reason']}"
    verdict = "bit for bit equal to" if check["passed"] else "different from"
    return (
        f"netlist: {check['frames']} frames at gate level (Verilator, ECP5 cell models) "
        f"{verdict} the RTL simulation"
        + (f": {check['first_difference']}" if check["first_difference"] else "")
    )


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
        listed = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in counts.items())
        parts.append(f"{key} of {listed}")
    return "not estimated by FINN, so not in these totals: " + "; ".join(parts)


def _kind(layer: Layer) -> str:
    kind = layer.get("op_type") or ""
    return f"{kind}_{layer['backend']}" if kind and layer.get("backend") else kind


def _warnings(report: BuildReport) -> str:
    """The warnings box, then the notes box (information, styled as such)."""
    boxes = []
    for title, lines in (("Warnings", warning_lines(report)), ("Notes", report.get("notes"))):
        if lines:
            items = "".join(f"<li>{_e(line)}</li>" for line in lines)
            boxes.append(f"<div class='{title.lower()}'><b>{title}</b><ul>{items}</ul></div>")
    return "".join(boxes)


def _verdict(report: BuildReport) -> str:
    """The first screen: is it fast enough, what limits it, what it costs, what stays on
    the CPU."""
    perf, goal = report.get("performance"), report.get("target")
    fps = perf.get("estimated_fps") if perf else None
    if perf is None or fps is None:
        return ""
    lines = [f"<span class='big'>{_e(number(fps))} fps</span> estimated"]
    clocked = clocked_lines(report)
    if clocked:
        at = finite(report.get("clock_ns"))
        asked = f" at {number(1000 / at)} MHz" if at else ""
        big, _, said = clocked[0].partition(" fps")
        lines = [
            f"<span class='big'>{_e(big)} fps</span>{_e(said)} · estimated "
            f"{_e(number(fps))} fps{_e(asked)}"
        ]
    if goal:
        verdict = "met" if goal["met"] else "missed"
        ratio, wanted = finite(fps), finite(goal.get("target_fps"))
        share = ratio / wanted * 100 if ratio is not None and wanted else None
        lines[0] += (
            f" <span class='pill {verdict}'>target {_e(number(goal['target_fps']))} fps "
            f"{verdict}{f' ({percent(share)})' if share and not goal['met'] else ''}</span>"
        )
    latency = (clocked[1] if clocked else None) or latency_text(report)
    if latency:
        lines[0] += f" · latency {_e(latency)}"
    rtlsim = report.get("rtlsim")
    stitched = rtlsim.get("stitched") if rtlsim else None
    measured = stitched.get("cycles_per_frame") if stitched else None
    measured = finite(measured)
    if measured:
        clock = finite(report.get("clock_ns"))
        pace = f" ({number(1e9 / clock / measured)} fps at the clock)" if clock else ""
        lines.append(_e(f"measured in simulation: {number(measured)} cycles per frame{pace}"))
    bitstream = report.get("bitstream")
    if bitstream:
        lines += [_e(line) for line in bitstream_lines(bitstream)[:4]]
    limited = _limited_by(perf, goal)
    if limited:
        lines.append(_e(limited))
    cpu = report.get("cpu_nodes")
    if cpu and cpu.get("count"):
        kinds = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in cpu["op_types"].items())
        lines.append(_e(f"on the CPU, outside the accelerator: {kinds}"))
    elif cpu:
        lines.append("every node is in the accelerator")
    from brainsmith.report.measured import unchecked

    note = unchecked(report)
    if note:
        lines.append(f"<span class='none'>unchecked: {_e(note)}</span>")
    items = "".join(f"<div>{line}</div>" for line in lines)
    return f"<div class='verdict'>{items}{_utilisation_bars(report)}</div>"


def _limited_by(perf: Performance, goal: Target | None) -> str | None:
    """``limited by <layer>: <cycles> cycles per frame (the target allows ...); <limit>``."""
    slowest = (goal.get("bottleneck") if goal else None) or perf.get("max_cycles_layer")
    if not slowest:
        return None
    cycles = (goal.get("bottleneck_cycles") if goal else None) or perf.get("max_cycles")
    allowed = goal.get("target_cycles") if goal else None
    limit = goal.get("limit") if goal else None
    text = f"limited by {slowest}: {number(cycles)} cycles per frame"
    text += f" (the target allows {number(allowed)})" if allowed else ""
    return text + (f"; {limit}" if limit else "")


def _utilisation_bars(report: BuildReport) -> str:
    """One meter per resource: the share of the part the estimate takes."""
    use, totals = report.get("utilisation") or {}, report.get("totals") or {}
    shares = use.get("percent") or {}
    incomplete = report.get("incomplete") or {}
    meters = []
    for key in RESOURCES:
        share = finite(shares.get(key))
        if share is None:
            continue
        amount = amount_text(key, totals.get(key), incomplete)
        meters.append(
            f"<span class='meter'><b>{_e(key)}</b> <span class='track'><span "
            f"style='width:{min(100.0, share):.2f}%'></span></span> "
            f"{_e(amount)} ({percent(share, finite(totals.get(key)))})</span>"
        )
    if not meters:
        return ""
    why = '; "at least": some layers are not estimated' if incomplete else ""
    return (
        f"<div>{''.join(meters)}</div><div class='none'>estimated share of "
        f"{_e(use.get('part', ''))}{why}</div>" + _measured_bars(report)
    )


def _measured_bars(report: BuildReport) -> str:
    """One meter per resource Yosys counted (FF too): the share of the part synthesis takes."""
    section, available = report.get("synthesis"), (report.get("utilisation") or {}).get("available")
    if not section or not available:
        return ""
    counts = {**as_estimated(section["totals"]), "FF": section["totals"].get("FF", 0)}
    prefix = "" if section["complete"] else "at least "
    meters = []
    for key in (*RESOURCES, "FF"):
        if not available.get(key):
            continue
        share = 100 * counts[key] / available[key]
        meters.append(
            f"<span class='meter'><b>{_e(key)}</b> <span class='track measured'><span "
            f"style='width:{min(100.0, share):.2f}%'></span></span> "
            f"{_e(prefix + number(counts[key]))} ({percent(share, counts[key])})</span>"
        )
    why = "" if section["complete"] else '; "at least": some layers are not synthesised'
    return (
        f"<div>{''.join(meters)}</div><div class='none'>measured share of "
        f"{_e(section['part'])} (Yosys synth_xilinx, out of context){why}</div>"
    )


def _dataflow(picture: str | None) -> str:
    if not picture:
        return ""
    return (
        "<h2>Dataflow</h2>\n<p class='none'>The accelerator's layers in stream order (FIFOs "
        "and width converters as the streams' labels), also as "
        f"{_link('dataflow.svg')}.</p>\n<div class='scroll'>{picture}</div>"
    )


def _summary(report: BuildReport, files: bool = True) -> str:
    """The summary table's rows; ``files``: with the row of links into the folder."""
    perf = report.get("performance", {})
    goal = report.get("target")
    throughput = number(perf.get("estimated_fps"), " fps")
    if goal:
        verdict = "met" if goal["met"] else "missed"
        throughput += (
            f" <span class='{verdict}'>(target {_e(number(goal['target_fps']))} fps "
            f"{verdict})</span>"
        )
    clock = finite(report.get("clock_ns"))
    rows = [
        ("status", _e(report.get("status", ""))),
        ("model", _e(report.get("model", ""))),
        ("blueprint", _e(report.get("blueprint_path", ""))),
        (
            "FPGA part",
            _e(report.get("fpga_part") or "-")
            + (f" (board {_e(report['board'])})" if report.get("board") else ""),
        ),
        ("clock", _e(f"{clock} ns ({number(1000 / clock)} MHz)" if clock else "-")),
        ("estimated throughput", throughput),
        *[("bottleneck", _e(line)) for line in [bottleneck_line(goal)] if line],
        ("latency", _e(latency_text(report) or "-")),
        *_resource_rows(report),
        ("build time", _e(number(report.get("seconds"), " s"))),
        *([("files", _files(report))] if files else []),
    ]
    return "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)


def _resource_rows(report: BuildReport) -> list[tuple[str, str]]:
    """The summary's resource rows: Yosys' counts when synthesised, then the estimates."""
    section = report.get("synthesis")
    measured = [("resources (measured by Yosys)", _measured(section))] if section else []
    return [*measured, ("resources (estimated)", _resources(report))]


def _resources(report: BuildReport) -> str:
    totals, use = report.get("totals", {}), report.get("utilisation") or {}
    incomplete = report.get("incomplete") or {}
    if not totals:
        return NONE
    shares = use.get("percent") or {}
    parts = []
    for key in RESOURCES:
        text = total_text(key, totals.get(key), incomplete)
        share = shares.get(key)
        if share is not None:
            text += f" ({percent(share, finite(totals.get(key)))})"
        parts.append(_e(text))
    available = use.get("available")
    if available:
        parts.append(_e(f"FF not estimated by FINN (part has {number(available['FF'])})"))
        note = f"percent of {use['part']} (resources from {use['source']})"
    else:
        note = f"no resource table for part {use.get('part') or '-'}: no percentages"
    missing = incomplete_line(report)
    text = ", ".join(parts) + (f"<br>{_e(missing)}" if missing else "")
    return text + f"<br><span class='none'>{_e(note)}</span>"


def _measured(section: SynthesisSection) -> str:
    """Yosys' totals, the estimates' error against them and what was not synthesised."""
    lines = [_e(measured_line(section))]
    error = error_line(section)
    if error:
        lines.append(_e(error))
    lines += [f"<span class='none'>not synthesised: {_e(x)}</span>" for x in unsynthesised(section)]
    lines.append("<span class='none'>Yosys synth_xilinx, each layer out of context</span>")
    return "<br>".join(lines)


FINN_FILES = (  # (path in the output folder, what it is)
    (
        "finn/stitched_rtl/",
        "the whole accelerator in RTL (brainsmith export takes it off this machine)",
    ),
    ("finn/auto_folding_config.json", "folding config (edit it to fold by hand)"),
    ("finn/report/op_and_param_counts.json", "MACs and parameters per layer"),
    ("finn/report/", "FINN's reports"),
)


def _files(report: BuildReport) -> str:
    names = ["final.onnx", "final_parent.onnx", "build.log", "report.json"]
    folder = report.get("output_dir", "")
    links = [_link(n) for n in names if os.path.exists(os.path.join(folder, n))]
    models = os.path.join(folder, "intermediate_models")
    failed = sorted(n for n in _listing(models) if n.endswith("_failed.onnx"))
    links += [_link(f"intermediate_models/{n}", f"{n} (the failed step's model)") for n in failed]
    links += [_link(p, text) for p, text in FINN_FILES if os.path.exists(os.path.join(folder, p))]
    code = report.get("generated_code")
    if code and os.path.isdir(os.path.join(folder, code)):
        links.append(_link(code + "/", "generated code"))
    return " · ".join(links) or NONE


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _check(label: str, check: Verification) -> str:
    errors = check.get("errors")
    verdict = "ok" if check.get("ok") else "MISMATCH (beyond tolerance)"
    text = (
        f"{label}: {verdict}, max error {number(check.get('max_error', 0))} on "
        f"{number(check.get('samples', 0))} input(s)"
    )
    if errors:
        text += f", {errors} error(s)"
    if check.get("max_steps") is not None:
        text += f" ({number(check['max_steps'])} steps)"
    if check.get("ties"):
        text += f", {check['ties']} rounding tie(s), worst {check.get('worst_tie', '')}"
    return text


def _steps(steps: list[StepEntry]) -> str:
    longest = max([finite(s.get("seconds")) or 0 for s in steps] + [1e-9])
    rows = []
    for index, step in enumerate(steps, 1):
        check = step.get("verification")
        parts = [_check("generated inputs", check)] if check and "samples" in check else []
        if check and "user" in check:
            parts.append(_check("your vectors", check["user"]))
        if step.get("reason"):
            parts.append(step["reason"])
        seconds = finite(step.get("seconds"))
        bar = f"<span class='bar' style='width:{60 * (seconds or 0) / longest:.0f}px'></span>"
        model = step.get("model")
        cells = [
            str(index),
            _e(step_label(step["name"])),
            _e(step.get("status", "")),
            f"{bar} {_e(number(seconds, ' s'))}" if seconds is not None else NONE,
            _e("; ".join(parts)) or NONE,
            _link(model, os.path.basename(model)) if model else NONE,
        ]
        status = _e(step.get("status", ""))
        tds = [
            f"<td class='time'>{c}</td>" if i == 3 else f"<td>{c}</td>" for i, c in enumerate(cells)
        ]
        rows.append(f"<tr class='{status}'>" + "".join(tds) + "</tr>")
    return "".join(rows)


LAYER_HEAD = ("layer (its code)", "kernel", "PE/SIMD", "data types", "memory", *RESOURCES,
              "cycles", "MACs", "params")  # fmt: skip
NUMERIC_HEAD = {"PE/SIMD", *RESOURCES, "cycles", "MACs", "params"}
NOT_ESTIMATED = "<span class='none'>not estimated</span>"


def _layers(layers: list[Layer], target_cycles: int | None = None) -> str:
    """The layer table, compact enough for a 1280-pixel window: kernel and backend, folding,
    data types and memory each in one column; the name links the layer's generated code;
    cycles over what the target allows in red."""
    if not layers:
        return "<p class='none'>No hardware layers (the build did not reach them).</p>"
    head = "".join(
        f"<th class='num'>{_e(t)}</th>" if t in NUMERIC_HEAD else f"<th>{_e(t)}</th>"
        for t in LAYER_HEAD
    )
    measured = any("measured" in layer for layer in layers)
    if measured:
        head += "<th>measured (Yosys)</th>"
    rows = []
    for layer in layers:
        code = layer.get("code")
        name = _link(code + "/", layer["name"]) if code else _e(layer["name"])
        cells = [
            f"<td class='name'>{name}</td>",
            f"<td>{_joined(layer.get('op_type'), layer.get('backend'))}</td>",
            f"<td class='num'>{_folding(layer)}</td>",
            f"<td>{_types(layer)}</td>",
            f"<td>{_joined(layer.get('mem_mode'), layer.get('ram_style'), sep=', ')}</td>",
        ]
        cycles = finite(layer.get("cycles"))
        if not layer.get("estimated"):
            cells.append(
                f"<td colspan='{len(RESOURCES) + 1}' class='none'>no FINN estimate "
                "(resources and cycles) for this layer</td>"
            )
        elif target_cycles and (cycles or 0) > target_cycles:
            title = f"over the {number(target_cycles)} cycles the target allows"
            cells += [f"<td class='num'>{_cell(layer, key)}</td>" for key in RESOURCES]
            cells.append(f"<td class='num missed' title='{title}'>{_cell(layer, 'cycles')}</td>")
        else:
            cells += [f"<td class='num'>{_cell(layer, key)}</td>" for key in RESOURCES]
            cells.append(f"<td class='num'>{_cell(layer, 'cycles')}</td>")
        cells += [f"<td class='num'>{_cell(layer, key)}</td>" for key in ("MACs", "params")]
        if measured:
            cells.append(f"<td>{_yosys(cast('MeasuredLayer', layer))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    table = f"<table class='layers'><tr>{head}</tr>{''.join(rows)}</table>"
    return f"<div class='scroll'>{table}</div>"


def _yosys(layer: MeasuredLayer) -> str:
    """``LUT 1,055 (FINN -100 %) · FF 2,524 · DSP 4 (+0 %)``: a layer's counts and errors."""
    counts = layer.get("measured")
    if counts is None:
        return NONE
    errors = layer.get("estimate_error", {})
    shown = as_estimated(counts)
    parts = []
    for key, value in (("LUT", shown["LUT"]), ("FF", counts.get("FF", 0)),
                       *((k, shown[k]) for k in RESOURCES if k != "LUT")):  # fmt: skip
        if value or key == "LUT":
            error = f" ({errors[key]:+.0%})" if key in errors else ""
            parts.append(f"{key} {value:,}{error}")
    return _e(" · ".join(parts))


def _joined(*parts: object, sep: str = " · ") -> str:
    shown = [str(p) for p in parts if p not in (None, "")]
    return _e(sep.join(shown)) if shown else NONE


def _folding(layer: Layer) -> str:
    pe, simd = layer.get("PE"), layer.get("SIMD")
    if pe is None and simd is None:
        return NONE
    return _e("/".join(str(v) for v in (pe, simd) if v is not None))


def _types(layer: Layer) -> str:
    """``INT8 → INT15, weights INT4``."""
    given, made = layer.get("input_datatype"), layer.get("output_datatype")
    if not given and not made:
        return NONE
    text = " → ".join(datatype(t) for t in (given, made) if t)
    if layer.get("weight_datatype"):
        text += f", weights {datatype(layer['weight_datatype'])}"
    return _e(text)


def _cell(layer: Layer, key: Literal[Resource, "cycles", "MACs", "params"]) -> str:
    """A numeric cell; a resource FINN does not estimate for this layer says so."""
    if key in layer.get("not_estimated", ()):
        return NOT_ESTIMATED
    value = layer.get(key)
    return _e(number(value)) if value is not None else NONE


def _charts(charts: dict[str, str]) -> str:
    parts = []
    if charts.get("resources"):
        parts.append(f"<h2>Resources per layer (estimated)</h2>\n{charts['resources']}")
    if charts.get("cycles"):
        parts.append(f"<h2>Cycles per layer (estimated)</h2>\n{charts['cycles']}")
    return "\n".join(parts)


def _finn_warnings(warnings: list[FinnWarning], goal: Target | None = None) -> str:
    superseded = finite(goal.get("finn_warnings_superseded") if goal else None) or 0
    note = (
        f"<p class='none'>{_e(number(superseded))} warning(s) FINN's folding logged before the folding "
        "was final are left out: the final cycle estimates (layers above) supersede them; "
        "build.log has them all.</p>"
        if superseded
        else ""
    )
    if not warnings:
        return f"<h2>Warnings in build.log (0)</h2>{note}" if note else ""
    rows = "".join(
        f"<tr><td>{_e(w['level'])}</td><td>{_e(w['source'])}</td>"
        f"<td class='message'>{breakable(w['message'])}</td>"
        f"<td class='num'>{_e(number(w.get('count')))}</td></tr>"
        for w in warnings
    )
    return (
        f"<h2>Warnings in build.log ({len(warnings)})</h2>{note}<table class='log'><tr>"
        "<th>level</th><th>from</th><th>message</th><th class='num'>times</th></tr>"
        f"{rows}</table>"
    )
