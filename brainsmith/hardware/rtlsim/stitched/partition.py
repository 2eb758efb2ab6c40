"""Simulate the stitched dataflow partition: every layer, with the width converters and FIFOs
FINN would insert, as one design, to measure the design's real throughput and latency and the
FIFO occupancy that sizes its FIFOs — without Vivado.

A copy of the final design gets FINN's ``InsertDWC`` and ``InsertFIFO`` (RTL backends); only
the new width converters and FIFOs get code, in the simulation's own folder — the build's
generated files are used as they are. In simulation each FIFO is a ``brainsmith_fifo_sim``
(``fifo_sim.sv``) whose depth is set when the simulation starts: 0 makes it unbounded,
counting its largest fill (as finn-rtllib's ``fifo_gauge``, which FINN's own FIFO sizing
simulates), a depth bounds it. One compile of the design thus serves sizing, the re-run with
the sized depths and the final check. Layers are wired by the tensors they share, so forks
(``DuplicateStreams``) and joins (``ElementwiseAdd``) are stitched as they are; a design with
HLS layers, a tensor read by two layers without a ``DuplicateStreams``, or a double-pumped
layer is reported as not simulated, with the reason. ``stitched_design`` gives the same
design with FINN's ``fifo.sv`` of each FIFO's depth, for other simulators and synthesis.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import dataclass

import numpy as np
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.custom_op.registry import getCustomOp

from brainsmith.files import write_text
from brainsmith.frameworks.finn.facts import frames_per_second
from brainsmith.hardware.listing import INSTANCES
from brainsmith.hardware.rtlsim.compile import Compiled, CompileError, compile_layer
from brainsmith.hardware.rtlsim.layer_design import (
    ESTIMATE_TOLERANCE,
    FAILED,
    MATCH,
    MISMATCH,
    NOT_SIMULATED,
    LayerDesign,
    NotSimulated,
    estimate_error,
    layer_design,
)
from brainsmith.hardware.rtlsim.stimulus import SimulationFailed, Waveform, simulate
from brainsmith.hardware.rtlsim.stitched.design import as_layer_design, stitch
from brainsmith.hardware.rtlsim.verilator import find_toolchain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from onnx import NodeProto

    from brainsmith.report_schema.stitched import FifoFill, OutputDifference, Stitched

# The stitched check simulates every verification frame while they take at most this many
# cycles at FINN's estimated pace (the slowest layer's cycles per frame); beyond, only the
# frames it needs (``frames_to_check``): a design folded for no target may take tens of
# millions of cycles per frame, and each frame beyond those it needs costs as much again.
CHECK_CYCLES = 20_000_000
CHECK_MARGIN = 2  # frames beyond those the pipeline holds: one entering it full, one after


def frames_to_check(model: ModelWrapper, offered: int) -> int:
    """How many of ``offered`` frames the stitched check of ``model`` simulates: all while
    they take at most ``CHECK_CYCLES`` at FINN's estimated pace; else as many as the
    pipeline holds at once plus ``CHECK_MARGIN``. It holds at most its layers' cycles (a
    frame's latency, each layer in turn) over the slowest layer's (its pace); those frames
    overlap in it in every way they can, and later ones only repeat that at the same cost."""
    cycles = _cycles(model.graph.node)
    pace = max(cycles, default=0)
    if pace <= 0 or offered * pace <= CHECK_CYCLES:
        return offered
    return min(offered, math.ceil(sum(cycles) / pace) + CHECK_MARGIN)


def _cycles(nodes: Sequence[NodeProto]) -> list[int]:
    """FINN's estimated cycles per frame of each of ``nodes``."""
    return [int(getCustomOp(node).get_exp_cycles()) for node in nodes]


def simulate_partition(
    model: ModelWrapper,
    contexts: list[dict[str, np.ndarray]],
    workdir: str,
    fpga_part: str,
    clock_ns: float,
    bounded: bool = False,
    interval: int | None = None,
) -> Stitched:
    """Simulate ``model`` (the dataflow partition) end to end on the inputs of ``contexts``
    (the Python tensors of each sample), compared with their outputs: the report.json
    ``stitched`` section.

    The FIFOs hold at most their ``depth`` with ``bounded`` (a FIFO too shallow shows as a
    lower throughput or a stall), else they are unbounded; either way the design is the same
    executable (the depths are set when it starts), compiled once and cached by content.
    Without ``interval`` the design runs flat out (its pace: cycles between consecutive
    frames' outputs, and the latency of the first), then, unless ``bounded``, with one frame
    offered per that many cycles (each FIFO's largest fill at full throughput: flat out,
    frames would only pile up in front of the slowest layer); with ``interval`` 0 only flat
    out; with a positive one only at that pace, and once more at its own where it could not
    keep up."""
    began = time.perf_counter()
    try:
        design, chain = _stitch(model, os.path.join(workdir, "code"), fpga_part, clock_ns)
    except NotSimulated as exc:
        return {"status": NOT_SIMULATED, "reason": str(exc)}
    toolchain = find_toolchain()
    try:
        compiled = compile_layer(design, toolchain, workdir)
    except CompileError as exc:  # it could be simulated here, but was not: a failure
        return {"status": FAILED, "reason": f"{toolchain.label} cannot compile it: {exc}"}
    runs = _Runs.of(model, contexts, chain, design, compiled.executable, workdir, bounded)
    try:
        wave, paced = runs.waves(interval)
    except SimulationFailed as exc:
        return {
            "status": FAILED,
            "compile_seconds": round(compiled.seconds, 3),
            "compile_cached": compiled.cached,
            "reason": str(exc),
        }
    measured = _Measured(runs, wave, paced, compiled, clock_ns)
    wanted = [context[model.graph.output[0].name] for context in contexts]
    return measured.compared(wanted, chain, _cycles(model.graph.node), began)


def _end_layers(model: ModelWrapper, chain: list[NodeProto]) -> tuple[HWCustomOp, HWCustomOp]:
    """The layers of ``chain`` reading ``model``'s input and writing its output."""
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    first = getCustomOp(next(n for n in chain if source in n.input))
    last = getCustomOp(next(n for n in chain if sink in n.output))
    return first, last


@dataclass
class _Runs:
    """The compiled stitched design run on the frames (each a list of its input), counted."""

    design: LayerDesign
    ops: tuple[HWCustomOp, HWCustomOp]  # the layers reading its input and writing its output
    executable: str
    frames: list[list[np.ndarray]]
    workdir: str
    estimate: int  # FINN's estimated latency: how long it may go without output
    bounded: bool
    depths: dict[str, int]  # with ``bounded``: each FIFO's depth input (else all unbounded)
    count: int = 0

    @classmethod
    def of(
        cls,
        model: ModelWrapper,
        contexts: list[dict[str, np.ndarray]],
        chain: list[NodeProto],
        design: LayerDesign,
        executable: str,
        workdir: str,
        bounded: bool,
    ) -> _Runs:
        source = model.graph.input[0].name
        frames = [[context[source]] for context in contexts]
        estimate = sum(_cycles(model.graph.node))
        depths = fifo_depths(chain) if bounded else {}
        ends = _end_layers(model, chain)
        return cls(design, ends, executable, frames, workdir, estimate, bounded, depths)

    def run(self, pace: int = 0) -> Waveform:
        """One simulation, frames offered every ``pace`` cycles (0: flat out)."""
        self.count += 1
        return simulate(
            self.design,
            self.ops,
            self.executable,
            self.frames,
            self.workdir,
            self.estimate,
            pace,
            self.depths,
        )

    def waves(self, interval: int | None) -> tuple[Waveform, Waveform]:
        """(the run whose pace and outputs count, the run whose latency and fills count):
        see ``simulate_partition``."""
        if interval:
            return self._at(interval)
        wave = self.run()
        if wave.cycles_per_frame and interval is None and not self.bounded:
            return wave, self.run(math.ceil(wave.cycles_per_frame))
        return wave, wave

    def _at(self, interval: int) -> tuple[Waveform, Waveform]:
        """At ``interval``, and again at its own pace where it could not keep up."""
        wave = self.run(interval)
        if wave.cycles_per_frame and wave.cycles_per_frame > interval + 1:
            wave = self.run(math.ceil(wave.cycles_per_frame))
        return wave, wave


@dataclass(frozen=True)
class _Measured:
    """What the runs of a compiled stitched design measured."""

    runs: _Runs
    wave: Waveform  # its pace and outputs
    paced: Waveform  # its latency and FIFO fills
    compiled: Compiled
    clock_ns: float

    def compared(
        self, wanted: list[np.ndarray], chain: list[NodeProto], cycles: list[int], began: float
    ) -> Stitched:
        """The report.json section: the outputs compared with ``wanted``, the pace with
        FINN's estimate (the slowest of ``cycles``), every FIFO of ``chain``."""
        got = [outputs[0] for outputs in self.wave.outputs]
        differing = [i for i, (a, b) in enumerate(zip(got, wanted, strict=True)) if _differs(a, b)]
        pace, latency = self.wave.cycles_per_frame, self.paced.latency_cycles
        estimated = max(cycles, default=0)  # FINN's: the slowest layer's
        result: Stitched = {
            "status": MISMATCH if differing else MATCH,
            "compile_seconds": round(self.compiled.seconds, 3),
            "compile_cached": self.compiled.cached,
            "frames": len(self.runs.frames),
            "layers": len(chain),
            "fifos_bounded": self.runs.bounded,
            "runs": self.runs.count,
            "cycles_per_frame": pace,
            "estimated_cycles_per_frame": estimated,
            "latency_cycles": latency,
            "fps": round(frames_per_second(pace, self.clock_ns), 1) if pace else None,
            "latency_ns": round(latency * self.clock_ns, 1) if latency else None,
            "fifos": _fifos(chain, self.paced.probes, self.runs.depths),
            "simulate_seconds": round(time.perf_counter() - began, 3),
        }
        _add_estimate_error(result, pace, estimated)
        if differing:
            result["difference"] = output_difference(got, wanted)
            result["reason"] = f"frames {differing} differ from the Python execution"
        return result


def _add_estimate_error(result: Stitched, pace: float | None, estimated: int) -> None:
    """The simulated pace's error against FINN's ``estimated`` cycles per frame, if any."""
    error = estimate_error(pace, estimated)
    if error is not None:
        result["estimate_error"] = error
        result["estimate_tolerance"] = ESTIMATE_TOLERANCE
        result["within_tolerance"] = abs(error) <= ESTIMATE_TOLERANCE


def output_difference(got: list[np.ndarray], wanted: list[np.ndarray]) -> OutputDifference:
    """How far simulated outputs are from Python's: elements that differ (of how many) and
    the largest difference."""
    a = np.concatenate([np.ravel(x) for x in got])
    b = np.concatenate(
        [
            np.ravel(np.asarray(w, dtype=np.float32).reshape(x.shape))
            for x, w in zip(got, wanted, strict=True)
        ]
    )
    gap = np.abs(a.astype(np.float64) - b)
    return {
        "differing_elements": int(np.count_nonzero(gap)),
        "elements": int(a.size),
        "max_difference": float(gap.max(initial=0.0)),
        "largest_expected": float(np.abs(b).max(initial=0.0)),
    }


def fifo_depths(chain: Sequence[NodeProto]) -> dict[str, int]:
    """The stitched design's depth inputs set to each FIFO node's ``depth``."""
    return {
        f"depth_{node.name}": int(getCustomOp(node).get_nodeattr("depth"))
        for node in chain
        if _is_fifo(node)
    }


def _is_fifo(node: NodeProto) -> bool:
    return node.op_type.startswith("StreamingFIFO")


def _differs(got: np.ndarray, want: np.ndarray) -> bool:
    return not np.array_equal(got, np.asarray(want, dtype=np.float32).reshape(got.shape))


def _fifos(
    chain: Sequence[NodeProto], probes: dict[str, int], depths: dict[str, int]
) -> list[FifoFill]:
    """Per FIFO: where it sits, the largest fill seen (with unbounded FIFOs: the depth it
    needs) and, when bounded, its depth."""
    writers = {tensor: node.name for node in chain for tensor in node.output}
    readers = {tensor: node.name for node in chain for tensor in node.input}
    fifos = []
    for node in filter(_is_fifo, chain):
        fifo: FifoFill = {
            "name": node.name,
            "after": writers.get(node.input[0], "(input)"),
            "before": readers.get(node.output[0], "(output)"),
            "max_occupancy": probes.get(f"maxcount_{node.name}"),
        }
        if depths:
            fifo["depth"] = depths[f"depth_{node.name}"]
        fifos.append(fifo)
    return fifos


def _stitch(
    model: ModelWrapper, code_dir: str, fpga_part: str, clock_ns: float, fixed: bool = False
) -> tuple[LayerDesign, list[NodeProto]]:
    """(the stitched LayerDesign, its nodes in graph order). Its FIFOs take their depth when
    the simulation starts (``brainsmith_fifo_sim``); with ``fixed`` they are FINN's
    ``fifo.sv`` of their ``depth``, for synthesis and other simulators."""
    reason = unstitchable(model)
    if reason:
        raise NotSimulated(reason)
    try:
        full = with_converters_and_fifos(model, code_dir, fpga_part, clock_ns)
    except Exception as exc:  # FINN's transforms reject the design: say so, do not crash
        raise NotSimulated(
            f"FINN could not insert width converters and FIFOs: {type(exc).__name__}: {exc}"
        ) from exc
    nodes = list(full.graph.node)
    designs = [layer_design(full, node) for node in nodes]
    for design in designs if fixed else ():
        if design.op_type.startswith("StreamingFIFO"):
            _with_depth(design)
    source, sink = full.graph.input[0].name, full.graph.output[0].name
    return as_layer_design(stitch(source, sink, nodes, designs, runtime_depths=not fixed)), nodes


def unstitchable(model: ModelWrapper) -> str:
    """Why ``model`` cannot be simulated whole ("" when it can): HLS layers, more than one
    input or output stream, a layer that cannot be simulated, a tensor read twice without
    a ``DuplicateStreams``."""
    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        more = ", ..." if len(hls) > 5 else ""
        return f"HLS layers ({', '.join(hls[:5])}{more}) have no RTL without Vitis HLS"
    if len(model.graph.input) != 1 or len(model.graph.output) != 1:
        return "the partition has more than one input or output stream"
    return next(filter(None, (_unstitchable_layer(model, n) for n in model.graph.node)), "")


def _unstitchable_layer(model: ModelWrapper, node: NodeProto) -> str:
    """Why ``node`` cannot be stitched ("" when it can): it cannot be simulated, or its
    output is read by more than one layer."""
    try:
        layer_design(model, node)
    except NotSimulated as exc:
        return f"{node.name}: {exc}"
    for tensor in node.output:
        if len(model.find_consumers(tensor) or []) > 1:
            return (
                f"{node.name}'s output {tensor} is read by more than one layer without a "
                "DuplicateStreams layer"
            )
    return ""


def stitched_design(
    model: ModelWrapper, code_dir: str, fpga_part: str, clock_ns: float
) -> tuple[LayerDesign, list[NodeProto]]:
    """(the whole partition as one LayerDesign with FINN's FIFOs of their depths, its nodes);
    NotSimulated when it cannot be stitched, with the reason."""
    return _stitch(model, code_dir, fpga_part, clock_ns, fixed=True)


def write_stitched(design: LayerDesign, folder: str, top: str = "accelerator") -> list[str]:
    """The stitched design as plain files any simulator or synthesis tool reads: its top
    module ``<top>.sv`` (AXI-stream ``in0_V``/``out0_V``, ``ap_clk``, ``ap_rst_n``; each FIFO's
    largest fill as a ``maxcount_*`` output), the sources generated for it, ``files.f``
    listing every source in compile order and ``instances.json``, the layer each instance of
    the top is (place and route names a critical path's ends by it). Returns the paths
    written."""
    os.makedirs(folder, exist_ok=True)
    written, listed = [], list(design.files)
    for name, text in sorted(design.generated.items()):
        if name == f"{design.top}.sv":
            name, text = f"{top}.sv", text.replace(f"module {design.top} (", f"module {top} (")
        path = os.path.join(folder, name)
        write_text(path, text, 0o644)  # each file whole or not at all
        written.append(path)
        listed.append(path)
    files_path = os.path.join(folder, "files.f")
    write_text(files_path, "".join(f"{path}\n" for path in listed), 0o644)
    instances = os.path.join(folder, INSTANCES)
    write_text(instances, json.dumps(design.instances, indent=1, sort_keys=True) + "\n", 0o644)
    return [*written, instances, files_path]  # the listing last: what tools start from


def _with_depth(design: LayerDesign) -> None:
    """A FIFO that is FINN's ``fifo.sv`` of its depth in simulation too (its top module picks
    the unbounded ``fifo_gauge`` under ``FINN_SIMULATION``)."""
    top = next(f for f in design.files if os.path.basename(f) == f"{design.top}.v")
    with open(top) as handle:
        text = handle.read().replace("`ifdef FINN_SIMULATION", "`ifdef BRAINSMITH_GAUGE_FIFOS")
    design.files.remove(top)
    design.generated[f"{design.top}_bounded.v"] = text


def with_converters_and_fifos(
    model: ModelWrapper, code_dir: str, fpga_part: str, clock_ns: float
) -> ModelWrapper:
    """``model`` with FINN's width converters and FIFOs (RTL) where they are missing, the new
    layers' code generated below ``code_dir``."""
    from finn.transformation.fpgadataflow.insert_dwc import InsertDWC
    from finn.transformation.fpgadataflow.insert_fifo import InsertFIFO
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers

    from brainsmith.backends import converters

    full = ModelWrapper(copy.deepcopy(model.model))
    known = {node.name for node in full.graph.node}
    full = full.transform(InsertDWC()).transform(InsertFIFO(create_shallow_fifos=True))
    for node in _inserted(full, known):
        getCustomOp(node).set_nodeattr("preferred_impl_style", "rtl")
        _in_tensor_shape(full, node, getCustomOp(node))
    full = full.transform(SpecializeLayers(fpga_part))
    converters.register()
    for node in _inserted(full, known):
        if node.op_type == "StreamingDataWidthConverter_rtl" and converters.needs_full_rate(
            getCustomOp(node)
        ):
            node.op_type = converters.OP_TYPE
        _generate(full, node, os.path.join(code_dir, node.name), fpga_part, clock_ns)
    return full


def _inserted(model: ModelWrapper, known: set[str]) -> list[NodeProto]:
    """The nodes of ``model`` whose names are not ``known``: those FINN inserted."""
    return [node for node in model.graph.node if node.name not in known]


def _generate(
    model: ModelWrapper, node: NodeProto, folder: str, fpga_part: str, clock_ns: float
) -> None:
    """``node``'s code generated into ``folder``."""
    op = getCustomOp(node)
    os.makedirs(folder, exist_ok=True)
    op.set_nodeattr("code_gen_dir_ipgen", folder)
    op.code_generation_ipgen(model, fpga_part, clock_ns)


SHAPE_ATTRIBUTES = {
    "StreamingDataWidthConverter": ("inShape", "outShape"),
    "StreamingFIFO": ("normal_shape",),
}


def _in_tensor_shape(model: ModelWrapper, node: NodeProto, op: HWCustomOp) -> None:
    """A converter or FIFO FINN inserted takes the shape of the tensor it passes on where
    FINN gave it the same values in another shape: the shape its neighbour reports, which
    for an attention product is (batch, heads, rows, columns) where the tensor is (heads,
    rows, columns), and FINN's Python execution of the converter refuses the tensor."""
    shape = list(model.get_tensor_shape(node.input[0]))
    for name in SHAPE_ATTRIBUTES.get(node.op_type, ()):
        given = list(op.get_nodeattr(name))
        if given != shape and int(np.prod(given)) == int(np.prod(shape)):
            op.set_nodeattr(name, shape)
            if list(model.get_tensor_shape(node.output[0])) == given:
                model.set_tensor_shape(node.output[0], shape)
