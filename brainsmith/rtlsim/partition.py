"""Simulate the stitched dataflow partition: every layer, with the width converters and FIFOs
FINN would insert, as one design, to measure the design's real throughput and latency and the
FIFO occupancy that sizes its FIFOs — without Vivado.

A copy of the final design gets FINN's ``InsertDWC`` and ``InsertFIFO`` (RTL backends); only
the new width converters and FIFOs get code, in the simulation's own folder — the build's
generated files are used as they are. The FIFOs are FINN's ``StreamingFIFO_rtl``, which under
``FINN_SIMULATION`` is ``fifo_gauge``: unbounded, counting its largest fill, as FINN's own
simulation-based FIFO sizing uses it. The design runs twice: with inputs flat out, which
gives its throughput (cycles between consecutive frames' outputs), then with one frame offered
per that many cycles, which gives the latency and the largest fill of each FIFO at full
throughput (the depth it needs; flat-out input would only pile up in front of the slowest
layer). Layers are chained in graph order; a design with HLS layers, forks or a double-pumped
layer is reported as not simulated, with the reason.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import time

import numpy as np

from brainsmith.rtlsim.sources import (
    FAILED,
    MATCH,
    MISMATCH,
    NOT_SIMULATED,
    LayerDesign,
    NotSimulated,
    Stream,
    layer_design,
)


def simulate_partition(model, contexts, workdir: str, fpga_part: str, clock_ns: float) -> dict:
    """Simulate ``model`` (the dataflow partition) end to end on the samples whose Python
    tensors are ``contexts``; returns the report.json ``stitched`` section."""
    from brainsmith.rtlsim.compile import CompileError, compile_layer
    from brainsmith.rtlsim.stimulus import SimulationFailed, simulate
    from brainsmith.rtlsim.verilator import find_toolchain

    began = time.perf_counter()
    result: dict = {"status": NOT_SIMULATED}
    try:
        stitched, chain = _stitch(model, os.path.join(workdir, "code"), fpga_part, clock_ns)
    except NotSimulated as exc:
        result["reason"] = str(exc)
        return result
    from qonnx.custom_op.registry import getCustomOp

    first, last = getCustomOp(chain[0]), getCustomOp(chain[-1])
    toolchain = find_toolchain()
    try:
        compiled = compile_layer(stitched, toolchain, workdir)
    except CompileError as exc:  # it could be simulated here, but was not: a failure
        result.update(status=FAILED, reason=f"{toolchain.label} cannot compile it: {exc}")
        return result
    result.update(compile_seconds=round(compiled.seconds, 3), compile_cached=compiled.cached)
    frames = [[context[model.graph.node[0].input[0]]] for context in contexts]
    wanted = [context[model.graph.node[-1].output[0]] for context in contexts]
    estimate = sum(int(getCustomOp(n).get_exp_cycles()) for n in model.graph.node)
    ops = (first, last)
    try:  # flat out: the design's own pace; then at that pace: the FIFO fill it needs
        wave = simulate(stitched, ops, compiled.executable, frames, workdir, estimate)
        paced = wave
        if wave.cycles_per_frame:
            interval = math.ceil(wave.cycles_per_frame)
            paced = simulate(
                stitched, ops, compiled.executable, frames, workdir, estimate, interval
            )
    except SimulationFailed as exc:
        result.update(status=FAILED, reason=str(exc))
        return result
    got = [outputs[0] for outputs in wave.outputs]
    differing = [i for i, (a, b) in enumerate(zip(got, wanted, strict=True)) if _differs(a, b)]
    result.update(
        status=MISMATCH if differing else MATCH,
        frames=len(frames),
        layers=len(chain),
        cycles_per_frame=wave.cycles_per_frame,
        latency_cycles=paced.latency_cycles,
        fps=round(1e9 / (clock_ns * wave.cycles_per_frame), 1) if wave.cycles_per_frame else None,
        latency_ns=round(paced.latency_cycles * clock_ns, 1) if paced.latency_cycles else None,
        fifos=_fifos(chain, paced.probes),
        simulate_seconds=round(time.perf_counter() - began, 3),
    )
    if differing:
        result["reason"] = f"frames {differing} differ from the Python execution"
    return result


def _differs(got: np.ndarray, want: np.ndarray) -> bool:
    return not np.array_equal(got, np.asarray(want, dtype=np.float32).reshape(got.shape))


def _stitch(model, code_dir: str, fpga_part: str, clock_ns: float):
    """(the stitched LayerDesign, its nodes in stream order)."""
    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        raise NotSimulated(f"HLS layers ({', '.join(hls)}) have no RTL without Vitis HLS")
    for node in model.graph.node:
        layer_design(model, node)  # raises for a layer that cannot be simulated
        consumers = model.find_consumers(node.output[0]) or []
        if len(node.output) != 1 or len(consumers) > 1:
            raise NotSimulated(f"{node.name} forks its stream; only chains are stitched so far")
    try:
        full = _with_converters_and_fifos(model, code_dir, fpga_part, clock_ns)
    except Exception as exc:  # FINN's transforms reject the design: say so, do not crash
        raise NotSimulated(
            f"FINN could not insert width converters and FIFOs: {type(exc).__name__}: {exc}"
        ) from exc
    chain = list(full.graph.node)
    designs = [layer_design(full, node) for node in chain]
    for node, design in zip(chain, designs, strict=True):
        if len(design.inputs) != 1 or len(design.outputs) != 1:
            raise NotSimulated(f"{node.name} has more than one input or output stream")
        if design.clk2x == "double":
            raise NotSimulated(f"{node.name} is double-pumped (needs ap_clk2x)")
    for up, down in itertools.pairwise(designs):
        if up.outputs[0].width != down.inputs[0].width:
            raise NotSimulated(
                f"{up.node} streams {up.outputs[0].width} bits into {down.node}, which "
                f"takes {down.inputs[0].width}"
            )
    return _top(designs, chain), chain


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
    full = full.transform(SpecializeLayers(fpga_part))
    for node in full.graph.node:
        if node.name not in known:
            op = getCustomOp(node)
            folder = os.path.join(code_dir, node.name)
            os.makedirs(folder, exist_ok=True)
            op.set_nodeattr("code_gen_dir_ipgen", folder)
            op.code_generation_ipgen(full, fpga_part, clock_ns)
    return full


def _top(designs: list[LayerDesign], chain) -> LayerDesign:
    """One module chaining every layer's top, first input to last output."""
    files, generated, lines, probes = [], {}, [], []
    for design in designs:
        files += [f for f in design.files if f not in files]
        generated.update(design.generated)
    first, last = designs[0].inputs[0], designs[-1].outputs[0]
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
    for index, design in enumerate(designs):
        into = "in0_V" if index == 0 else f"s{index}"
        out = "out0_V" if index == len(designs) - 1 else f"s{index + 1}"
        if index < len(designs) - 1:
            width = design.outputs[0].width
            lines += [f"\twire [{width - 1}:0] {out}_TDATA;", f"\twire {out}_TVALID, {out}_TREADY;"]
        connections = ["\t\t.ap_clk(ap_clk), .ap_rst_n(ap_rst_n),"]
        if design.clk2x == "same":
            connections.append("\t\t.ap_clk2x(ap_clk),")
        if design.op_type.startswith("StreamingFIFO"):
            probe = f"maxcount_{design.node}"
            ports.append(f"output [31:0] {probe}")
            probes.append(probe)
            connections.append(f"\t\t.count(), .maxcount({probe}),")
        connections.append(
            f"\t\t.in0_V_TDATA({into}_TDATA), .in0_V_TVALID({into}_TVALID), "
            f".in0_V_TREADY({into}_TREADY),"
        )
        connections.append(
            f"\t\t.out0_V_TDATA({out}_TDATA), .out0_V_TVALID({out}_TVALID), "
            f".out0_V_TREADY({out}_TREADY)"
        )
        lines += [f"\t{design.top} n{index} (", *connections, "\t);"]
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
        op_type=f"{len(chain)} layers",
        top="stitched_rtlsim_top",
        code_dir="",
        files=files,
        inputs=[Stream("in0_V", 0, first.width)],
        outputs=[Stream("out0_V", 0, last.width)],
        generated=generated,
        probes=probes,
    )


def _fifos(chain, probes: dict[str, int]) -> list[dict]:
    """Per FIFO: where it sits and the largest fill seen (the depth it needs)."""
    fifos = []
    for index, node in enumerate(chain):
        if not node.op_type.startswith("StreamingFIFO"):
            continue
        fifos.append(
            {
                "name": node.name,
                "after": chain[index - 1].name if index else "(input)",
                "before": chain[index + 1].name if index + 1 < len(chain) else "(output)",
                "max_occupancy": probes.get(f"maxcount_{node.name}"),
            }
        )
    return fifos
