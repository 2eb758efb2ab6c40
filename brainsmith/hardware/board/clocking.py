"""A board's clock generator, whatever its family: the PLL that makes the design clock from
the board's oscillator (``pll``: the ECP5's EHXPLLL, ``gowin_pll``: Gowin's rPLL,
``ice40_pll``: the iCE40's SB_PLL40_PAD). Each is set by a search over its dividers and
gives the clock it achieves, which can differ from the one asked for, and its instance in
the board top."""

from __future__ import annotations

from typing import Protocol

from brainsmith.errors import HintedError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.hardware.hdl import Instance, Port


class PllError(HintedError):
    """A clock the PLL cannot make from the board's oscillator."""


class ClockGenerator(Protocol):
    """A PLL set for one clock: its input, its achieved output, its cell and its instance."""

    @property
    def input_mhz(self) -> float: ...

    @property
    def output_mhz(self) -> float: ...

    @property
    def primitive(self) -> str: ...

    def instance(self, clkin: str, clkout: str, locked: str, name: str = "pll") -> Instance:
        """The PLL's instance driving ``clkout`` and ``locked`` from ``clkin``."""
        ...

    def declaration(self) -> str:
        """The PLL cell's module as a blackbox (its ports and the parameters ``instance``
        sets), for the synthesis to read where its family's models are not read; "" where
        they are (ECP5's)."""
        ...


def cell_declaration(instance: Instance, ports: tuple[Port, ...]) -> str:
    """An empty module of ``instance``'s cell: ``ports``, and each parameter the instance
    sets, its value the default."""
    from brainsmith.hardware.hdl import Module

    parameters = tuple(pair for line in instance.parameters for pair in line)
    comment = (f"{instance.module}, a cell of the part: its ports and the parameters brainsmith "
               "sets, read as a blackbox",)  # fmt: skip
    return Module(instance.module, ports, (), comment, parameters=parameters).render()


def out_of_range(family: str, low: float, high: float, mhz: float) -> PllError:
    """The error for a clock outside the PLL's output range."""
    from brainsmith.clock import mhz_text

    return PllError(
        f"a {family} PLL makes {low:g}-{high:g} MHz, not {mhz_text(mhz)}",
        f"ask for a clock between {low:g} and {high:g} MHz",
    )


def none_fits(input_mhz: float, output_mhz: float, at_most: bool) -> PllError:
    """The error when no divider of the PLL makes the clock (``at_most``: or a slower one)."""
    below = " or less" if at_most else ""
    return PllError(
        f"no PLL divider of a {input_mhz:g} MHz oscillator makes {output_mhz:g} MHz{below}"
    )


__all__ = ["ClockGenerator", "PllError", "cell_declaration", "none_fits", "out_of_range"]
