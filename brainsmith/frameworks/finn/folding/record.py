"""The folding record (``folding.json`` in FINN's report folder): written whole, and read
back from a checkpoint a build continues; the part a folding is costed on where it is not
FINN's (``CostedPart``). Free of FINN: ``target`` folds and records."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import cast

from brainsmith.files import write_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from brainsmith.frameworks.finn.folding.search import FoldingRecord

RECORD = "folding.json"


@dataclass(frozen=True)
class CostedPart:
    """A part a folding is costed on in its own resources where FINN makes the layers for
    another: a Lattice part, its capacities read from nextpnr, its layers costed in its
    family's fitted models."""

    name: str  # the part's name, as a build names it
    available: dict[str, int]  # LUT4, FF, MULT18, EBR
    source: str  # which tool said so
    cost_models: str  # the family's fitted cost models (``rtl_costs.family_estimate``)
    # the share of each resource its family's router places: the search fills no more
    fill: float = 1.0


def read_record(report_dir: str) -> tuple[FoldingRecord | None, str | None]:
    """``folding.json`` left in ``report_dir`` by the folding step (of a checkpoint this
    build continues): ``(None, None)`` without one, ``(None, problem)`` when it cannot be
    read or has another shape."""
    path = os.path.join(report_dir, RECORD)
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({exc}); the bottleneck's cause is not shown"
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, dict) or not all(isinstance(v, dict) for v in layers.values()):
        return None, (
            f"{path} has no 'layers' object of layer entries; the bottleneck's cause is not shown"
        )
    return cast("FoldingRecord", data), None


def write_json(path: str, data: Mapping[str, object]) -> None:
    """``data`` as JSON at ``path``, written whole or not at all."""

    def dump(temporary: str) -> None:
        with open(temporary, "w") as handle:
            json.dump(data, handle, indent=1, default=str)

    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, dump)
