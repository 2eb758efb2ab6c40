"""Gowin's PLL (``rPLL``) for a design clock from a board's oscillator: CLKOUT = FCLKIN x
(FBDIV_SEL + 1) / (IDIV_SEL + 1), its VCO CLKOUT x ODIV_SEL. Every input divider whose phase
detector runs at 3-400 MHz, every feedback divider and output divider (2, 4, 8 ... 128)
whose VCO runs in the die's range (GW2A 500-1250 MHz, GW1N(R)-9 400-900 MHz, as Gowin's data
sheets and LiteX's ``GW1NPLL`` give them) is tried; the output nearest the one asked for, the
fastest VCO among equals (the least jitter), the first found among those. Feedback is
internal, every dynamic control tied off, as Gowin's IP generator writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from brainsmith.hardware.board.clocking import PllError, cell_declaration, none_fits, out_of_range
from brainsmith.hardware.hdl import Instance, Port

PFD_MHZ = (3.0, 400.0)
# the die (chip database) -> its VCO's range (MHz) and CLKOUT's
VCO_MHZ = {"GW2A-18C": (500.0, 1250.0), "GW1N-9C": (400.0, 900.0)}
OUTPUT_MHZ = {"GW2A-18C": (3.90625, 625.0), "GW1N-9C": (3.125, 450.0)}
DIVIDERS = 64  # IDIV_SEL and FBDIV_SEL: 0..63
ODIVS = (2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128)
PORTS = (
    *(Port(name, "output") for name in ("CLKOUT", "CLKOUTP", "CLKOUTD", "CLKOUTD3", "LOCK")),
    *(Port(name, "input") for name in ("CLKIN", "CLKFB", "RESET", "RESET_P")),
    *(Port(name, "input", 6) for name in ("FBDSEL", "IDSEL", "ODSEL")),
    *(Port(name, "input", 4) for name in ("PSDA", "DUTYDA", "FDLY")),
)  # rPLL's, as Gowin's primitives guide and Yosys' cells_sim.v give them


@dataclass(frozen=True)
class GowinPll:
    """rPLL settings of the die ``device``: ``input_mhz`` x (fbdiv_sel + 1) / (idiv_sel + 1)
    = ``output_mhz``."""

    device: str  # "GW2A-18C", as the rPLL's DEVICE parameter names it
    input_mhz: float
    output_mhz: float  # achieved
    vco_mhz: float
    idiv_sel: int
    fbdiv_sel: int
    odiv_sel: int
    primitive: str = "rPLL"

    def declaration(self) -> str:
        return cell_declaration(self.instance("clk", "out", "locked"), PORTS)

    def instance(self, clkin: str, clkout: str, locked: str, name: str = "pll") -> Instance:
        """The rPLL driving ``clkout`` and ``locked`` from ``clkin``, fed back inside."""
        off = '"false"'
        return Instance(
            "rPLL",
            name,
            parameters=(
                (("FCLKIN", f'"{self.input_mhz:g}"'), ("DEVICE", f'"{self.device}"')),
                (("IDIV_SEL", str(self.idiv_sel)), ("FBDIV_SEL", str(self.fbdiv_sel)),
                 ("ODIV_SEL", str(self.odiv_sel))),
                (("DYN_IDIV_SEL", off), ("DYN_FBDIV_SEL", off), ("DYN_ODIV_SEL", off),
                 ("DYN_DA_EN", off)),
                (("CLKFB_SEL", '"internal"'), ("CLKOUT_BYPASS", off), ("CLKOUTP_BYPASS", off),
                 ("CLKOUTD_BYPASS", off)),
                (("PSDA_SEL", '"0000"'), ("DUTYDA_SEL", '"1000"'), ("DYN_SDIV_SEL", "2")),
            ),
            connections=(
                (("CLKIN", clkin), ("CLKOUT", clkout), ("LOCK", locked), ("CLKOUTP", ""),
                 ("CLKOUTD", ""), ("CLKOUTD3", "")),
                (("RESET", "1'b0"), ("RESET_P", "1'b0"), ("CLKFB", "1'b0")),
                (("FBDSEL", "6'b000000"), ("IDSEL", "6'b000000"), ("ODSEL", "6'b000000")),
                (("PSDA", "4'b0000"), ("DUTYDA", "4'b0000"), ("FDLY", "4'b1111")),
            ),
        )  # fmt: skip


def gowin_pll(device: str, input_mhz: float, output_mhz: float, at_most: bool = False) -> GowinPll:
    """The rPLL of die ``device`` making the clock nearest ``output_mhz`` from ``input_mhz``
    (``at_most``: the nearest not above it); PllError when the clock is outside CLKOUT's
    range or no divider fits."""
    if device not in VCO_MHZ:
        raise PllError(f"brainsmith sets no PLL of the Gowin die {device}")
    low, high = OUTPUT_MHZ[device]
    if not low <= output_mhz <= high:
        raise out_of_range(f"Gowin {device}", low, high, output_mhz)
    vco_low, vco_high = VCO_MHZ[device]
    best: tuple[float, float, int, int, int] | None = None  # (error, -vco, idiv, fbdiv, odiv)
    for idiv in range(1, DIVIDERS + 1):
        if not PFD_MHZ[0] <= input_mhz / idiv <= PFD_MHZ[1]:
            continue
        for fbdiv in range(1, DIVIDERS + 1):
            out = input_mhz * fbdiv / idiv
            if (at_most and out > output_mhz) or not low <= out <= high:
                continue
            for odiv in ODIVS:
                if vco_low <= out * odiv <= vco_high:
                    found = (abs(out - output_mhz), -out * odiv, idiv, fbdiv, odiv)
                    best = found if best is None or found < best else best
    if best is None:
        raise none_fits(input_mhz, output_mhz, at_most)
    _, _, idiv, fbdiv, odiv = best
    out = input_mhz * fbdiv / idiv
    return GowinPll(device, float(input_mhz), out, out * odiv, idiv - 1, fbdiv - 1, odiv)


__all__ = ["GowinPll", "gowin_pll"]
