"""The GateMate's PLL (``CC_PLL``) for a design clock from a board's oscillator. The cell
takes its input and output frequencies (``REF_CLK``, ``OUT_CLK``) and nextpnr-himbaechel-
gatemate sets its dividers; in its low-jitter mode (``LOW_JITTER=1``: no input divider)
and speed mode (``PERF_MD="SPEED"``: its oscillator, the DCO, at 1,250-2,500 MHz) the output
is REF_CLK x N / (2 x M), its DCO REF_CLK x 2 x N (N = N1 x N2, M = M1 x M2, M even or 1;
Project Peppercorn's ``pll.cc``). Every such N and M is tried here; the output nearest the
one asked for, the DCO nearest its range's middle among equals (as nextpnr prefers), written
as OUT_CLK to four decimals, so nextpnr finds that very setting.
"""

from __future__ import annotations

from dataclasses import dataclass

from brainsmith.hardware.board.clocking import none_fits, out_of_range
from brainsmith.hardware.hdl import Instance

DCO_MHZ = (1250.0, 2500.0)  # speed mode
OUTPUT_MHZ = (1.0, 2500.0 / 6)  # at most a quarter of the mode's input limit (1,666.67 MHz)
INPUT_MHZ = 50.0  # the reference's limit
M_MAX = 64 * 1024  # M1 (1-64) x M2 (1-1,024)


@dataclass(frozen=True)
class GateMatePll:
    """CC_PLL settings: ``input_mhz`` x ``n`` / (2 x ``m``) = ``output_mhz``."""

    input_mhz: float
    output_mhz: float  # achieved, to four decimals
    dco_mhz: float
    n: int
    m: int
    primitive: str = "CC_PLL"

    def declaration(self) -> str:
        return ""  # synth_gatemate reads the cell's blackbox (cells_bb.v) itself

    def instance(self, clkin: str, clkout: str, locked: str, name: str = "pll") -> Instance:
        """The CC_PLL driving ``clkout`` (its CLK0) and ``locked`` from ``clkin``."""
        return Instance(
            "CC_PLL",
            name,
            parameters=(
                (("REF_CLK", f'"{self.input_mhz:.4f}"'), ("OUT_CLK", f'"{self.output_mhz:.4f}"')),
                (("PERF_MD", '"SPEED"'), ("LOW_JITTER", "1")),
            ),
            connections=(
                (("CLK_REF", clkin), ("CLK0", clkout), ("USR_PLL_LOCKED", locked)),
                (("CLK_FEEDBACK", "1'b0"), ("USR_CLK_REF", "1'b0"),
                 ("USR_LOCKED_STDY_RST", "1'b0")),
                (("CLK90", ""), ("CLK180", ""), ("CLK270", ""), ("CLK_REF_OUT", ""),
                 ("USR_PLL_LOCKED_STDY", "")),
            ),
        )  # fmt: skip


def gatemate_pll(input_mhz: float, output_mhz: float, at_most: bool = False) -> GateMatePll:
    """The CC_PLL making the clock nearest ``output_mhz`` from ``input_mhz`` (``at_most``:
    the nearest not above it); PllError when the clock is outside the PLL's range or no
    divider fits."""
    low, high = OUTPUT_MHZ
    if not low <= output_mhz <= high:
        raise out_of_range("GateMate", low, high, output_mhz)
    if input_mhz > INPUT_MHZ:
        raise none_fits(input_mhz, output_mhz, at_most)
    middle = sum(DCO_MHZ) / 2
    best: tuple[float, float, int, int] | None = None  # (error, DCO's distance, n, m)
    for n in range(int(DCO_MHZ[0] / (2 * input_mhz)), int(DCO_MHZ[1] / (2 * input_mhz)) + 1):
        dco = 2 * input_mhz * n
        if not DCO_MHZ[0] < dco <= DCO_MHZ[1]:
            continue
        ideal = input_mhz * n / (2 * output_mhz)
        for m in {max(1, int(ideal)), int(ideal) + 1, int(ideal) + 2}:
            if m > M_MAX or (m % 2 and m != 1):
                continue
            out = round(input_mhz * n / (2 * m), 4)
            if (at_most and out > output_mhz) or not low <= out <= high:
                continue
            found = (abs(out - output_mhz), abs(dco - middle), n, m)
            best = found if best is None or found < best else best
    if best is None:
        raise none_fits(input_mhz, output_mhz, at_most)
    _, _, n, m = best
    return GateMatePll(float(input_mhz), round(input_mhz * n / (2 * m), 4), 2 * input_mhz * n, n, m)


__all__ = ["GateMatePll", "gatemate_pll"]
