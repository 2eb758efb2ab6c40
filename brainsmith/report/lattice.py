"""report.html of a build for a Lattice board: its figures in the part's own resources
(report.json's ``family_resources``: LUT4, FF, MULT18 and EBR, nextpnr's counts where it
placed the design, the family's models per layer otherwise) and the bitstream's card: Fmax,
the clock constraint, the critical path by layer, the seconds of each stage, the gate-level
verdict and every refold round. FINN's estimates for the stand-in AMD part are left to the
page's details section."""

from __future__ import annotations

import html
from urllib.parse import quote

from brainsmith.clock import Clock, mhz_text
from brainsmith.hardware.place_route.critical_path import path_text
from brainsmith.report.text import (
    bitstream_target,
    last_round_seconds,
    netlist_line,
    next_round,
    number,
    stage_seconds,
)
from brainsmith.report.units import finite, percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import (
        BitstreamSection,
        BuildReport,
        FamilyResources,
        RefoldRound,
    )


def _e(value: object) -> str:
    return html.escape(str(value))


def _meter(key: str, share: float | None, text: str, measured: bool = False) -> str:
    """A resource's meter: its name, a bar of ``share`` (percent; none without one), ``text``."""
    if share is None:
        return f"<span class='meter'><b>{_e(key)}</b> {_e(text)}</span>"
    track = "track measured" if measured else "track"
    return (
        f"<span class='meter'><b>{_e(key)}</b> <span class='{track}'><span "
        f"style='width:{min(100.0, share):.2f}%'></span></span> {_e(text)}</span>"
    )


def family_bars(family: FamilyResources) -> str:
    """The first screen's meters of a Lattice build: what nextpnr placed, when it did, then
    the layers' estimates, each a share of the part."""
    parts = []
    placed = family.get("placed")
    if placed:
        meters = []
        for key, counts in placed.items():
            used, capacity = counts["used"], counts["available"]
            share = 100 * used / capacity if capacity else None
            shown = f" ({percent(share, used)})" if share is not None else ""
            meters.append(_meter(key, share, f"{number(used)} of {number(capacity)}{shown}", True))
        parts.append(
            f"<div>{''.join(meters)}</div><div class='none'>placed by nextpnr on "
            f"{_e(family['part'])}: the whole bitstream (the accelerator, its host link and "
            "the board top)</div>"
        )
    available = family.get("available") or {}
    prefix = "at least " if family.get("incomplete") else ""
    meters = []
    for key in family["resources"]:
        value = finite(family["totals"].get(key))
        share = 100 * value / available[key] if value is not None and available.get(key) else None
        shown = f" ({percent(share, value)})" if share is not None else ""
        meters.append(_meter(key, share, f"{prefix}{number(value)}{shown}"))
    parts.append(
        f"<div>{''.join(meters)}</div><div class='none'>{_e(_estimated_note(family))}</div>"
    )
    return "".join(parts)


def _estimated_note(family: FamilyResources) -> str:
    """What the estimated meters and totals are: whose figures, of which part."""
    source = family.get("available_source")
    shares = (
        f"estimated share of {family['part']} (capacities from {source})"
        if source
        else f"estimated for {family['part']} (its capacities could not be read from nextpnr)"
    )
    text = f"{shares}: the layers, from {family['source']}"
    missing = family.get("incomplete") or []
    if missing:
        text += f'; "at least": {len(missing)} layer(s) have no model ({", ".join(missing[:5])})'
    return text


def family_rows(family: FamilyResources) -> list[tuple[str, str]]:
    """The summary's resource rows of a Lattice build: nextpnr's counts when it placed the
    design, then the layers' figures in the part's own resources."""
    from brainsmith.report.text import family_line

    rows = []
    placed = family.get("placed")
    if placed:
        counts = ", ".join(
            f"{key} {number(c['used'])} of {number(c['available'])}"
            + (
                f" ({percent(100 * c['used'] / c['available'], c['used'])})"
                if c["available"]
                else ""
            )
            for key, c in placed.items()
        )
        note = "the whole bitstream: the accelerator, its host link and the board top"
        rows.append(
            ("resources (placed by nextpnr)", f"{_e(counts)}<br><span class='none'>{note}</span>")
        )
    rows.append((
        "resources (estimated)",
        f"{_e(family_line(family))}<br><span class='none'>{_e(_estimated_note(family))}</span>",
    ))  # fmt: skip
    return rows


def bitstream_card(report: BuildReport) -> str:
    """The bitstream's card: where it is and whether timing is met, then a row each for the
    Fmax, the clock constraint, the critical path, the seconds per stage, the gate-level
    check, what was placed, the host link and the tools; every refold round after."""
    section = report.get("bitstream")
    if not section:
        return ""
    verdict = "met" if section["met"] else "missed"
    path = section["bitstream"]
    cached = " (from the bitstream cache)" if section["cached"] else ""
    head = (
        f"<div><b>Bitstream</b> <a href='{_e(quote(path))}'>{_e(path)}</a> for "
        f"{_e(bitstream_target(section))} <span class='pill {verdict}'>"
        f"{_e(section['status'])}</span>{_e(cached)}</div>"
    )
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in _card_rows(section))
    return (
        f"<div class='verdict bitstream'>{head}<table class='summary'>{rows}</table>"
        f"{_rounds(report, section)}</div>"
    )


def _card_rows(section: BitstreamSection) -> list[tuple[str, str]]:
    fmax = section["fmax_mhz"]
    reached = ", ".join(
        f"{mhz_text(mhz)}" + (f" ({_e(clock)})" if len(fmax) > 1 else "")
        for clock, mhz in sorted(fmax.items(), key=lambda item: item[1])
    )
    clock = Clock.from_mhz(section["clock_mhz"])
    asked = Clock.read_mhz(section.get("asked_mhz"))
    constraint = f"{clock}, the PLL's" + (
        f" nearest the {asked} asked" if asked and str(asked) != str(clock) else ""
    )
    path = section.get("critical_path")
    stages = _stages(section)
    return [
        ("Fmax", _e(f"{reached or '-'} (nextpnr)")),
        ("clock constraint", _e(constraint)),
        ("critical path", _e(f"{path_text(path)} (nextpnr)" if path else "not reported")),
        ("seconds", _e(stages) + _cached_seconds(section)),
        ("gate-level check", _e(netlist_line(section).removeprefix("netlist: "))),
        ("placed", _e(_placed(section))),
        (
            "host link",
            _e(
                f"UART {section['baud']:,} baud, {section['in_words']} words in and "
                f"{section['out_words']} out a frame"
            ),
        ),
        ("tools", _e(", ".join(section["tools"].values()))),
    ]


def _stages(section: BitstreamSection) -> str:
    """ "synthesis 16.3 s, place and route 47.1 s, ..., gate-level check 268.5 s"."""
    return ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stage_seconds(section))


def _cached_seconds(section: BitstreamSection) -> str:
    if not section["cached"]:
        return ""
    return (
        "<br><span class='none'>the bitstream came from the cache: its stages' seconds are "
        "those of the run that made it</span>"
    )


def _placed(section: BitstreamSection) -> str:
    """Every cell type nextpnr placed, with its share of the part."""
    used = [
        f"{name} {number(counts['used'])} of {number(counts['available'])}"
        for name, counts in sorted(section["resources"].items())
        if counts["used"]
    ]
    return ", ".join(used) or "-"


ROUND_HEAD = ("round", "clock asked", "PLL's clock", "Fmax (nextpnr)", "timing", "seconds",
              "gate-level check")  # fmt: skip


def _missed(done: RefoldRound) -> str:
    """How a round before the bitstream's ended: its clock not met, or its tools failed."""
    return f"not placed ({done['failed']})" if done.get("failed") else "not met"


def _rounds(report: BuildReport, section: BitstreamSection) -> str:
    """Every round of a build made again for a slower clock: its clock, the PLL's, the
    Fmax nextpnr reached, its seconds; the last is the bitstream's. "" without refolds."""
    missed = section.get("refolds") or []
    if not missed:
        return ""
    rows = []
    for index, done in enumerate(missed, start=1):
        checked = (
            "skipped (its netlist was thrown away)" if not done.get("netlist_checked") else "ran"
        )
        seconds = finite(done.get("seconds"))
        rows.append((
            str(index), str(Clock.from_ns(done["clock_ns"])), str(Clock.from_mhz(done["clock_mhz"])),
            "-" if done.get("failed") else mhz_text(done["fmax_mhz"]),
            f"{_missed(done)}: {next_round(done)}",
            "-" if seconds is None else f"{seconds:.0f} s", checked,
        ))  # fmt: skip
    own = last_round_seconds(section, report.get("seconds"))
    check = section.get("netlist_check")
    rows.append((
        f"{len(missed) + 1} (this bitstream)",
        str(Clock.read_mhz(section.get("asked_mhz")) or Clock.from_ns(report["clock_ns"])),
        str(Clock.from_mhz(section["clock_mhz"])),
        mhz_text(min(section["fmax_mhz"].values(), default=0.0)),
        section["status"],
        "-" if own is None else f"{own:.0f} s",
        ("passed" if check["passed"] else "failed") if check and check["ran"] else "did not run",
    ))  # fmt: skip
    head = "".join(f"<th>{_e(title)}</th>" for title in ROUND_HEAD)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        "<div>Rounds: the bitstream missed its clock and was made again for a slower "
        f"one</div><table class='summary'><tr>{head}</tr>{body}</table>"
    )
