"""explore.json: every variant with its choices, status, metrics, how they were counted,
constraint results, Pareto membership and folder; the segments of the tree; what ran and
what was reused.

``segments_run`` counts the segments this run executed; each variant finished in this run
*uses* the segments on its path, and ``segments_reused`` counts the uses that did not run
their segment again (shared segments, and those an earlier run finished for --resume).
"""

from __future__ import annotations

import os
import time

from brainsmith.dse.counting import compare, counted
from brainsmith.dse.results import effects, judge, lower_bounds, metrics, variant_facts
from brainsmith.dse.tree import counts, render
from brainsmith.plugin.names import short_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.dse.exploration import Exploration
    from brainsmith.dse.tasks import NodeResult
    from brainsmith.dse.tree import Segment
    from brainsmith.dse.variants import Variant
    from brainsmith.files import Json


def assemble(run: Exploration, started: float | None) -> Json:
    """explore.json's content for ``run`` (an ``Exploration``)."""
    from brainsmith.report.contents import versions

    space = run.blueprint.design_space
    assert space is not None  # expand refused a blueprint without one
    variants = [_variant(run, v) for v in run.variants]
    counting = compare(variants)
    judge(variants, space.search)
    dimensions = {d.label: list(d.shown) for d in space.dimensions}
    usage = _usage(run)
    return {
        "name": run.blueprint.name,
        "status": run.status,
        "model": run.model,
        "blueprint": run.blueprint.path,
        "output_dir": run.folder,
        "strategy": space.search.strategy,
        "space_size": space.size,
        "objectives": dict(space.search.objectives),
        "constraints": [str(c) for c in space.search.constraints],
        "dimensions": dimensions,
        "counting": counting,
        "effects": effects(variants, dimensions, counting["compared_on"]),
        "executor": run.executor_facts,
        "variant_timeout": run.variant_timeout,
        "variants": sorted(variants, key=lambda v: v["rank"]),
        "segments": [_segment(run, node) for node in run.nodes.values()],
        **usage,
        "timings": {
            "seconds": round(time.perf_counter() - started, 3) if started else None,
            "setup_seconds": round(run.setup_seconds, 3),
            "teardown_seconds": round(run.teardown_seconds, 3),
            "segment_seconds": round(sum(run.results[i].seconds for i in run.ran), 3),
        },
        "tree": _tree(run),
        "versions": versions(),
    }


def _variant(run: Exploration, variant: Variant) -> Json:
    node = run.nodes[variant.id]
    result = run.results.get(variant.id)
    folder = os.path.relpath(run.node_folder(node), run.folder)
    entry: Json = {
        "id": variant.id,
        "index": variant.index,
        "choices": variant.choices,
        "status": result.status if result else _not_run(run),
        "metrics": None,
        "lower_bounds": {},
        "counting": None,
        "folder": folder,
        "report": os.path.join(folder, "report.html"),
        "segments": [n.id for n in node.path()],
        "seconds": result.seconds if result else None,
        "reused": bool(result and result.reused),
        "error": None,
        "failed_in": "",
    }
    if result is None:
        return entry
    if result.report:
        entry["metrics"] = metrics(result.report)
        entry["lower_bounds"] = lower_bounds(result.report)
        entry["counting"] = counted(result.report, os.path.join(run.folder, folder))
        entry.update(variant_facts(result.report))
    if result.status == "failed":
        _failed(entry, result, run.folder)
    return entry


def _not_run(run: Exploration) -> str:
    """The status of what has no result: cancelled by an interrupt, else still pending."""
    return "cancelled" if run.status == "interrupted" else "pending"


def _failed(entry: Json, result: NodeResult, explored: str) -> None:
    """A failed variant's ``entry``: its error, the segment it failed in, and the report of
    the failing step (a shared segment's, maybe; "" when none was written)."""
    entry["error"] = result.error
    entry["failed_in"] = result.failed_in
    report = (result.error or {}).get("report")
    if report:
        entry["report"] = os.path.relpath(report[: -len(".json")] + ".html", explored)
    if not os.path.isfile(os.path.join(explored, entry["report"])):
        entry["report"] = ""  # it failed before a report could be written


def _segment(run: Exploration, node: Segment) -> Json:
    result = run.results.get(node.id)
    if result is None:
        status = _not_run(run)
    elif result.reused:
        status = "reused"
    else:
        status = result.status
    return {
        "id": node.id,
        "shared": node.shared,
        "steps": [short_name(s) for s in node.steps],
        "first_step": node.start + 1,
        "last_step": node.stop,
        "parent": node.parent.id if node.parent else None,
        "variants": [v.id for v in node.variants],
        "status": status,
        "seconds": result.seconds if result and not result.reused else None,
        "worker": result.worker if result else "",
        "folder": os.path.relpath(run.node_folder(node), run.folder),
    }


def _usage(run: Exploration) -> Json:
    uses = 0
    steps_without = 0
    for variant in run.variants:
        result = run.results.get(variant.id)
        if result is None or result.reused:
            continue
        steps_without += len(variant.keys)
        for node in run.nodes[variant.id].path():
            step = run.results.get(node.id)
            if step is None or step.failed_in:
                break
            uses += 1
            if step.status != "ok":
                break
    ran = len(run.ran)
    return {
        "segments_run": ran,
        "segments_reused": uses - ran,
        "steps_run": sum(run.nodes[i].stop - run.nodes[i].start for i in run.ran),
        "steps_without_reuse": steps_without,
    }


def _tree(run: Exploration) -> list[str]:
    tree = counts(run.roots)
    head = (
        f"{tree.variants} variants, {tree.segments} segments ({tree.shared} shared): "
        f"{tree.steps_run} step runs instead of {tree.steps_without_reuse}"
    )
    return [head, *render(run.roots)]
