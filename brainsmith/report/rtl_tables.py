"""The RTL simulation in reports: report.json's ``rtlsim`` section, its one-line problem
descriptions, and its tables in report.html."""

from __future__ import annotations

import html
from typing import cast

from brainsmith.report.units import finite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from brainsmith.hardware.rtlsim.layers import DesignResult, LayerResult
    from brainsmith.report_schema import RtlsimLayer, RtlsimSection, Stitched


def rtlsim_section(result: DesignResult) -> RtlsimSection:
    """report.json's ``rtlsim``: ``result`` as ``brainsmith.hardware.rtlsim`` (untyped) writes it."""
    return cast("RtlsimSection", result.as_dict())


def layer_problem(layer: LayerResult) -> str:
    """What went wrong in a failed layer, in one line."""
    return describe(cast("RtlsimLayer", layer.as_dict()))


def describe(layer: RtlsimLayer) -> str:
    """What went wrong in a failed layer (as in report.json), in one line."""
    first = layer.get("first_mismatch")
    if not first:
        return layer.get("reason", "")
    index = ", ".join(str(i) for i in first["index"])
    return (
        f"differs from Python: frame {first['frame']}, {first['output']}[{index}] is "
        f"{first['got']:g}, expected {first['expected']:g} "
        f"({first['differing_elements']} elements differ in {layer.get('frames', 0)} frames)"
    )


def rtlsim_html(section: RtlsimSection | None) -> str:
    """The "RTL simulation" part of report.html (empty without ``verify: rtlsim``)."""
    if not section:
        return ""
    rows = []
    for layer in section.get("layers", []):
        status = layer.get("status", "")
        note = describe(layer) if status == "mismatch" else layer.get("reason", "")
        cells = [
            layer.get("name", ""),
            layer.get("op_type", ""),
            status,
            _number(layer.get("cycles_per_frame")),
            _number(layer.get("estimated_cycles")),
            percent(layer.get("estimate_error")),
            _number(layer.get("latency_cycles")),
            _compile_note(layer),
            note,
        ]
        css = html.escape(str(status).replace(" ", "-"))
        rows.append(
            f"<tr class='{css}'>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        )
    return (
        f"<h2>RTL simulation</h2>\n<p>{html.escape(str(section.get('summary', '')))} — "
        f"{html.escape(str(section.get('tool', '')))}, {_seconds(section.get('seconds', 0))} s. Each RTL "
        "layer is driven with its own inputs from the Python execution and compared bit "
        "for bit; cycles per frame are measured between consecutive frames.</p>\n"
        "<div class='scroll'><table>\n"
        "<tr><th>layer</th><th>op type</th><th>result</th><th>cycles/frame (simulated)</th>"
        "<th>cycles/frame (FINN estimate)</th><th>estimate error</th><th>latency (cycles)</th><th>compile</th>"
        "<th style='min-width:20em'>note</th></tr>\n"
        + "\n".join(rows)
        + "\n</table></div>"
        + stitched_html(section.get("stitched"))
    )


def stitched_html(stitched: Stitched | None) -> str:
    """The stitched partition's throughput, latency and FIFO fill, or why it was not run."""
    if not stitched:
        return ""
    status = stitched.get("status", "")
    if status != "match":
        return (
            f"<h3>Stitched partition</h3><p>{html.escape(str(status))}: "
            f"{html.escape(str(stitched.get('reason', '')))}</p>"
        )
    fifos = "".join(
        f"<tr><td>{html.escape(str(f['name']))}</td><td>{html.escape(str(f['after']))}</td>"
        f"<td>{html.escape(str(f['before']))}</td><td>{_number(f.get('max_occupancy'))}</td></tr>"
        for f in stitched.get("fifos", [])
    )
    return (
        f"<h3>Stitched partition</h3><p>{_number(stitched['layers'])} layers (with the width "
        f"converters and FIFOs FINN inserts) match Python on {_number(stitched['frames'])} "
        "frames: "
        f"{_number(stitched['cycles_per_frame'])} cycles/frame "
        f"({_number(stitched['fps'])} fps), latency {_number(stitched['latency_cycles'])} "
        f"cycles ({_number(stitched['latency_ns'])} ns){estimate_note(stitched)}. "
        "Largest FIFO fill with one frame "
        "offered per that many cycles (the depth each FIFO needs):</p>\n<table>"
        "<tr><th>FIFO</th><th>after</th><th>before</th><th>largest fill</th></tr>"
        f"{fifos}</table>"
    )


def percent(error: float | None) -> str:
    """An estimate error as ``+1.2%`` (``-`` when unknown)."""
    value = finite(error)
    return "-" if value is None else f"{value:+.1%}"


def estimate_note(stitched: Mapping[str, object]) -> str:
    """``; FINN estimated N: +x.x%, within ±10% (the slowest layer's cycles)`` or ''."""
    from brainsmith.hardware.rtlsim.layers import against_estimate

    text = against_estimate(stitched)
    return f"; {text} (its slowest layer's cycles per frame)" if text else ""


def _number(value: object) -> str:
    """``1,234`` or ``1,234.5``; "-" for none and for what is not a finite number."""
    value = finite(value)
    if value is None:
        return "-"
    return (
        f"{value:,.1f}" if isinstance(value, float) and not value.is_integer() else f"{value:,.0f}"
    )


def _seconds(value: object) -> str:
    seconds = finite(value)
    return "-" if seconds is None else f"{seconds:.1f}"


def _compile_note(layer: RtlsimLayer) -> str:
    if layer.get("compile_seconds") is None:
        return "-"
    return "cached" if layer.get("compile_cached") else f"{_seconds(layer['compile_seconds'])} s"
