"""Judging variants: their metrics, the constraints they meet, the Pareto front of the
objectives, a ranking, and ``explore.json``.

Lower bounds: a resource total that leaves out layers FINN has no estimate for (the build
report's ``incomplete``) is only a lower bound of the real one, never used as a number. A
constraint on it is judged when the bound decides it (an upper limit the bound already
exceeds is missed, a lower limit it already reaches is met), otherwise not judged
(``ok: None``). A variant with an objective that is a lower bound is shown, not ranked.

Ranking: variants that built and meet every constraint come first, by Pareto front (the
front itself is rank 1, the front of the rest rank 2, ...), then by the objectives in the
order written, and after them those that are not ranked; then variants with a constraint
not judged, the same way; then variants that miss a constraint; then failed ones.
Variants that built the same design (a choice that changed nothing) are judged once: the
first of them stands for the others, which are ranked right after it. Objectives compare
each variant's ``compared`` figures: its totals, or, when variants were counted differently
(FIFOs and width converters in some totals only), its compute layers'
(``brainsmith.dse.counting``); constraints judge the totals.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields

from brainsmith.files import PUBLIC, write_text
from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from brainsmith.blueprint.space import Constraint, Search
    from brainsmith.files import Json
    from brainsmith.report_schema import BuildReport

METRIC_NAMES = ("fps", "latency_ns", *RESOURCES)
EFFECT_METRICS = ("fps", "LUT", "DSP")  # the means "what each choice changed" shows


def metrics(report: BuildReport) -> dict[str, float | None]:
    """``{fps, latency_ns, LUT, BRAM_18K, URAM, DSP}`` from a build's report.json."""
    performance, totals = report.get("performance", {}), report.get("totals", {})
    return {
        "fps": performance.get("estimated_fps"),
        "latency_ns": performance.get("estimated_latency_ns"),
        **{k: totals.get(k) for k in RESOURCES},
    }


def lower_bounds(report: BuildReport) -> dict[str, list[str]]:
    """The metrics whose total is a lower bound, each with the layers it leaves out (FINN
    has no estimate for them): the report's ``incomplete``."""
    found = report.get("incomplete") or {}
    return {k: list(found[k]) for k in METRIC_NAMES if found.get(k)}


def bound_reason(metric: str, layers: list[str]) -> str:
    """Why a total cannot be used as a number, e.g. "LUT is a lower bound (MVAU_rtl_0,
    MVAU_rtl_1 not estimated by FINN)"."""
    named = ", ".join(layers[:4]) + (f" and {len(layers) - 4} more" if len(layers) > 4 else "")
    return f"{metric} is a lower bound ({named} not estimated by FINN)"


def verdict(constraint: Constraint, found: Json, bounds: dict[str, list[str]]) -> Json:
    """``{constraint, ok, reason}``: ``ok`` is None (not judged, ``reason`` says why) when
    the metric is a lower bound that does not decide the constraint."""
    ok: bool | None = constraint.holds(found)
    reason = None
    layers = bounds.get(constraint.metric)
    if layers and found.get(constraint.metric) is not None and ok == (constraint.op[0] == "<"):
        # the real value is the bound or more: a bound within an upper limit, or short of a
        # lower one, says nothing
        ok, reason = None, f"not judged: {bound_reason(constraint.metric, layers)}"
    return {"constraint": str(constraint), "ok": ok, "reason": reason}


def unranked(entry: Json, objectives: list[tuple[str, str]]) -> str | None:
    """Why a built variant is not ranked: its objectives that are lower bounds; None when
    every objective is a number."""
    bounds = entry.get("lower_bounds") or {}
    reasons = [bound_reason(m, bounds[m]) for m, _ in objectives if bounds.get(m)]
    return "; ".join(reasons) or None


DESIGN_KEYS = ("name", "op_type", "backend", "PE", "SIMD", "mem_mode", "ram_style", "resType",
               "input_datatype", "weight_datatype", "output_datatype", "depth", "cycles")  # fmt: skip


def design_digest(report: BuildReport) -> str:
    """What a build made, as a digest: its layers (kernel, backend, folding, memory, data
    types, FIFO depths, cycles) and estimates; equal digests, equal designs."""
    layers = [[layer.get(k) for k in DESIGN_KEYS] for layer in report.get("layers", [])]
    made = {"layers": layers, "metrics": metrics(report)}
    return hashlib.sha256(json.dumps(made, sort_keys=True, default=str).encode()).hexdigest()


def variant_facts(report: BuildReport) -> dict[str, object]:
    """Per variant beside its metrics: the share of the part it takes and what limits it."""
    goal, performance, use = (
        report.get("target"),
        report.get("performance"),
        report.get("utilisation"),
    )
    return {
        "utilisation": use.get("percent") if use else None,
        "bottleneck": (goal.get("bottleneck") if goal else None)
        or (performance.get("max_cycles_layer") if performance else None),
        "design": design_digest(report),
    }


@dataclass
class Verdict:
    """What judging made of one variant: its keys in explore.json, in this order."""

    pareto: bool = False
    rank: int | None = None
    front: int | None = None  # its Pareto front among the variants judged alike (1: the front)
    unranked: str | None = None  # why it is not ranked (an objective is a lower bound)
    constraints: list[Json] = field(default_factory=list)  # one ``verdict`` per constraint
    feasible: bool | None = False  # None: a constraint not judged
    same_design_as: str | None = None  # the variant of the same design that stands for it
    same_design: list[str] = field(default_factory=list)  # the variants it stands for

    def as_json(self) -> Json:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def weigh(self, entry: Json, search: Search) -> None:
        """Its constraints, whether it meets them, and why it is not ranked."""
        bounds = entry.get("lower_bounds") or {}
        self.constraints = [verdict(c, entry["metrics"], bounds) for c in search.constraints]
        found = [c["ok"] for c in self.constraints]
        self.feasible = False if False in found else (None if None in found else True)
        self.unranked = unranked(entry, list(search.objectives))


def judge(entries: list[Json], search: Search) -> dict[str, Verdict]:
    """Judge each variant entry (``search`` is the blueprint's ``Search``) and write its
    ``Verdict`` into it: ``constraints``, ``feasible``, ``unranked``, ``pareto``, ``front``,
    ``rank`` and ``same_design_as``; entries without metrics are not judged."""
    verdicts = judgements(entries, search)
    for entry in entries:
        entry.update(verdicts[entry["id"]].as_json())
    return verdicts


def judgements(entries: list[Json], search: Search) -> dict[str, Verdict]:
    """Each entry's ``Verdict`` by id; the entries are only read."""
    verdicts = {e["id"]: Verdict() for e in entries}
    judged = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    _pair_twins(judged, verdicts)
    for entry in judged:
        verdicts[entry["id"]].weigh(entry, search)
    ordered = _order(judged, verdicts, list(search.objectives))
    for rank, entry in enumerate(ordered + _unjudged(entries, judged), 1):
        verdicts[entry["id"]].rank = rank
    return verdicts


def _unjudged(entries: list[Json], judged: list[Json]) -> list[Json]:
    """The entries not ``judged`` (not built, or without metrics), in index order."""
    judged_ids = {e["id"] for e in judged}
    return sorted((e for e in entries if e["id"] not in judged_ids), key=lambda e: e["index"])


def _order(
    judged: list[Json], verdicts: dict[str, Verdict], objectives: list[tuple[str, str]]
) -> list[Json]:
    """The judged variants in rank order: those that meet every constraint, those with a
    constraint not judged, those that miss one; each design's twins right after it, on its
    front."""
    built = [e for e in judged if verdicts[e["id"]].same_design_as is None]
    ordered = []
    for state in (True, None, False):
        group = [e for e in built if verdicts[e["id"]].feasible is state]
        ordered += _ranked(group, verdicts, objectives, pareto=state is True)
    return _with_twins(ordered, judged, verdicts)


def _with_twins(
    ordered: list[Json], judged: list[Json], verdicts: dict[str, Verdict]
) -> list[Json]:
    """``ordered`` with each variant's twins (the same design) right after it, on its front."""
    by_id = {e["id"]: e for e in judged}
    for twin in verdicts.values():
        if twin.same_design_as:
            twin.front = verdicts[twin.same_design_as].front
    return [x for e in ordered for x in [e, *(by_id[i] for i in verdicts[e["id"]].same_design)]]


def _pair_twins(judged: list[Json], verdicts: dict[str, Verdict]) -> None:
    """Variants that built the same design: the first (by index) stands for the others."""
    first: dict[str, str] = {}
    for entry in sorted(judged, key=lambda e: e["index"]):
        twin = first.setdefault(entry.get("design") or entry["id"], entry["id"])
        if twin != entry["id"]:
            verdicts[entry["id"]].same_design_as = twin
            verdicts[twin].same_design.append(entry["id"])


def _ranked(
    group: list[Json], verdicts: dict[str, Verdict], objectives: list[tuple[str, str]], pareto: bool
) -> list[Json]:
    """``group`` in rank order: by Pareto front, then by the objectives in the order written,
    then those not ranked; ``pareto``: the group's first front is the Pareto front."""
    ordered = []
    ranked = [e for e in group if not verdicts[e["id"]].unranked]
    for depth, front in enumerate(fronts(ranked, objectives), 1):
        for member in front:
            verdicts[member["id"]].front = depth
            verdicts[member["id"]].pareto = pareto and depth == 1
        ordered += sorted(front, key=lambda e: _objective_key(e, objectives))
    unranked = (e for e in group if verdicts[e["id"]].unranked)
    return ordered + sorted(unranked, key=lambda e: e["index"])


def effects(
    entries: list[Json], dimensions: dict[str, list[object]], compared_on: str = "totals"
) -> list[Json]:
    """Per dimension: for each of its values, how many variants built with it, their mean
    metrics (of each variant's ``compared`` figures: ``compared_on`` says which) and which
    of these means are lower bounds (a mean over a lower bound is one); and how many pairs
    of variants that differ only in this dimension built the same design (all of them: the
    choice changed nothing)."""
    built = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    return [
        _dimension_effect(built, label, values, compared_on) for label, values in dimensions.items()
    ]


def _dimension_effect(
    built: list[Json], label: str, values: list[object], compared_on: str
) -> Json:
    """One dimension's effects: per value, and over the pairs differing only in it."""
    pairs = _pairs(built, label)
    same = sum(1 for a, b in pairs if a.get("design") and a.get("design") == b.get("design"))
    return {"dimension": label, "values": [_value_effect(built, label, v) for v in values],
            "pairs": len(pairs), "same_design_pairs": same,
            "changed_nothing": bool(pairs) and same == len(pairs),
            "compared_on": compared_on}  # fmt: skip


def _value_effect(built: list[Json], label: str, value: object) -> Json:
    """How many variants built with ``label`` at ``value``, their means, which are bounds."""
    group = [e for e in built if _shown(e["choices"].get(label)) == _shown(value)]
    return {"value": value, "variants": len(group), **_means(group),
            "lower_bounds": _bounded(group)}  # fmt: skip


def _means(group: list[Json]) -> dict[str, float | None]:
    """The mean of each of ``EFFECT_METRICS`` over ``group``'s ``compared`` figures."""
    compared = [e.get("compared") or e["metrics"] for e in group]
    return {m: _mean(c.get(m) for c in compared) for m in EFFECT_METRICS}


def _bounded(group: list[Json]) -> list[str]:
    """Those of ``EFFECT_METRICS`` that are a lower bound in one of ``group``."""
    bounds = [e.get("lower_bounds") or {} for e in group]
    return [m for m in EFFECT_METRICS if any(m in b for b in bounds)]


def _pairs(built: list[Json], label: str) -> list[tuple[Json, Json]]:
    """The pairs of variants that differ in ``label`` only."""

    def others(e: Json) -> str:  # the other choices
        return _shown({k: v for k, v in e["choices"].items() if k != label})

    return [(a, b) for i, a in enumerate(built) for b in built[i + 1 :]
            if others(a) == others(b) and a["choices"].get(label) != b["choices"].get(label)]  # fmt: skip


def _shown(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mean(values: Iterable[float | None]) -> float | None:
    numbers = [float(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def _value(entry: Json, metric: str, goal: str) -> float:
    value: float | None = (entry.get("compared") or entry["metrics"]).get(metric)  # like for like
    if value is None:
        return float("inf")  # a missing value is the worst
    return -value if goal == "max" else value


def _objective_key(entry: Json, objectives: list[tuple[str, str]]) -> tuple[float, ...]:
    return (*(_value(entry, m, g) for m, g in objectives), entry["index"])


def dominates(a: Json, b: Json, objectives: list[tuple[str, str]]) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one."""
    pairs = [(_value(a, m, g), _value(b, m, g)) for m, g in objectives]
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def fronts(entries: list[Json], objectives: list[tuple[str, str]]) -> list[list[Json]]:
    """Non-dominated sorting: the Pareto front, then the front of what is left, ..."""
    left, layers = list(entries), []
    while left:
        front = [e for e in left if not any(dominates(o, e, objectives) for o in left)]
        layers.append(front)
        left = [e for e in left if e not in front]
    return layers


def write_json(data: Json, path: str) -> None:
    """Write ``path`` atomically, so a reader never sees half a file."""
    write_text(path, json.dumps(data, indent=2, default=str) + "\n", PUBLIC)
