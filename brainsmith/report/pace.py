"""One vocabulary for an accelerator's two speeds, shared by report.html, the build's summary
and ``brainsmith run``: **throughput**, frames streaming back to back, one every pipelined
interval; **latency**, one frame on its own, from its first input to its last output. Each
is said at a clock: the one the bitstream's PLL makes, when a bitstream was made."""

from __future__ import annotations

import math


def frames_per_second(fps: float) -> str:
    """A throughput: "61,035 fps" (3 significant digits below 100: "6.9 fps")."""
    return f"{round(fps):,} fps" if fps >= 100 else f"{fps:.3g} fps"


def microseconds(ns: float) -> str:
    """A latency in µs to 3 significant digits, zeros kept: "19.0 µs", "1.80 µs"."""
    us = ns / 1000
    if us >= 100 or us <= 0:
        return f"{us:,.0f} µs"
    return f"{us:.{max(0, 2 - math.floor(math.log10(us)))}f} µs"


def streaming(interval_cycles: float) -> str:
    """What a throughput is: "frames streaming, one every 2,048 cycles"."""
    return f"frames streaming, one every {round(interval_cycles):,} cycles"


def one_frame(cycles: float) -> str:
    """What a latency is: "one frame, 2,379 cycles from its first input to its last output"."""
    return f"one frame, {round(cycles):,} cycles from its first input to its last output"


__all__ = ["frames_per_second", "microseconds", "one_frame", "streaming"]
