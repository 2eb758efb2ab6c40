"""FINN's estimate reports of a build (its ``finn/report`` folder), read defensively: a
missing or damaged file reads as empty."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from brainsmith.frameworks.finn.facts import RESOURCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json
    from brainsmith.report_schema.estimates import Counts, Performance

RESOURCE_FILE = "estimate_layer_resources.json"
CYCLES_FILE = "estimate_layer_cycles.json"
COUNTS_FILE = "op_and_param_counts.json"
PERFORMANCE_FILE = "estimate_network_performance.json"


@dataclass(frozen=True)
class FinnReports:
    """What FINN's estimate step wrote: per layer its resources (and their ``total``) and
    cycles, its operation and parameter counts, the network's performance."""

    resources: Json = field(default_factory=dict)
    cycles: Json = field(default_factory=dict)
    counts: Json = field(default_factory=dict)
    performance: Json = field(default_factory=dict)

    @classmethod
    def read(cls, folder: str) -> FinnReports:
        return cls(
            resources=read_report(folder, RESOURCE_FILE),
            cycles=read_report(folder, CYCLES_FILE),
            counts=read_report(folder, COUNTS_FILE),
            performance=read_report(folder, PERFORMANCE_FILE),
        )

    def layer_names(self, described: list[str]) -> list[str]:
        """The layers in graph order (``described``), else as the reports list them; then
        those the reports list that the graph lacks."""
        in_resources = _layers_in(self.resources)
        names = described or in_resources or list(self.cycles)
        listed = [*in_resources, *_layers_in(self.cycles)]
        return names + [n for n in listed if n not in names]

    def totals(self, adjust: dict[str, float]) -> dict[str, float]:
        """FINN's totals, with ``adjust`` (per resource) added."""
        total = self.resources.get("total", {})
        found: dict[str, float] = {key: number(total.get(key, 0)) for key in RESOURCES}
        for key, value in adjust.items():
            found[key] = number(found[key] + value)
        return found

    def network_performance(self) -> Performance:
        """The network's figures, None where FINN has none."""
        found = self.performance
        return {
            "estimated_fps": found.get("estimated_throughput_fps"),
            "estimated_latency_ns": found.get("estimated_latency_ns"),
            "max_cycles": found.get("max_cycles"),
            "max_cycles_layer": found.get("max_cycles_node_name"),
            "critical_path_cycles": found.get("critical_path_cycles"),
        }


def read_report(folder: str, name: str) -> Json:
    """The JSON file ``name`` in ``folder``; empty when it is missing or cannot be read."""
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as handle:
            found: Json = json.load(handle)
            return found
    except (OSError, ValueError):
        return {}


def _layers_in(report: Json) -> list[str]:
    """The layers a per-layer report lists (not its ``total``)."""
    return [name for name in report if name != "total"]


def number(value: float | str | None) -> float | int:
    """A count as FINN writes it: an int where it is whole."""
    found = float(value or 0)
    return int(found) if found.is_integer() else found


def _numbers(found: Json) -> dict[str, float]:
    """The entries of an op_and_param_counts.json entry that are numbers."""
    return {k: v for k, v in found.items() if isinstance(v, int | float)}


def _summed(numbers: dict[str, float], prefix: str) -> float | None:
    return sum(v for k, v in numbers.items() if k.startswith(prefix)) or None


def counts(found: object) -> Counts:
    """A layer's multiply-accumulates per frame and parameters, from FINN's
    op_and_param_counts.json (``op_mac_4bx8b``, ``param_weight_4b``, ... summed over types)."""
    if not isinstance(found, dict) or not found:
        return {"MACs": None, "params": None}
    numbers = _numbers(found)
    return {"MACs": _summed(numbers, "op_"), "params": _summed(numbers, "param_")}


def accelerator_macs(report_dir: str) -> float:
    """FINN's multiply-accumulate count of the accelerator's layers (op_and_param_counts)."""
    counted: object = read_report(report_dir, COUNTS_FILE)
    total = counted.get("total") if isinstance(counted, dict) else None
    if not isinstance(total, dict):
        return 0.0
    return float(_summed(_numbers(total), "op_mac") or 0.0)
