"""Measured beside estimated: Yosys' counts of a build's RTL layers (``build.synth``) in
report.json, each layer's estimate error against them, and the totals.

Yosys counts what FINN estimates under the same names, except block RAM: a 36 Kb block is two
of FINN's ``BRAM_18K``. Its FF and CARRY counts have no estimate to compare with.
"""

from __future__ import annotations

import os
from typing import cast

from brainsmith.blueprint.choices import lattice_board
from brainsmith.frameworks.finn.facts import RESOURCES
from brainsmith.hardware.synthesis.families import ULTRASCALE_PLUS_PART, NotSynthesisable, family_of
from brainsmith.report.units import finite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.synthesis import DesignSynthesis
    from brainsmith.hardware.synthesis.run import LayerSynthesis
    from brainsmith.report_schema import (
        BuildReport,
        Layer,
        MeasuredLayer,
        SynthesisLayer,
        SynthesisRun,
        SynthesisSection,
    )

SYNTHESISED = "synthesised"


def synthesis_section(result: DesignSynthesis, folder: str) -> SynthesisSection:
    """report.json's ``synthesis`` of ``result``, before it meets the estimates (``compare``)."""
    layers: list[SynthesisLayer] = [
        {
            "name": layer.name,
            "op_type": layer.op_type,
            "status": layer.status,
            "reason": layer.reason,
            "counts": layer.counts,
            **synthesis_run(layer, folder),
        }
        for layer in result.layers
    ]
    return {
        "tool": result.tool,
        "part": result.part,
        "family": result.family,
        "seconds": round(result.seconds, 2),
        "complete": all(layer["status"] == SYNTHESISED for layer in layers),
        "totals": result.totals,
        "estimated": {},
        "estimate_error": {},
        "layers": layers,
    }


def synthesis_run(layer: LayerSynthesis, folder: str) -> SynthesisRun:
    """How ``layer``'s synthesis ran: its seconds, whether cached, the fixes its sources
    needed, its log relative to ``folder``."""
    return {
        "seconds": None if layer.seconds is None else round(layer.seconds, 2),
        "cached": layer.cached,
        "fixes": layer.fixes,
        "log": os.path.relpath(layer.log, folder) if layer.log else None,
    }


def as_estimated(counts: dict[str, int]) -> dict[str, int]:
    """Yosys' counts under the names of FINN's estimates (a 36 Kb block RAM is two 18 Kb)."""
    found: dict[str, int] = {key: counts.get(key, 0) for key in RESOURCES}
    found["BRAM_18K"] += 2 * counts.get("BRAM_36K", 0)
    return found


def estimate_error(estimate: float | None, measured: int) -> float | None:
    """(estimate - measured) / measured, or None without an estimate or with nothing measured."""
    if estimate is None or measured == 0:
        return None
    return round((estimate - measured) / measured, 4)


def compare(layers: list[Layer], section: SynthesisSection) -> SynthesisSection:
    """Each layer of ``layers`` gets its ``measured`` counts and ``estimate_error``; the
    section gets the estimates of the synthesised layers (where every one has one) and the
    error of their total."""
    measured = synthesised_counts(section)
    sums: dict[str, float | None] = dict.fromkeys(RESOURCES, 0.0)
    for entry in layers:
        counts = measured.get(entry["name"])
        if counts is not None:
            _measure(cast("MeasuredLayer", entry), counts, sums)
    if len(measured) != sum(1 for layer in layers if layer["name"] in measured):
        sums = dict.fromkeys(RESOURCES)  # a synthesised layer the report does not list
    mapped_totals = as_estimated(section["totals"])
    section["estimated"] = sums
    section["estimate_error"] = {
        key: error
        for key in RESOURCES
        if (error := estimate_error(sums[key], mapped_totals[key])) is not None
    }
    return section


def synthesised_counts(section: SynthesisSection) -> dict[str, dict[str, int]]:
    """Yosys' counts per synthesised layer."""
    return {
        layer["name"]: layer["counts"]
        for layer in section["layers"]
        if layer["status"] == SYNTHESISED and layer["counts"] is not None
    }


def _measure(layer: MeasuredLayer, counts: dict[str, int], sums: dict[str, float | None]) -> None:
    """Give ``layer`` Yosys' ``counts`` and its estimates' errors; add its estimates to
    ``sums`` (a resource it has no estimate of makes the sum None)."""
    layer["measured"] = counts
    mapped = as_estimated(counts)
    errors: dict[str, float] = {}
    for key in RESOURCES:
        value = None if key in layer.get("not_estimated", ()) else layer.get(key)
        error = estimate_error(value, mapped[key])
        if error is not None:
            errors[key] = error
        total = sums[key]
        sums[key] = None if value is None or total is None else total + value
    layer["estimate_error"] = errors


def measured_line(section: SynthesisSection) -> str:
    """``LUT 1,567, FF 3,509, CARRY 120, DSP 5, BRAM_18K 0, URAM 0 (Yosys 0.70, 4 of 4 RTL
    layers)`` with what is left out."""
    totals = as_estimated(section["totals"])
    parts = [f"LUT {totals['LUT']:,}", f"FF {section['totals'].get('FF', 0):,}",
             f"CARRY {section['totals'].get('CARRY', 0):,}",
             *(f"{key} {totals[key]:,}" for key in RESOURCES if key != "LUT")]  # fmt: skip
    done = [x for x in section["layers"] if x["status"] == SYNTHESISED]
    text = f"{', '.join(parts)} ({section['tool']}, family {section['family']}, "
    text += f"{len(done)} of {len(section['layers'])} layers synthesised"
    return text + ("" if section["complete"] else "; the others are listed below") + ")"


def error_line(section: SynthesisSection) -> str | None:
    """``FINN's estimate: LUT 552 (-65 %), DSP 5 (+0 %)`` of the synthesised layers, or None."""
    shown = [
        f"{key} {section['estimated'][key]:,.0f} ({error:+.0%})"
        for key, error in section["estimate_error"].items()
        if section["estimated"].get(key) is not None
    ]
    return "estimated " + ", ".join(shown) + " for the same layers" if shown else None


def unsynthesised(section: SynthesisSection) -> list[str]:
    """``name (op type): reason`` of each layer not synthesised."""
    return [
        f"{x['name']} ({x['op_type']}): {x['reason'] or x['status']}"
        for x in section["layers"]
        if x["status"] != SYNTHESISED
    ]


def unchecked(report: BuildReport) -> str | None:
    """What on the first screen no tool checked, and how to measure it: the resources when
    neither Yosys nor nextpnr counted them (a Versal part Yosys cannot map says so), and the
    clock, which nothing here places and routes for an AMD part; None where a bitstream was
    made (nextpnr checked the clock and counted the resources: the bitstream card says so)."""
    if report.get("bitstream"):
        return None
    clock = finite(report.get("clock_ns"))
    said = [f"no tool checked the {clock:g} ns clock (no place and route ran)"] if clock else []
    board, family = lattice_board(report.get("board")), report.get("family_resources")
    if board or family:  # a Lattice board's or part's build
        folder = report.get("output_dir", "BUILD_DIR")
        what = (f"the resources are estimates for {family['part']} ({family['source']})"
                if family else "the resources are FINN's estimates for a stand-in AMD part")  # fmt: skip
        how = (f"brainsmith bitstream {folder} --board {board}" if board
               else f"brainsmith place-route {folder} --part {report.get('fpga_part')}")  # fmt: skip
        return "; ".join([*said, f"{what}: {how} measures both with nextpnr"])
    part = report.get("fpga_part") or ""
    if not report.get("synthesis") and report.get("totals") and part:
        said.insert(0, _unmeasured(part, report.get("output_dir", "BUILD_DIR")))
    return "; ".join(said) or None


def _unmeasured(part: str, folder: str) -> str:
    """How to measure the resources estimated for ``part``, or why Yosys cannot."""
    try:
        family_of(part)
    except NotSynthesisable:
        return (f"the resources are estimates Yosys cannot count for {part} (no Versal "
                f"family): build for an UltraScale+ part with --synth to measure them "
                f"(--part {ULTRASCALE_PLUS_PART})")  # fmt: skip
    return (
        f"the resources are estimates: brainsmith synth {folder} counts the RTL layers with Yosys"
    )
