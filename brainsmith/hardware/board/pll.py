"""The ECP5 PLL (``EHXPLLL``) for a design clock from a board's oscillator, its dividers
chosen as Project Trellis' ``ecppll`` chooses them (the same search in the same 32-bit
arithmetic, so the same dividers): every reference divider whose phase detector runs at
3.125-400 MHz, every feedback and output divider whose VCO runs at 400-800 MHz; the output
nearest the one asked for, a VCO nearest 600 MHz among equals, the first found among those.
The output is phase-shifted half a period (``CLKOP_CPHASE``), as ecppll and Lattice's tools
do. The achieved frequency can differ from the one asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from brainsmith.hardware.board.clocking import PllError, none_fits, out_of_range
from brainsmith.hardware.hdl import Instance

PFD_MHZ = (3.125, 400.0)
VCO_MHZ = (400.0, 800.0)
VCO_OPTIMAL = (VCO_MHZ[0] + VCO_MHZ[1]) / 2
OUTPUT_MHZ = (3.125, 400.0)  # CLKOP's range (ECP5 family data sheet)
CLKI_DIVS, CLKFB_DIVS, CLKOP_DIVS = 128, 80, 128


@dataclass(frozen=True)
class Pll:
    """EHXPLLL settings: ``input_mhz`` / CLKI_DIV * CLKFB_DIV = ``output_mhz``."""

    input_mhz: float
    output_mhz: float  # achieved
    vco_mhz: float
    clki_div: int
    clkfb_div: int
    clkop_div: int
    clkop_cphase: int
    primitive: str = "EHXPLLL"

    def declaration(self) -> str:
        """None: Yosys' ECP5 blackboxes are read (``staging.LATTICE_CELLS``)."""
        return ""

    def instance(self, clkin: str, clkout: str, locked: str, name: str = "pll") -> Instance:
        """The EHXPLLL instance driving ``clkout`` and ``locked`` from ``clkin``, fed back
        from CLKOP."""
        return Instance(
            "EHXPLLL",
            name,
            attributes=(
                (("FREQUENCY_PIN_CLKI", f"{self.input_mhz:g}"),),
                (("FREQUENCY_PIN_CLKOP", f"{self.output_mhz:.6g}"),),
                (("ICP_CURRENT", "12"), ("LPF_RESISTOR", "8"), ("MFG_ENABLE_FILTEROPAMP", "1")),
                (("MFG_GMCREF_SEL", "2"),),
            ),
            parameters=(
                (("PLLRST_ENA", '"DISABLED"'), ("INTFB_WAKE", '"DISABLED"'),
                 ("STDBY_ENABLE", '"DISABLED"')),
                (("DPHASE_SOURCE", '"DISABLED"'), ("OUTDIVIDER_MUXA", '"DIVA"'),
                 ("OUTDIVIDER_MUXB", '"DIVB"')),
                (("OUTDIVIDER_MUXC", '"DIVC"'), ("OUTDIVIDER_MUXD", '"DIVD"')),
                (("CLKI_DIV", str(self.clki_div)), ("CLKOP_ENABLE", '"ENABLED"'),
                 ("CLKOP_DIV", str(self.clkop_div))),
                (("CLKOP_CPHASE", str(self.clkop_cphase)), ("CLKOP_FPHASE", "0"),
                 ("FEEDBK_PATH", '"CLKOP"')),
                (("CLKFB_DIV", str(self.clkfb_div)),),
            ),
            connections=(
                (("RST", "1'b0"), ("STDBY", "1'b0"), ("CLKI", clkin), ("CLKOP", clkout),
                 ("CLKFB", clkout)),
                (("CLKINTFB", ""), ("PHASESEL0", "1'b0"), ("PHASESEL1", "1'b0"),
                 ("PHASEDIR", "1'b1"), ("PHASESTEP", "1'b1")),
                (("PHASELOADREG", "1'b1"), ("PLLWAKESYNC", "1'b0"), ("ENCLKOP", "1'b0"),
                 ("LOCK", locked)),
            ),
        )  # fmt: skip


def pll(input_mhz: float, output_mhz: float, at_most: bool = False) -> Pll:
    """The PLL making the clock nearest ``output_mhz`` from ``input_mhz`` (``at_most``: the
    nearest not above it); PllError when the asked clock is outside CLKOP's range or no
    divider fits."""
    low, high = OUTPUT_MHZ
    if not low <= output_mhz <= high:
        raise out_of_range("ECP5", low, high, output_mhz)
    f32 = np.float32
    i = np.arange(1, CLKI_DIVS + 1, dtype=f32)[:, None, None]
    fb = np.arange(1, CLKFB_DIVS + 1, dtype=f32)[None, :, None]
    op = np.arange(1, CLKOP_DIVS + 1, dtype=f32)[None, None, :]
    pfd = f32(input_mhz) / i
    vco = pfd * fb * op
    fout = vco / op
    valid = (pfd >= PFD_MHZ[0]) & (pfd <= PFD_MHZ[1]) & (vco >= VCO_MHZ[0]) & (vco <= VCO_MHZ[1])
    if not valid.any():
        raise PllError(f"no PLL divider fits a {input_mhz:g} MHz oscillator")
    below = (fout <= f32(output_mhz)) if at_most else True
    error = np.where(valid & below, np.abs(fout - f32(output_mhz)), np.inf)
    if not np.isfinite(error).any():
        raise none_fits(input_mhz, output_mhz, at_most)
    best = error == error.min()
    distance = np.where(best, np.abs(vco - f32(VCO_OPTIMAL)), np.inf)
    index = np.unravel_index(int(np.argmin(distance)), distance.shape)  # the first nearest
    a, b, c = (int(n) + 1 for n in index)
    out, vco_mhz = float(fout[index]), float(vco[index])
    # ecppll: a 32-bit half period in ns times the VCO in Hz, truncated
    half_period = f32(1 / (np.float64(fout[index]) * 1e6) * 0.5)
    cphase = int(np.float64(half_period) * (np.float64(vco[index]) * 1e6))
    return Pll(float(input_mhz), out, vco_mhz, a, b, c, cphase)


__all__ = ["Pll", "pll"]
