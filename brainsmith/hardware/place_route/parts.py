"""Lattice parts as nextpnr names them, from the fields of Lattice's ordering code (a leaf:
the blueprint's checks and the build's plan read part names here too): an ECP5
name such as ``LFE5U-85F-6BG381C`` read as its device (``--85k``), speed grade (``--speed 6``)
and package (``--package CABGA381``) (ECP5 family data sheet, FPGA-DS-02012); a Nexus name
such as ``LIFCL-40-9BG400C`` checked against the devices and packages nextpnr-nexus has and
passed whole (``--device``).
"""

from __future__ import annotations

import re
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


def lattice_part(name: str) -> Ecp5Part | NexusPart | None:
    """The ECP5 or Nexus part ``name`` names (any case): None when it starts as neither
    family's part names do; UnknownPart listing that family's parts when it does but names
    none of them."""
    upper = name.strip().upper()
    if upper.startswith(ECP5_PREFIXES):
        return ecp5_part(name)
    if upper.startswith(NEXUS_PREFIXES):
        return nexus_part(name)
    return None


def lattice_families() -> str:
    """The families ``lattice_part`` reads part names of, by name, for a message."""
    return "ECP5 or Nexus"


def lattice_part_name(part: object) -> str | None:
    """``part`` (a build's ``fpga_part``) as the ECP5 or Nexus part it names, upper case;
    None when it names none (an AMD part, a part no family has, or nothing)."""
    if not isinstance(part, str) or not part.strip():
        return None
    try:
        found = lattice_part(part)
    except UnknownPart:  # refused where the build's options are checked
        return None
    return found.name if found is not None else None


def lattice_examples() -> str:
    """The Lattice part names brainsmith builds for, one example of each family, for an
    error message."""
    return f"a Lattice ECP5 part such as {EXAMPLES[0]} or a Nexus part such as {NEXUS_EXAMPLES[0]}"
