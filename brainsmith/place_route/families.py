"""The target families ``brainsmith place-route`` knows, one entry each (a ``Family`` says
how to synthesise, place and route, its part names and its logic cells as the router reports
them): a part name goes to the family whose prefix it starts with. A third family is one more
module with its ``Family`` and one more entry here.
"""

from __future__ import annotations

from brainsmith.place_route.ecp5 import ECP5
from brainsmith.place_route.flow import Family
from brainsmith.place_route.nexus import NEXUS
from brainsmith.place_route.parts import UnknownPart

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.place_route.parts import Part

FAMILIES: tuple[Family, ...] = (ECP5, NEXUS)


def known_forms() -> str:
    """Every family's part names, for an error message."""
    return " | ".join(family.known() for family in FAMILIES)


def target(name: str) -> tuple[Family, Part]:
    """(family, part) of the part called ``name``; UnknownPart listing the known forms (the
    claiming family's alone when ``name`` starts as one of its parts)."""
    for family in FAMILIES:
        if name.strip().upper().startswith(family.prefixes):
            return family, family.parse(name)
    raise UnknownPart(f"{name!r} is not a Lattice part nextpnr places; {known_forms()}")


__all__ = ["FAMILIES", "known_forms", "target"]
