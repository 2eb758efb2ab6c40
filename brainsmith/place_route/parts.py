"""Lattice ECP5 parts as nextpnr-ecp5 names them: a part name such as ``LFE5U-85F-6BG381C``
read as its device (``--85k``), speed grade (``--speed 6``) and package (``--package
CABGA381``), from the fields of Lattice's ordering code (ECP5 family data sheet, FPGA-DS-02012).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brainsmith.errors import BrainsmithError

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


def known_parts() -> str:
    """What an ECP5 part name is made of, for an error message."""
    families = ", ".join(
        f"{family}-{{{'/'.join(f'{size}F' for size in sizes)}}}"
        for family, (_, sizes) in FAMILIES.items()
    )
    packages = ", ".join(f"{code} ({name})" for code, name in PACKAGES.items())
    return (
        f"ECP5 parts are FAMILY-SIZE-SPEEDPACKAGEPINSGRADE: {families}; speed "
        f"{'/'.join(map(str, SPEEDS))}; packages {packages}; grade C or I, e.g. "
        + ", ".join(EXAMPLES)
    )


def ecp5_part(name: str) -> Ecp5Part:
    """``name`` (a Lattice ECP5 part name, any case) as nextpnr-ecp5 places it; UnknownPart
    listing the known parts otherwise."""
    match = PART.fullmatch(name.strip())
    if match is None:
        raise UnknownPart(f"{name!r} is not an ECP5 part name; {known_parts()}")
    family = match["family"].upper()
    prefix, sizes = FAMILIES[family]
    size, speed = int(match["size"]), int(match["speed"])
    package = PACKAGES.get(match["package"].upper())
    if size not in sizes:
        raise UnknownPart(f"{family} comes in no {size}F size; {known_parts()}")
    if speed not in SPEEDS or (family == "LFE5UM5G" and speed != 8):
        raise UnknownPart(f"{family} has no speed grade {speed}; {known_parts()}")
    if package is None:
        raise UnknownPart(f"{match['package']!r} is not an ECP5 package; {known_parts()}")
    return Ecp5Part(name.strip().upper(), f"{prefix}{size}k", speed, f"{package}{match['pins']}")
