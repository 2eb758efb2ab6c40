"""Judging variants: their metrics, the constraints they meet, the Pareto front of the
objectives, a ranking, and ``explore.json``.

Ranking: variants that built and meet every constraint come first, by Pareto front (the
front itself is rank 1, the front of the rest rank 2, ...), then by the objectives in the
order written; then variants that miss a constraint, the same way; then failed ones.
Variants that built the same design (a choice that changed nothing) are judged once: the
first of them stands for the others, which are ranked right after it.
"""

from __future__ import annotations

import hashlib
import json
import os

from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report.schema import BuildReport

METRIC_NAMES = ("fps", "latency_ns", *RESOURCES)


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


def judge(entries: list[dict], search) -> None:
    """Fill in ``constraints``, ``feasible``, ``pareto``, ``rank`` and ``same_design_as``
    of each variant entry (``search`` is the blueprint's ``Search``); entries without
    metrics are not judged."""
    objectives = list(search.objectives)
    for entry in entries:
        entry["pareto"] = False
        entry["rank"] = None
        entry["constraints"] = []
        entry["feasible"] = False
        entry["same_design_as"] = None
        entry["same_design"] = []
    every = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    first: dict[str, dict] = {}
    for entry in sorted(every, key=lambda e: e["index"]):
        twin = first.setdefault(entry.get("design") or entry["id"], entry)
        if twin is not entry:
            entry["same_design_as"] = twin["id"]
            twin["same_design"].append(entry["id"])
    built = [e for e in every if e["same_design_as"] is None]
    for entry in every:
        entry["constraints"] = [
            {"constraint": str(c), "ok": c.holds(entry["metrics"])} for c in search.constraints
        ]
        entry["feasible"] = all(c["ok"] for c in entry["constraints"])
    feasible = [e for e in built if e["feasible"]]
    infeasible = [e for e in built if not e["feasible"]]
    for front in fronts(feasible, objectives)[:1]:
        for member in front:
            member["pareto"] = True
    ordered = []
    for group in (feasible, infeasible):
        for depth, front in enumerate(fronts(group, objectives), 1):
            for member in front:
                member["front"] = depth
            ordered += sorted(front, key=lambda e: _objective_key(e, objectives))
    copies = {e["id"]: e for e in every if e["same_design_as"]}
    ordered = [x for e in ordered for x in [e, *(copies[i] for i in e["same_design"])]]
    for copy in copies.values():
        copy["front"] = next(e for e in every if e["id"] == copy["same_design_as"]).get("front")
    rest = sorted((e for e in entries if e not in every), key=lambda e: e["index"])
    for rank, entry in enumerate(ordered + rest, 1):
        entry["rank"] = rank


def effects(entries: list[dict], dimensions: dict[str, list]) -> list[dict]:
    """Per dimension: for each of its values, how many variants built with it and their mean
    metrics; and how many pairs of variants that differ only in this dimension built the
    same design (all of them: the choice changed nothing)."""
    built = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    found = []
    for label in dimensions:
        key = lambda e, label=label: json.dumps(  # noqa: E731  # the other choices
            {k: v for k, v in e["choices"].items() if k != label}, sort_keys=True, default=str
        )
        values = []
        for value in dimensions[label]:
            group = [e for e in built if _shown(e["choices"].get(label)) == _shown(value)]
            means = {m: _mean(e["metrics"].get(m) for e in group) for m in ("fps", "LUT", "DSP")}
            values.append({"value": value, "variants": len(group), **means})
        pairs = [(a, b) for i, a in enumerate(built) for b in built[i + 1 :]
                 if key(a) == key(b) and a["choices"].get(label) != b["choices"].get(label)]  # fmt: skip
        same = sum(1 for a, b in pairs if a.get("design") and a.get("design") == b.get("design"))
        found.append({"dimension": label, "values": values, "pairs": len(pairs),
                      "same_design_pairs": same, "changed_nothing": bool(pairs) and same == len(pairs)})  # fmt: skip
    return found


def _shown(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mean(values) -> float | None:
    numbers = [float(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def _value(entry: dict, metric: str, goal: str) -> float:
    value = entry["metrics"].get(metric)
    if value is None:
        return float("inf")  # a missing value is the worst
    return -value if goal == "max" else value


def _objective_key(entry: dict, objectives: list[tuple[str, str]]) -> tuple:
    return (*(_value(entry, m, g) for m, g in objectives), entry["index"])


def dominates(a: dict, b: dict, objectives: list[tuple[str, str]]) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one."""
    pairs = [(_value(a, m, g), _value(b, m, g)) for m, g in objectives]
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def fronts(entries: list[dict], objectives: list[tuple[str, str]]) -> list[list[dict]]:
    """Non-dominated sorting: the Pareto front, then the front of what is left, ..."""
    left, layers = list(entries), []
    while left:
        front = [e for e in left if not any(dominates(o, e, objectives) for o in left)]
        layers.append(front)
        left = [e for e in left if e not in front]
    return layers


def write_json(data: dict, path: str) -> None:
    """Write ``path`` atomically, so a reader never sees half a file."""
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=2, default=str)
        handle.write("\n")
    os.replace(temporary, path)
