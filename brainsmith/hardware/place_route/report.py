"""What a place and route reports, read from the tools' own files: nextpnr's ``--report``
JSON (the achieved Fmax of each clock, each resource's used and available counts: the
device's own totals) and Yosys' ``stat -json`` (cells by type), and the result they make.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from brainsmith.files import DamagedFile, read_json
from brainsmith.hardware.place_route.errors import PlaceRouteError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import CriticalPath

MAX_REPORT_BYTES = 64 * 2**20
# a line of nextpnr's "Device utilisation" table: "Info: 	  ICESTORM_LC:  6974/  5280  132%"
UTILISATION = re.compile(
    r"^Info:\s+(?P<cell>[A-Za-z0-9_$.]+):\s+(?P<used>\d+)/\s*(?P<available>\d+)\s+\d+%"
)


@dataclass
class PlaceRouteResult:
    """A placed and routed design: Fmax per clock against the constraint, resources used and
    available as nextpnr counts them, seconds per stage and the tools' versions."""

    part: str
    constraint_mhz: float
    fmax_mhz: dict[str, float]  # achieved, per clock
    resources: dict[str, dict[str, int]]  # name -> {"used": n, "available": n}
    seconds: dict[str, float]  # "synth_ecp5" (the family's synth), "nextpnr"
    tools: dict[str, str]
    cells: dict[str, int] = field(default_factory=dict)  # synth_<family>'s cells by type
    fixes: list[str] = field(default_factory=list)
    placed: str = "out of context"  # or behind the host link on the part's pins
    critical_path: CriticalPath | None = None  # of the slowest clock, named by layer
    bitstream: str = ""  # the packed bitstream's path, for a family that packs
    sha256: str = ""  # the bitstream's
    cached: bool = False

    @property
    def met(self) -> bool:
        """Every clock reaches the constraint (and there is a clock)."""
        return bool(self.fmax_mhz) and min(self.fmax_mhz.values()) >= self.constraint_mhz

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


def result_of(data: dict[str, Any]) -> PlaceRouteResult:
    """A result from its dict (a cache entry's); ValueError, TypeError or KeyError when it
    is not one."""
    return PlaceRouteResult(
        part=str(data["part"]),
        constraint_mhz=float(data["constraint_mhz"]),
        fmax_mhz={str(k): float(v) for k, v in data["fmax_mhz"].items()},
        resources={
            str(k): {"used": int(v["used"]), "available": int(v["available"])}
            for k, v in data["resources"].items()
        },
        seconds={str(k): float(v) for k, v in data["seconds"].items()},
        tools={str(k): str(v) for k, v in data["tools"].items()},
        cells={str(k): int(v) for k, v in data["cells"].items()},
        fixes=[str(fix) for fix in data["fixes"]],
        placed=str(data.get("placed", "out of context")),
        critical_path=data.get("critical_path")
        if isinstance(data.get("critical_path"), dict)
        else None,
        sha256=str(data.get("sha256", "")),
    )


def cell_counts(path: str) -> dict[str, int]:
    """Cells by type (``LUT4``, ``TRELLIS_FF``, ``MULT18X18D``...) from Yosys' ``stat -json``;
    PlaceRouteError when it is not that file."""
    cells: dict[str, int] = {}
    try:
        for module in read_json(path, MAX_REPORT_BYTES)["modules"].values():
            for kind, number in module.get("num_cells_by_type", {}).items():
                cells[kind.lstrip("\\")] = cells.get(kind.lstrip("\\"), 0) + int(number)
    except (DamagedFile, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlaceRouteError(f"Yosys' cell counts {path} cannot be read: {exc}") from None
    return dict(sorted(cells.items()))


def parse_report(path: str) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """(achieved Fmax per clock in MHz, resources used/available) from nextpnr's ``--report``
    JSON; PlaceRouteError when it is not that report."""
    try:
        report = read_json(path, MAX_REPORT_BYTES)
        fmax = {str(clock): float(entry["achieved"]) for clock, entry in report["fmax"].items()}
        resources = {
            str(name): {"used": int(entry["used"]), "available": int(entry["available"])}
            for name, entry in report["utilization"].items()
        }
    except (DamagedFile, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlaceRouteError(f"nextpnr's report {path} cannot be read: {exc}") from None
    return fmax, resources


def over_capacity(log: str) -> list[tuple[str, int, int]]:
    """(cell, used, available) of each resource nextpnr's log counts more of than the part
    has, in its "Device utilisation" table (a design nextpnr could not place for want of
    them); none when the log cannot be read or no count is over."""
    try:
        with open(log, errors="replace") as handle:
            text = handle.read(MAX_REPORT_BYTES)
    except OSError:
        return []
    over: dict[str, tuple[str, int, int]] = {}
    for line in text.splitlines():
        found = UTILISATION.match(line)
        if found and int(found["used"]) > int(found["available"]) > 0:
            over[found["cell"]] = (found["cell"], int(found["used"]), int(found["available"]))
    return list(over.values())


__all__ = ["PlaceRouteResult", "cell_counts", "over_capacity", "parse_report", "result_of"]
