"""FIFO depths sized by simulating the whole accelerator in Verilator, without Vivado.

FINN's ``step_set_fifo_depths`` sizes FIFOs by simulating the stitched design in Vivado's
XSI. ``size_fifos`` does it in Verilator on a design whose layers are all RTL: FINN's width
converters and FIFOs are inserted and the design is compiled once, with FIFO depths set when
a simulation starts (``rtlsim.stitched.partition``). It runs on random frames of its input
type with unbounded FIFOs, one frame offered per FINN's estimated interval (the slowest
layer's cycles; per its own pace where it cannot keep up), and each FIFO gets the largest
fill it reached (at least 2, what FINN's ``fifo.sv`` takes). A pipeline holding more frames
than were run (its latency over its pace) runs again with that many more, so each fill is
the one it keeps frame after frame, not the one of a pipeline still filling. The same
executable then runs flat out with FIFOs of exactly those depths: it must match Python bit
for bit at the same throughput; otherwise the depths are doubled and tried again (at most
``ATTEMPTS`` times).
The model keeps the converters and sized FIFOs, the sizing is written to
``report/fifo_sizing.json``, and the whole accelerator as plain SystemVerilog (a top module
and a file list) to ``stitched_rtl/``.

Float layers are simulated in exact single precision, and their Python execution computes
what their RTL computes (``brainsmith.frameworks.finn.float_units``), so every design is
compared bit for bit.

``fifo_depths``, a step of the default blueprint, sizes FIFOs this way whenever it can (every
layer RTL, Verilator installed, ``build.size_fifos`` not false, at most ``CYCLE_BUDGET``
cycles to simulate); otherwise it keeps FINN's depths and says why in the report.
``size_fifos`` fails instead (or, over the budget, simulates anyway).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

from brainsmith.errors import StepError
from brainsmith.frameworks.finn.folding.record import write_json
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.hardware.rtlsim.layer_design import CRASHED, MATCH
from brainsmith.hardware.rtlsim.layers import layer_tensors
from brainsmith.hardware.rtlsim.verilator import ToolchainError, find_toolchain
from brainsmith.planning.context import context_of
from brainsmith.plugin import step

FRAMES = 4  # random frames per simulation, beyond those the pipeline holds at once
ATTEMPTS = 3  # bounded re-simulations before giving up
RECORD = "fifo_sizing.json"
# fifo_depths sizes a design only if its frames take at most this many cycles in all (at
# FINN's estimated pace): a design folded for no target may need tens of millions per frame
CYCLE_BUDGET = 20_000_000

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np
    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.files import Json
    from brainsmith.planning.plan import BuildPlan
    from brainsmith.report_schema.stitched import Stitched


@step(
    name="fifo_depths",
    description="Size FIFOs by simulation in Verilator when every layer is RTL; else FINN's depths",
)
def fifo_depths(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """``size_fifos`` where the design can be sized; else the model as it is, with the
    reason in the report (a note and ``report/fifo_sizing.json``)."""
    reason = sizing_unavailable(model, context_of(cfg).plan) or _over_budget(model)
    if not context_of(cfg).plan.build.size_fifos:
        reason = "build.size_fifos is false (--no-size-fifos)"
    if not reason:
        try:
            return size_fifos(model, cfg)
        except NotSizable as exc:  # it could not be simulated: FINN's depths, and why
            reason = exc.reason
    context_of(cfg).notes.append(f"FIFO depths: FINN's, not sized by simulation: {reason}")
    write_json(_record_path(cfg), {"sized": False, "reason": reason})
    return model


class NotSizable(StepError):
    """The design could not be simulated whole (a compile failure, a stall): the default flow
    keeps FINN's depths; an explicit ``size_fifos`` fails with it."""


def sizing_unavailable(model: ModelWrapper, plan: BuildPlan | None = None) -> str:
    """Why ``model``'s FIFOs cannot be sized by simulation ("" when they can); advice to
    prefer RTL only where ``plan`` did not ask for it already."""
    from brainsmith.hardware.rtlsim.stitched.partition import unstitchable

    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        return (
            f"only an all-RTL design can be simulated whole; HLS layers: {', '.join(hls[:5])}"
            f"{' ...' if len(hls) > 5 else ''} ({_rtl_advice(model, plan)})"
        )
    reason = unstitchable(model)
    if reason:
        return f"the design cannot be simulated whole: {reason}"
    try:
        find_toolchain()
    except ToolchainError as exc:
        return f"the simulator is missing: {exc}"
    return ""


def _rtl_advice(model: ModelWrapper, plan: BuildPlan | None) -> str:
    """Build with ``prefer: rtl`` where ``plan`` (None: unknown) left an HLS layer of
    ``model`` to another rule; else where each one's reason is said."""
    unasked = [
        n.name
        for n in model.graph.node
        if n.domain.endswith(".hls")
        and (plan is None or plan.style_for(n.op_type.rpartition("_")[0]) != "rtl")
    ]
    if unasked:
        return "build with prefer: rtl (hw_compiler) or --prefer rtl where the layers have RTL backends"
    return (
        "RTL was asked for them; FINN made them HLS, each for the reason in the notes and build.log"
    )


def _over_budget(model: ModelWrapper) -> str:
    """Why simulating ``model``'s frames would take too long ("" when it would not)."""
    from qonnx.custom_op.registry import getCustomOp

    slowest = max((int(getCustomOp(n).get_exp_cycles()) for n in model.graph.node), default=0)
    if FRAMES * slowest <= CYCLE_BUDGET:
        return ""
    return (
        f"its slowest layer takes {slowest:,} cycles per frame (FINN's estimate), "
        f"{FRAMES} frames more than the {CYCLE_BUDGET:,} cycles the default flow simulates; "
        "set build.target_fps (--target-fps) for a faster design, or list size_fifos in the "
        "blueprint's steps to size it anyway"
    )


@step(
    name="size_fifos",
    description="Size FIFOs by simulating the whole accelerator in Verilator (no Vivado)",
)
def size_fifos(model: ModelWrapper, cfg: DataflowBuildConfig) -> ModelWrapper:
    """Insert width converters and FIFOs, size the FIFOs by simulation, prove the depths."""
    from brainsmith.hardware.rtlsim.stitched.partition import with_converters_and_fifos

    _require_sizable(model, cfg)
    began = time.perf_counter()
    part, clock = fpga_part(cfg), float(cfg.synth_clk_period_ns)
    folder = os.path.join(cfg.output_dir, "fifo_sizing")
    full = with_converters_and_fifos(model, os.path.join(folder, "code"), part, clock)
    bench = Bench(full, folder, part, clock)
    free = _unbounded(bench)
    sized = _bounded(bench, free)
    for layer in sized.fifos.values():
        layer.code_generation_ipgen(full, part, clock)  # FINN's fifo.sv of the sized depth
    written = _stitched(bench, cfg.output_dir)
    record = {
        "sized": True,
        "stitched_rtl": [os.path.relpath(path, cfg.output_dir) for path in written],
        "frames": len(free.contexts),
        "estimated_cycles_per_frame": free.estimate,
        "interval": free.result["cycles_per_frame"],
        "cycles_per_frame": sized.result["cycles_per_frame"],
        "latency_cycles": sized.result["latency_cycles"],
        "fifos": [{**f, "depth": sized.depths[f["name"]]} for f in free.result["fifos"]],
        "total_depth": sum(sized.depths.values()),
        "attempts": sized.attempts,
        "matches_python": free.result["status"] == MATCH,
        "compile_seconds": free.compile_seconds,
        "simulations": free.runs + len(sized.attempts),
        "seconds": round(time.perf_counter() - began, 3),
    }
    write_json(_record_path(cfg), record)
    return full


def _require_sizable(model: ModelWrapper, cfg: DataflowBuildConfig) -> None:
    """Raise ``StepError`` unless every layer is RTL and the simulator is there."""
    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        raise StepError(
            f"FIFOs can only be sized by simulation in an all-RTL design; HLS layers: "
            f"{', '.join(hls[:5])}{' ...' if len(hls) > 5 else ''}",
            f"{_rtl_advice(model, context_of(cfg).plan if cfg is not None else None)}; or use "
            "finn:step_set_fifo_depths with Vivado",
        )
    try:
        find_toolchain()
    except ToolchainError as exc:
        raise StepError(f"FIFOs cannot be sized: {exc}", exc.hint) from exc


@dataclass(frozen=True)
class Bench:
    """The design with width converters and FIFOs (``model``), simulated under ``folder``."""

    model: ModelWrapper
    folder: str
    part: str
    clock: float

    def frames(self, count: int, name: str) -> list[dict[str, np.ndarray]]:
        """Every layer's tensors on ``count`` random frames (Python run in ``name``)."""
        frames = random_frames(self.model, count)
        tensors: list[dict[str, np.ndarray]] = layer_tensors(
            self.model, frames, os.path.join(self.folder, name)
        )
        return tensors

    def simulate(self, contexts: list[dict[str, np.ndarray]], name: str, interval: int) -> Stitched:
        """``_simulated`` in the folder ``name``."""
        workdir = os.path.join(self.folder, name)
        return _simulated(self.model, contexts, workdir, self.part, self.clock, interval)


@dataclass
class Unbounded:
    """The simulation with unbounded FIFOs (``result``) at FINN's ``estimate`` of the
    slowest layer's cycles per frame, on ``contexts``: ``runs`` simulations after one
    compile of ``compile_seconds``."""

    result: Stitched
    contexts: list[dict[str, np.ndarray]]
    estimate: int
    runs: int
    compile_seconds: float


def _unbounded(bench: Bench) -> Unbounded:
    """Unbounded FIFOs, simulated again on more frames where the pipeline holds more than
    were run (the FIFOs fill further in it)."""
    from qonnx.custom_op.registry import getCustomOp

    contexts = bench.frames(FRAMES, "python")
    estimate = max(int(getCustomOp(n).get_exp_cycles()) for n in bench.model.graph.node)
    free = bench.simulate(contexts, "unbounded", estimate)
    runs, compile_seconds = free["runs"], free["compile_seconds"]  # the one compile
    more = steady_frames(free) - len(contexts)
    if more > 0:
        contexts += bench.frames(more, "python-steady")
        free = bench.simulate(contexts, "unbounded-steady", estimate)
        runs += free["runs"]
    return Unbounded(free, contexts, estimate, runs, compile_seconds)


@dataclass(frozen=True)
class Sized:
    """The depths that keep the unbounded pace (``result``: their simulation), the FIFO
    layers set to them and every attempt's depths and pace."""

    depths: dict[str, int]
    result: Stitched
    fifos: dict[str, HWCustomOp]
    attempts: list[Json]


def _bounded(bench: Bench, free: Unbounded) -> Sized:
    """Each FIFO as deep as it filled, doubled until the design keeps its unbounded pace
    (``ATTEMPTS`` at most)."""
    from qonnx.custom_op.registry import getCustomOp

    depths = _filled(free.result)
    fifos = {n.name: getCustomOp(n) for n in bench.model.graph.node if n.name in depths}
    attempts = []
    pace = free.result.get("cycles_per_frame") or 0
    for attempt in range(1, ATTEMPTS + 1):
        for name, layer in fifos.items():
            layer.set_nodeattr("depth", depths[name])
        sized = bench.simulate(free.contexts, f"bounded-{attempt}", 0)
        attempts.append({"depths": dict(depths), "cycles_per_frame": sized["cycles_per_frame"]})
        if (sized.get("cycles_per_frame") or 0) <= pace + 1:
            return Sized(depths, sized, fifos, attempts)
        depths = {name: 2 * depth for name, depth in depths.items()}
    raise _slower(bench, pace, sized)


def _filled(free: Stitched) -> dict[str, int]:
    """FIFO name -> as deep as it filled unbounded (2 at least)."""
    return {f["name"]: max(2, int(f["max_occupancy"] or 0)) for f in free["fifos"]}


def _slower(bench: Bench, pace: float, sized: Stitched) -> StepError:
    """The StepError for FIFOs whose last depths (``sized``) still lose the unbounded
    ``pace``."""
    return StepError(
        f"the FIFOs sized by simulation lower the throughput: {pace:,.0f}"
        f" cycles/frame with unbounded FIFOs, {sized['cycles_per_frame']:,.0f} with depths "
        f"doubled {ATTEMPTS - 1} times (see {bench.folder})",
        "report this design; meanwhile use finn:step_set_fifo_depths with Vivado",
        bench.model,
    )


def _stitched(bench: Bench, output_dir: str) -> list[str]:
    """The stitched design's SystemVerilog written to ``output_dir``/stitched_rtl."""
    from brainsmith.hardware.rtlsim.stitched.partition import stitched_design, write_stitched

    code = os.path.join(bench.folder, "code")
    design, _ = stitched_design(bench.model, code, bench.part, bench.clock)
    written: list[str] = write_stitched(design, os.path.join(output_dir, "stitched_rtl"))
    return written


def _record_path(cfg: DataflowBuildConfig) -> str:
    return os.path.join(cfg.output_dir, "report", RECORD)


def steady_frames(free: Stitched) -> int:
    """Frames to simulate for each FIFO to reach its steady fill: as many as the pipeline
    holds when the first frame leaves it (its latency over its pace, both measured in
    ``free``), plus ``FRAMES``. However long a frame is: fewer would size the FIFOs of a
    pipeline still filling, and more only repeat the steady state (the cost of long frames
    is weighed once, before sizing: ``_over_budget``)."""
    pace: float | None = free.get("cycles_per_frame")
    latency: float | None = free.get("latency_cycles")
    if not pace or not latency:
        return FRAMES
    return math.ceil(latency / pace) + FRAMES


def random_frames(model: ModelWrapper, count: int) -> list[list[np.ndarray]]:
    """``count`` frames of random values of the model's input type."""
    from qonnx.util.basic import gen_finn_dt_tensor

    return [
        [
            gen_finn_dt_tensor(model.get_tensor_datatype(i.name), model.get_tensor_shape(i.name))
            for i in model.graph.input
        ]
        for _ in range(count)
    ]


def _simulated(
    model: ModelWrapper,
    contexts: list[dict[str, np.ndarray]],
    workdir: str,
    part: str,
    clock: float,
    interval: int,
) -> Stitched:
    """The stitched simulation: unbounded FIFOs at ``interval`` cycles per frame, or (0) the
    FIFOs of their depths, flat out: its result, whose outputs must be ``contexts``'."""
    from brainsmith.hardware.rtlsim.stitched.partition import simulate_partition

    bounded = interval == 0
    result = simulate_partition(
        model, contexts, workdir, part, clock, bounded=bounded, interval=interval
    )
    status = result.get("status")
    if status in ("not simulated", "failed"):  # not run, or crashed: no verdict on results
        kind = "sized" if bounded else "unbounded"
        reason = str(result.get("reason", ""))
        if status == "failed":
            reason = f"{CRASHED} ({kind} FIFOs): {reason.removeprefix('crashed: ')}"
        else:
            reason = f"the {kind} simulation {status}: {reason}"
        raise NotSizable(
            reason,
            "run brainsmith verify-rtl on the build folder to find the layer",
        )
    if status != MATCH or not result.get("cycles_per_frame"):
        kind = "with the sized FIFOs" if bounded else "with unbounded FIFOs"
        raise StepError(
            f"the accelerator {kind} did not simulate correctly: {result.get('status')}: "
            f"{result.get('reason', '')}",
            "run brainsmith verify-rtl on the build folder to find the layer",
            model,
        )
    return result
