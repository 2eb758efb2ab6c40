"""The target families ``brainsmith place-route`` knows: brainsmith's own (``BUILT_IN``: ECP5,
Nexus, iCE40, Gowin, GateMate) and those pip packages add. A ``Family`` says how to
synthesise, place and route, its part names and its logic cells as the router reports them; a
part name goes to the first family whose prefix it starts with, brainsmith's first.

A package adds a family under the entry-point group ``brainsmith.families``, its object a
``Family`` (docs/synthesis.md, "A third family")::

    [project.entry-points."brainsmith.families"]
    ice40 = "brainsmith_ice40:FAMILY"

A family that cannot be loaded (an import that fails, ends the process or hangs past
``FAMILY_LOAD_TIMEOUT``), is no ``Family``, names no part prefixes (a tuple of non-empty
strings) or claims a prefix another family has is left out and named, with why, in the error
of a part no family takes: the others work on.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points

from brainsmith.hardware.place_route.ecp5 import ECP5
from brainsmith.hardware.place_route.gatemate import GATEMATE
from brainsmith.hardware.place_route.gowin import GOWIN
from brainsmith.hardware.place_route.ice40 import ICE40
from brainsmith.hardware.place_route.nexus import NEXUS
from brainsmith.hardware.place_route.parts import UnknownPart
from brainsmith.hardware.place_route.toolchain import Family

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.place_route.parts import Part

GROUP = "brainsmith.families"
BUILT_IN: tuple[Family, ...] = (ECP5, NEXUS, ICE40, GOWIN, GATEMATE)
FAMILY_LOAD_TIMEOUT = 30.0  # seconds; plugin_system.load_timeout when that is set


@dataclass(frozen=True)
class Families:
    """The families usable in this environment, and the installed ones left out (why)."""

    usable: tuple[Family, ...]
    left_out: tuple[str, ...]

    def known_forms(self) -> str:
        """Every family's part names, for an error message."""
        return " | ".join(family.known() for family in self.usable)


def families() -> Families:
    """brainsmith's families, then each one the ``brainsmith.families`` entry points name."""
    usable, left_out = list(BUILT_IN), []
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        dist = point.dist.name if point.dist is not None else "?"
        where = f"the family {point.name!r} of {dist} ({point.value})"
        try:
            found = _loaded(point.value)
        except Exception as exc:  # a broken package leaves the others usable
            left_out.append(f"{where} could not be loaded: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(found, Family):
            left_out.append(f"{where} is a {type(found).__name__}, not a Family")
            continue
        if not _prefixes_ok(found.prefixes):
            left_out.append(f"{where} names its parts' prefixes as {found.prefixes!r}, not a "
                            "tuple of non-empty strings")  # fmt: skip
            continue
        taken = [p for f in usable for p in f.prefixes for q in found.prefixes
                 if p.startswith(q) or q.startswith(p)]  # fmt: skip
        if taken:
            left_out.append(f"{where} claims {', '.join(taken)}, which another family has")
            continue
        usable.append(found)
    return Families(tuple(usable), tuple(left_out))


def _loaded(value: str) -> object:
    """The object an entry point's ``module:attribute`` names, imported as plugins are: an
    attempt to end the process is an error (PluginExit), a hang one after the timeout."""
    from brainsmith.plugin.loading import import_bounded
    from brainsmith.plugin.settings.config import load_config

    module, _, attribute = value.partition(":")
    found = import_bounded(module.strip(), load_config().load_timeout or FAMILY_LOAD_TIMEOUT)
    for name in attribute.strip().split(".") if attribute.strip() else ():
        found = getattr(found, name)
    return found


def _prefixes_ok(prefixes: object) -> bool:
    return (isinstance(prefixes, tuple) and bool(prefixes)
            and all(isinstance(p, str) and p.strip() for p in prefixes))  # fmt: skip


def known_forms() -> str:
    """Every usable family's part names, for an error message."""
    return families().known_forms()


def target(name: str) -> tuple[Family, Part]:
    """(family, part) of the part called ``name``; UnknownPart listing the known forms (the
    claiming family's alone when ``name`` starts as one of its parts) and the installed
    families left out."""
    found = families()
    for family in found.usable:
        if name.strip().upper().startswith(tuple(p.upper() for p in family.prefixes)):
            return family, family.parse(name)
    left_out = "".join(f"; left out: {why}" for why in found.left_out)
    raise UnknownPart(
        f"{name!r} is not a part of a family brainsmith places; {found.known_forms()}{left_out}"
    )


__all__ = [
    "BUILT_IN",
    "FAMILY_LOAD_TIMEOUT",
    "GROUP",
    "Families",
    "families",
    "known_forms",
    "target",
]
