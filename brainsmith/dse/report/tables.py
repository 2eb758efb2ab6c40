"""The report's tables: the variants ranked, with constraint results (a lower bound is never
a plain number: "≥ 552", titled with the layers it leaves out), and what each dimension's
choices changed."""

from __future__ import annotations

import html
from dataclasses import dataclass

from brainsmith.dse.report.text import amount, choice, number
from brainsmith.dse.results import METRIC_NAMES
from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json

Cell = tuple[str, str]  # its HTML, its class


@dataclass(frozen=True)
class Columns:
    """The variants table's columns beyond the fixed ones."""

    dimensions: list[str]
    constraints: list[str]
    unlike: bool  # variants counted differently: a ``counted`` column, compute layers' figures

    @classmethod
    def of(cls, data: Json) -> Columns:
        unlike = (data.get("counting") or {}).get("alike") is False
        return cls(list(data["dimensions"]), data["constraints"], unlike)

    @property
    def compute(self) -> tuple[str, ...]:
        """Beside the totals, what every variant counts."""
        return RESOURCES if self.unlike else ()

    def head(self) -> list[str]:
        return ["rank", "variant", "status", *self.dimensions,
                *(("counted",) if self.unlike else ()), *METRIC_NAMES,
                *(f"{r} (compute)" for r in self.compute), "LUT %", "bottleneck",
                *self.constraints, "Pareto", "time"]  # fmt: skip


def variants_table(variants: list[Json], data: Json) -> str:
    columns = Columns.of(data)
    rows = "".join(_row(v, columns) for v in variants)
    header = "".join(f"<th>{html.escape(h)}</th>" for h in columns.head())
    return f"<div class='scroll'><table class='variants'><tr>{header}</tr>{rows}</table></div>"


def _row(v: Json, columns: Columns) -> str:
    cells = [
        *_choice_cells(v, columns),
        *_metric_cells(v, columns.compute),
        *_end_cells(v, columns),
    ]
    kind = "pareto" if v["pareto"] else ("failed" if v["status"] == "failed" else "")
    tds = "".join(f"<td class='{c}'>{text}</td>" for text, c in cells)
    return f"<tr class='{kind}'>{tds}</tr>"


def _choice_cells(v: Json, columns: Columns) -> list[Cell]:
    """The rank, the variant, its status, its choices and how it was counted."""
    return [
        _rank(v),
        (link(v), "id"),
        (html.escape(v["status"]), ""),
        *((html.escape(choice(v["choices"].get(d))), "") for d in columns.dimensions),
        *((_counted_cell(v.get("counting") or {}),) if columns.unlike else ()),
    ]


def _end_cells(v: Json, columns: Columns) -> list[Cell]:
    """The bottleneck, each constraint's result, the Pareto star, the time."""
    checks = {c["constraint"]: c for c in v["constraints"]}
    return [
        (html.escape(v.get("bottleneck") or "-"), ""),
        *(_check(checks.get(c)) for c in columns.constraints),
        ("★" if v["pareto"] else "", ""),
        (f"{number(v['seconds'])} s" if v["seconds"] is not None else "", "num"),
    ]


def _metric_cells(v: Json, compute: tuple[str, ...]) -> list[Cell]:
    """The metrics, the compute layers' resources, the share of the part's LUTs."""
    found, bounds = v["metrics"] or {}, v.get("lower_bounds") or {}
    layers = _compute_layers(v)
    return [
        *(_metric_cell(found.get(m), m, bounds) for m in METRIC_NAMES),
        *(_metric_cell(layers.get(r), r, bounds) for r in compute),
        _percent_cell((v.get("utilisation") or {}).get("LUT"), "LUT", bounds),
    ]


def _compute_layers(v: Json) -> Json:
    """The resources of ``v``'s compute layers (empty when it was not counted apart)."""
    return (v.get("counting") or {}).get("compute") or {}


def _counted_cell(counted: Json) -> Cell:
    """What a variant's totals hold beyond its compute layers, titled in words."""
    if not counted:
        return "-", ""
    title = html.escape(counted["label"], quote=True)
    return f"<span class='counted' title='{title}'>{html.escape(counted['tag'])}</span>", ""


def _rank(variant: Json) -> Cell:
    if variant.get("unranked"):
        title = html.escape(variant["unranked"], quote=True)
        return f"<span class='unranked' title='{title}'>not ranked</span>", ""
    return str(variant["rank"]), "num"


def _metric_cell(value: object, metric: str, bounds: dict[str, list[str]]) -> Cell:
    """A metric's table cell: "≥ 552", titled with the layers left out, for a lower bound."""
    layers = bounds.get(metric)
    if not layers or value is None:
        return number(value), "num"
    title = html.escape(f"{', '.join(layers)} not estimated by FINN", quote=True)
    return f"<span class='bound' title='{title}'>{amount(value, True)}</span>", "num"


def link(variant: Json) -> str:
    """The variant's id, linked to its build report when there is one; a variant that built
    the same design as another says which."""
    name = html.escape(variant["id"])
    same = variant.get("same_design_as")
    note = f" <span class='same'>same design as {html.escape(same)}</span>" if same else ""
    if not variant["report"]:
        return name + note
    return f"<a href='{html.escape(variant['report'])}'>{name}</a>{note}"


def _percent_cell(value: float | None, metric: str, bounds: dict[str, list[str]]) -> Cell:
    """A share of the part: a lower bound too when its total is one."""
    if value is None:
        return "-", "num"
    if not bounds.get(metric):
        return f"{value:.2f} %", "num"
    return f"<span class='bound'>≥ {value:.2f} %</span>", "num"


def _check(check: Json | None) -> Cell:
    if check is None:
        return "", ""
    if check["ok"] is None:
        title = html.escape(check.get("reason") or "not judged", quote=True)
        return f"<span class='unranked' title='{title}'>not judged</span>", ""
    if check["ok"]:
        return "<span class='ok'>pass</span>", ""
    return "<span class='miss'>fail</span>", ""


BOUNDED_NOTE = (
    "<p class='note'>≥: a mean over totals of which some are lower bounds (layers FINN "
    "does not estimate), so a lower bound itself; such means cannot be compared with "
    "others.</p>"
)
COMPUTE_NOTE = (
    "<p class='note'>The variants' totals were counted differently (FIFOs and width "
    "converters in some only): the means of LUT and DSP are of compute layers, which "
    "every variant counts.</p>"
)


def effects_table(effects: list[Json]) -> str:
    """What each dimension's choices did: mean metrics per value, and whether the choice
    changed the design at all."""
    if not effects:
        return ""
    rows = [row for effect in effects for row in _effect_rows(effect)]
    compute = any(e.get("compared_on") == "compute layers" for e in effects)
    on = " (compute layers)" if compute else ""
    head = ("<tr><th>dimension</th><th>choice</th><th>built</th><th>mean fps</th>"
            f"<th>mean LUT{on}</th><th>mean DSP{on}</th><th>effect</th></tr>")  # fmt: skip
    note = _effects_notes(effects, compute)
    return (
        "<h2>What each choice changed</h2><div class='scroll'><table class='effects'>"
        f"{head}{''.join(rows)}</table></div>{note}"
    )


def _effects_notes(effects: list[Json], compute: bool) -> str:
    """The notes under the effects table: means that are lower bounds, means of compute
    layers (``compute``)."""
    bounded = any(v.get("lower_bounds") for e in effects for v in e["values"])
    return (BOUNDED_NOTE if bounded else "") + (COMPUTE_NOTE if compute else "")


def _effect(effect: Json) -> str:
    """Whether the dimension's choice changed the design, in words."""
    if effect["changed_nothing"]:
        return (f"changed nothing: all {effect['pairs']} pairs of variants that differ "
                "only here built the same design")  # fmt: skip
    if effect["pairs"]:
        return (f"{effect['pairs'] - effect['same_design_pairs']} of {effect['pairs']} "
                "pairs that differ only here built different designs")  # fmt: skip
    return "no pair of variants differs only here"


def _effect_rows(effect: Json) -> list[str]:
    """A row per value of the dimension; its name and effect span them."""
    values = effect["values"]
    spans = f"rowspan='{len(values)}'"
    first = f"<td {spans}>{html.escape(effect['dimension'])}</td>"
    last = f"<td {spans}>{html.escape(_effect(effect))}</td>"
    rows = []
    for index, value in enumerate(values):
        rows.append(
            f"<tr>{'' if index else first}<td>{html.escape(choice(value['value']))}</td>"
            f"<td class='num'>{value['variants']}</td>{_means(value)}{'' if index else last}</tr>"
        )
    return rows


def _means(value: Json) -> str:
    """The cells of one choice's mean fps, LUT and DSP ("≥" for a lower bound)."""
    return "".join(
        f"<td class='num'>{amount(value[m], m in value.get('lower_bounds', []))}</td>"
        for m in ("fps", "LUT", "DSP")
    )
