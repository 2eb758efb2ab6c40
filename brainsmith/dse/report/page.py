"""The exploration's report.html: summary, Pareto plots (fps against LUT and DSP, every
point a link to its build report), the ranked table with constraint results, failures and
the execution tree. Self-contained: inline CSS and SVG, no script, nothing fetched.

A total that is a lower bound (a variant's ``lower_bounds``) is never shown as a plain
number: "≥ 552" in the tables, an arrow on the plots' points. Variants counted differently
(``brainsmith.dse.counting``) are marked: a ``counted`` row, column and legend, each
resource's compute layers beside its total, plots and means of compute layers, a diamond
around a point whose variant leaves FIFOs and width converters out."""

from __future__ import annotations

import html

from brainsmith.dse.report.plots import plot
from brainsmith.dse.report.tables import effects_table, link, variants_table
from brainsmith.dse.report.text import amount, number
from brainsmith.dse.results import lower_bounds, metrics
from brainsmith.frameworks.finn.facts import step_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.report_schema import BuildReport

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; } th, td { padding: 3px 9px; text-align: left; }
table.variants td { border-top: 1px solid #ddd; white-space: nowrap; }
table.variants td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { color: #a33; } tr.pareto td.id { font-weight: bold; }
.ok { color: #1a7f37; } .miss { color: #b42318; }
.plots { display: flex; flex-wrap: wrap; gap: 24px; }
svg text { font: 11px sans-serif; fill: #333; }
circle.pareto { fill: #3569a8; } circle.feasible { fill: #fff; stroke: #3569a8; stroke-width: 1.5; }
circle.infeasible { fill: #bbb; }
circle.unjudged { fill: #fff; stroke: #888; stroke-width: 1.5; stroke-dasharray: 3 2; }
path.bound { fill: none; stroke: #555; stroke-width: 1.2; }
path.uncounted { fill: none; stroke: #6b4f00; stroke-width: 1.2; }
.bound, .unranked { color: #6b4f00; } .note { color: #555; max-width: 60em; }
pre { background: #f6f6f6; padding: 10px; overflow-x: auto; }
.legend span { margin-right: 14px; }
.same { color: #777; font-size: 12px; }
.scroll { overflow-x: auto; }
table.effects td { border-top: 1px solid #ddd; vertical-align: top; }
table.effects td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


ESTIMATES = (
    "fps, latency and resources are FINN's analytical estimates (before synthesis); ≥ marks "
    "a lower bound: a total that leaves out layers FINN has no estimate for"
)
LEGEND = (
    "<span>● on the Pareto front</span><span>○ meets the constraints"
    "</span><span style='color:#888'>◌ a constraint not judged (on a lower bound)</span>"
    "<span style='color:#999'>● misses a constraint</span><span>- - constraint</span>"
    "<span>●→ a lower bound: the real total is at least this (layers FINN does not "
    "estimate)</span> Click a point for its build report."
)


def metric_text(report: BuildReport) -> str:
    """``fps 1,250,000  LUT ≥ 552  DSP 7`` for a build's report (≥: a lower bound)."""
    found, bounds = metrics(report), lower_bounds(report)
    parts = [f"{name} {amount(found[name], name in bounds)}" for name in ("fps", "LUT", "DSP")]
    return "  ".join(parts)


def write_report(data: Json, path: str) -> None:
    variants = data["variants"]
    failed = [v for v in variants if v["status"] == "failed"]
    unranked = _unranked([v for v in variants if v["status"] == "ok"])
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in _summary(data, unranked)
    )
    plots = "".join(plot(variants, data, resource) for resource in ("LUT", "DSP"))
    versions = ", ".join(f"{k} {v}" for k, v in data["versions"].items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(f"brainsmith explore: {data['name']}")}</title>
<style>{STYLE}</style></head><body>
<h1>brainsmith explore: {html.escape(data["name"])}</h1>
<table class="summary">{rows}</table>
<h2>Pareto plots</h2>{_legend(data)}<div class="plots">{plots}</div>
<h2>Variants, ranked</h2>{variants_table(variants, data)}{_unranked_note(unranked)}
{effects_table(data.get("effects") or [])}
{_failures(failed)}
<h2>Execution tree</h2><pre>{html.escape(chr(10).join(data["tree"]))}</pre>
<p>{html.escape(versions)}</p>
</body></html>
"""
    with open(path, "w") as handle:
        handle.write(page)


def _summary(data: Json, unranked: dict[str, list[str]]) -> list[tuple[str, object]]:
    """The summary table's rows: what was explored, how, and what came of it."""
    return [
        ("status", data["status"]),
        ("model", data["model"]),
        ("blueprint", data["blueprint"]),
        ("variants", _variant_counts(data)),
        ("Pareto front", _front(data["variants"], unranked)),
        *(("not ranked", f"{', '.join(ids)}: {reason}") for reason, ids in unranked.items()),
        ("objectives", ", ".join(f"{k} {g}" for k, g in data["objectives"].items())),
        ("constraints", ", ".join(data["constraints"]) or "none"),
        ("segments", _segments(data)),
        ("executor", ", ".join(f"{k} {v}" for k, v in data["executor"].items()) or "-"),
        ("time", f"{number(data['timings']['seconds'])} s"),
        ("estimates", ESTIMATES),
        *_counted_row(data.get("counting") or {}),
    ]


def _segments(data: Json) -> str:
    """``3 run, 2 reused; 12 step runs instead of 20``."""
    return (
        f"{data['segments_run']} run, {data['segments_reused']} reused; "
        f"{data['steps_run']} step runs instead of {data['steps_without_reuse']}"
    )


def _counted_row(counting: Json) -> list[tuple[str, object]]:
    """The summary's row on how the variants were counted, when not all alike."""
    return [("counted", counting["differs"])] if counting.get("alike") is False else []


def _variant_counts(data: Json) -> str:
    """``3 built, 1 failed, 2 not run (grid, 6 of 8)``."""
    variants = data["variants"]
    ok = sum(v["status"] == "ok" for v in variants)
    failed = sum(v["status"] == "failed" for v in variants)
    other = len(variants) - ok - failed
    return (
        f"{ok} built, {failed} failed"
        + (f", {other} not run" if other else "")
        + f" ({data['strategy']}, {len(variants)} of {data['space_size']})"
    )


def _legend(data: Json) -> str:
    counting = data.get("counting") or {}
    unlike = counting.get("alike") is False
    return (
        f"<p class='legend'>{LEGEND}"
        + (f" {_counting_legend(counting)}" if unlike else "")
        + "</p>"
    )


def _counting_legend(counting: Json) -> str:
    """The legend's line on variants counted differently."""
    kinds = "; ".join(
        f"{k['tag']}: {', '.join(k['variants'])}, {k['label']}" for k in counting["kinds"]
    )
    return html.escape(
        f"Totals not like for like: the variants were counted differently ({kinds}). The "
        "plots, the ranking and the means compare LUT, BRAM_18K, URAM and DSP on compute "
        "layers only (FIFOs and width converters left out of every variant); the table shows "
        "both. ◇ around a point: its variant's totals leave FIFOs and width converters out."
    )


def _unranked(built: list[Json]) -> dict[str, list[str]]:
    """The variants not ranked (each design once), by reason."""
    found: dict[str, list[str]] = {}
    for v in sorted(built, key=lambda v: v["index"]):
        if v.get("unranked") and not v.get("same_design_as"):
            found.setdefault(v["unranked"], []).append(v["id"])
    return found


def _front(variants: list[Json], unranked: dict[str, list[str]]) -> str:
    front = ", ".join(v["id"] for v in variants if v["pareto"])
    if not unranked:
        return front or "-"
    return f"{front or 'none'} (of the variants with a number for every objective; see not ranked)"


def _unranked_note(unranked: dict[str, list[str]]) -> str:
    if not unranked:
        return ""
    items = "".join(
        f"<li>{html.escape(', '.join(ids))}: {html.escape(reason)}</li>"
        for reason, ids in unranked.items()
    )
    return (
        "<p class='note'>Not ranked, and not on the Pareto front: an objective's total leaves "
        f"layers out, so it is only a lower bound and cannot be compared.</p><ul>{items}</ul>"
    )


def _failures(failed: list[Json]) -> str:
    if not failed:
        return ""
    items = "".join(_failure(v) for v in failed)
    return f"<h2>Failed variants</h2><ul>{items}</ul>"


def _failure(v: Json) -> str:
    """A failed variant's item: its step, where it failed, the reason and the hint."""
    error = v["error"] or {}
    where = f" (in shared segment {v['failed_in']})" if v["failed_in"] else ""
    return (
        f"<li>{link(v)}: step "
        f"{html.escape(step_label(str(error.get('step', ''))))}{html.escape(where)}: "
        f"{html.escape(str(error.get('reason', '')))}"
        + (f"<br>try: {html.escape(error['hint'])}" if error.get("hint") else "")
        + "</li>"
    )
