"""Every layer of a build with its estimates: FINN's where it has them, brainsmith's
(``frameworks/finn/rtl_costs.py``) where FINN has none or brainsmith replaces them, the
totals with brainsmith's numbers in them, and the network's performance."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from brainsmith.frameworks.finn.estimation.coverage import incomplete, kind, not_estimated
from brainsmith.frameworks.finn.estimation.finn_reports import FinnReports, counts, number
from brainsmith.frameworks.finn.estimation.layer_facts import layer_attributes
from brainsmith.frameworks.finn.facts import RESOURCES
from brainsmith.frameworks.finn.rtl_costs import REPLACED, family_estimate
from brainsmith.frameworks.finn.rtl_costs import estimate as rtl_estimate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.frameworks.finn.facts import Resource
    from brainsmith.report_schema.estimates import Estimates, Layer, LayerFacts


@dataclass(frozen=True)
class Ours:
    """brainsmith's estimates of a layer (``numbers``, per resource) and who estimated the
    rest of it: "brainsmith" for brainsmith's own layers, else "finn"."""

    numbers: dict[str, float] = field(default_factory=dict)
    source: str = "finn"


def estimates(
    report_dir: str,
    model: ModelWrapper | None = None,
    output_dir: str = "",
    part: str | None = None,
) -> Estimates:
    """Every layer of ``model`` with FINN's estimates where they exist, totals, performance.
    A layer a step after FINN's estimates inserted (``size_fifos``' FIFOs and width
    converters) is estimated by FINN's own methods for ``part`` here."""
    reports = FinnReports.read(report_dir)
    if model is not None and part and reports.resources:
        reports = with_late_layers(model, part, reports)
    described = layer_attributes(model, output_dir) if model is not None else {}
    ours = _ours(model, part, reports) if model is not None else {}
    layers, adjust = _layers(reports, described, ours)
    return {
        "layers": layers,
        "totals": reports.totals(adjust) if reports.resources else {},
        "incomplete": incomplete(layers) if reports.resources else {},
        "performance": reports.network_performance(),
    }


def _layers(
    reports: FinnReports, described: dict[str, LayerFacts], ours: dict[str, Ours]
) -> tuple[list[Layer], dict[str, float]]:
    """Each layer's entry, in order (``described``: the graph's, ``ours``: brainsmith's
    estimates), and per resource brainsmith's numbers in them less FINN's."""
    layers: list[Layer] = []
    adjust: dict[str, float] = {}
    for name in reports.layer_names(list(described)):
        facts: LayerFacts = described.get(name, {"op_type": "", "backend": ""})
        layer, added = _layer(name, facts, reports, ours.get(name, Ours()))
        layers.append(layer)
        for key, value, finns in added:  # FINN's total counts its own number, or a 0
            adjust[key] = adjust.get(key, 0.0) + value - finns
    return layers, adjust


def _layer(
    name: str, facts: LayerFacts, reports: FinnReports, ours: Ours
) -> tuple[Layer, list[tuple[str, float, float]]]:
    """Layer ``name``'s entry, and each of brainsmith's numbers in it with FINN's number it
    takes the place of in the total (a resource, brainsmith's, FINN's or 0)."""
    listed = name in reports.resources
    estimated = listed or name in reports.cycles
    missing = not_estimated(facts) if listed else RESOURCES
    filled = _filled(facts, ours.numbers, missing)
    finn = reports.resources.get(name, {})
    found = {**finn, **filled}
    missing = tuple(key for key in missing if key not in filled)
    layer: Layer = {
        "name": name,
        **facts,
        "estimated": estimated,
        "LUT": _amount(found, "LUT", missing),
        "BRAM_18K": _amount(found, "BRAM_18K", missing),
        "URAM": _amount(found, "URAM", missing),
        "DSP": _amount(found, "DSP", missing),
        "not_estimated": list(missing),
        "estimated_by": _estimated_by(filled, ours.source, missing) if listed else {},
        "cycles": number(reports.cycles.get(name)) if estimated else None,
        **counts(reports.counts.get(name)),
    }
    return layer, _in_place_of(filled, finn)


def _in_place_of(filled: dict[str, float], finn: Json) -> list[tuple[str, float, float]]:
    """Each of brainsmith's numbers (``filled``) with FINN's number it takes the place of
    (``finn``: the layer's entry in FINN's report; 0 where it has none)."""
    return [(key, value, float(number(finn.get(key)) or 0)) for key, value in filled.items()]


def _estimated_by(
    filled: dict[str, float], source: str, missing: tuple[str, ...]
) -> dict[str, str]:
    """Per resource a layer has an estimate of: "brainsmith" for brainsmith's numbers (in
    ``filled``), else ``source``."""
    return {
        key: "brainsmith" if key in filled else source for key in RESOURCES if key not in missing
    }


def _filled(
    facts: LayerFacts, numbers: dict[str, float], missing: tuple[str, ...]
) -> dict[str, float]:
    """brainsmith's numbers a layer takes: where FINN has none, or brainsmith replaces it."""
    replaced = REPLACED.get(kind(facts), ())
    return {k: v for k, v in numbers.items() if k in missing or k in replaced}


def _amount(found: dict[str, float], key: Resource, missing: tuple[str, ...]) -> float | None:
    """A layer's estimate of resource ``key`` from ``found`` (its estimate_layer_resources.json
    entry): None where FINN has no estimate."""
    return None if key in missing else number(found.get(key))


def with_late_layers(model: ModelWrapper, part: str, reports: FinnReports) -> FinnReports:
    """``reports`` with the hardware layers of ``model`` they do not list, estimated as FINN's
    estimate step does (the layer's ``node_res_estimation`` and ``get_exp_cycles``), and the
    total with them."""
    from qonnx.custom_op.registry import getCustomOp

    resources, cycles = dict(reports.resources), dict(reports.cycles)
    total = dict(resources.get("total", {}))
    for node in model.graph.node:
        if node.name in resources:
            continue
        try:
            op = getCustomOp(node)
            found = op.node_res_estimation(part)  # a hardware layer's (FINN's HWCustomOp)
            cycles[node.name] = op.get_exp_cycles()
        except Exception:  # a layer FINN cannot estimate stays not estimated
            continue
        resources[node.name] = found
        for key in RESOURCES:
            total[key] = total.get(key, 0) + found.get(key, 0)
    resources["total"] = total
    return replace(reports, resources=resources, cycles=cycles)


def _ours(model: ModelWrapper, part: str | None, reports: FinnReports) -> dict[str, Ours]:
    """brainsmith's estimates of the layers FINN's reports list."""
    if not reports.resources:
        return {}
    found = brainsmith_estimates(model, part)
    return {name: ours for name, ours in found.items() if name in reports.resources}


def brainsmith_estimates(model: ModelWrapper, part: str | None = None) -> dict[str, Ours]:
    """Per hardware layer: brainsmith's estimates of what FINN does not estimate in it, or
    estimates as it does not build (``frameworks/finn/rtl_costs.py``), and who estimated the
    rest: "brainsmith" for brainsmith's own layers (their estimation methods), else "finn"."""
    from qonnx.custom_op.registry import getCustomOp

    found: dict[str, Ours] = {}
    for node in model.graph.node:
        try:
            op = getCustomOp(node)
        except Exception:  # a node without an op class: FINN did not estimate it either
            continue
        own = type(op).__module__.split(".")[0] == "brainsmith"
        numbers = rtl_estimate(op, part, model, report=True)
        found[node.name] = Ours(numbers, "brainsmith" if own else "finn")
    return found


def family_estimates(
    model: ModelWrapper, names: list[str], cost_models: str
) -> dict[str, dict[str, float] | None]:
    """Per layer of ``names``: its LUT4, FF, MULT18 and EBR on a Lattice part from its
    family's fitted models ``cost_models`` (``rtl_costs.family_estimate``, thresholds read
    from ``model``), each to 0.1; None for a layer of a kind without a model (or not in
    ``model``)."""
    from qonnx.custom_op.registry import getCustomOp

    nodes = {node.name: node for node in model.graph.node}
    found: dict[str, dict[str, float] | None] = {}
    for name in names:
        try:
            figures = family_estimate(getCustomOp(nodes[name]), cost_models, model)
        except Exception:  # not in the model, no op class, or attributes a failed build left
            figures = None  # unestimated, as a kind without a model: the report is still written
        found[name] = None if figures is None else {k: round(v, 1) for k, v in figures.items()}
    return found
