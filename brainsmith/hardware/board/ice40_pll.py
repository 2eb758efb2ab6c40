"""The iCE40's PLL (``SB_PLL40_PAD``, fed by the oscillator's pin, the PLL's own input pad on
the boards brainsmith knows: the iCEBreaker's 12 MHz on pin 35) for a design clock,
its dividers chosen as Project IceStorm's ``icepll`` chooses them in its simple feedback mode:
every reference divider (DIVR 0-15) whose phase detector runs at 10-133 MHz, every feedback
divider (DIVF 0-127) whose VCO runs at 533-1066 MHz and output divider (DIVQ 1-6, a power of
two); the output nearest the one asked for, the first found among equals. The loop filter's
range follows from the phase detector's frequency, as icepll sets it.
"""

from __future__ import annotations

from dataclasses import dataclass

from brainsmith.hardware.board.clocking import cell_declaration, none_fits, out_of_range
from brainsmith.hardware.hdl import Instance, Port

PFD_MHZ = (10.0, 133.0)
VCO_MHZ = (533.0, 1066.0)
OUTPUT_MHZ = (16.0, 275.0)
# the loop filter's range for a phase detector below each frequency (MHz), icepll's table
FILTER_RANGES = ((17.0, 1), (26.0, 2), (44.0, 3), (66.0, 4), (101.0, 5))
PORTS = (
    *(Port(name, "input") for name in ("PACKAGEPIN", "RESETB", "BYPASS")),
    *(Port(name, "output") for name in ("PLLOUTGLOBAL", "PLLOUTCORE", "LOCK")),
)  # those of SB_PLL40_PAD's ports the top connects


@dataclass(frozen=True)
class Ice40Pll:
    """SB_PLL40_PAD settings: ``input_mhz`` x (divf + 1) / ((divr + 1) x 2^divq) =
    ``output_mhz``."""

    input_mhz: float
    output_mhz: float  # achieved
    vco_mhz: float
    divr: int
    divf: int
    divq: int
    filter_range: int
    primitive: str = "SB_PLL40_PAD"

    def declaration(self) -> str:
        return cell_declaration(self.instance("clk", "out", "locked"), PORTS)

    def instance(self, clkin: str, clkout: str, locked: str, name: str = "pll") -> Instance:
        """The SB_PLL40_PAD driving ``clkout`` (its global output) and ``locked`` from the
        pin ``clkin``, in simple feedback."""
        return Instance(
            "SB_PLL40_PAD",
            name,
            parameters=(
                (("FEEDBACK_PATH", '"SIMPLE"'), ("PLLOUT_SELECT", '"GENCLK"')),
                (("DIVR", f"4'd{self.divr}"), ("DIVF", f"7'd{self.divf}"),
                 ("DIVQ", f"3'd{self.divq}"), ("FILTER_RANGE", f"3'd{self.filter_range}")),
            ),
            connections=(
                (("PACKAGEPIN", clkin), ("PLLOUTGLOBAL", clkout), ("PLLOUTCORE", ""),
                 ("LOCK", locked)),
                (("RESETB", "1'b1"), ("BYPASS", "1'b0")),
            ),
        )  # fmt: skip


def ice40_pll(input_mhz: float, output_mhz: float, at_most: bool = False) -> Ice40Pll:
    """The PLL making the clock nearest ``output_mhz`` from ``input_mhz`` (``at_most``: the
    nearest not above it); PllError when the clock is outside the PLL's range or no divider
    fits."""
    low, high = OUTPUT_MHZ
    if not low <= output_mhz <= high:
        raise out_of_range("iCE40", low, high, output_mhz)
    best: tuple[float, int, int, int] | None = None  # (error, divr, divf, divq)
    for divr in range(16):
        pfd = input_mhz / (divr + 1)
        if not PFD_MHZ[0] <= pfd <= PFD_MHZ[1]:
            continue
        for divf in range(128):
            vco = pfd * (divf + 1)
            if not VCO_MHZ[0] <= vco <= VCO_MHZ[1]:
                continue
            for divq in range(1, 7):
                out = vco / 2**divq
                if (at_most and out > output_mhz) or not low <= out <= high:
                    continue
                found = (abs(out - output_mhz), divr, divf, divq)
                best = found if best is None or found[0] < best[0] else best
    if best is None:
        raise none_fits(input_mhz, output_mhz, at_most)
    _, divr, divf, divq = best
    pfd = input_mhz / (divr + 1)
    vco = pfd * (divf + 1)
    ranges = next((n for limit, n in FILTER_RANGES if pfd < limit), 6)
    return Ice40Pll(float(input_mhz), vco / 2**divq, vco, divr, divf, divq, ranges)


__all__ = ["Ice40Pll", "ice40_pll"]
