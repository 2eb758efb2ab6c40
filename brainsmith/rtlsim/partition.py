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
import math
import os
import time
from dataclasses import replace
from importlib.resources import files as package_files

import numpy as np

from brainsmith.frameworks.finn.facts import frames_per_second
from brainsmith.rtlsim.sources import (
    ESTIMATE_TOLERANCE,
    FAILED,
    MATCH,
    MISMATCH,
    NOT_SIMULATED,
    LayerDesign,
    NotSimulated,
    Stream,
    estimate_error,
    layer_design,
)

# The stitched check simulates every verification frame while they take at most this many
# cycles at FINN's estimated pace (the slowest layer's cycles per frame); beyond, only the
# frames it needs (``frames_to_check``): a design folded for no target may take tens of
# millions of cycles per frame, and each frame beyond those it needs costs as much again.
CHECK_CYCLES = 20_000_000
CHECK_MARGIN = 2  # frames beyond those the pipeline holds: one entering it full, one after


def frames_to_check(model, offered: int) -> int:
    """How many of ``offered`` frames the stitched check of ``model`` simulates: all while
    they take at most ``CHECK_CYCLES`` at FINN's estimated pace; else as many as the
    pipeline holds at once plus ``CHECK_MARGIN``. It holds at most its layers' cycles (a
    frame's latency, each layer in turn) over the slowest layer's (its pace); those frames
    overlap in it in every way they can, and later ones only repeat that at the same cost."""
    from qonnx.custom_op.registry import getCustomOp

    cycles = [int(getCustomOp(n).get_exp_cycles()) for n in model.graph.node]
    pace = max(cycles, default=0)
    if pace <= 0 or offered * pace <= CHECK_CYCLES:
        return offered
    return min(offered, math.ceil(sum(cycles) / pace) + CHECK_MARGIN)


def simulate_partition(
    model,
    contexts,
    workdir: str,
    fpga_part: str,
    clock_ns: float,
    bounded: bool = False,
    interval: int | None = None,
) -> dict:
    """Simulate ``model`` (the dataflow partition) end to end on the samples whose Python
    tensors are ``contexts``; returns the report.json ``stitched`` section (``run_partition``
    without float layers)."""
    return run_partition(model, contexts, workdir, fpga_part, clock_ns, bounded, interval)[0]


def run_partition(
    model,
    contexts,
    workdir: str,
    fpga_part: str,
    clock_ns: float,
    bounded: bool = False,
    interval: int | None = None,
) -> tuple[dict, list[np.ndarray]]:
    """Simulate ``model`` end to end on ``contexts``' inputs, compared with their outputs:
    (the report.json ``stitched`` section, the simulated outputs of each frame).

    The FIFOs hold at most their ``depth`` with ``bounded`` (a FIFO too shallow shows as a
    lower throughput or a stall), else they are unbounded; either way the design is the same
    executable (the depths are set when it starts), compiled once and cached by content.
    Without ``interval`` the design runs flat out (its pace: cycles between consecutive
    frames' outputs, and the latency of the first), then, unless ``bounded``, with one frame
    offered per that many cycles (each FIFO's largest fill at full throughput: flat out,
    frames would only pile up in front of the slowest layer); with ``interval`` 0 only flat
    out; with a positive one only at that pace, and once more at its own where it could not
    keep up."""
    from brainsmith.rtlsim.compile import CompileError, compile_layer
    from brainsmith.rtlsim.stimulus import SimulationFailed, simulate
    from brainsmith.rtlsim.verilator import find_toolchain

    began = time.perf_counter()
    result: dict = {"status": NOT_SIMULATED}
    try:
        stitched, chain = _stitch(model, os.path.join(workdir, "code"), fpga_part, clock_ns)
    except NotSimulated as exc:
        result["reason"] = str(exc)
        return result, []
    from qonnx.custom_op.registry import getCustomOp

    source, sink = model.graph.input[0].name, model.graph.output[0].name
    first = getCustomOp(next(n for n in chain if source in n.input))
    last = getCustomOp(next(n for n in chain if sink in n.output))
    toolchain = find_toolchain()
    try:
        compiled = compile_layer(stitched, toolchain, workdir)
    except CompileError as exc:  # it could be simulated here, but was not: a failure
        result.update(status=FAILED, reason=f"{toolchain.label} cannot compile it: {exc}")
        return result, []
    result.update(compile_seconds=round(compiled.seconds, 3), compile_cached=compiled.cached)
    frames = [[context[source]] for context in contexts]
    wanted = [context[sink] for context in contexts]
    cycles = [int(getCustomOp(n).get_exp_cycles()) for n in model.graph.node]
    estimate = sum(cycles)
    depths = fifo_depths(chain) if bounded else {}
    runs = 0

    def run(pace: int = 0):
        nonlocal runs
        runs += 1
        return simulate(
            stitched, (first, last), compiled.executable, frames, workdir, estimate, pace, depths
        )

    try:
        if not interval:  # flat out: the design's own pace; then at it: the fills
            wave = paced = run()
            if wave.cycles_per_frame and interval is None and not bounded:
                paced = run(math.ceil(wave.cycles_per_frame))
        else:
            wave = paced = run(interval)
            if wave.cycles_per_frame and wave.cycles_per_frame > interval + 1:
                wave = paced = run(math.ceil(wave.cycles_per_frame))
    except SimulationFailed as exc:
        result.update(status=FAILED, reason=str(exc))
        return result, []
    got = [outputs[0] for outputs in wave.outputs]
    differing = [i for i, (a, b) in enumerate(zip(got, wanted, strict=True)) if _differs(a, b)]
    result.update(
        status=MISMATCH if differing else MATCH,
        frames=len(frames),
        layers=len(chain),
        fifos_bounded=bounded,
        runs=runs,
        cycles_per_frame=wave.cycles_per_frame,
        estimated_cycles_per_frame=max(cycles, default=0),  # FINN's: the slowest layer's
        latency_cycles=paced.latency_cycles,
        fps=round(frames_per_second(wave.cycles_per_frame, clock_ns), 1)
        if wave.cycles_per_frame
        else None,
        latency_ns=round(paced.latency_cycles * clock_ns, 1) if paced.latency_cycles else None,
        fifos=_fifos(chain, paced.probes, depths),
        simulate_seconds=round(time.perf_counter() - began, 3),
    )
    error = estimate_error(wave.cycles_per_frame, result["estimated_cycles_per_frame"])
    if error is not None:
        result.update(
            estimate_error=error,
            estimate_tolerance=ESTIMATE_TOLERANCE,
            within_tolerance=abs(error) <= ESTIMATE_TOLERANCE,
        )
    if differing:
        result["difference"] = output_difference(got, wanted)
        result["reason"] = f"frames {differing} differ from the Python execution"
    return result, got


def output_difference(got: list[np.ndarray], wanted: list) -> dict:
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


def fifo_depths(chain) -> dict[str, int]:
    """The stitched design's depth inputs set to each FIFO node's ``depth``."""
    from qonnx.custom_op.registry import getCustomOp

    return {
        f"depth_{node.name}": int(getCustomOp(node).get_nodeattr("depth"))
        for node in chain
        if node.op_type.startswith("StreamingFIFO")
    }


def _differs(got: np.ndarray, want: np.ndarray) -> bool:
    return not np.array_equal(got, np.asarray(want, dtype=np.float32).reshape(got.shape))


def _stitch(model, code_dir: str, fpga_part: str, clock_ns: float, fixed: bool = False):
    """(the stitched LayerDesign, its nodes in graph order). Its FIFOs take their depth when
    the simulation starts (``brainsmith_fifo_sim``); with ``fixed`` they are FINN's
    ``fifo.sv`` of their ``depth``, for synthesis and other simulators."""
    reason = unstitchable(model)
    if reason:
        raise NotSimulated(reason)
    try:
        full = _with_converters_and_fifos(model, code_dir, fpga_part, clock_ns)
    except Exception as exc:  # FINN's transforms reject the design: say so, do not crash
        raise NotSimulated(
            f"FINN could not insert width converters and FIFOs: {type(exc).__name__}: {exc}"
        ) from exc
    nodes = list(full.graph.node)
    designs = [layer_design(full, node) for node in nodes]
    if fixed:
        for design in designs:
            if design.op_type.startswith("StreamingFIFO"):
                _with_depth(design)
    widths: dict[str, int] = {}  # tensor -> the width of the stream its producer writes
    for node, design in zip(nodes, designs, strict=True):
        if design.clk2x == "double":
            raise NotSimulated(f"{node.name} is double-pumped (needs ap_clk2x)")
        for stream in design.outputs:
            widths[node.output[stream.index]] = stream.width
    for node, design in zip(nodes, designs, strict=True):
        for stream in design.inputs:
            tensor = node.input[stream.index]
            if tensor in widths and widths[tensor] != stream.width:
                raise NotSimulated(
                    f"{tensor} is {widths[tensor]} bits wide where it is written and "
                    f"{stream.width} where {node.name} reads it"
                )
    return _top(full, nodes, designs, runtime_depths=not fixed), nodes


def unstitchable(model) -> str:
    """Why ``model`` cannot be simulated whole ("" when it can): HLS layers, more than one
    input or output stream, a layer that cannot be simulated, a tensor read twice without
    a ``DuplicateStreams``."""
    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        more = ", ..." if len(hls) > 5 else ""
        return f"HLS layers ({', '.join(hls[:5])}{more}) have no RTL without Vitis HLS"
    if len(model.graph.input) != 1 or len(model.graph.output) != 1:
        return "the partition has more than one input or output stream"
    for node in model.graph.node:
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


def stitched_design(model, code_dir: str, fpga_part: str, clock_ns: float):
    """(the whole partition as one LayerDesign with FINN's FIFOs of their depths, its nodes);
    NotSimulated when it cannot be stitched, with the reason."""
    return _stitch(model, code_dir, fpga_part, clock_ns, fixed=True)


def write_stitched(design: LayerDesign, folder: str, top: str = "accelerator") -> list[str]:
    """The stitched design as plain files any simulator or synthesis tool reads: its top
    module ``<top>.sv`` (AXI-stream ``in0_V``/``out0_V``, ``ap_clk``, ``ap_rst_n``; each FIFO's
    largest fill as a ``maxcount_*`` output), the sources generated for it, and ``files.f``
    listing every source in compile order. Returns the paths written."""
    os.makedirs(folder, exist_ok=True)
    written, listed = [], list(design.files)
    for name, text in sorted(design.generated.items()):
        if name == f"{design.top}.sv":
            name, text = f"{top}.sv", text.replace(f"module {design.top} (", f"module {top} (")
        path = os.path.join(folder, name)
        with open(path, "w") as handle:
            handle.write(text)
        written.append(path)
        listed.append(path)
    files_path = os.path.join(folder, "files.f")
    with open(files_path, "w") as handle:
        handle.write("".join(f"{path}\n" for path in listed))
    return [*written, files_path]


def _with_depth(design: LayerDesign) -> None:
    """A FIFO that is FINN's ``fifo.sv`` of its depth in simulation too (its top module picks
    the unbounded ``fifo_gauge`` under ``FINN_SIMULATION``)."""
    top = next(f for f in design.files if os.path.basename(f) == f"{design.top}.v")
    with open(top) as handle:
        text = handle.read().replace("`ifdef FINN_SIMULATION", "`ifdef BRAINSMITH_GAUGE_FIFOS")
    design.files.remove(top)
    design.generated[f"{design.top}_bounded.v"] = text


def with_converters_and_fifos(model, code_dir: str, fpga_part: str, clock_ns: float):
    """``model`` with FINN's width converters and FIFOs (RTL) where they are missing, the new
    layers' code generated below ``code_dir``."""
    return _with_converters_and_fifos(model, code_dir, fpga_part, clock_ns)


def _with_converters_and_fifos(model, code_dir: str, fpga_part: str, clock_ns: float):
    from finn.transformation.fpgadataflow.insert_dwc import InsertDWC
    from finn.transformation.fpgadataflow.insert_fifo import InsertFIFO
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp

    full = ModelWrapper(copy.deepcopy(model.model))
    known = {node.name for node in full.graph.node}
    full = full.transform(InsertDWC()).transform(InsertFIFO(create_shallow_fifos=True))
    for node in full.graph.node:
        if node.name not in known:
            getCustomOp(node).set_nodeattr("preferred_impl_style", "rtl")
            _in_tensor_shape(full, node, getCustomOp(node))
    full = full.transform(SpecializeLayers(fpga_part))
    from brainsmith.backends import converters

    converters.register()
    for node in full.graph.node:
        if node.name not in known:
            op = getCustomOp(node)
            if node.op_type == "StreamingDataWidthConverter_rtl" and converters.needs_full_rate(op):
                node.op_type = converters.OP_TYPE
                op = getCustomOp(node)
            folder = os.path.join(code_dir, node.name)
            os.makedirs(folder, exist_ok=True)
            op.set_nodeattr("code_gen_dir_ipgen", folder)
            op.code_generation_ipgen(full, fpga_part, clock_ns)
    return full


SHAPE_ATTRIBUTES = {
    "StreamingDataWidthConverter": ("inShape", "outShape"),
    "StreamingFIFO": ("normal_shape",),
}


def _in_tensor_shape(model, node, op) -> None:
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


def _top(model, nodes, designs: list[LayerDesign], runtime_depths: bool) -> LayerDesign:
    """One module with every layer's top, wired by the tensors they share: the partition's
    input tensor is the module's ``in0_V``, its output tensor ``out0_V``; with
    ``runtime_depths`` each FIFO is a ``brainsmith_fifo_sim`` whose depth is the input
    ``depth_<name>`` (0: unbounded)."""
    source, sink = model.graph.input[0].name, model.graph.output[0].name
    files, generated, lines, probes, depths = [], {}, [], [], []
    if runtime_depths and any(d.op_type.startswith("StreamingFIFO") for d in designs):
        files.append(str(package_files("brainsmith.rtlsim").joinpath("fifo_sim.sv")))
    signals = {source: "in0_V", sink: "out0_V"}
    first = last = None
    for node, design in zip(nodes, designs, strict=True):
        if runtime_depths and design.op_type.startswith("StreamingFIFO"):
            design = replace(design, files=[], generated={})  # brainsmith_fifo_sim instead
        files += [f for f in design.files if f not in files]
        generated.update(design.generated)
        for stream in design.outputs:
            tensor = node.output[stream.index]
            if tensor == sink:
                last = stream
            elif tensor not in signals:
                signals[tensor] = f"w{len(signals) - 1}"
                lines += [
                    f"\twire [{stream.width - 1}:0] {signals[tensor]}_TDATA;",
                    f"\twire {signals[tensor]}_TVALID, {signals[tensor]}_TREADY;",
                ]
        first = first or next((s for s in design.inputs if node.input[s.index] == source), None)
    if first is None or last is None:
        raise NotSimulated("no layer reads the partition's input or writes its output")
    ports = [
        "input ap_clk",
        "input ap_rst_n",
        f"input [{first.width - 1}:0] in0_V_TDATA",
        "input in0_V_TVALID",
        "output in0_V_TREADY",
        f"output [{last.width - 1}:0] out0_V_TDATA",
        "output out0_V_TVALID",
        "input out0_V_TREADY",
    ]
    for index, (node, design) in enumerate(zip(nodes, designs, strict=True)):
        fifo = design.op_type.startswith("StreamingFIFO")
        tensors = [node.input[s.index] for s in design.inputs]
        for tensor in tensors + [node.output[s.index] for s in design.outputs]:
            if tensor not in signals:
                raise NotSimulated(f"{tensor}, read by {node.name}, is written by no layer")
        if fifo:
            probe = f"maxcount_{design.node}"
            ports.append(f"output [31:0] {probe}")
            probes.append(probe)
        if fifo and runtime_depths:
            depths.append(f"depth_{design.node}")
            ports.append(f"input [31:0] depth_{design.node}")
            lines += _fifo_instance(index, design, signals[node.input[0]], signals[node.output[0]])
            continue
        connections = ["\t\t.ap_clk(ap_clk), .ap_rst_n(ap_rst_n)"]
        if design.clk2x == "same":
            connections.append("\t\t.ap_clk2x(ap_clk)")
        if fifo:
            connections.append(f"\t\t.count(), .maxcount(maxcount_{design.node})")
        streams = [(s, node.input[s.index]) for s in design.inputs]
        streams += [(s, node.output[s.index]) for s in design.outputs]
        for stream, tensor in streams:
            wire = signals[tensor]
            connections.append(
                f"\t\t.{stream.port}_TDATA({wire}_TDATA), .{stream.port}_TVALID({wire}_TVALID), "
                f".{stream.port}_TREADY({wire}_TREADY)"
            )
        lines += [f"\t{design.top} n{index} (", ",\n".join(connections), "\t);"]
    text = "\n".join(
        [
            "// Generated by brainsmith.rtlsim: the dataflow partition, layer by layer.",
            "module stitched_rtlsim_top (",
            ",\n".join(f"\t{p}" for p in ports),
            ");",
            *lines,
            "endmodule",
            "",
        ]
    )
    generated["stitched_rtlsim_top.sv"] = text
    return LayerDesign(
        node="stitched partition",
        op_type=f"{len(nodes)} layers",
        top="stitched_rtlsim_top",
        code_dir="",
        files=files,
        inputs=[Stream("in0_V", 0, first.width)],
        outputs=[Stream("out0_V", 0, last.width)],
        generated=generated,
        probes=probes,
        depths=depths,
    )


def _fifo_instance(index: int, design: LayerDesign, source: str, sink: str) -> list[str]:
    """A ``brainsmith_fifo_sim`` between the wires ``source`` and ``sink``."""
    width = design.inputs[0].width
    return [
        f"\tbrainsmith_fifo_sim #(.WIDTH({width})) n{index} (",
        "\t\t.clk(ap_clk), .rst(!ap_rst_n), "
        f".limit(depth_{design.node}), .maxcount(maxcount_{design.node}),",
        f"\t\t.idat({source}_TDATA), .ivld({source}_TVALID), .irdy({source}_TREADY),",
        f"\t\t.odat({sink}_TDATA), .ovld({sink}_TVALID), .ordy({sink}_TREADY)",
        "\t);",
    ]


def _fifos(chain, probes: dict[str, int], depths: dict[str, int]) -> list[dict]:
    """Per FIFO: where it sits, the largest fill seen (with unbounded FIFOs: the depth it
    needs) and, when bounded, its depth."""
    writers = {tensor: node.name for node in chain for tensor in node.output}
    readers = {tensor: node.name for node in chain for tensor in node.input}
    fifos = []
    for node in chain:
        if not node.op_type.startswith("StreamingFIFO"):
            continue
        fifos.append(
            {
                "name": node.name,
                "after": writers.get(node.input[0], "(input)"),
                "before": readers.get(node.output[0], "(output)"),
                "max_occupancy": probes.get(f"maxcount_{node.name}"),
                **({"depth": depths[f"depth_{node.name}"]} if depths else {}),
            }
        )
    return fifos
