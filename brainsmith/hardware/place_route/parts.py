"""The parts of every family brainsmith places, as their nextpnr names them (a leaf: the
blueprint's checks and the build's plan read part names here too; ``built_in_part`` reads
any of them): an ECP5 name such as ``LFE5U-85F-6BG381C`` read as its device (``--85k``),
speed grade (``--speed 6``) and package (``--package CABGA381``) (ECP5 family data sheet,
FPGA-DS-02012); a Nexus name such as ``LIFCL-40-9BG400C`` checked against the devices and
packages nextpnr-nexus has and passed whole (``--device``); an iCE40 ordering code
(``iCE40UP5K-SG48``: ``--up5k --package sg48``); a Gowin part of a board amaranth-boards
describes (``GW2A-LV18PG256C8``, on that board's pins); a GateMate device (``CCGM1A1``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from brainsmith.errors import BrainsmithError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Part(Protocol):
        """A Lattice part as its nextpnr places it (``Ecp5Part``, ``NexusPart``)."""

        @property
        def name(self) -> str: ...

        @property
        def speed(self) -> int: ...

        def arguments(self) -> list[str]: ...


# What each family's part names start with (``families.target`` reads the family's own)
ECP5_PREFIXES = ("LFE5",)
NEXUS_PREFIXES = ("LIFCL", "LFD2NX")

# family prefix -> nextpnr's device flag prefix; the sizes each family comes in
FAMILIES: dict[str, tuple[str, tuple[int, ...]]] = {
    "LFE5U": ("", (12, 25, 45, 85)),
    "LFE5UM": ("um-", (25, 45, 85)),
    "LFE5UM5G": ("um5g-", (25, 45, 85)),
}
# ordering-code package letters -> nextpnr's package name (pins follow)
PACKAGES = {"BG": "CABGA", "MG": "CSFBGA", "TG": "TQFP"}
SPEEDS = (6, 7, 8)
PART = re.compile(
    r"(?P<family>LFE5U(?:M5G|M)?)-(?P<size>\d+)F-(?P<speed>\d)(?P<package>[A-Z]{2})"
    r"(?P<pins>\d+)(?P<grade>[CI])(?:ES)?",
    re.I,
)
EXAMPLES = ("LFE5U-85F-6BG381C", "LFE5U-25F-6BG256C", "LFE5UM5G-85F-8BG381C")


class UnknownPart(BrainsmithError):
    """A part name that is not an ECP5 part nextpnr-ecp5 places; the message lists the known
    ones."""


@dataclass(frozen=True)
class Ecp5Part:
    """One ECP5 part: its name and nextpnr-ecp5's arguments for it."""

    name: str
    device: str  # nextpnr's device flag without dashes: "85k", "um5g-85k"
    speed: int
    package: str  # "CABGA381"

    def arguments(self) -> list[str]:
        return [f"--{self.device}", "--package", self.package, "--speed", str(self.speed)]


def _naming(
    family: str,
    layout: str,
    parts: str,
    speeds: tuple[int, ...],
    rest: str,
    examples: tuple[str, ...],
) -> str:
    """What a part name of ``family`` is made of, for an error message."""
    return (
        f"{family} parts are {layout}: {parts}; speed {'/'.join(map(str, speeds))}; {rest}, "
        "e.g. " + ", ".join(examples)
    )


def _read(pattern: re.Pattern[str], name: str, family: str, known: str) -> re.Match[str]:
    """``name`` matched whole by ``pattern``; UnknownPart listing the ``known`` parts otherwise."""
    match = pattern.fullmatch(name.strip())
    if match is None:
        raise UnknownPart(f"{name!r} is not {family} part name; {known}")
    return match


def _refuse_first(problems: tuple[tuple[bool, str], ...], known: str) -> None:
    """UnknownPart for the first of ``problems`` (found, what is wrong) that was found."""
    for found, what in problems:
        if found:
            raise UnknownPart(f"{what}; {known}")


def known_parts() -> str:
    """What an ECP5 part name is made of, for an error message."""
    families = ", ".join(
        f"{family}-{{{'/'.join(f'{size}F' for size in sizes)}}}"
        for family, (_, sizes) in FAMILIES.items()
    )
    packages = ", ".join(f"{code} ({name})" for code, name in PACKAGES.items())
    rest = f"packages {packages}; grade C or I"
    return _naming("ECP5", "FAMILY-SIZE-SPEEDPACKAGEPINSGRADE", families, SPEEDS, rest, EXAMPLES)


def ecp5_part(name: str) -> Ecp5Part:
    """``name`` (a Lattice ECP5 part name, any case) as nextpnr-ecp5 places it; UnknownPart
    listing the known parts otherwise."""
    known = known_parts()
    match = _read(PART, name, "an ECP5", known)
    family = match["family"].upper()
    prefix, sizes = FAMILIES[family]
    size, speed = int(match["size"]), int(match["speed"])
    package = PACKAGES.get(match["package"].upper())
    _refuse_first(
        (
            (size not in sizes, f"{family} comes in no {size}F size"),
            (
                speed not in SPEEDS or (family == "LFE5UM5G" and speed != 8),
                f"{family} has no speed grade {speed}",
            ),
            (package is None, f"{match['package']!r} is not an ECP5 package"),
        ),
        known,
    )
    return Ecp5Part(name.strip().upper(), f"{prefix}{size}k", speed, f"{package}{match['pins']}")


# Lattice Nexus devices nextpnr-nexus places (its --list-devices) -> their packages
NEXUS_DEVICES: dict[str, tuple[str, ...]] = {
    "LIFCL-17": ("BG256", "MG121", "SG72", "UWG72"),
    "LIFCL-40": ("BG256", "BG400", "MG121", "MG289", "SG72"),
    "LFD2NX-40": ("BG196", "BG256", "MG121"),
}
NEXUS_SPEEDS = (7, 8, 9)
NEXUS_PART = re.compile(
    r"(?P<device>(?:LIFCL|LFD2NX)-\d+)-(?P<speed>\d)(?P<package>[A-Z]+\d+)"
    r"(?P<grade>[CI])(?P<sample>ES2?)?",
    re.I,
)
NEXUS_EXAMPLES = ("LIFCL-40-9BG400C", "LIFCL-17-8SG72C", "LFD2NX-40-8BG256I")


@dataclass(frozen=True)
class NexusPart:
    """One Nexus part (CrossLink-NX LIFCL, Certus-NX LFD2NX): nextpnr-nexus takes its whole
    name as ``--device``."""

    name: str  # "LIFCL-40-9BG400C"
    device: str  # "LIFCL-40"
    speed: int
    package: str  # the ordering code's short package name, "BG400"

    def arguments(self) -> list[str]:
        return ["--device", self.name]


def known_nexus_parts() -> str:
    """What a Nexus part name is made of, for an error message."""
    devices = "; ".join(f"{device} in {'/'.join(packages)}"
                        for device, packages in NEXUS_DEVICES.items())  # fmt: skip
    rest = "grade C or I (ES/ES2 samples)"
    return _naming("Nexus", "DEVICE-SPEEDPACKAGEGRADE", devices, NEXUS_SPEEDS, rest, NEXUS_EXAMPLES)


def nexus_part(name: str) -> NexusPart:
    """``name`` (a Lattice Nexus part name, any case) as nextpnr-nexus places it; UnknownPart
    listing the known parts otherwise."""
    known = known_nexus_parts()
    match = _read(NEXUS_PART, name, "a Nexus", known)
    device, package = match["device"].upper(), match["package"].upper()
    if device not in NEXUS_DEVICES:
        raise UnknownPart(f"nextpnr-nexus places no {device}; {known}")
    _refuse_first(
        (
            (
                int(match["speed"]) not in NEXUS_SPEEDS,
                f"{device} has no speed grade {match['speed']}",
            ),
            (package not in NEXUS_DEVICES[device], f"{device} comes in no {package} package"),
        ),
        known,
    )
    return NexusPart(name.strip().upper(), device, int(match["speed"]), package)


ICE40_PREFIXES = ("ICE40",)
# device -> the die of nextpnr-ice40's chip database (share/ice40/chipdb-<die>.bin) it is
ICE40_DEVICES = {
    "UP5K": "5k",
    "HX8K": "8k", "HX4K": "8k", "LP8K": "8k", "LP4K": "8k",
    "HX1K": "1k", "LP1K": "1k",
    "LP384": "384",
}  # fmt: skip
# die -> the packages its chip database names (``tests/test_place_route_ice40.py`` reads them
# from the installed chipdb-<die>.bin)
ICE40_DIES = {
    "5k": ("sg48", "uwg30"),
    "8k": ("bg121", "cb132", "cm121", "cm225", "cm81", "ct256"),
    "1k": ("cb121", "cb132", "cb81", "cm121", "cm36", "cm49", "cm81", "qn84", "swg16tr",
           "tq144", "vq100"),
    "384": ("cm36", "cm49", "qn32"),
}  # fmt: skip
ICE40_PART = re.compile(
    r"ICE40(?P<device>[A-Z]{2}\d+K?)-(?P<package>[A-Z]+\d+)(?P<tail>I?(?:TR(?:50|1K)?)?)", re.I
)
ICE40_EXAMPLES = ("iCE40UP5K-SG48", "iCE40HX8K-CT256", "iCE40UP5K-SG48ITR")


@dataclass(frozen=True)
class Ice40Part:
    """One iCE40 part: its name, device (``UP5K``) and package as nextpnr-ice40 names it."""

    name: str  # "ICE40UP5K-SG48"
    device: str  # "UP5K"
    package: str  # "sg48"
    speed: int = 0  # none: nextpnr-ice40 takes no speed grade

    def arguments(self) -> list[str]:
        return [f"--{self.device.lower()}", "--package", self.package]


def known_ice40_parts() -> str:
    """What an iCE40 part name is made of, for an error message."""
    devices = "; ".join(
        f"iCE40{device} in {'/'.join(p.upper() for p in ICE40_DIES[die])}"
        for device, die in ICE40_DEVICES.items()
    )
    return (f"iCE40 parts are iCE40DEVICE-PACKAGE[I][TR]: {devices}; no speed grade, e.g. "
            + ", ".join(ICE40_EXAMPLES))  # fmt: skip


def ice40_part(name: str) -> Ice40Part:
    """``name`` (an iCE40 ordering code, any case) as nextpnr-ice40 places it; UnknownPart
    listing the known parts otherwise."""
    known = known_ice40_parts()
    match = ICE40_PART.fullmatch(name.strip())
    if match is None:
        raise UnknownPart(f"{name!r} is not an iCE40 part name; {known}")
    device = match["device"].upper()
    if device not in ICE40_DEVICES:
        raise UnknownPart(f"nextpnr-ice40 places no iCE40{device}; {known}")
    package, tail = match["package"].lower(), match["tail"].lower()
    if tail.startswith("tr") and f"{package}tr" in ICE40_DIES[ICE40_DEVICES[device]]:
        package = f"{package}tr"  # SWG16TR is the package's own name
    if package not in ICE40_DIES[ICE40_DEVICES[device]]:
        raise UnknownPart(f"iCE40{device} comes in no {package.upper()} package; {known}")
    return Ice40Part(name.strip().upper(), device, package)


GOWIN_PREFIXES = ("GW1N", "GW2A")
# part (as Gowin marks it, its commercial grade; the ordering code adds the industrial one,
# "/I7", which is read too) -> (nextpnr's device, its chip database, the amaranth-boards
# module and platform class of a board with it, whose pins it is placed on)
GOWIN_PARTS: dict[str, tuple[str, str, str, str]] = {
    "GW2A-LV18PG256C8": (
        "GW2A-LV18PG256C8/I7",
        "GW2A-18C",
        "tang_primer_20k",
        "TangPrimer20kPlatform",
    ),
    "GW1NR-LV9QN88PC6": ("GW1NR-LV9QN88PC6/I5", "GW1N-9C", "tang_nano_9k", "TangNano9kPlatform"),
}


@dataclass(frozen=True)
class GowinPart:
    """One Gowin part: its name, chip database and the board whose pins it is placed on."""

    name: str  # "GW2A-LV18PG256C8"
    device: str  # "GW2A-LV18PG256C8/I7", as nextpnr names it
    chip: str  # "GW2A-18C"
    board: tuple[str, str]  # amaranth-boards' module and platform class
    speed: int = 0  # the commercial grade (C8: 8), which a board build's default clock is by

    def arguments(self) -> list[str]:
        return ["--device", self.device, "--vopt", f"family={self.chip}"]


def known_gowin_parts() -> str:
    """What a Gowin part name is, for an error message."""
    named = ", ".join(f"{device} ({chip}, the {module}'s)"
                      for device, chip, module, _ in GOWIN_PARTS.values())  # fmt: skip
    return f"Gowin parts are those of a board amaranth-boards describes: {named}"


def gowin_part(name: str) -> GowinPart:
    """``name`` (any case) as nextpnr-himbaechel-gowin places it; UnknownPart listing the
    known parts otherwise."""
    key = name.strip().upper()
    found = GOWIN_PARTS.get(key) or next((v for v in GOWIN_PARTS.values() if v[0] == key), None)
    if found is None:
        raise UnknownPart(f"{name!r} is not a Gowin part brainsmith places; {known_gowin_parts()}")
    device, chip, module, platform = found
    name = device.partition("/")[0]
    grade = re.search(r"C(\d)$", name)  # GW2A-LV18PG256C8: commercial grade 8
    return GowinPart(name, device, chip, (module, platform), int(grade[1]) if grade else 0)


GATEMATE_PREFIXES = ("CCGM",)
# the devices of nextpnr-himbaechel-gatemate's chip databases (share/himbaechel/gatemate/
# chipdb-<device>.bin; tests/test_place_route_gatemate.py reads them)
GATEMATE_PARTS = ("CCGM1A1", "CCGM1A2")
# the devices nextpnr-himbaechel-gatemate 0.11.1 has a database of but does not route here
NOT_ROUTED = {
    "CCGM1A2": "its two dies stop nextpnr-himbaechel-gatemate 0.11.1 as router2 sets up (a "
    "thrown WebAssembly exception, the shipped MLP placed on it)",
}


@dataclass(frozen=True)
class GateMatePart:
    """One GateMate device, as nextpnr-himbaechel-gatemate names it."""

    name: str  # "CCGM1A1"
    speed: int = 0  # none a board build asks a clock by

    def arguments(self) -> list[str]:
        return ["--device", self.name]


def known_gatemate_parts() -> str:
    """What a GateMate part name is, for an error message."""
    placed = [part for part in GATEMATE_PARTS if part not in NOT_ROUTED]
    left = "".join(f", {part} not yet" for part in NOT_ROUTED)
    return f"GateMate parts are {' and '.join(placed)}{left}; e.g. {placed[0]}"


def gatemate_part(name: str) -> GateMatePart:
    """``name`` (any case) as nextpnr-himbaechel-gatemate places it; UnknownPart listing the
    known parts otherwise."""
    key = name.strip().upper()
    if key in NOT_ROUTED:
        raise UnknownPart(f"{key} is not placed by brainsmith: {NOT_ROUTED[key]}; "
                          f"{known_gatemate_parts()}")  # fmt: skip
    if key not in GATEMATE_PARTS:
        raise UnknownPart(f"{name!r} is not a GateMate part; {known_gatemate_parts()}")
    return GateMatePart(key)


@dataclass(frozen=True)
class FamilyParts:
    """A family's part names: what they start with, how one is read, an example; and
    whether the family's part alone is packed into a bitstream (its pins placed on the
    package: not ECP5's, whose part alone is placed out of context)."""

    family: str  # as the family's ``Family.name``
    prefixes: tuple[str, ...]
    read: Callable[[str], Part]
    example: str
    packs_alone: bool


# brainsmith's families in order; every family-naming message and help text reads this
FAMILY_PARTS = (
    FamilyParts("ECP5", ECP5_PREFIXES, ecp5_part, EXAMPLES[0], packs_alone=False),
    FamilyParts("Nexus", NEXUS_PREFIXES, nexus_part, NEXUS_EXAMPLES[0], packs_alone=True),
    FamilyParts("iCE40", ICE40_PREFIXES, ice40_part, "iCE40UP5K-SG48", packs_alone=True),
    FamilyParts("Gowin", GOWIN_PREFIXES, gowin_part, next(iter(GOWIN_PARTS)), packs_alone=True),
    FamilyParts("GateMate", GATEMATE_PREFIXES, gatemate_part, GATEMATE_PARTS[0], packs_alone=True),
)


def family_parts(name: str) -> FamilyParts | None:
    """The family whose part names ``name`` starts as (any case), or None."""
    upper = name.strip().upper()
    return next((row for row in FAMILY_PARTS if upper.startswith(row.prefixes)), None)


def built_in_part(name: str) -> Part | None:
    """The part ``name`` names (any case) of one of brainsmith's own families: None when it
    starts as none of their part names do; UnknownPart listing that family's parts when it
    does but names none of them."""
    row = family_parts(name)
    return row.read(name) if row is not None else None


def built_in_part_name(part: object) -> str | None:
    """``part`` (a build's ``fpga_part``) as the part of brainsmith's own families it names;
    None when it names none (an AMD part, a part no family has, or nothing)."""
    if not isinstance(part, str) or not part.strip():
        return None
    try:
        found = built_in_part(part)
    except UnknownPart:  # refused where the build's options are checked
        return None
    return found.name if found is not None else None


def built_in_families() -> str:
    """The families ``built_in_part`` reads part names of, by name, for a message:
    "ECP5, Nexus, iCE40, Gowin or GateMate"."""
    return _either([row.family for row in FAMILY_PARTS])


def packing_families() -> str:
    """The families whose part alone is packed into a bitstream, for a help text."""
    return _either([row.family for row in FAMILY_PARTS if row.packs_alone])


def part_examples() -> str:
    """The part names brainsmith builds for without a board, an example of each family, for
    a message or a help text."""
    return _either([f"{_a(row.family)} {row.family} part such as {row.example}"
                    for row in FAMILY_PARTS])  # fmt: skip


def _a(word: str) -> str:
    return "an" if word[0] in "AEIOUaeiou" else "a"


def _either(words: list[str]) -> str:
    return " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
