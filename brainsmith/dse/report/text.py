"""Numbers and choices as the exploration's report writes them."""

from __future__ import annotations

from brainsmith.plugin.names import short_name


def number(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{int(value):,}" if isinstance(value, int | float) else str(value)


def amount(value: object, bound: bool) -> str:
    """A metric's value; "≥ 552" for a lower bound."""
    return f"≥ {number(value)}" if bound and value is not None else number(value)


def choice(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(short_name(str(v)) for v in value) + "]"
    return "-" if value is None else str(value)


def short(value: float) -> str:
    """An axis tick: ``250k``, ``1.5M``."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"
