"""report.json as types: the records the build writes (``builder.reporting.assemble``) and the
summary, report.html, the dataflow picture, ``brainsmith verify-rtl`` and explore read; the
estimates' records in ``estimates.py``, the stitched simulation's in ``stitched.py``.

A leaf: it imports nothing of brainsmith's but its own modules, so every layer may name its
types, the one that writes a section and the ones that read it alike.

The report stays a plain dict (written with ``json``, read back from disk), so these are
TypedDicts. They exist for the type checker only: every module names them under
``TYPE_CHECKING``, so this package is never imported at run time.

``NotRequired`` marks a key that a record may lack: a layer's facts are known only with a
model, a step's time only once it ran. A full disk leaves a ``ShortReport``; a stopped
build keeps a ``StoppedReport``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from brainsmith.report_schema.estimates import BitsKey as BitsKey
from brainsmith.report_schema.estimates import Counts as Counts
from brainsmith.report_schema.estimates import CpuNode as CpuNode
from brainsmith.report_schema.estimates import CpuNodes as CpuNodes
from brainsmith.report_schema.estimates import DatatypeKey as DatatypeKey
from brainsmith.report_schema.estimates import Estimates as Estimates
from brainsmith.report_schema.estimates import Layer as Layer
from brainsmith.report_schema.estimates import LayerAttribute as LayerAttribute
from brainsmith.report_schema.estimates import LayerFacts as LayerFacts
from brainsmith.report_schema.estimates import Performance as Performance
from brainsmith.report_schema.estimates import Read as Read
from brainsmith.report_schema.stitched import FifoFill as FifoFill
from brainsmith.report_schema.stitched import Mismatch as Mismatch
from brainsmith.report_schema.stitched import OutputDifference as OutputDifference
from brainsmith.report_schema.stitched import Stitched as Stitched

# A written report's status: ``running`` from the start, the verdict at the end
Status = Literal["running", "ok", "failed", "interrupted"]
# A step's status: ``pending`` until it runs
StepStatus = Literal["pending", "ok", "skipped", "failed", "interrupted"]


class FinnWarning(TypedDict):
    """One of ``warnings``: a distinct warning or error in build.log
    (``frameworks.finn.build_log.finn_warnings``)."""

    level: str  # WARNING | ERROR | CRITICAL
    source: str  # the logger
    message: str
    count: int


class BuildErrorEntry(TypedDict):
    """``error``: the step a failed or interrupted build stopped in, why, and what to try."""

    step: str
    reason: str
    hint: str


class RtlsimVerdict(TypedDict):
    """A step's ``verification.rtlsim``: the RTL simulation's outcome in a line."""

    ok: bool
    summary: str


class Verification(TypedDict):
    """A step's ``verification`` (``verify.Check.as_dict`` with the check's time); its
    ``user`` entry is the comparison with the user's vectors. With ``verify: none`` only the
    user's vectors are checked: then ``user`` and ``seconds`` are all there is."""

    samples: NotRequired[int]
    max_error: NotRequired[float]
    ok: NotRequired[bool]
    max_steps: NotRequired[float]  # the largest difference of a quantized output, in steps
    errors: NotRequired[int]  # differing output elements no rounding tie explains
    ties: NotRequired[int]  # quantizer elements on a rounding boundary rounded the other way
    tie_samples: NotRequired[int]  # samples whose differences ties explain
    worst_tie: NotRequired[str]  # the tie behind the largest difference
    unchanged: NotRequired[bool]  # the model computes what the last checked one computed
    seconds: NotRequired[float]
    user: NotRequired[Verification]
    rtlsim: NotRequired[RtlsimVerdict]
    # the last verified step: the outputs with FINN's RTL softmax and LayerNorm computing as
    # their RTL does, against the reference (how far their approximations take them)
    rtl_arithmetic: NotRequired[Verification]


class StepEntry(TypedDict):
    """One of ``steps`` (``state.StepRecord.as_dict``: empty fields left out)."""

    name: str
    status: StepStatus
    plugin: NotRequired[str]
    seconds: NotRequired[float]
    verification: NotRequired[Verification]
    reason: NotRequired[str]
    model: NotRequired[str]  # the step's saved model, relative to the output folder


class MeasuredLayer(Layer):
    """A layer of a build with ``build.synth``: also Yosys' counts, and the estimates' error."""

    measured: NotRequired[dict[str, int]]  # LUT, FF, CARRY, DSP, BRAM_18K, BRAM_36K, URAM
    estimate_error: NotRequired[dict[str, float]]  # (estimate - measured) / measured


class SynthesisRun(TypedDict):
    """How a layer's synthesis ran (``measured.synthesis_run``), in report.json and
    synthesis.json alike."""

    seconds: float | None
    cached: bool
    fixes: list[str]
    log: str | None  # Yosys' log of a failed layer, relative to the output folder


class SynthesisLayer(SynthesisRun):
    """A layer of ``synthesis``: Yosys' counts, or why there are none."""

    name: str
    op_type: str
    status: str  # synthesised | not synthesised | failed
    reason: str
    counts: dict[str, int] | None


class SynthesisSection(TypedDict):
    """``synthesis`` (build.synth): every layer synthesised out of context with Yosys."""

    tool: str  # Yosys' version
    part: str
    family: str  # synth_xilinx -family: xc7 | xcu | xcup
    seconds: float
    complete: bool  # every hardware layer synthesised: the totals leave nothing out
    totals: dict[str, int]  # of the synthesised layers
    estimated: dict[str, float | None]  # the estimates of the same layers, where all have one
    estimate_error: dict[str, float]  # (estimated - measured) / measured, per resource
    layers: list[SynthesisLayer]


class ChartRow(TypedDict):
    """What the charts draw of an estimated layer (``contents.chart_rows`` writes every key
    of the resources drawn: FINN's, or a Lattice part's own; the charts take a missing number
    as 0)."""

    name: str
    LUT: NotRequired[float | None]
    BRAM_18K: NotRequired[float | None]
    URAM: NotRequired[float | None]
    DSP: NotRequired[float | None]
    LUT4: NotRequired[float | None]
    FF: NotRequired[float | None]
    MULT18: NotRequired[float | None]
    EBR: NotRequired[float | None]
    cycles: NotRequired[float | None]
    not_estimated: NotRequired[list[str] | None]


class ClockedPerformance(TypedDict):
    """What leads ``performance`` when a bitstream was made
    (``builder.bitstream.performance_at_clock``): fps and latency at the clock the design
    runs at, each with its source ("nextpnr" clock; "Verilator" or "estimate" cycles)."""

    fps: float
    fps_source: str
    latency_ns: float | None
    latency_source: str
    clock_mhz: float  # the PLL's clock, or the Fmax reached when timing is not met
    clock_source: str
    cycles_per_frame: float
    cycles_source: str
    latency_cycles: float | None
    clock_note: str | None  # timing not met: at which clock the figures are
    # beside fps: the pace the design's own counter gave (the gate-level check's BENCH of
    # frames back to back, simulated) and the frames a second the host link carries
    counted_fps: NotRequired[float]
    counted_source: NotRequired[str]
    link_fps: NotRequired[float]
    link_source: NotRequired[str]


class NetlistCheckSection(TypedDict):
    """``bitstream.netlist_check``: the netlist the bitstream was placed from, simulated at
    gate level (Verilator, the family's cell models) behind the host link, answered
    ``frames`` frames of ``words`` output words each; ``passed`` when every word equals the
    RTL simulation's, and the first frame run ``bench_frames`` times back to back (BENCH)
    took the RTL's ``bench_cycles`` with its checksum. ``ran`` is False, with the
    ``reason``, when it could not run; ``cached`` when the verdict is that of an earlier check
    of the same netlist, RTL and frames."""

    ran: bool
    passed: bool
    frames: int
    words: int
    seconds: float
    first_difference: str
    reason: str
    cached: bool
    bench_frames: NotRequired[int]
    bench_cycles: NotRequired[int]
    latency_cycles: NotRequired[int]  # the first frame alone, by the same counter


class CriticalPath(TypedDict):
    """``bitstream.critical_path``: the slowest path of the slowest clock, from which layer
    to which, its delay (``hardware.place_route.critical_path``)."""

    clock: str
    delay_ns: float
    start: str  # the layer (or "host link", "board top") the path starts in
    end: str
    start_cell: str
    end_cell: str
    steps: int  # nextpnr's path elements: clock-to-Q, each logic and routing hop, setup


class RefoldRound(TypedDict):
    """A round whose bitstream missed its clock: built again folded for a slower one, or
    (``refolded`` False, a clock brainsmith chose) placed again slower with its folding; or
    one whose tools failed on its folding (``failed``; no clock made, ``fmax_mhz`` 0)."""

    clock_ns: float
    clock_mhz: float  # what its PLL made
    fmax_mhz: float  # what nextpnr reached
    met: bool
    seconds: NotRequired[float]  # the round's own
    netlist_checked: NotRequired[bool]  # False: its gate-level check was skipped (thrown away)
    refolded: NotRequired[bool]  # False: the next round kept its folding (absent: True)
    failed: NotRequired[str]  # its tools failed (the first error): the round before built again


class BitstreamSection(TypedDict):
    """``bitstream`` (build.bitstream): ``BitstreamResult.as_dict()`` with the host link's
    words per frame, the bitstream's path relative to the output folder."""

    in_words: int
    out_words: int
    bitstream: str
    sha256: str
    board: str
    part: str
    asked_mhz: float
    clock_mhz: float  # what the PLL makes: nextpnr's constraint
    baud: int
    clocks_per_bit: int
    fmax_mhz: dict[str, float]  # per clock domain, as nextpnr reports it
    resources: dict[str, dict[str, int]]  # per cell type: used, available
    seconds: dict[str, float]  # synth, place_route, pack, unpack
    tools: dict[str, str]
    cells: dict[str, int]
    fixes: list[str]
    netlist: str  # Yosys' netlist, relative to the output folder
    link_fps: NotRequired[float]  # frames a second the link carries, two requests outstanding
    netlist_check: NotRequired[NetlistCheckSection]
    critical_path: CriticalPath | None  # the slowest clock's, its ends named by layer
    refold_rounds: NotRequired[int]  # build.refold_rounds
    refolds: NotRequired[list[RefoldRound]]  # the rounds that missed their clock before this
    cached: bool
    met: bool
    status: str  # timing met | timing not met


class PlacedCount(TypedDict):
    """One of ``family_resources.placed``: what nextpnr placed of a resource, the part's
    capacity, and nextpnr's name of its cell."""

    cell: str  # the family's cell as its router names it (``Family.resources``)
    used: int
    available: int


class FamilyResources(TypedDict):
    """``family_resources`` of a build for a Lattice part: the design in the part's own
    resources (``layers``, ``totals`` and ``utilisation`` hold FINN's estimates for the
    stand-in AMD part it made the layers for). Each layer's LUT4, FF, MULT18 and EBR from its
    family's fitted models (``frameworks/finn/rtl_costs.py``), their totals
    against the part's capacities as nextpnr reports them, and what nextpnr placed when a
    bitstream was made (``builder.lattice.family_resources``)."""

    part: str  # the Lattice part: the board's, or the one the build names
    family: str  # the part's family, by name (``Family.name``)
    stand_in: str  # the AMD part FINN made the layers for
    resources: list[str]  # LUT4, FF, MULT18, EBR
    source: str  # where the layers' figures come from
    layers: dict[str, dict[str, float] | None]  # per layer; None: no model of its kind
    totals: dict[str, float]  # of the layers with figures
    incomplete: list[str]  # the layers without figures, left out of the totals
    available: dict[str, int] | None  # the part's; None when its nextpnr could not say
    available_source: str | None  # which nextpnr said so
    placed: dict[str, PlacedCount] | None  # nextpnr's counts of the whole bitstream


class SlowLayer(TypedDict):
    """One of ``target.over_target``: a layer slower than the target allows."""

    name: str
    cycles: float


class Target(TypedDict):
    """``target``, with ``target_fps`` and an estimated throughput: whether it is met, the
    layer that limits it and why (``limit``, as the folding search recorded it)."""

    target_fps: int
    estimated_fps: float
    met: bool
    bottleneck: str | None
    bottleneck_cycles: int | None
    target_cycles: int
    over_target: list[SlowLayer] | None  # None unless every layer has cycles
    limit: str | None
    folding_search: str | None  # brainsmith | finn: which search folded, with a limit
    finn_warnings_superseded: NotRequired[int]  # set by ``builder.reporting.assemble``


class LatencyTarget(TypedDict):
    """``latency_target``: a frame's latency asked (``build.target_latency_ns``), FINN's
    estimate of it after folding (the layer cycles summed on the slowest path, which the
    folding meets) and, when the whole design was simulated, the latency measured."""

    target_latency_ns: float
    estimated_latency_ns: float
    critical_path_cycles: int
    measured_latency_ns: float | None  # the whole design simulated in Verilator
    met: bool  # the measured latency when there is one, else the estimate


class Utilisation(TypedDict):
    """``utilisation``: the part's resources (None without a table) and the estimate's
    share in percent (None for a resource FINN does not estimate, FF)."""

    part: str | None
    available: dict[str, int] | None
    percent: dict[str, float | None] | None
    source: str | None


class RtlsimLayer(TypedDict):
    """One of ``rtlsim.layers`` (``brainsmith.hardware.rtlsim.layers.LayerResult``: empty fields
    left out)."""

    name: str
    op_type: str
    status: str  # match | mismatch | failed | not simulated
    reason: NotRequired[str]
    frames: NotRequired[int]
    first_mismatch: NotRequired[Mismatch]
    cycles_per_frame: NotRequired[float]
    latency_cycles: NotRequired[int]
    estimated_cycles: NotRequired[int]
    compile_seconds: NotRequired[float]
    compile_cached: NotRequired[bool]
    simulate_seconds: NotRequired[float]
    estimate_error: NotRequired[float]


class RtlsimSection(TypedDict):
    """``rtlsim`` with ``verify: rtlsim`` or after ``brainsmith verify-rtl``
    (``brainsmith.hardware.rtlsim.layers.DesignResult.as_dict``)."""

    tool: str
    ok: bool
    seconds: float
    summary: str
    layers: list[RtlsimLayer]
    stitched: Stitched | None


class Tolerance(TypedDict):
    """``verify_tolerance``: |actual - expected| <= atol + rtol * |expected|."""

    atol: float | None
    rtol: float


class ShortStep(TypedDict):
    """A step of a short report."""

    name: str
    status: StepStatus


class ShortReport(TypedDict):
    """The report.json a full disk leaves: the verdict and the steps' outcomes."""

    name: str
    status: Status
    error: BuildErrorEntry | None
    output_dir: str
    steps: list[ShortStep]


class StoppedReport(TypedDict):
    """A stopped build's report (``build(stop_after=N)``), kept in memory only: a checkpoint
    is written instead of report.json."""

    name: str
    status: Literal["stopped"]
    steps: list[StepEntry]


class BuildReport(Estimates):
    """report.json as ``builder.reporting.assemble`` writes it (keys in this order, with the
    estimates' after ``steps``)."""

    name: str
    status: Status
    error: BuildErrorEntry | None
    model: str  # absolute path of the model built
    blueprint_path: str
    output_dir: str
    moved_aside: str | None  # where --force moved a previous build's folder
    fpga_part: str | None
    board: str | None
    clock_ns: float
    target_fps: int | None
    verify: str  # each | final | rtlsim | none
    verify_samples: int
    verify_tolerance: Tolerance
    seconds: float
    setup_seconds: float | None  # loading FINN and the model
    notes: list[str]
    steps: list[StepEntry]
    target: Target | None
    latency_target: NotRequired[LatencyTarget | None]  # with build.target_latency_ns
    cpu_nodes: CpuNodes | None
    utilisation: Utilisation
    family_resources: NotRequired[FamilyResources | None]  # a Lattice board's build
    warnings: list[FinnWarning]
    generated_code: str  # finn/build
    stitched_rtl: NotRequired[str | None]  # finn/stitched_rtl/files.f of an all-RTL design
    rtlsim: RtlsimSection | None
    synthesis: NotRequired[SynthesisSection | None]
    bitstream: NotRequired[BitstreamSection | None]
    blueprint: dict[str, object]  # the resolved blueprint, as YAML data
    versions: dict[str, str]
