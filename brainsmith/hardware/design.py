"""One description of a build's stitched accelerator, ``design.json`` in its folder: its top,
its files by type (its sources in compile order and each layer's memory files), the width
and words a frame of its two streams, its FIFOs' probes, its clock, its part, its
pipelined interval and the layer each instance of the top is.

The build writes it once (``brainsmith.hardware.board.description.describe``); Verilator
(the simulated board), Yosys and nextpnr (``place-route``, ``bitstream``), the gate-level
check, ``run`` and ``export`` read it back through the gate (``brainsmith.intake.gate``) as a
``Design``. A build folder is untrusted input: ``Design.of_json`` takes only what has the
right type and range, and a path only when it is relative and plain: in the build folder
(``finn/...``) or in FINN's installed RTL library (``finn-rtllib/...``), each problem named
with its key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brainsmith.clock import Clock

FILE = "design.json"
FORMAT = 1  # bump when what design.json holds changes
LIBRARY = "finn-rtllib/"  # a path of FINN's installed RTL library, not of the build
KINDS = {  # a file's type by its name's ending, as edalize and FuseSoC name them
    ".sv": "systemVerilogSource",
    ".svh": "systemVerilogSource",
    ".v": "verilogSource",
    ".vh": "verilogSource",
    ".dat": "memoryInitFile",
}
MAX_FILES = 20_000
MAX_BITS = 1 << 16  # a stream's TDATA width
MAX_WORDS = 1 << 31  # a stream's words a frame
INTERVAL_SOURCES = ("Verilator", "estimate")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")  # a top, a probe, a layer
INSTANCE = re.compile(r"n\d{1,6}")  # the top's instance names
PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # LFE5U-85F-6BG381C, xczu7ev-ffvc1156-2-e
SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=-]{0,199}")


class BadDesign(ValueError):
    """design.json does not describe a design: each of ``problems`` names its key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Stream:
    """One AXI stream of the accelerator: its TDATA width and its words a frame."""

    bits: int
    words: int


@dataclass(frozen=True)
class DesignFile:
    """One file of the design: its path (``finn/...`` in the build folder, ``finn-rtllib/...``
    in FINN's library) and its type (``KINDS``)."""

    path: str
    kind: str

    @property
    def in_build(self) -> bool:
        """Whether the file is the build's own (a layer's generated RTL or memory)."""
        return not self.path.startswith(LIBRARY)


@dataclass(frozen=True)
class Design:
    """A build's stitched accelerator, as every tool that reads it reads it."""

    top: str
    part: str
    clock: Clock
    input: Stream
    output: Stream
    probes: tuple[str, ...] = ()
    # cycles a frame when frames stream back to back, and where the figure comes from
    interval: tuple[float, str] | None = None
    files: tuple[DesignFile, ...] = ()
    instances: Mapping[str, str] = field(default_factory=dict)

    @property
    def sources(self) -> tuple[DesignFile, ...]:
        """The RTL sources in compile order."""
        return tuple(f for f in self.files if f.kind != "memoryInitFile")

    def memories(self, code_dir: str) -> tuple[DesignFile, ...]:
        """The memory files (weights, thresholds) of the layer whose code folder is
        ``code_dir`` (a path of the build folder, as ``files`` name them)."""
        return tuple(
            f
            for f in self.files
            if f.kind == "memoryInitFile" and f.path.rpartition("/")[0] == code_dir
        )

    def as_json(self) -> dict[str, Any]:
        """design.json's object."""
        return {
            "format": FORMAT,
            "top": self.top,
            "part": self.part,
            "clock_ns": self.clock.ns,
            "input": {"bits": self.input.bits, "words": self.input.words},
            "output": {"bits": self.output.bits, "words": self.output.words},
            "probes": list(self.probes),
            "interval": None
            if self.interval is None
            else {"cycles": self.interval[0], "source": self.interval[1]},
            "files": [{"path": f.path, "type": f.kind} for f in self.files],
            "instances": dict(self.instances),
        }

    @classmethod
    def of_json(cls, data: object) -> Design:
        """The design ``data`` (design.json's object) describes; BadDesign naming each key
        that has the wrong type or range, or a path that leaves the build and the library."""
        problems: list[str] = []
        read = _Reader(data if isinstance(data, dict) else {}, problems)
        if not isinstance(data, dict):
            raise BadDesign([f"{FILE} is not an object"])
        if data.get("format") != FORMAT:
            raise BadDesign([f"{FILE}: format {data.get('format')!r} is not {FORMAT}: build again"])
        design = cls(
            top=read.name("top"),
            part=read.part(),
            clock=read.clock(),
            input=read.stream("input"),
            output=read.stream("output"),
            probes=read.probes(),
            interval=read.interval(),
            files=read.files(),
            instances=read.instances(),
        )
        if problems:
            raise BadDesign(problems)
        return design


class _Reader:
    """design.json's values, each checked; a problem is added to ``problems`` and a value
    of the right type put in its place."""

    def __init__(self, data: dict[str, Any], problems: list[str]) -> None:
        self.data, self.problems = data, problems

    def _bad(self, key: str, what: str) -> None:
        self.problems.append(f"{FILE}: {key} {_shown(self.data.get(key))} is not {what}")

    def name(self, key: str) -> str:
        value = self.data.get(key)
        if isinstance(value, str) and NAME.fullmatch(value):
            return value
        self._bad(key, "a Verilog name")
        return "_"

    def part(self) -> str:
        value = self.data.get("part")
        if isinstance(value, str) and (value == "" or PART.fullmatch(value)):
            return value
        self._bad("part", "a part name")
        return ""

    def clock(self) -> Clock:
        clock = Clock.read_ns(self.data.get("clock_ns"))
        if clock is None:
            self._bad("clock_ns", "a clock period in ns")
        return clock or Clock(1.0)

    def stream(self, key: str) -> Stream:
        value = self.data.get(key)
        bits = value.get("bits") if isinstance(value, dict) else None
        words = value.get("words") if isinstance(value, dict) else None
        if _count(bits, MAX_BITS) and _count(words, MAX_WORDS):
            return Stream(int(bits), int(words))  # type: ignore[arg-type]
        self._bad(key, "a stream ({'bits': N, 'words': M}, each a count above 0)")
        return Stream(1, 1)

    def probes(self) -> tuple[str, ...]:
        value = self.data.get("probes")
        if isinstance(value, list) and all(isinstance(p, str) and NAME.fullmatch(p) for p in value):
            return tuple(value)
        self._bad("probes", "a list of Verilog names")
        return ()

    def interval(self) -> tuple[float, str] | None:
        value = self.data.get("interval")
        if value is None:
            return None
        cycles = value.get("cycles") if isinstance(value, dict) else None
        source = value.get("source") if isinstance(value, dict) else None
        if _figure(cycles) and source in INTERVAL_SOURCES:
            return float(cycles), str(source)  # type: ignore[arg-type]
        self._bad("interval", f"cycles above 0 from {' or '.join(INTERVAL_SOURCES)}")
        return None

    def files(self) -> tuple[DesignFile, ...]:
        value = self.data.get("files")
        if not isinstance(value, list) or not 0 < len(value) <= MAX_FILES:
            self._bad("files", f"a list of 1 to {MAX_FILES:,} files")
            return ()
        found = []
        for number, entry in enumerate(value):
            path = entry.get("path") if isinstance(entry, dict) else None
            kind = entry.get("type") if isinstance(entry, dict) else None
            if isinstance(path, str) and _plain_path(path) and kind == _kind(path):
                found.append(DesignFile(path, str(kind)))
            else:
                self.problems.append(
                    f"{FILE}: files[{number}] {_shown(entry)} is not a file of the build "
                    f"(finn/...) or of FINN's library ({LIBRARY}...) with its type"
                )
        return tuple(found)

    def instances(self) -> dict[str, str]:
        value = self.data.get("instances")
        if isinstance(value, dict) and all(
            INSTANCE.fullmatch(k) and isinstance(v, str) and NAME.fullmatch(v)
            for k, v in value.items()
        ):
            return dict(value)
        self._bad("instances", "an object of instance names (n3) and layer names")
        return {}


def kind_of(path: str) -> str:
    """The type of the design file ``path`` (``KINDS``); ValueError for another ending."""
    kind = _kind(path)
    if kind is None:
        raise ValueError(f"{path} is not a Verilog, SystemVerilog or memory file")
    return kind


def _kind(path: str) -> str | None:
    return KINDS.get("." + path.rpartition(".")[2]) if "." in path else None


def _plain_path(path: str) -> bool:
    """A relative path of plain segments (in the build folder, or ``finn-rtllib/...``): no
    ``..``, no absolute path, no backslash."""
    segments = path.split("/")
    return len(path) <= 1000 and all(
        SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments
    )


def _figure(value: object) -> bool:
    """A finite number above 0 (not a truth value)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value > 0  # type: ignore[arg-type,operator]


def _count(value: object, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= limit


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["FILE", "FORMAT", "LIBRARY", "BadDesign", "Design", "DesignFile", "Stream", "kind_of"]
