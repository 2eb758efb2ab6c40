"""What the report counts: FPGA resource kinds (FINN's, ``RESOURCES``), the bit widths of
QONNX data types, and shares in percent."""

from __future__ import annotations

import math

from brainsmith.frameworks.finn.estimation.layer_facts import bits
from brainsmith.frameworks.finn.facts import RESOURCES

__all__ = ["RESOURCES", "bits", "finite", "percent"]


def finite(value: object) -> float | None:
    """``value`` when it is a finite number (an int as large as a float can be), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value if abs(value) < 10**300 else None
    return value if math.isfinite(value) else None


def percent(share: float, used: float | None = None) -> str:
    """``share`` (a percentage) to two decimals, as report.json keeps it: "0.96 %", never
    rounded up to a figure it does not reach; "< 0.01 %" for a share of something ``used``
    that is too small to show."""
    if used and abs(share) < 0.005:
        return "< 0.01 %"
    return f"{share:.2f} %"
