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
import math

from brainsmith.dse.results import METRIC_NAMES
from brainsmith.frameworks.finn.facts import RESOURCES, step_label
from brainsmith.plugin.names import short_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.report.schema import BuildReport

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 520, 340, 78, 18, 16, 46
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


def metric_text(report: BuildReport) -> str:
    """``fps 1,250,000  LUT ≥ 552  DSP 7`` for a build's report (≥: a lower bound)."""
    from brainsmith.dse.results import lower_bounds, metrics

    found, bounds = metrics(report), lower_bounds(report)
    parts = [f"{name} {_amount(found[name], name in bounds)}" for name in ("fps", "LUT", "DSP")]
    return "  ".join(parts)


def write_report(data: Json, path: str) -> None:
    variants = data["variants"]
    ok = [v for v in variants if v["status"] == "ok"]
    failed = [v for v in variants if v["status"] == "failed"]
    other = len(variants) - len(ok) - len(failed)
    unranked = _unranked(ok)
    counting = data.get("counting") or {}
    unlike = counting.get("alike") is False
    summary = [
        ("status", data["status"]),
        ("model", data["model"]),
        ("blueprint", data["blueprint"]),
        (
            "variants",
            f"{len(ok)} built, {len(failed)} failed"
            + (f", {other} not run" if other else "")
            + f" ({data['strategy']}, {len(variants)} of {data['space_size']})",
        ),
        ("Pareto front", _front(variants, unranked)),
        *(("not ranked", f"{', '.join(ids)}: {reason}") for reason, ids in unranked.items()),
        ("objectives", ", ".join(f"{k} {g}" for k, g in data["objectives"].items())),
        ("constraints", ", ".join(data["constraints"]) or "none"),
        (
            "segments",
            f"{data['segments_run']} run, {data['segments_reused']} reused; "
            f"{data['steps_run']} step runs instead of {data['steps_without_reuse']}",
        ),
        ("executor", ", ".join(f"{k} {v}" for k, v in data["executor"].items()) or "-"),
        ("time", f"{_number(data['timings']['seconds'])} s"),
        ("estimates", ESTIMATES),
        *((("counted", counting["differs"]),) if unlike else ()),
    ]
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in summary
    )
    plots = "".join(_plot(variants, data, resource) for resource in ("LUT", "DSP"))
    legend = (
        "<p class='legend'><span>● on the Pareto front</span><span>○ meets the constraints"
        "</span><span style='color:#888'>◌ a constraint not judged (on a lower bound)</span>"
        "<span style='color:#999'>● misses a constraint</span><span>- - constraint</span>"
        "<span>●→ a lower bound: the real total is at least this (layers FINN does not "
        "estimate)</span> Click a point for its build report."
        + (f" {_counting_legend(counting)}" if unlike else "")
        + "</p>"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(f"brainsmith explore: {data['name']}")}</title>
<style>{STYLE}</style></head><body>
<h1>brainsmith explore: {html.escape(data["name"])}</h1>
<table class="summary">{rows}</table>
<h2>Pareto plots</h2>{legend}<div class="plots">{plots}</div>
<h2>Variants, ranked</h2>{_table(variants, data)}{_unranked_note(unranked)}
{_effects(data.get("effects") or [])}
{_failures(failed)}
<h2>Execution tree</h2><pre>{html.escape(chr(10).join(data["tree"]))}</pre>
<p>{html.escape(", ".join(f"{k} {v}" for k, v in data["versions"].items()))}</p>
</body></html>
"""
    with open(path, "w") as handle:
        handle.write(page)


ESTIMATES = (
    "fps, latency and resources are FINN's analytical estimates (before synthesis); ≥ marks "
    "a lower bound: a total that leaves out layers FINN has no estimate for"
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


def _table(variants: list[Json], data: Json) -> str:
    dims = list(data["dimensions"])
    constraints = data["constraints"]
    unlike = (data.get("counting") or {}).get("alike") is False
    compute = RESOURCES if unlike else ()  # beside the totals, what every variant counts
    head = ["rank", "variant", "status", *dims, *(("counted",) if unlike else ()),
            *METRIC_NAMES, *(f"{r} (compute)" for r in compute), "LUT %", "bottleneck",
            *constraints, "Pareto", "time"]  # fmt: skip
    rows = []
    for v in variants:
        found, bounds = v["metrics"] or {}, v.get("lower_bounds") or {}
        checks = {c["constraint"]: c for c in v["constraints"]}
        counted = v.get("counting") or {}
        cells = [
            _rank(v),
            (_link(v), "id"),
            (html.escape(v["status"]), ""),
            *((html.escape(_choice(v["choices"].get(d))), "") for d in dims),
            *((_counted_cell(counted),) if unlike else ()),
            *(_metric_cell(found.get(m), m, bounds) for m in METRIC_NAMES),
            *(_metric_cell((counted.get("compute") or {}).get(r), r, bounds) for r in compute),
            _percent_cell((v.get("utilisation") or {}).get("LUT"), "LUT", bounds),
            (html.escape(v.get("bottleneck") or "-"), ""),
            *(_check(checks.get(c)) for c in constraints),
            ("★" if v["pareto"] else "", ""),
            (f"{_number(v['seconds'])} s" if v["seconds"] is not None else "", "num"),
        ]
        kind = "pareto" if v["pareto"] else ("failed" if v["status"] == "failed" else "")
        tds = "".join(f"<td class='{c}'>{text}</td>" for text, c in cells)
        rows.append(f"<tr class='{kind}'>{tds}</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<div class='scroll'><table class='variants'><tr>{header}</tr>{''.join(rows)}</table></div>"


def _counted_cell(counted: Json) -> tuple[str, str]:
    """What a variant's totals hold beyond its compute layers, titled in words."""
    if not counted:
        return "-", ""
    title = html.escape(counted["label"], quote=True)
    return f"<span class='counted' title='{title}'>{html.escape(counted['tag'])}</span>", ""


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


def _rank(variant: Json) -> tuple[str, str]:
    if variant.get("unranked"):
        title = html.escape(variant["unranked"], quote=True)
        return f"<span class='unranked' title='{title}'>not ranked</span>", ""
    return str(variant["rank"]), "num"


def _metric_cell(value: object, metric: str, bounds: dict[str, list[str]]) -> tuple[str, str]:
    """A metric's table cell: "≥ 552", titled with the layers left out, for a lower bound."""
    layers = bounds.get(metric)
    if not layers or value is None:
        return _number(value), "num"
    title = html.escape(f"{', '.join(layers)} not estimated by FINN", quote=True)
    return f"<span class='bound' title='{title}'>{_amount(value, True)}</span>", "num"


def _link(variant: Json) -> str:
    """The variant's id, linked to its build report when there is one; a variant that built
    the same design as another says which."""
    name = html.escape(variant["id"])
    same = variant.get("same_design_as")
    note = f" <span class='same'>same design as {html.escape(same)}</span>" if same else ""
    if not variant["report"]:
        return name + note
    return f"<a href='{html.escape(variant['report'])}'>{name}</a>{note}"


def _percent_cell(
    value: float | None, metric: str, bounds: dict[str, list[str]]
) -> tuple[str, str]:
    """A share of the part: a lower bound too when its total is one."""
    if value is None:
        return "-", "num"
    if not bounds.get(metric):
        return f"{value:.2f} %", "num"
    return f"<span class='bound'>≥ {value:.2f} %</span>", "num"


def _effects(effects: list[Json]) -> str:
    """What each dimension's choices did: mean metrics per value, and whether the choice
    changed the design at all."""
    if not effects:
        return ""
    rows = []
    for effect in effects:
        if effect["changed_nothing"]:
            verdict = (f"changed nothing: all {effect['pairs']} pairs of variants that differ "
                       "only here built the same design")  # fmt: skip
        elif effect["pairs"]:
            verdict = (f"{effect['pairs'] - effect['same_design_pairs']} of {effect['pairs']} "
                       "pairs that differ only here built different designs")  # fmt: skip
        else:
            verdict = "no pair of variants differs only here"
        values = effect["values"]
        for index, value in enumerate(values):
            first = (f"<td rowspan='{len(values)}'>{html.escape(effect['dimension'])}</td>"
                     if index == 0 else "")  # fmt: skip
            last = f"<td rowspan='{len(values)}'>{html.escape(verdict)}</td>" if index == 0 else ""
            rows.append(
                f"<tr>{first}<td>{html.escape(_choice(value['value']))}</td>"
                f"<td class='num'>{value['variants']}</td>"
                + "".join(
                    f"<td class='num'>{_amount(value[m], m in value.get('lower_bounds', []))}</td>"
                    for m in ("fps", "LUT", "DSP")
                )
                + f"{last}</tr>"
            )
    compute = any(e.get("compared_on") == "compute layers" for e in effects)
    on = " (compute layers)" if compute else ""
    head = ("<tr><th>dimension</th><th>choice</th><th>built</th><th>mean fps</th>"
            f"<th>mean LUT{on}</th><th>mean DSP{on}</th><th>effect</th></tr>")  # fmt: skip
    bounded = any(v.get("lower_bounds") for e in effects for v in e["values"])
    note = (
        "<p class='note'>≥: a mean over totals of which some are lower bounds (layers FINN "
        "does not estimate), so a lower bound itself; such means cannot be compared with "
        "others.</p>"
        if bounded
        else ""
    )
    if compute:
        note += (
            "<p class='note'>The variants' totals were counted differently (FIFOs and width "
            "converters in some only): the means of LUT and DSP are of compute layers, which "
            "every variant counts.</p>"
        )
    return (
        "<h2>What each choice changed</h2><div class='scroll'><table class='effects'>"
        f"{head}{''.join(rows)}</table></div>{note}"
    )


def _check(check: Json | None) -> tuple[str, str]:
    if check is None:
        return "", ""
    if check["ok"] is None:
        title = html.escape(check.get("reason") or "not judged", quote=True)
        return f"<span class='unranked' title='{title}'>not judged</span>", ""
    if check["ok"]:
        return "<span class='ok'>pass</span>", ""
    return "<span class='miss'>fail</span>", ""


def _failures(failed: list[Json]) -> str:
    if not failed:
        return ""
    items = []
    for v in failed:
        error = v["error"] or {}
        where = f" (in shared segment {v['failed_in']})" if v["failed_in"] else ""
        items.append(
            f"<li>{_link(v)}: step "
            f"{html.escape(step_label(str(error.get('step', ''))))}{html.escape(where)}: "
            f"{html.escape(str(error.get('reason', '')))}"
            + (f"<br>try: {html.escape(error['hint'])}" if error.get("hint") else "")
            + "</li>"
        )
    return f"<h2>Failed variants</h2><ul>{''.join(items)}</ul>"


def _plot(variants: list[Json], data: Json, resource: str) -> str:
    points = [
        v
        for v in variants
        if v["status"] == "ok"
        and v["metrics"]
        and v["metrics"].get("fps")
        and v["metrics"].get(resource) is not None
        and not v.get("same_design_as")  # drawn once, with the variants of the same design
    ]
    unlike = (data.get("counting") or {}).get("alike") is False
    title = f"fps against {resource}{' (compute layers)' if unlike else ''}"
    if not points:
        return f"<figure><figcaption>{title}</figcaption><p>No built variants.</p></figure>"
    xs = [float((v.get("compared") or v["metrics"])[resource]) for v in points]
    ys = [float(v["metrics"]["fps"]) for v in points]
    x_axis = _Axis(xs, LEFT, WIDTH - RIGHT)
    y_axis = _Axis(ys, HEIGHT - BOTTOM, TOP)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"role='img' aria-label='{title}'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{WIDTH - LEFT - RIGHT}' "
        f"height='{HEIGHT - TOP - BOTTOM}' fill='none' stroke='#999'/>",
    ]
    for value in x_axis.ticks():
        x = x_axis.at(value)
        parts.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#eee'/>"
        )
        parts.append(
            f"<text x='{x:.1f}' y='{HEIGHT - BOTTOM + 15}' text-anchor='middle'>{_short(value)}</text>"
        )
    for value in y_axis.ticks():
        y = y_axis.at(value)
        parts.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eee'/>"
        )
        parts.append(
            f"<text x='{LEFT - 6}' y='{y + 4:.1f}' text-anchor='end'>{_short(value)}</text>"
        )
    parts.append(
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{HEIGHT - 8}' text-anchor='middle'>"
        f"{resource}{' (log)' if x_axis.log else ''}</text>"
        f"<text x='14' y='{(TOP + HEIGHT - BOTTOM) / 2}' text-anchor='middle' "
        f"transform='rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})'>fps{' (log)' if y_axis.log else ''}</text>"
    )
    # a limit judges totals: not drawn on an axis of compute layers
    drawn = [c for c in data["constraints"] if not (unlike and c.split(" ", 1)[0] == resource)]
    parts += _constraint_lines(drawn, resource, x_axis, y_axis)
    for v, x, y in sorted(zip(points, xs, ys, strict=True), key=lambda p: p[0]["pareto"]):
        kind = {True: "feasible", None: "unjudged", False: "infeasible"}[v["feasible"]]
        kind = "pareto" if v["pareto"] else kind
        bounds = v.get("lower_bounds") or {}
        same = f" (same design: {', '.join(v['same_design'])})" if v.get("same_design") else ""
        label = (
            f"{v['id']}{same}: fps {_amount(y, 'fps' in bounds)}, "
            f"{resource} {_amount(x, resource in bounds)}"
        )
        if v.get("unranked"):
            label += f"; not ranked: {v['unranked']}"
        counted = v.get("counting") or {}
        if unlike and counted:
            label += f"; {resource} of its compute layers; it counts {counted['label']}"
        cx, cy = x_axis.at(x), y_axis.at(y)
        arrows = _bound_arrows(v["id"], cx, cy, resource in bounds, "fps" in bounds)
        if unlike and counted and not (counted["fifos"] and counted["width_converters"]):
            arrows += (  # a diamond: FIFOs and width converters left out of its totals
                f"<path class='uncounted' data-uncounted='{v['id']}' "
                f"d='M{cx:.1f} {cy - 10:.1f}l10 10l-10 10l-10 -10z'/>"
            )
        parts.append(
            f"<a href='{html.escape(v['report'])}'>{arrows}<circle class='{kind}' "
            f"data-variant='{v['id']}' cx='{cx:.1f}' cy='{cy:.1f}' r='6'>"
            f"<title>{html.escape(label)}</title></circle></a>"
        )
    parts.append("</svg>")
    return f"<figure><figcaption>{title}</figcaption>{''.join(parts)}</figure>"


def _bound_arrows(variant: str, cx: float, cy: float, right: bool, up: bool) -> str:
    """Arrows from a point towards where its real value lies: right for a resource that is a
    lower bound, up for an fps that is."""
    paths = []
    if right:
        paths.append(f"M{cx + 6:.1f} {cy:.1f}h16m-5 -4l5 4l-5 4")
    if up:
        paths.append(f"M{cx:.1f} {cy - 6:.1f}v-16m-4 5l4 -5l4 5")
    if not paths:
        return ""
    return f"<path class='bound' data-bound='{variant}' d='{''.join(paths)}'/>"


def _constraint_lines(
    constraints: list[str], resource: str, x_axis: _Axis, y_axis: _Axis
) -> list[str]:
    lines = []
    for text in constraints:
        metric, _, written = text.split(" ", 2)
        bound = float(written)
        if metric == resource and x_axis.low <= bound <= x_axis.high:
            x = x_axis.at(bound)
            lines.append(
                f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#b42318' stroke-dasharray='5 4'/>"
            )
        elif metric == "fps" and y_axis.low <= bound <= y_axis.high:
            y = y_axis.at(bound)
            lines.append(
                f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#b42318' stroke-dasharray='5 4'/>"
            )
    return lines


class _Axis:
    """A linear or (when the values span over 30x) logarithmic axis from pixel a to b."""

    def __init__(self, values: list[float], a: float, b: float) -> None:
        low, high = min(values), max(values)
        self.log = low > 0 and high / low > 30
        if self.log:
            low, high = 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))
        else:
            span = (high - low) or abs(high) or 1.0
            low, high = (
                max(0.0, low - 0.1 * span) if low >= 0 else low - 0.1 * span,
                high + 0.1 * span,
            )
        self.low, self.high, self.a, self.b = low, high, a, b

    def _f(self, value: float) -> float:
        return math.log10(value) if self.log else value

    def at(self, value: float) -> float:
        lo, hi = self._f(self.low), self._f(self.high)
        return self.a + (self._f(value) - lo) / (hi - lo) * (self.b - self.a)

    def ticks(self) -> list[float]:
        if self.log:
            first, last = round(math.log10(self.low)), round(math.log10(self.high))
            return [10.0**e for e in range(first, last + 1)]
        step = 10 ** math.floor(math.log10((self.high - self.low) / 4))
        for factor in (1, 2, 5, 10):
            if (self.high - self.low) / (step * factor) <= 6:
                step *= factor
                break
        start = math.ceil(self.low / step) * step
        return [start + i * step for i in range(int((self.high - start) / step) + 1)]


def _short(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _number(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{int(value):,}" if isinstance(value, int | float) else str(value)


def _amount(value: object, bound: bool) -> str:
    """A metric's value; "≥ 552" for a lower bound."""
    return f"≥ {_number(value)}" if bound and value is not None else _number(value)


def _choice(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(short_name(str(v)) for v in value) + "]"
    return "-" if value is None else str(value)
