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
import os

from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from brainsmith.blueprint.space import Constraint, Search
    from brainsmith.files import Json
    from brainsmith.report.schema import BuildReport

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


def judge(entries: list[Json], search: Search) -> None:
    """Fill in ``constraints``, ``feasible`` (None: a constraint not judged), ``unranked``
    (why not), ``pareto``, ``front``, ``rank`` and ``same_design_as`` of each variant entry
    (``search`` is the blueprint's ``Search``); entries without metrics are not judged."""
    objectives = list(search.objectives)
    for entry in entries:
        entry["pareto"] = False
        entry["rank"] = None
        entry["front"] = None
        entry["unranked"] = None
        entry["constraints"] = []
        entry["feasible"] = False
        entry["same_design_as"] = None
        entry["same_design"] = []
    every = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    first: dict[str, Json] = {}
    for entry in sorted(every, key=lambda e: e["index"]):
        twin = first.setdefault(entry.get("design") or entry["id"], entry)
        if twin is not entry:
            entry["same_design_as"] = twin["id"]
            twin["same_design"].append(entry["id"])
    built = [e for e in every if e["same_design_as"] is None]
    for entry in every:
        bounds = entry.get("lower_bounds") or {}
        entry["constraints"] = [verdict(c, entry["metrics"], bounds) for c in search.constraints]
        found = [c["ok"] for c in entry["constraints"]]
        entry["feasible"] = False if False in found else (None if None in found else True)
        entry["unranked"] = unranked(entry, objectives)
    ordered = []
    for state in (True, None, False):
        group = [e for e in built if e["feasible"] is state]
        ranked = [e for e in group if not e["unranked"]]
        for depth, front in enumerate(fronts(ranked, objectives), 1):
            for member in front:
                member["front"] = depth
                member["pareto"] = state is True and depth == 1
            ordered += sorted(front, key=lambda e: _objective_key(e, objectives))
        ordered += sorted((e for e in group if e["unranked"]), key=lambda e: e["index"])
    copies = {e["id"]: e for e in every if e["same_design_as"]}
    ordered = [x for e in ordered for x in [e, *(copies[i] for i in e["same_design"])]]
    for copy in copies.values():
        copy["front"] = next(e for e in every if e["id"] == copy["same_design_as"])["front"]
    rest = sorted((e for e in entries if e not in every), key=lambda e: e["index"])
    for rank, entry in enumerate(ordered + rest, 1):
        entry["rank"] = rank


def effects(
    entries: list[Json], dimensions: dict[str, list[object]], compared_on: str = "totals"
) -> list[Json]:
    """Per dimension: for each of its values, how many variants built with it, their mean
    metrics (of each variant's ``compared`` figures: ``compared_on`` says which) and which
    of these means are lower bounds (a mean over a lower bound is one); and how many pairs
    of variants that differ only in this dimension built the same design (all of them: the
    choice changed nothing)."""
    built = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    found = []
    for label in dimensions:

        def key(e: Json, label: str = label) -> str:  # the other choices
            return json.dumps(
                {k: v for k, v in e["choices"].items() if k != label}, sort_keys=True, default=str
            )

        values = []
        for value in dimensions[label]:
            group = [e for e in built if _shown(e["choices"].get(label)) == _shown(value)]
            means = {
                m: _mean((e.get("compared") or e["metrics"]).get(m) for e in group)
                for m in EFFECT_METRICS
            }
            bounds = [e.get("lower_bounds") or {} for e in group]
            bounded = [m for m in EFFECT_METRICS if any(m in b for b in bounds)]
            values.append(
                {"value": value, "variants": len(group), **means, "lower_bounds": bounded}
            )
        pairs = [(a, b) for i, a in enumerate(built) for b in built[i + 1 :]
                 if key(a) == key(b) and a["choices"].get(label) != b["choices"].get(label)]  # fmt: skip
        same = sum(1 for a, b in pairs if a.get("design") and a.get("design") == b.get("design"))
        found.append({"dimension": label, "values": values, "pairs": len(pairs),
                      "same_design_pairs": same, "changed_nothing": bool(pairs) and same == len(pairs),
                      "compared_on": compared_on})  # fmt: skip
    return found


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
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=2, default=str)
        handle.write("\n")
    os.replace(temporary, path)
