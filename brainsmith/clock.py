"""A clock: its period in ns and its frequency in MHz, one computed from the other here
alone, printed one way ("90.0 MHz")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

PERIOD_NS = (0.1, 1e6)  # the periods a build can target, in ns: 10 GHz to 1 kHz
MEETABLE_MHZ = (1.0, 1000.0)  # the clocks place and route can be asked to meet


@dataclass(frozen=True)
class Clock:
    """A clock of period ``ns`` (finite, above zero; ValueError otherwise)."""

    ns: float

    def __post_init__(self) -> None:
        if not _positive(self.ns):
            raise ValueError(f"{self.ns!r} ns is not a clock period (a positive number)")

    @classmethod
    def from_ns(cls, ns: float) -> Clock:
        """The clock of period ``ns``."""
        return cls(float(ns))

    @classmethod
    def from_mhz(cls, mhz: float) -> Clock:
        """The clock of frequency ``mhz``."""
        if not _positive(mhz):
            raise ValueError(f"{mhz!r} MHz is not a clock frequency (a positive number)")
        return cls(1000.0 / mhz)

    @classmethod
    def read_ns(cls, value: object) -> Clock | None:
        """The clock of period ``value`` (a report's ``clock_ns``); None when it is not a
        positive finite number."""
        return cls(float(value)) if _positive(value) else None

    @classmethod
    def read_mhz(cls, value: object) -> Clock | None:
        """The clock of frequency ``value`` (a report's ``clock_mhz``); None when it is not a
        positive finite number."""
        return cls.from_mhz(float(value)) if _positive(value) else None

    @property
    def mhz(self) -> float:
        """The frequency in MHz."""
        return 1000.0 / self.ns

    def in_range(self, bounds_ns: tuple[float, float] = PERIOD_NS) -> bool:
        """The period lies within ``bounds_ns`` (default: what a build can target)."""
        return bounds_ns[0] <= self.ns <= bounds_ns[1]

    def __str__(self) -> str:
        return mhz_text(self.mhz)


def mhz_text(mhz: float) -> str:
    """How a clock of ``mhz`` is printed, to 0.1 MHz ("92.3 MHz"), valid or not (an
    error message names what it refuses)."""
    return f"{mhz:.1f} MHz"


def _positive(value: object) -> TypeGuard[float]:
    """``value`` is a number (not a bool) above zero, finite as a float."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value)) and value > 0
    except OverflowError:  # an int past a float's range
        return False


__all__ = ["MEETABLE_MHZ", "PERIOD_NS", "Clock", "mhz_text"]
