"""Judging variants: their metrics, the constraints they meet, the Pareto front of the
objectives, a ranking, and ``explore.json``.

Ranking: variants that built and meet every constraint come first, by Pareto front (the
front itself is rank 1, the front of the rest rank 2, ...), then by the objectives in the
order written; then variants that miss a constraint, the same way; then failed ones.
"""

from __future__ import annotations

import json
import os

METRIC_NAMES = ("fps", "latency_ns", "LUT", "BRAM_18K", "URAM", "DSP")


def metrics(report: dict) -> dict:
    """``{fps, latency_ns, LUT, BRAM_18K, URAM, DSP}`` from a build's report.json."""
    performance, totals = report.get("performance", {}), report.get("totals", {})
    return {
        "fps": performance.get("estimated_fps"),
        "latency_ns": performance.get("estimated_latency_ns"),
        **{k: totals.get(k) for k in ("LUT", "BRAM_18K", "URAM", "DSP")},
    }


def judge(entries: list[dict], search) -> None:
    """Fill in ``constraints``, ``feasible``, ``pareto`` and ``rank`` of each variant entry
    (``search`` is the blueprint's ``Search``); entries without metrics are not judged."""
    objectives = list(search.objectives)
    built = [e for e in entries if e["status"] == "ok" and e.get("metrics")]
    for entry in entries:
        entry["pareto"] = False
        entry["rank"] = None
        entry["constraints"] = []
        entry["feasible"] = False
    for entry in built:
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
    rest = sorted((e for e in entries if e not in built), key=lambda e: e["index"])
    for rank, entry in enumerate(ordered + rest, 1):
        entry["rank"] = rank


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
