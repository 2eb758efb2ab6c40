"""Boards amaranth-boards does not describe, described as it describes its own: an amaranth
platform each, its resources read from the board's published constraints, so a board here is
read as an amaranth-boards one is (``boards.board``). Only what a build reads is given: the
oscillator, the USB UART, a button and an LED; no tool chain (brainsmith runs its own).

- ``GateMateA1EVBPlatform``: Olimex's GateMateA1-EVB (Cologne Chip GateMate CCGM1A1), its 10 MHz
  oscillator, USB UART, button and LED as its master CCF constraints file and LiteX-Boards'
  ``olimex_gatemate_a1_evb`` give them (the CCF's pad names, ``IO_SB_A8``...).
"""

from __future__ import annotations

from typing import Any

from amaranth.build import Attrs, Clock, Pins, Platform, Resource
from amaranth_boards.resources import ButtonResources, LEDResources, UARTResource


class DescribedPlatform(Platform):  # type: ignore[misc]  # amaranth is untyped here
    """A board's resources and part, with no tool chain: brainsmith places and packs it."""

    connectors: list[Any] = []
    required_tools: list[str] = []

    def toolchain_prepare(self, fragment: Any, name: str, **kwargs: Any) -> Any:
        raise NotImplementedError("brainsmith builds this board with its own tool chain")


class GateMateA1EVBPlatform(DescribedPlatform):
    """Olimex GateMateA1-EVB: a CCGM1A1, a 10 MHz oscillator, a USB UART."""

    device = "CCGM1A1"
    package = ""
    default_clk = "clk10"
    resources = [
        Resource("clk10", 0, Pins("IO_SB_A8", dir="i"), Clock(10e6), Attrs(SCHMITT_TRIGGER="true")),
        UARTResource(0, rx="IO_SA_A6", tx="IO_SA_B6"),
        *ButtonResources(pins="IO_SB_B7", invert=True),
        *LEDResources(pins="IO_SB_B6", invert=True),
    ]


__all__ = ["DescribedPlatform", "GateMateA1EVBPlatform"]
