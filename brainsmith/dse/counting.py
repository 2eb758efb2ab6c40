"""How each variant's resource totals were counted, and comparing variants like for like.

A variant whose FIFOs were sized by simulation (the ``fifo_depths`` step, every layer RTL)
has FINN's FIFOs and width converters in its design, and their estimates in its totals. One
that kept FINN's depths (an HLS layer, no simulator, ``build.size_fifos: false``) has
neither yet: FINN inserts them in ``step_set_fifo_depths``, with Vivado. Totals of the two
kinds are not like for like. An exploration whose variants were counted differently compares
them on their compute layers — each total less its FIFOs and width converters, what every
variant counts: the ranking, the Pareto front, the plots and the means of what each choice
changed. Constraints still judge each variant's total as counted. Resources are FINN's and
brainsmith's estimates in every variant (Yosys' counts, with ``build.synth``, stay in the
variant's build report).
"""

from __future__ import annotations

import json
import os

from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.report_schema import BuildReport, Layer

PLUMBING = ("StreamingFIFO", "StreamingDataWidthConverter")  # op types outside the compute
SIZING_RECORD = os.path.join("finn", "report", "fifo_sizing.json")  # steps/fifos.py writes it


def counted(report: BuildReport, folder: str) -> Json:
    """How ``report``'s totals were counted (``folder``: the build's): ``fifo_depths`` (sized
    by simulation, sized by FINN with Vivado, or FINN's), whether ``fifos`` and
    ``width_converters`` are layers of the design (in its totals), ``resources``
    ("estimated"), ``measured`` (Yosys' counts are in the build report), the ``compute``
    totals (less FIFOs and width converters), a short ``tag`` and its ``label``."""
    layers = report.get("layers") or []
    kinds = {layer.get("op_type") for layer in layers}
    fifos = "StreamingFIFO" in kinds
    converters = fifos or "StreamingDataWidthConverter" in kinds  # inserted with the FIFOs
    entry: Json = {
        "fifo_depths": _depths(report, folder),
        "fifos": fifos,
        "width_converters": converters,
        "resources": "estimated",
        "measured": bool(report.get("synthesis")),
        "compute": _compute_totals(report, layers),
    }
    entry["tag"], entry["label"] = tag(entry), label(entry)
    return entry


def _depths(report: BuildReport, folder: str) -> str:
    try:
        with open(os.path.join(folder, SIZING_RECORD)) as handle:
            if json.load(handle).get("sized"):
                return "sized by simulation"
    except (OSError, ValueError, AttributeError):
        pass
    steps = report.get("steps") or []
    if any(s.get("name") == "step_set_fifo_depths" and s.get("status") == "ok" for s in steps):
        return "sized by FINN (Vivado)"
    return "FINN's"


def tag(entry: Json) -> str:
    """What a variant's totals hold beyond its compute layers, in a few characters:
    "+FIFOs +DWCs", "+FIFOs", "+DWCs" or "compute only"."""
    parts = [name for key, name in (("fifos", "+FIFOs"), ("width_converters", "+DWCs"))
             if entry.get(key)]  # fmt: skip
    return " ".join(parts) or "compute only"


def label(entry: Json) -> str:
    """The same in words, with where the FIFO depths come from."""
    held = [name for key, name in (("fifos", "FIFOs"), ("width_converters", "width converters"))
            if entry.get(key)]  # fmt: skip
    found = entry.get("fifo_depths")
    depths = "FINN's FIFO depths" if found == "FINN's" else f"FIFOs {found}"
    if held:
        return f"compute layers, {' and '.join(held)} ({depths})"
    return f"compute layers only ({depths}: FIFOs and width converters not in the design yet)"


def _compute_totals(report: BuildReport, layers: list[Layer]) -> dict[str, float | None]:
    """Per resource: ``report``'s total less its FIFOs' and width converters' (None where
    the report has no total)."""
    totals = report.get("totals") or {}
    compute: dict[str, float | None] = {}
    for key in RESOURCES:
        total = totals.get(key)
        plumbing = sum(
            float(layer.get(key) or 0) for layer in layers if layer.get("op_type") in PLUMBING
        )
        compute[key] = None if total is None else _number(float(total) - plumbing)
    return compute


def _key(entry: Json) -> tuple[bool, bool, str | None]:
    """What makes two variants' totals comparable: the same kinds of layers counted."""
    found = entry.get("counting") or {}
    return (bool(found.get("fifos")), bool(found.get("width_converters")), found.get("resources"))


def compare(entries: list[Json]) -> Json:
    """Set each entry's ``compared`` (the metrics ranking, plots and means use: its totals,
    or with variants counted differently, its compute layers' resources) and return
    explore.json's ``counting``: ``alike``, ``compared_on`` ("totals" or "compute layers"),
    ``kinds`` (each with its ``tag``, ``label`` and ``variants``) and ``differs`` (what
    differs, in words; "" when alike)."""
    groups = _counted_alike(entries)
    alike = len(groups) <= 1
    for entry in entries:
        entry["compared"] = _compared(entry, alike)
    kinds = [_kind(g) for g in groups if g[0].get("counting")]
    return {
        "alike": alike,
        "compared_on": "totals" if alike else "compute layers",
        "kinds": kinds,
        "differs": "" if alike else differs(kinds),
    }


def _counted_alike(entries: list[Json]) -> list[list[Json]]:
    """The built entries with metrics, in index order, grouped by how they were counted."""
    built = sorted(
        (e for e in entries if e.get("status") == "ok" and e.get("metrics")),
        key=lambda e: e["index"],
    )
    groups: dict[tuple[bool, bool, str | None], list[Json]] = {}
    for entry in built:
        groups.setdefault(_key(entry), []).append(entry)
    return list(groups.values())


def _compared(entry: Json, alike: bool) -> Json | None:
    """What ``entry`` is compared on: its metrics, with its compute layers' resources in
    place of the totals when the variants were not counted ``alike``."""
    found: Json | None = entry.get("metrics")
    if alike or not found:
        return found
    return {**found, **((entry.get("counting") or {}).get("compute") or {})}


def _kind(group: list[Json]) -> Json:
    """One way of counting: its ``tag``, ``label`` and the ``variants`` counted so."""
    counting = group[0]["counting"]
    return {"tag": tag(counting), "label": label(counting), "variants": [e["id"] for e in group]}


def differs(kinds: list[Json]) -> str:
    """e.g. "not like for like: v00 counts compute layers, FIFOs and width converters (FIFOs
    sized by simulation); v01, v02 count compute layers only (...); LUT, BRAM_18K, URAM and
    DSP compared on compute layers only (FIFOs and width converters left out)"."""
    parts = [
        f"{_ids(k['variants'])} count{'s' if len(k['variants']) == 1 else ''} {k['label']}"
        for k in kinds
    ]
    return (
        f"not like for like: {'; '.join(parts)}; {', '.join(RESOURCES[:-1])} and "
        f"{RESOURCES[-1]} compared on compute layers only (FIFOs and width converters left out)"
    )


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 3)
