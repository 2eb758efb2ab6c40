"""report.json and report.html: the whole truth about a build, assembled from the values the
build hands over (the estimates, FINN's warnings and the nodes left on the host come from
``frameworks/finn/estimation/`` and ``frameworks/finn/build_log.py``).

Here: whether ``target_fps`` was met and which layer limits it, the latency target, which of
FINN's warnings the final estimates supersede, utilisation of the FPGA part, the charts'
rows, report.html and the tool versions. report.json is written first and last: ``status:
running`` when the build starts (a build whose process is killed leaves that), then ``ok``,
``failed`` or ``interrupted``.
"""

from __future__ import annotations

import io
import json
import os
import platform
import traceback
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import cast

from brainsmith.files import write_text
from brainsmith.frameworks.finn.build_log import superseded
from brainsmith.frameworks.finn.facts import PLATFORM_RESOURCES, RESOURCES, allowed_cycles
from brainsmith.frameworks.finn.parts import part_resources
from brainsmith.report.charts import ChartWorker, render_charts
from brainsmith.report.html import MALFORMED, render
from brainsmith.report.picture import dataflow_svg
from brainsmith.version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.frameworks.finn.folding.search import FoldingRecord
    from brainsmith.report_schema import (
        BuildReport,
        ChartRow,
        CpuNodes,
        FamilyResources,
        FinnWarning,
        LatencyTarget,
        Layer,
        Performance,
        RtlsimSection,
        SlowLayer,
        Target,
        Utilisation,
    )


def chart_rows(layers: list[Layer], family: FamilyResources | None = None) -> list[ChartRow]:
    """What the charts draw: the estimated layers' resources and cycles; for a Lattice build
    (``family``) each layer's figures in its part's own resources (``chart_resources``)."""
    if family is not None:
        return _family_rows(layers, family)
    return [
        {
            "name": layer["name"],
            "LUT": layer.get("LUT"),
            "BRAM_18K": layer.get("BRAM_18K"),
            "URAM": layer.get("URAM"),
            "DSP": layer.get("DSP"),
            "cycles": layer.get("cycles"),
            "not_estimated": layer.get("not_estimated"),
        }
        for layer in layers
        if layer.get("estimated")
    ]


def _family_rows(layers: list[Layer], family: FamilyResources) -> list[ChartRow]:
    """The chart rows of a Lattice build's layers: each one's LUT4, FF, MULT18 and EBR from
    ``family`` ("not estimated" where its kind has no model), FINN's cycles."""
    rows: list[ChartRow] = []
    for layer in layers:
        found = family["layers"].get(layer["name"])
        if found is None and layer.get("cycles") is None:
            continue
        row = cast("ChartRow", {"name": layer["name"], **(found or {})})
        row["cycles"] = layer.get("cycles")
        row["not_estimated"] = list(family["resources"]) if found is None else None
        rows.append(row)
    return rows


def chart_resources(family: FamilyResources | None) -> list[str]:
    """The resources the charts draw: a Lattice part's own (``family``), else FINN's."""
    return list(family["resources"]) if family is not None else list(RESOURCES)


def scaling_note(cpu: CpuNodes | None) -> list[str]:
    """The note for an accelerator followed only by its output's scale and bias."""
    if not cpu or not cpu.get("output_scaling"):
        return []
    kinds = ", ".join(cpu["op_types"])
    return [
        f"the output's floating-point scale and bias ({kinds}) are applied on the host after "
        f"the accelerator, as FINN's own flows leave them (see {cpu['model']})"
    ]


def target(
    performance: Performance,
    target_fps: int | None,
    clock_ns: float,
    layers: list[Layer] | None = None,
    folding: FoldingRecord | None = None,
) -> Target | None:
    """Whether the estimated throughput meets ``target_fps``; the layer that limits it, the
    layers slower than the target allows and, from the folding step's record, why."""
    fps = performance.get("estimated_fps")
    if not target_fps or not fps:
        return None
    allowed = cast(int, allowed_cycles(target_fps, clock_ns))
    timed = [(x["name"], c) for x in layers or [] if (c := x.get("cycles")) is not None]
    cycles = performance.get("max_cycles")
    bottleneck = _bottleneck(performance.get("max_cycles_layer"), cycles, timed, folding)
    limit = bottleneck_limit(folding, bottleneck, cycles)
    return {
        "target_fps": target_fps,
        "estimated_fps": fps,
        "met": fps >= target_fps,
        "bottleneck": bottleneck,
        "bottleneck_cycles": cycles,
        "target_cycles": allowed,
        "over_target": _over_target(timed, allowed)
        if layers and len(timed) == len(layers)
        else None,
        "limit": limit,
        "folding_search": folding["search"] if limit is not None and folding is not None else None,
    }


def _bottleneck(
    slowest: str | None,
    cycles: int | None,
    timed: list[tuple[str, float]],
    folding: FoldingRecord | None,
) -> str | None:
    """Of the layers tied at the slowest (FINN names ``slowest``), the one folding names."""
    recorded = folding.get("bottleneck") if folding else None
    return recorded if recorded and dict(timed).get(recorded) == cycles else slowest


def _over_target(timed: list[tuple[str, float]], allowed: int) -> list[SlowLayer]:
    """The layers slower than ``allowed`` cycles, slowest first."""
    slow = sorted(((n, c) for n, c in timed if c > allowed), key=lambda x: -x[1])
    return [{"name": name, "cycles": cycles} for name, cycles in slow]


def latency_target(
    performance: Performance,
    target_ns: float | None,
    rtlsim: RtlsimSection | None = None,
    clock_ns: float = 0.0,
) -> LatencyTarget | None:
    """Whether a frame's latency meets ``target_ns``: as simulated when the whole design
    was (Verilator), else as FINN estimates it; None without a target or an estimate."""
    estimated, cycles = (
        performance.get("estimated_latency_ns"),
        performance.get("critical_path_cycles"),
    )
    if not target_ns or estimated is None or cycles is None:
        return None
    stitched = rtlsim["stitched"] if rtlsim else None
    simulated = stitched.get("latency_cycles") if stitched else None
    measured = simulated * clock_ns if simulated and clock_ns else None
    return {
        "target_latency_ns": target_ns,
        "estimated_latency_ns": estimated,
        "critical_path_cycles": cycles,
        "measured_latency_ns": measured,
        "met": (measured if measured is not None else estimated) <= target_ns,
    }


def bottleneck_limit(
    folding: FoldingRecord | None, name: str | None, cycles: float | None
) -> str | None:
    """Why layer ``name`` cannot go faster, as the folding search recorded it, if its record
    still describes the final layer (same cycles: no later step changed its folding)."""
    if not name or folding is None:
        return None
    limit, recorded = _recorded_limit(folding, name)
    if not isinstance(limit, str) or not limit.strip():
        return None
    if recorded is not None and recorded != cycles:
        return None
    return " ".join(limit.split())


def _recorded_limit(folding: FoldingRecord, name: str) -> tuple[object, float | None]:
    """The limit the folding search recorded for layer ``name`` and its cycles then: its
    own entry's, else the bottleneck's when it is that."""
    entry = folding["layers"].get(name)
    limit, recorded = (entry.get("limit"), entry.get("cycles")) if entry else (None, None)
    if limit is None and folding.get("bottleneck") == name:
        return folding.get("limit"), recorded or folding.get("cycles")
    return limit, recorded


def reassess_warnings(
    warnings: list[FinnWarning], goal: Target | None
) -> tuple[list[FinnWarning], int]:
    """FINN's warnings without those the final cycle estimates supersede, and how many were
    left out: SetFolding's per-node numbers always (``goal["over_target"]`` has the final
    ones), its verdict on the target when every layer meets it."""
    if not goal or goal.get("over_target") is None:
        return warnings, 0
    missed = bool(goal["over_target"])
    kept = [entry for entry in warnings if not superseded(entry["message"], missed)]
    return kept, len(warnings) - len(kept)


def utilisation(part: str | None, totals: dict[str, float]) -> Utilisation:
    """Estimated use of the part's resources in percent (FF: FINN does not estimate it)."""
    found = part_resources(part) if part else None
    if found is None:
        return {"part": part, "available": None, "percent": None, "source": None}
    available, source = found
    percent = {
        key: round(100 * totals[key] / available[key], 2)
        if key in totals and available[key]
        else None
        for key in PLATFORM_RESOURCES
    }
    return {"part": part, "available": available, "percent": percent, "source": source}


def write_html(
    folder: str,
    report: BuildReport,
    worker: ChartWorker | None = None,
    log: io.TextIOBase | None = None,
) -> None:
    """report.html (and dataflow.svg) of ``report`` in ``folder``, whole: the charts with the
    target's line, the dataflow picture, links to the files ``folder`` holds. ``worker``: a
    chart worker that may have drawn the charts already; ``log`` takes a chart's traceback."""
    charts = _charts(report, worker, log)
    try:
        picture = dataflow_svg(report)
    except MALFORMED:  # report.json's layers not as brainsmith writes them: no picture
        picture = None
    if picture:
        write_text(os.path.join(folder, "dataflow.svg"), picture)
    here: BuildReport = {**report, "output_dir": os.path.abspath(folder)}  # its files' links
    write_text(os.path.join(folder, "report.html"), render(here, charts, picture))


def _charts(
    report: BuildReport, worker: ChartWorker | None, log: io.TextIOBase | None
) -> dict[str, str]:
    """The charts of ``report`` (drawn by ``worker`` when there is one); none when drawing
    fails (the traceback to ``log``): a chart problem must not hide the build's result."""
    goal = report.get("target")
    try:
        family = report.get("family_resources")
        rows = chart_rows(report.get("layers", []), family)
        allowed = goal["target_cycles"] if goal else None
        drawn = chart_resources(family)
        if worker:
            return worker.charts(rows, allowed, drawn)
        return render_charts(rows, allowed, drawn)
    except Exception:
        if log is not None:
            traceback.print_exc(file=log)
        return {}


def to_json(report: Mapping[str, object]) -> str:
    return json.dumps(report, indent=2, default=str) + "\n"


def versions() -> dict[str, str]:
    """Versions of brainsmith, FINN, QONNX and Python."""
    found = {"brainsmith": __version__}
    for label, dist in (("finn", "finn-plus"), ("qonnx", "qonnx")):
        try:
            found[label] = version(dist)
        except PackageNotFoundError:
            found[label] = "not installed"
    found["python"] = platform.python_version()
    return found
