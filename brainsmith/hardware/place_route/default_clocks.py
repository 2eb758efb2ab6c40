"""The clock a build for a Lattice board or part asks for when it names none, per family and
speed grade, with the measurement each figure rests on: the slowest Fmax nextpnr reached on a
board build of a shipped network at that grade, less ``MARGIN`` (the refold's: a round that
misses asks for a clock this much below the Fmax it reached), rounded down to ``STEP_MHZ``.
A grade measured only out of context scales the measured grade's Fmax by what the shipped MLP
reaches out of context from grade to grade (``python -m benchmarks.board_clock``).

A family with no entry here asks for FINN's 5 ns; a family's ``clock_mhz`` is read from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MARGIN = 0.05  # below the slowest Fmax measured (brainsmith.builder.refold.MARGIN)
STEP_MHZ = 5.0  # a default is a multiple of this


@dataclass(frozen=True)
class DefaultClock:
    """A default clock (MHz) and where it comes from: the slowest Fmax measured (MHz) and the
    measurement, in words; for a grade not placed on a board, scaled by ``scale``."""

    fmax_mhz: float
    measured: str
    scale: float = 1.0
    scaled: str = ""  # from which grade to which

    @property
    def mhz(self) -> float:
        """``fmax_mhz`` times ``scale``, less ``MARGIN``, rounded down to ``STEP_MHZ``."""
        return STEP_MHZ * math.floor(self.fmax_mhz * self.scale * (1 - MARGIN) / STEP_MHZ)

    @property
    def why(self) -> str:
        """The figure's basis, as a build's note says it."""
        scaled = f" x {self.scale:.3f} (the MLP's Fmax out of context, {self.scaled})"
        return (
            f"{self.measured} reached {self.fmax_mhz:.1f} MHz"
            + (scaled if self.scale != 1.0 else "")
            + f"; less {MARGIN:.0%}, rounded down to {STEP_MHZ:g} MHz"
        )


# The shipped MLP with blueprints/mlp.yaml (1,000,000 fps) built for the ulx3s-85f
# (LFE5U-85F-6BG381C) at 90 MHz, one run on 29 November: 85.9 MHz reached, the slowest of the
# board builds measured at grade 6 (the others 107.7 to 131.6 MHz: the same MLP folded for
# 81.6 MHz, the shipped networks at 100 MHz, README's quick-start network and the MLP with no
# blueprint at 90 and at 80 MHz; benchmarks/results/bitstream.json, board_plain.json)
ECP5_GRADE_6 = (
    85.9,
    "the slowest board build measured at ECP5 speed grade 6 (the shipped MLP folded for "
    "1,000,000 fps at 90 MHz on the ULX3S-85F)",
)
# The MLP out of context on LFE5U-85F-<grade>BG381C: 114.9, 125.4, 144.5 MHz for grades 6, 7, 8
# (benchmarks/results/board_clock.json)
ECP5_GRADE_SCALE = {6: 1.0, 7: 125.4 / 114.9, 8: 144.5 / 114.9}

# Gowin, by commercial grade: GW2A-18 (C8) from the shipped MLP's board build for the Tang
# Primer 20K (blueprints/mlp.yaml at 20 ns, its rPLL at 50.1 MHz, one run on 30 November; the
# same design placed behind the link on the part alone: 204.9 MHz); GW1NR-9 (C6), placed on
# the Tang Nano 9K's pins by brainsmith place-route at 27 MHz (29 November, docs/boards.md)
GOWIN = {
    8: DefaultClock(161.6, "the shipped MLP's board build for the Tang Primer 20K (GW2A-18, C8)"),
    6: DefaultClock(101.6, "the shipped MLP placed on the Tang Nano 9K's pins (GW1NR-9, C6)"),
}
# iCE40 (no speed grade): the shipped MLP placed on the iCEBreaker's pins (iCE40UP5K-SG48) by
# brainsmith place-route at 12 MHz (29 November, docs/boards.md)
ICE40 = {0: DefaultClock(40.9, "the shipped MLP placed on the iCEBreaker's pins (iCE40UP5K)")}

# GateMate (no speed grade): the shipped MLP folded for 20,000 fps built for the GateMateA1-EVB
# at 45 MHz, one run on 30 November: 48.4 MHz reached (placed on the part alone by brainsmith
# place-route at 25 MHz: 47.5 MHz). Folded for 1,000,000 fps it reached 39.2 MHz at 45 MHz but
# its bitstream was never made: nextpnr-himbaechel-gatemate 0.11.1 crashed after routing it
# (docs/boards.md), so it sets no default here
GATEMATE = {0: DefaultClock(48.4, "the shipped MLP's board build for the GateMateA1-EVB (CCGM1A1)")}

DEFAULTS: dict[str, dict[int, DefaultClock]] = {
    "ECP5": {
        grade: DefaultClock(*ECP5_GRADE_6, scale, f"grade 6 to {grade}")
        for grade, scale in ECP5_GRADE_SCALE.items()
    },
    "Gowin": GOWIN,
    "iCE40": ICE40,
    "GateMate": GATEMATE,
}


def clock_mhz(family: str) -> dict[int, float]:
    """Speed grade -> the default clock (MHz) of ``family`` (a family's ``clock_mhz``)."""
    return {grade: default.mhz for grade, default in DEFAULTS.get(family, {}).items()}


def default_clock(family: str, speed: int) -> DefaultClock | None:
    """The default clock of ``family`` at speed grade ``speed``, with its basis; None where
    brainsmith measured none."""
    return DEFAULTS.get(family, {}).get(speed)


__all__ = ["DEFAULTS", "MARGIN", "STEP_MHZ", "DefaultClock", "clock_mhz", "default_clock"]
