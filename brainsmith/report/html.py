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

from brainsmith.clock import Clock
from brainsmith.frameworks.finn.facts import step_label
from brainsmith.report.lattice import bitstream_card, family_bars, family_rows
from brainsmith.report.measured import (
    as_estimated,
    error_line,
    measured_line,
    unchecked,
    unsynthesised,
)
from brainsmith.report.pace import streaming
from brainsmith.report.rtl_tables import rtlsim_html
from brainsmith.report.text import (
    amount_text,
    bitstream_lines,
    bottleneck_line,
    clocked_lines,
    counted,
    datatype,
    incomplete_line,
    latency_text,
    number,
    side_by_side,
    total_text,
    warning_lines,
)
from brainsmith.report.units import RESOURCES, finite, percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Literal

    from brainsmith.frameworks.finn.facts import Resource
    from brainsmith.report_schema import (
        BuildErrorEntry,
        BuildReport,
        FamilyResources,
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
        bitstream=_drawn("bitstream", lambda: bitstream_card(report)),
        warnings=_drawn("warnings", lambda: _warnings(report)),
        summary=_drawn("summary", lambda: _summary(report), row=True),
        dataflow=_dataflow(picture),
        steps=_drawn("steps", lambda: _steps(report.get("steps", [])), row=True),
        layers=_drawn(
            "layers",
            lambda: _layers(
                report.get("layers", []),
                goal.get("target_cycles") if goal else None,
                report.get("family_resources"),
            ),
        ),
        charts=_drawn("charts", lambda: _charts(charts, report.get("family_resources"))),
        stand_in=_drawn("layers", lambda: _stand_in_details(report)),
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
        bitstream=_drawn("bitstream", lambda: bitstream_card(report)),
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
    perf = report.get("performance")
    fps = perf.get("estimated_fps") if perf else None
    if perf is None or fps is None:
        return ""
    lines = [_headline(report, fps)]
    for more in VERDICT_LINES:
        lines += more(report)
    items = "".join(f"<div>{line}</div>" for line in lines)
    return f"<div class='verdict'>{items}{_utilisation_bars(report)}</div>"


def _headline(report: BuildReport, fps: float) -> str:
    """The verdict's first line, in ``pace``'s words: the throughput (at the clock the
    design runs at, with a bitstream), the target's pill, the latency."""
    clocked = clocked_lines(report)
    interval = finite((report.get("performance") or {}).get("max_cycles"))  # type: ignore[unreachable]  # a report.json read back may lack it
    line = f"throughput <span class='big'>{_e(number(fps))} fps</span> estimated" + (
        f" ({_e(streaming(interval))})" if interval else ""
    )
    if clocked:
        at = Clock.read_ns(report.get("clock_ns"))
        asked = f" at the {at} asked" if at else ""
        big, _, said = clocked[0].partition(" fps")
        line = (
            f"throughput <span class='big'>{_e(big)} fps</span>{_e(said)} · estimated "
            f"{_e(number(fps))} fps{_e(asked)}"
        )
    line += _target_pill(report.get("target"), fps)
    latency = (clocked[1] if clocked else None) or latency_text(report)
    return line + (f" · latency {_e(latency)}" if latency else "")


def _target_pill(goal: Target | None, fps: float) -> str:
    """ " target 1,000 fps met" as a pill; missed, with the share reached."""
    if not goal:
        return ""
    verdict = "met" if goal["met"] else "missed"
    ratio, wanted = finite(fps), finite(goal.get("target_fps"))
    share = ratio / wanted * 100 if ratio is not None and wanted else None
    return (
        f" <span class='pill {verdict}'>target {_e(number(goal['target_fps']))} fps "
        f"{verdict}{f' ({percent(share)})' if share and not goal['met'] else ''}</span>"
    )


def _simulated_pace(report: BuildReport) -> list[str]:
    """The whole design's simulated interval at the clock asked (none with a bitstream: the
    headline gives it at the clock the design runs at)."""
    rtlsim = report.get("rtlsim")
    stitched = rtlsim.get("stitched") if rtlsim else None
    measured = finite(stitched.get("cycles_per_frame") if stitched else None)
    if not measured or clocked_lines(report):
        return []
    clock = Clock.read_ns(report.get("clock_ns"))
    pace = f" (throughput {number(clock.mhz * 1e6 / measured)} fps at {clock})" if clock else ""
    return [_e(f"measured in simulation: {streaming(measured)}{pace}")]


def _bitstream_summary(report: BuildReport) -> list[str]:
    """The bitstream's first line (its timing); the card below the verdict has the rest."""
    bitstream = report.get("bitstream")
    return [_e(bitstream_lines(bitstream)[0])] if bitstream else []


def _limit_line(report: BuildReport) -> list[str]:
    limited = _limited_by(report["performance"], report.get("target"))
    return [_e(limited)] if limited else []


def _cpu_summary(report: BuildReport) -> list[str]:
    cpu = report.get("cpu_nodes")
    if cpu and cpu.get("count"):
        return [_e(f"on the CPU, outside the accelerator: {counted(cpu['op_types'])}")]
    return ["every node is in the accelerator"] if cpu else []


def _unchecked_line(report: BuildReport) -> list[str]:
    note = unchecked(report)
    return [f"<span class='none'>unchecked: {_e(note)}</span>"] if note else []


VERDICT_LINES = (_simulated_pace, _bitstream_summary, _limit_line, _cpu_summary, _unchecked_line)


def _limited_by(perf: Performance, goal: Target | None) -> str | None:
    """``limited by <layer>: <cycles> cycles per frame (the target allows ...); <limit>``."""
    said: Mapping[str, object] = goal or {}
    slowest = said.get("bottleneck") or perf.get("max_cycles_layer")
    if not slowest:
        return None
    cycles = said.get("bottleneck_cycles") or perf.get("max_cycles")
    allowed, limit = said.get("target_cycles"), said.get("limit")
    text = f"limited by {slowest}: {number(cycles)} cycles per frame"
    text += f" (the target allows {number(allowed)})" if allowed else ""
    return text + (f"; {limit}" if limit else "")


def _utilisation_bars(report: BuildReport) -> str:
    """One meter per resource: the share of the part the estimate takes (a Lattice build's
    in its part's own resources, ``family_bars``)."""
    family = report.get("family_resources")
    if family:
        return family_bars(family)
    use, totals = report.get("utilisation") or {}, report.get("totals") or {}  # type: ignore[unreachable]  # a report.json read back may lack it
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
    section, available = report.get("synthesis"), (report.get("utilisation") or {}).get("available")  # type: ignore[unreachable]  # a report.json read back may lack it
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
    goal = report.get("target")
    board = f" (board {_e(report['board'])})" if report.get("board") else ""
    clocked = clocked_lines(report)
    rows = [
        ("status", _e(report.get("status", ""))),
        ("model", _e(report.get("model", ""))),
        ("blueprint", _e(report.get("blueprint_path", ""))),
        ("FPGA part", _e(report.get("fpga_part") or "-") + board),
        ("clock", _e(_clock_row(report))),
        *([("throughput", _e(clocked[0])), ("latency", _e(clocked[1] or "-"))] if clocked else []),
        *[("paces", _e(line)) for line in [side_by_side(report)] if line],
        ("estimated throughput", _throughput(report.get("performance", {}), goal, clocked)),
        *[("bottleneck", _e(line)) for line in [bottleneck_line(goal)] if line],
        ("estimated latency" if clocked else "latency", _e(latency_text(report) or "-")),
        *_resource_rows(report),
        ("build time", _e(number(report.get("seconds"), " s"))),
        *([("files", _files(report))] if files else []),
    ]
    return "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)


def _clock_row(report: BuildReport) -> str:
    """The clock asked, and the one the bitstream's PLL makes when a bitstream was made."""
    clock = Clock.read_ns(report.get("clock_ns"))
    if not clock:
        return "-"
    section = report.get("bitstream")
    made = Clock.read_mhz(section.get("clock_mhz")) if section else None
    return f"{clock.ns:g} ns ({clock})" + (f" asked; the PLL makes {made}" if made else "")


def _throughput(
    perf: Performance | dict[str, object], goal: Target | None, clocked: object = None
) -> str:
    """The estimated fps (``clocked``: beside figures at another clock, at the one asked),
    and whether the target is met."""
    throughput = number(perf.get("estimated_fps"), " fps") + (
        " at the clock asked" if clocked else ""
    )
    if not goal:
        return throughput
    verdict = "met" if goal["met"] else "missed"
    return throughput + (
        f" <span class='{verdict}'>(target {_e(number(goal['target_fps']))} fps {verdict})</span>"
    )


def _resource_rows(report: BuildReport) -> list[tuple[str, str]]:
    """The summary's resource rows: Yosys' counts when synthesised, then the estimates (a
    Lattice build's: nextpnr's counts when placed, then its layers' in the part's own
    resources)."""
    family = report.get("family_resources")
    if family:
        return family_rows(family)
    section = report.get("synthesis")
    measured = [("resources (measured by Yosys)", _measured(section))] if section else []
    return [*measured, ("resources (estimated)", _resources(report))]


def _resources(report: BuildReport) -> str:
    totals, use = report.get("totals", {}), report.get("utilisation") or {}  # type: ignore[unreachable]  # a report.json read back may lack it
    incomplete = report.get("incomplete") or {}
    if not totals:
        return NONE
    shares = use.get("percent") or {}
    parts = [_e(_total(key, totals.get(key), shares.get(key), incomplete)) for key in RESOURCES]
    available = use.get("available")
    if available:
        parts.append(_e(f"FF not estimated by FINN (part has {number(available['FF'])})"))
        note = f"percent of {use['part']} (resources from {use['source']})"
    else:
        note = f"no resource table for part {use.get('part') or '-'}: no percentages"
    missing = incomplete_line(report)
    text = ", ".join(parts) + (f"<br>{_e(missing)}" if missing else "")
    return text + f"<br><span class='none'>{_e(note)}</span>"


def _total(key: str, value: object, share: float | None, incomplete: dict[str, list[str]]) -> str:
    """ "LUT at least 552 (1.04 %)": a resource's total and its share of the part."""
    text = total_text(key, value, incomplete)
    return text + (f" ({percent(share, finite(value))})" if share is not None else "")


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
    links += _failed_models(folder)
    links += [_link(p, text) for p, text in FINN_FILES if os.path.exists(os.path.join(folder, p))]
    code = report.get("generated_code")
    if code and os.path.isdir(os.path.join(folder, code)):
        links.append(_link(code + "/", "generated code"))
    return " · ".join(links) or NONE


def _failed_models(folder: str) -> list[str]:
    """Links to the models of failed steps in ``folder``'s intermediate_models."""
    models = os.path.join(folder, "intermediate_models")
    failed = sorted(n for n in _listing(models) if n.endswith("_failed.onnx"))
    return [_link(f"intermediate_models/{n}", f"{n} (the failed step's model)") for n in failed]


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
    return "".join(_step_row(index, step, longest) for index, step in enumerate(steps, 1))


def _step_row(index: int, step: StepEntry, longest: float) -> str:
    """A step's row: its number, name, status, time (a bar scaled to ``longest``), its
    checks or why it was skipped, and its saved model."""
    seconds = finite(step.get("seconds"))
    bar = f"<span class='bar' style='width:{60 * (seconds or 0) / longest:.0f}px'></span>"
    model = step.get("model")
    cells = [
        str(index),
        _e(step_label(step["name"])),
        _e(step.get("status", "")),
        f"{bar} {_e(number(seconds, ' s'))}" if seconds is not None else NONE,
        _e("; ".join(_step_notes(step))) or NONE,
        _link(model, os.path.basename(model)) if model else NONE,
    ]
    tds = [f"<td class='time'>{c}</td>" if i == 3 else f"<td>{c}</td>" for i, c in enumerate(cells)]
    return f"<tr class='{_e(step.get('status', ''))}'>" + "".join(tds) + "</tr>"


def _step_notes(step: StepEntry) -> list[str]:
    """A step's checks (generated inputs, the user's vectors) and its reason."""
    check = step.get("verification")
    parts = [_check("generated inputs", check)] if check and "samples" in check else []
    if check and "user" in check:
        parts.append(_check("your vectors", check["user"]))
    if step.get("reason"):
        parts.append(step["reason"])
    return parts


LAYER_HEAD = ("layer (its code)", "kernel", "PE/SIMD", "data types", "memory", *RESOURCES,
              "cycles", "MACs", "params")  # fmt: skip
NUMERIC_HEAD = {"PE/SIMD", *RESOURCES, "cycles", "MACs", "params"}
NOT_ESTIMATED = "<span class='none'>not estimated</span>"


def _layers(
    layers: list[Layer], target_cycles: int | None = None, family: FamilyResources | None = None
) -> str:
    """The layer table, compact enough for a 1280-pixel window: kernel and backend, folding,
    data types and memory each in one column; the name links the layer's generated code;
    cycles over what the target allows in red. A Lattice build's (``family``) resources are
    its part's own."""
    if not layers:
        return "<p class='none'>No hardware layers (the build did not reach them).</p>"
    own = tuple(family["resources"]) if family else ()
    titles = (*LAYER_HEAD[:5], *own, *LAYER_HEAD[-3:]) if family else LAYER_HEAD
    head = "".join(
        f"<th class='num'>{_e(t)}</th>" if t in NUMERIC_HEAD or t in own else f"<th>{_e(t)}</th>"
        for t in titles
    )
    measured = any("measured" in layer for layer in layers)
    if measured:
        head += "<th>measured (Yosys)</th>"
    rows = "".join(_layer_row(layer, target_cycles, measured, family) for layer in layers)
    table = f"<table class='layers'><tr>{head}</tr>{rows}</table>"
    return f"<div class='scroll'>{table}</div>"


def _layer_row(
    layer: Layer, target_cycles: int | None, measured: bool, family: FamilyResources | None = None
) -> str:
    code = layer.get("code")
    name = _link(code + "/", layer["name"]) if code else _e(layer["name"])
    cells = [
        f"<td class='name'>{name}</td>",
        f"<td>{_joined(layer.get('op_type'), layer.get('backend'))}</td>",
        f"<td class='num'>{_folding(layer)}</td>",
        f"<td>{_types(layer)}</td>",
        f"<td>{_joined(layer.get('mem_mode'), layer.get('ram_style'), sep=', ')}</td>",
        *(
            _family_cells(layer, target_cycles, family)
            if family
            else _estimate_cells(layer, target_cycles)
        ),
        *(f"<td class='num'>{_cell(layer, key)}</td>" for key in ("MACs", "params")),
    ]
    if measured:
        cells.append(f"<td>{_yosys(cast('MeasuredLayer', layer))}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


def _estimate_cells(layer: Layer, target_cycles: int | None) -> list[str]:
    """A layer's resources and cycles (in red over what the target allows), or that FINN has
    no estimate for it."""
    if not layer.get("estimated"):
        return [
            f"<td colspan='{len(RESOURCES) + 1}' class='none'>no FINN estimate "
            "(resources and cycles) for this layer</td>"
        ]
    cells = [f"<td class='num'>{_cell(layer, key)}</td>" for key in RESOURCES]
    return [*cells, _cycles_cell(layer, target_cycles)]


def _cycles_cell(layer: Layer, target_cycles: int | None) -> str:
    """A layer's cycles, in red over what the target allows."""
    if target_cycles and (finite(layer.get("cycles")) or 0) > target_cycles:
        title = f"over the {number(target_cycles)} cycles the target allows"
        return f"<td class='num missed' title='{title}'>{_cell(layer, 'cycles')}</td>"
    return f"<td class='num'>{_cell(layer, 'cycles')}</td>"


def _family_cells(layer: Layer, target_cycles: int | None, family: FamilyResources) -> list[str]:
    """A Lattice build's layer: its figures in the part's own resources (the family's models
    of its kind; none for a kind without one), then FINN's cycles."""
    found = family["layers"].get(layer["name"])
    if found is None:
        cells = [f"<td colspan='{len(family['resources'])}' class='none'>no {_e(family['family'])} "
                 "model of this layer's kind</td>"]  # fmt: skip
    else:
        cells = [
            f"<td class='num'>{_e(number(found.get(key)))}</td>" for key in family["resources"]
        ]
    if layer.get("cycles") is None:
        return [*cells, f"<td class='num'>{NONE}</td>"]
    return [*cells, _cycles_cell(layer, target_cycles)]


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


def _stand_in_details(report: BuildReport) -> str:
    """A Lattice build's details section: FINN's estimates for the stand-in AMD part it made
    the layers for (LUT6, the part's 18 Kbit block RAMs, DSP slices), their totals and each
    layer's; "" for any other build."""
    family = report.get("family_resources")
    if not family:
        return ""
    part = family["stand_in"]
    head = "".join(f"<th class='num'>{_e(key)}</th>" for key in RESOURCES)
    rows = "".join(
        f"<tr><td class='name'>{_e(layer['name'])}</td>"
        + (
            "".join(f"<td class='num'>{_cell(layer, key)}</td>" for key in RESOURCES)
            if layer.get("estimated")
            else f"<td colspan='{len(RESOURCES)}' class='none'>no FINN estimate</td>"
        )
        + "</tr>"
        for layer in report.get("layers", [])
    )
    return (
        f"<details class='stand-in'><summary>FINN's estimates for the stand-in {_e(part)} "
        f"(LUT6), not for {_e(family['part'])}</summary><p class='none'>FINN decides for AMD "
        f"parts only: it made the layers for {_e(part)}, and these are its estimates there. "
        f"The figures above are {_e(family['part'])}'s own.</p><table class='summary'><tr>"
        f"<th>resources (estimated for {_e(part)})</th><td>{_resources(report)}</td></tr>"
        f"</table><div class='scroll'><table class='layers'><tr><th>layer</th>{head}</tr>"
        f"{rows}</table></div></details>"
    )


def _charts(charts: dict[str, str], family: FamilyResources | None = None) -> str:
    parts = []
    if charts.get("resources") and family:
        parts.append(
            f"<h2>Resources per layer (estimated for {_e(family['part'])})</h2>\n<p class='none'>"
            f"{_e(family['source'])}</p>\n{charts['resources']}"
        )
    elif charts.get("resources"):
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
