"""The critical path nextpnr reports, named by layer: its ``--report`` JSON lists, per pair
of clock edges, the slowest path as a chain of cells (clock-to-Q, logic, routing, setup).
The path of the slowest clock (one clock at both ends) is the one that sets the Fmax; its
first and last cells are named after the layer they belong to: the stitched accelerator's
instances are ``n<i>``, each a layer as the build recorded it (``StitchedDesign.instances``,
``finn/stitched_rtl/instances.json``), behind the host link ``accelerator.n<i>``; the link's
cells are ``link.*``; everything else is the board top. A cell Yosys named itself
(``$auto$ff.cc:337:slice$9485``, as ``synth_gatemate`` leaves the flip-flops) is named by the
nearest net of the path that carries a design's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from brainsmith.files import DamagedFile, read_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import CriticalPath

MAX_REPORT_BYTES = 64 * 2**20


def layer_of(cell: str, instances: Mapping[str, str]) -> str:
    """The layer a placed cell belongs to (``accelerator.n17.impl.x_FF`` ->
    ``ConvolutionInputGenerator_rtl_1``)."""
    path = cell.removeprefix("accelerator.")
    head = path.split(".", 1)[0]
    if head in instances:
        return instances[head]
    if cell.startswith("link."):
        return "host link"
    return "accelerator" if cell.startswith("accelerator.") else "board top"


def critical_path(
    report: Mapping[str, Any], fmax: Mapping[str, float], instances: Mapping[str, str]
) -> CriticalPath | None:
    """The critical path of the clock with the lowest Fmax in nextpnr's ``report``; None
    when the report lists no path within one clock."""
    if not fmax:
        return None
    clock = min(fmax, key=lambda name: fmax[name])
    for entry in report.get("critical_paths") or []:
        if not isinstance(entry, dict):
            continue
        ends = [str(entry.get(side, "")).split(" ", 1)[-1] for side in ("from", "to")]
        path = entry.get("path")
        if ends != [clock, clock] or not isinstance(path, Sequence) or not path:
            continue
        try:
            first, last = str(path[0]["from"]["cell"]), str(path[-1]["to"]["cell"])
            delay = sum(float(step.get("delay", 0.0)) for step in path)
            start, end = _named(first, path), _named(last, path[::-1])
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return {
            "clock": clock,
            "delay_ns": round(delay, 3),
            "start": layer_of(start, instances),
            "end": layer_of(end, instances),
            "start_cell": first,
            "end_cell": last,
            "steps": len(path),
        }
    return None


def _named(cell: str, steps: Sequence[Any]) -> str:
    """``cell``, or where Yosys named it itself (``$...``) the first net of ``steps`` routed
    with a design's name (``$memory\\accelerator.n5.x`` as ``accelerator.n5.x``)."""
    if not cell.startswith("$"):
        return cell
    for step in steps:
        net = str(step.get("net") or "").rsplit("\\", 1)[-1]
        if step.get("type") == "routing" and net and not net.startswith("$"):
            return net
    return cell


def named_critical_path(
    report_path: str, fmax: Mapping[str, float], instances: Mapping[str, str]
) -> CriticalPath | None:
    """The critical path in nextpnr's report at ``report_path``, its ends named after the
    layers the stitched design's ``instances`` are; None when it cannot be read."""
    try:
        report = read_json(report_path, MAX_REPORT_BYTES)
    except (DamagedFile, OSError, ValueError):
        return None
    return critical_path(report, fmax, instances)


def path_text(path: CriticalPath) -> str:
    """ "within ConvolutionInputGenerator_rtl_1, 13.1 ns" or "from A to B, 9.6 ns"."""
    where = (
        f"within {path['start']}"
        if path["start"] == path["end"]
        else f"from {path['start']} to {path['end']}"
    )
    return f"{where}, {path['delay_ns']:.2f} ns ({path['steps']} steps)"


__all__ = [
    "critical_path",
    "layer_of",
    "named_critical_path",
    "path_text",
]
