"""A stitched accelerator made into a bitstream for a board, with brainsmith's host link in
front of it, by the tool chain of the board's family (``Family``: ECP5, Gowin, iCE40): Yosys
reads the accelerator, the link and the board top (``brainsmith.hardware.board.top``, the
family's PLL in it) and maps them (``synth_ecp5 -top board_top``...); the family's nextpnr
places and routes the whole chip with the board's pins (``--lpf``, ``--vopt cst=``,
``--pcf``) at the PLL's clock; its packer packs the routed design into a bitstream, which its
unpacker reads back before it is written to ``<name>.bit`` (``Family.packs_boards``: ECP5's
``ecppack --compress``, Apycula's ``gowin_pack``, ``icepack``): a stopped or failed run
leaves no ``.bit``, or only a whole one.

A PLL whose cell Yosys' blackboxes of the family do not give (Gowin's, the iCE40's) is read
from its declaration (``ClockGenerator.declaration``), a source beside the top. Yosys also
writes the netlist it maps (``netlist.v``, the design nextpnr places) for the gate-level
check (``brainsmith.hardware.board.gate_level``, ECP5's).

A design that misses the clock still gets its bitstream (``status``: "timing not met").
The result, the bitstream and the netlist are cached by content like ``place_route``'s
(``<cache>/bitstream/<key>.json``, ``.bit`` and ``.netlist.gz``, or
``BRAINSMITH_BITSTREAM_CACHE``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from typing import Any

from brainsmith.hardware.board.boards import Board
from brainsmith.hardware.board.families import constraints
from brainsmith.hardware.board.top import Link, baud_rate, board_top, clocks_per_bit
from brainsmith.hardware.place_route.critical_path import named_critical_path
from brainsmith.hardware.place_route.errors import BitstreamError, PlaceRouteError
from brainsmith.hardware.place_route.flow import TIMEOUT, cache_root, refuse_over_capacity
from brainsmith.hardware.place_route.linked import TOP, accelerator_ports, link_sources
from brainsmith.hardware.place_route.packing import MAX_BITSTREAM_BYTES, PARTIAL, Packing
from brainsmith.hardware.place_route.report import cell_counts, parse_report
from brainsmith.hardware.place_route.staging import NETLIST as NETLIST_JSON
from brainsmith.hardware.place_route.staging import stage, yosys_script
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.place_route.toolchain import SEED, Family, Nextpnr, run_nextpnr
from brainsmith.hardware.plan import Plan, Stages, read_entry, remove, stored, write_entry
from brainsmith.hardware.synthesis.layer_sources import MOUNT
from brainsmith.hardware.synthesis.yosys import Yosys, failure, first_error
from brainsmith.hardware.synthesis.yosys import run as run_yosys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.report_schema import CriticalPath

NETLIST = "netlist.v"  # Yosys' netlist of the board top, beside design.json
CACHE_VARIABLE = "BRAINSMITH_BITSTREAM_CACHE"
MAX_NETLIST_BYTES = 512 * 2**20
FLOAT_MAX = sys.float_info.max  # a cached figure past it is no figure a run writes


@dataclass
class BitstreamResult:
    """A board's bitstream: where it is and its SHA-256, the clock the PLL makes against the
    one asked for, Fmax per clock, resources, seconds per stage and the tools' versions."""

    bitstream: str
    sha256: str
    board: str
    part: str
    asked_mhz: float
    clock_mhz: float  # what the PLL makes, the constraint
    baud: int
    clocks_per_bit: int
    fmax_mhz: dict[str, float]
    resources: dict[str, dict[str, int]]
    seconds: dict[str, float]  # "synth", "place_route", "pack"
    tools: dict[str, str]
    cells: dict[str, int] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)
    netlist: str = ""  # Yosys' netlist the bitstream was placed from
    critical_path: CriticalPath | None = None  # of the slowest clock, named by layer
    cached: bool = False

    @property
    def met(self) -> bool:
        return bool(self.fmax_mhz) and min(self.fmax_mhz.values()) >= self.clock_mhz

    @property
    def status(self) -> str:
        return "timing met" if self.met else "timing not met"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met, "status": self.status}


def nextpnr_arguments(design: BitstreamDesign) -> list[str]:
    family = design.family
    return [
        *family.board_arguments(family.parse(design.board.part), f"{MOUNT}/{design.pins[0]}"),
        "--freq", f"{design.clock_mhz:g}",
        "--timing-allow-fail",  # a missed clock is a result: its bitstream is still written
        "--seed", str(SEED),
        "--json", NETLIST_JSON,
        *design.packing.nextpnr_arguments(),
        "--report", f"{MOUNT}/report.json",
    ]  # fmt: skip


@dataclass(frozen=True)
class BitstreamDesign:
    """Everything Yosys and nextpnr read for one board bitstream."""

    full: StitchedDesign  # the accelerator, the link and board_top.sv
    board: Board
    family: Family  # the board's: its synthesis, nextpnr and packer
    asked_mhz: float
    clock_mhz: float
    baud: int
    clocks_per_bit: int
    pins: tuple[str, str]  # the constraints file's name and text (LPF, CST, PCF)
    pll: str  # the PLL's cell (EHXPLLL), from Yosys' models of the family's cells

    @property
    def packing(self) -> Packing:
        packing = self.family.packs_boards
        if packing is None:
            raise BitstreamError(f"brainsmith packs no {self.family.name} bitstream")
        return packing

    def script(self) -> str:
        synthesis = [*self.family.synthesis(TOP, NETLIST_JSON),
                     f"write_verilog -noattr {MOUNT}/{NETLIST}"]  # fmt: skip
        return yosys_script(self.full, synthesis, (self.pll,), self.family.cell_library)

    def plan(self, tools: dict[str, str], name: str) -> Plan:
        """The run making the bitstream ``name`` with ``tools``."""
        commands = [self.script(), *nextpnr_arguments(self)]
        return Plan(tools, commands, [self.pins[1], self.full.digest()], ["bitstream", name])


def board_design(
    design: StitchedDesign,
    board: Board,
    mhz: float,
    *,
    in_words: int,
    out_words: int,
    baud: int | None = None,
    link: list[tuple[str, str]] | None = None,
    family: Family | None = None,
) -> BitstreamDesign:
    """``design`` with the host link and a board top for ``board`` at the PLL clock nearest
    ``mhz`` (``baud``: the fastest standard rate the clock and the board's UART take), for the
    tool chain of its ``family`` (the one its part is of, when not given)."""
    clock = board.pll(mhz)
    ports = accelerator_ports(design)
    rate = baud or baud_rate(clock.output_mhz, board.baud)
    top = board_top(board, clock, ports, Link(rate, in_words, out_words, design.digest()))
    declared = clock.declaration()  # a PLL cell Yosys' models do not give
    cell = [(f"{clock.primitive}.sv", declared)] if declared else []
    sources = [*design.sources, *(link if link is not None else link_sources()), *cell,
               (f"{TOP}.sv", top)]  # fmt: skip
    full = StitchedDesign(
        TOP, sources, design.data, design.primitives, list(design.fixes),
        instances=dict(design.instances),
    )  # fmt: skip
    cycles = clocks_per_bit(clock.output_mhz, rate)
    tools = family or family_of(board)
    return BitstreamDesign(
        full, board, tools, mhz, clock.output_mhz, rate, cycles, constraints(board), clock.primitive
    )


def family_of(board: Board) -> Family:
    """The tool chain of ``board``'s part; BitstreamError when no family of it makes a
    board's bitstream."""
    from brainsmith.hardware.place_route.families import target

    family, _ = target(board.part)
    if not family.makes_boards:
        raise BitstreamError(f"brainsmith makes no {family.name} bitstream for a board")
    return family


def bitstream(
    design: StitchedDesign,
    board: Board,
    mhz: float,
    workdir: str,
    yosys: Yosys,
    nextpnr: Nextpnr,
    *,
    in_words: int,
    out_words: int,
    baud: int | None = None,
    name: str = "accelerator",
    link: list[tuple[str, str]] | None = None,
    timeout: float = TIMEOUT,
    synthesised: Callable[[str, int], None] | None = None,
    family: Family | None = None,
) -> BitstreamResult:
    """``design`` on ``board`` at the PLL clock nearest ``mhz``, as ``workdir``/``name``.bit
    (``workdir`` replaced by a run; a cached result only writes the .bit), with the host link
    framing ``in_words`` input and ``out_words`` output words; BitstreamError with the first
    error of a failed run (its log kept in ``workdir``). ``synthesised`` is told the netlist
    Yosys wrote and its link's clocks per bit as soon as it is written, before nextpnr runs;
    ``family``: the tool chain of ``board``'s part, found when not given."""
    target = board_design(
        design, board, mhz, in_words=in_words, out_words=out_words, baud=baud, link=link,
        family=family,
    )  # fmt: skip
    family, packing = target.family, target.packing
    packer = f"{packing.tool} ({family.package} {version(family.package)})"
    tools = {"yosys": yosys.version, "nextpnr": nextpnr.version,
             packing.tool: family.packer or packer}  # fmt: skip
    plan = target.plan(tools, name)
    root, key = cache_root("bitstream", CACHE_VARIABLE, "bitstream cache"), plan.digest()
    entry, cached_bit, cached_netlist = (
        plan.entry(root, suffix) for suffix in (".json", ".bit", ".netlist.gz")
    )
    path = os.path.join(workdir, f"{name}.bit")
    found = _from_cache(entry, (cached_bit, cached_netlist), key, path, packing)
    if found is not None:  # made at the same PLL clock, maybe asked as another
        found.asked_mhz = float(mhz)
        return found
    stage(target.full, workdir, target.script(), dict([target.pins]))
    content, seconds = _run_tools(target, workdir, timeout, synthesised, tools)
    if not stored(path, content):
        raise BitstreamError(f"{path} cannot be written", "check the disk and its rights")
    remove(os.path.join(workdir, PARTIAL))
    fmax, resources = parse_report(os.path.join(workdir, "report.json"))
    slowest = named_critical_path(os.path.join(workdir, "report.json"), fmax, design.instances)
    result = BitstreamResult(
        path, hashlib.sha256(content).hexdigest(), board.name, board.part, mhz,
        target.clock_mhz, target.baud, target.clocks_per_bit, fmax, resources,
        seconds, tools, cell_counts(os.path.join(workdir, "stat.json")),
        list(design.fixes), os.path.join(workdir, NETLIST), slowest,
    )  # fmt: skip
    with open(result.netlist, "rb") as handle:
        netlist = gzip.compress(handle.read(), compresslevel=6)
    # the .bit and the netlist before the entry that names them
    if stored(cached_bit, content) and stored(cached_netlist, netlist):
        kept = {k: v for k, v in asdict(result).items() if k not in ("cached", "netlist")}
        write_entry(entry, key, kept)
    return result


def _run_tools(
    target: BitstreamDesign,
    workdir: str,
    timeout: float,
    synthesised: Callable[[str, int], None] | None,
    tools: dict[str, str],
) -> tuple[bytes, dict[str, float]]:
    """Yosys, nextpnr, the packer and the unpacker run on the staged ``workdir`` one after
    another (``synthesised`` told of the netlist before nextpnr runs): the bitstream, read
    back as one for the board's part, and each stage's seconds (``tools`` gains
    ``nextpnr_seed`` when nextpnr crashed and ran again with another seed); BitstreamError
    with the first error of a tool that failed."""
    family, packing = target.family, target.packing
    with Stages() as stages:
        code, log = stages.run("synth", run_yosys, workdir, timeout)
        written = all(os.path.isfile(os.path.join(workdir, f)) for f in ("design.json", NETLIST))
        if code != 0 or not written:
            raise BitstreamError(f"{family.synth}: {failure(code, log, timeout)}", f"see {log}")
        if synthesised is not None:
            synthesised(os.path.join(workdir, NETLIST), target.clocks_per_bit)
        command = [*family.command(), *nextpnr_arguments(target)]
        code, log, reseeded = run_nextpnr(stages, "place_route", command, workdir, timeout)
        if reseeded:
            tools["nextpnr_seed"] = reseeded
        configuration = os.path.join(workdir, packing.routed)
        if code != 0:
            try:
                refuse_over_capacity(log, target.board.part)
            except PlaceRouteError as exc:
                raise BitstreamError(exc.reason, exc.hint) from None
        _check(code, log, configuration, family.router, timeout)
        try:
            content = packing.pack(family.package, stages, workdir, target.board.part, timeout,
                                   tools)  # fmt: skip
        except PlaceRouteError as exc:
            raise BitstreamError(exc.reason, exc.hint) from None
    return content, stages.seconds


def _check(code: int | None, log: str, output: str, tool: str, timeout: float) -> None:
    if code != 0 or not os.path.isfile(output):
        reason = f"took longer than {timeout:.0f} s" if code is None else first_error(log)
        raise BitstreamError(f"{tool}: {reason}", f"see {log}")


def _positive(value: object) -> bool:
    """A finite number above 0 (not a bool); an int past a float's range is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 < value < FLOAT_MAX  # NaN and infinity fail too; an int compares exactly


def _figures_sane(result: BitstreamResult) -> bool:
    """Whether a cached result's numbers are what a run writes: finite, positive, of their
    types (a cache entry of other numbers is not used)."""
    fmax = result.fmax_mhz
    return (
        all(_positive(v) for v in (result.asked_mhz, result.clock_mhz, result.baud))
        and isinstance(result.clocks_per_bit, int) and result.clocks_per_bit > 0
        and isinstance(fmax, dict) and all(isinstance(k, str) and _positive(v) for k, v in fmax.items())
    )  # fmt: skip


def _from_cache(
    entry: str, cached: tuple[str, str], key: str, path: str, packing: Packing
) -> BitstreamResult | None:
    """The cached result of ``key`` with its bitstream written to ``path`` and its netlist
    beside it; None when the entry, the .bit or the netlist (``cached``) is missing or they
    do not match (then all are removed), or when they cannot be written out."""
    data = read_entry(entry, key)
    if data is None:
        return None
    folder = os.path.dirname(path) or "."
    netlist = os.path.join(folder, NETLIST)
    try:
        with open(cached[0], "rb") as handle:
            content = handle.read(MAX_BITSTREAM_BYTES + 1)
        with gzip.open(cached[1], "rb") as handle:
            text = handle.read(MAX_NETLIST_BYTES + 1)
        result = BitstreamResult(**{**data, "bitstream": path, "netlist": netlist, "cached": True})
        usable = hashlib.sha256(
            content
        ).hexdigest() == result.sha256 and packing.reads_as_bitstream(content)
        usable = usable and len(text) <= MAX_NETLIST_BYTES and _figures_sane(result)
    except (OSError, TypeError, EOFError, gzip.BadGzipFile):
        usable = False
    if usable:  # an entry that cannot be written out (a full disk) stays for the next run
        os.makedirs(folder, exist_ok=True)
        written = stored(path, content) and stored(netlist, text)
        return result if written else None
    remove(entry, *cached)
    return None


__all__ = ["BitstreamError", "BitstreamResult", "bitstream", "board_design", "family_of"]
