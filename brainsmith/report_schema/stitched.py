"""What an RTL simulation found, as report.json holds it (``hardware.rtlsim``): the stitched
partition's section (``Stitched``), its FIFOs (``FifoFill``), how far its outputs are from
Python's (``OutputDifference``) and a layer's first differing element (``Mismatch``)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class FifoFill(TypedDict):
    """A FIFO of the stitched simulation: between which layers, its largest fill (with
    unbounded FIFOs: the depth it needs) and, when bounded, its depth."""

    name: str
    after: str
    before: str
    max_occupancy: int | None
    depth: NotRequired[int]


class OutputDifference(TypedDict):
    """How far simulated outputs are from Python's."""

    differing_elements: int
    elements: int
    max_difference: float
    largest_expected: float


class Stitched(TypedDict):
    """The whole partition simulated, or why not (report.json's ``rtlsim.stitched``)."""

    status: str  # match | mismatch | failed | not simulated
    compile_seconds: NotRequired[float]
    compile_cached: NotRequired[bool]
    frames: NotRequired[int]
    layers: NotRequired[int]
    fifos_bounded: NotRequired[bool]
    runs: NotRequired[int]
    cycles_per_frame: NotRequired[float | None]
    estimated_cycles_per_frame: NotRequired[int]  # FINN's: the slowest layer's
    latency_cycles: NotRequired[int | None]
    fps: NotRequired[float | None]
    latency_ns: NotRequired[float | None]
    fifos: NotRequired[list[FifoFill]]
    simulate_seconds: NotRequired[float]
    estimate_error: NotRequired[float]
    estimate_tolerance: NotRequired[float]
    within_tolerance: NotRequired[bool]
    difference: NotRequired[OutputDifference]
    reason: NotRequired[str]


class Mismatch(TypedDict):
    """A layer's first output element that differs from Python, and how many differ."""

    frame: int
    output: str  # the output stream's port
    index: list[int]
    got: float
    expected: float
    differing_elements: int
