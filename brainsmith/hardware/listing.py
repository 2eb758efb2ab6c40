"""The files an all-RTL build's accelerator is made of: ``finn/stitched_rtl/files.f``, as FIFO
sizing wrote it, read once by the build to describe its design (``design.json``,
``brainsmith.hardware.board.description``), and the design's files as every tool reads them
after: Yosys and nextpnr (``place_route.stitched_sources``), the simulated board and its
gate-level check (``board.simulated``) and ``brainsmith export`` (``design_sources``).

A build folder is untrusted input. The listing is a regular file of bounded size; a path into
the folder the build ran in is read in the folder as it is now; and every path, listed or
described, must lead into the build folder or into FINN's installed ``finn-rtllib``, so a
listing or a description from elsewhere cannot make a tool read any other file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from brainsmith.files import DamagedFile, read_json, read_regular
from brainsmith.hardware.design import FILE, LIBRARY, Design, DesignFile
from brainsmith.hardware.synthesis.layer_sources import MissingSources

STITCHED = os.path.join("finn", "stitched_rtl")
FILES = os.path.join(STITCHED, "files.f")
INSTANCES = "instances.json"  # beside files.f: the layer each instance of the top is
MAX_LIST_BYTES = 4 * 2**20
INSTANCE = re.compile(r"n\d{1,6}")  # the top's instance names
LAYER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")  # a layer's name, as ONNX nodes are named


@dataclass(frozen=True)
class Listed:
    """One listed source: where it is read now, and whether it is the build's own (a layer's
    generated RTL, with its parameter files beside it) or FINN's library's."""

    path: str
    in_build: bool

    @property
    def code_dir(self) -> str:
        """The folder the file is in (a layer's code folder, for one of the build's)."""
        return os.path.dirname(self.path)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def finn_rtllib() -> str:
    """FINN's installed ``finn-rtllib`` folder (its real path)."""
    import importlib.util

    spec = importlib.util.find_spec("finn")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise MissingSources("FINN is not installed: its RTL library cannot be read")
    return os.path.realpath(os.path.join(locations[0], "finn-rtllib"))


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def listed_sources(folder: str, built_in: str = "") -> list[Listed]:
    """The sources ``folder``'s ``files.f`` lists, in its order (``built_in``: the folder the
    build was made in, whose paths are read in ``folder``); MissingSources naming the listing
    and the path when it cannot be read or names a file outside the build and FINN's library.
    """
    listing = os.path.join(folder, FILES)
    try:
        raw = read_regular(listing, MAX_LIST_BYTES)
    except (DamagedFile, OSError) as exc:
        raise MissingSources(
            f"{listing} cannot be read ({exc}): the build has no stitched accelerator"
        ) from None
    build, library = os.path.realpath(folder), finn_rtllib()
    built_in = built_in.rstrip(os.sep)
    found = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        path = line.strip()
        if not path:
            continue
        if built_in and _inside(path, built_in):
            path = os.path.join(os.path.abspath(folder), path[len(built_in) + 1 :])
        real = os.path.realpath(path)
        if not os.path.isabs(path) or not (_inside(real, build) or _inside(real, library)):
            raise MissingSources(
                f"{listing} lists {path}, which is neither in the build folder nor in FINN's "
                "RTL library"
            )
        found.append(Listed(path, _inside(real, build)))
    if not found:
        raise MissingSources(f"{listing} lists no file")
    return found


def design_sources(folder: str, design: Design) -> list[Listed]:
    """The sources ``design`` names (``design.json``'s, read back through the gate), in
    compile order, as paths in ``folder`` and FINN's library; MissingSources naming one that
    leads out of both (a link planted in the folder)."""
    return [design_path(folder, file) for file in design.sources]


def design_path(folder: str, file: DesignFile) -> Listed:
    """Where the design's ``file`` is read now: in ``folder``, or in FINN's library;
    MissingSources when it leads out of both."""
    if file.in_build:
        root, where = os.path.realpath(folder), "the build folder"
        path = os.path.join(os.path.abspath(folder), file.path)
    else:
        root, where = finn_rtllib(), "FINN's RTL library"
        path = os.path.join(root, file.path.removeprefix(LIBRARY))
    if not _inside(os.path.realpath(path), root):
        raise MissingSources(
            f"{os.path.join(folder, FILE)} names {file.path}, which leads out of {where}"
        )
    return Listed(path, file.in_build)


def layer_instances(folder: str) -> dict[str, str]:
    """The layer each instance of ``folder``'s stitched top is (``n3`` -> ``MVAU_rtl_0``),
    as the build wrote it beside ``files.f``; an entry that is not an instance name and a
    layer name is left out, and a missing or damaged file gives none."""
    try:
        found = read_json(os.path.join(folder, STITCHED, INSTANCES), MAX_LIST_BYTES)
    except (DamagedFile, OSError, ValueError):
        return {}
    return {
        name: layer
        for name, layer in found.items()
        if isinstance(layer, str) and INSTANCE.fullmatch(name) and LAYER.fullmatch(layer)
    }


__all__ = [
    "FILES",
    "INSTANCES",
    "MAX_LIST_BYTES",
    "STITCHED",
    "Listed",
    "design_path",
    "design_sources",
    "finn_rtllib",
    "layer_instances",
    "listed_sources",
]
