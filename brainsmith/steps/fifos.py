"""FIFO depths sized by simulating the whole accelerator in Verilator, without Vivado.

FINN's ``step_set_fifo_depths`` sizes FIFOs by simulating the stitched design in Vivado's
XSI. ``size_fifos`` does it in Verilator on a design whose layers are all RTL (``prefer:
rtl``): FINN's width converters and FIFOs are inserted, the accelerator runs on random
frames of its input type with unbounded FIFOs, one frame offered per the design's own
interval, and each FIFO gets the largest fill it reached (at least 2, what FINN's
``fifo.sv`` takes). The design then runs again with FIFOs of exactly those depths: it must
match Python bit for bit at the same throughput; otherwise the depths are doubled and tried
again (at most ``ATTEMPTS`` times). The model keeps the converters and sized FIFOs, the
sizing is written to ``report/fifo_sizing.json``, and the whole accelerator as plain
SystemVerilog (a top module and a file list) to ``stitched_rtl/``.
"""

from __future__ import annotations

import os
import time

from brainsmith.errors import StepError
from brainsmith.frameworks.finn.folding_record import write_json
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.plugin import step

FRAMES = 8  # random frames per simulation
ATTEMPTS = 3  # bounded re-simulations before giving up
RECORD = "fifo_sizing.json"


@step(
    name="size_fifos",
    description="Size FIFOs by simulating the whole accelerator in Verilator (no Vivado)",
)
def size_fifos(model, cfg):
    """Insert width converters and FIFOs, size the FIFOs by simulation, prove the depths."""
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.rtlsim.layers import layer_tensors
    from brainsmith.rtlsim.partition import with_converters_and_fifos
    from brainsmith.rtlsim.verilator import ToolchainError, find_toolchain

    hls = [n.name for n in model.graph.node if n.domain.endswith(".hls")]
    if hls:
        raise StepError(
            f"FIFOs can only be sized by simulation in an all-RTL design; HLS layers: "
            f"{', '.join(hls[:5])}{' ...' if len(hls) > 5 else ''}",
            "build with prefer: rtl (hw_compiler) or --prefer rtl, or use "
            "finn:step_set_fifo_depths with Vivado",
        )
    try:
        find_toolchain()
    except ToolchainError as exc:
        raise StepError(f"FIFOs cannot be sized: {exc}", exc.hint) from exc
    began = time.perf_counter()
    part, clock = fpga_part(cfg), float(cfg.synth_clk_period_ns)
    folder = os.path.join(cfg.output_dir, "fifo_sizing")
    full = with_converters_and_fifos(model, os.path.join(folder, "code"), part, clock)
    contexts = layer_tensors(full, random_frames(full, FRAMES), os.path.join(folder, "python"))
    free = _simulated(full, contexts, os.path.join(folder, "unbounded"), part, clock, False)
    depths = {f["name"]: max(2, int(f["max_occupancy"] or 0)) for f in free["fifos"]}
    attempts = []
    for attempt in range(1, ATTEMPTS + 1):
        fifos = {n.name: n for n in full.graph.node if n.name in depths}
        for name, node in fifos.items():
            layer = getCustomOp(node)
            layer.set_nodeattr("depth", depths[name])
            layer.code_generation_ipgen(full, part, clock)  # the wrapper carries the depth
        workdir = os.path.join(folder, f"bounded-{attempt}")
        sized = _simulated(full, contexts, workdir, part, clock, True)
        attempts.append({"depths": dict(depths), "cycles_per_frame": sized["cycles_per_frame"]})
        if sized["cycles_per_frame"] <= free["cycles_per_frame"]:
            break
        depths = {name: 2 * depth for name, depth in depths.items()}
    else:
        raise StepError(
            f"the FIFOs sized by simulation lower the throughput: {free['cycles_per_frame']:,.0f}"
            f" cycles/frame with unbounded FIFOs, {sized['cycles_per_frame']:,.0f} with depths "
            f"doubled {ATTEMPTS - 1} times (see {folder})",
            "report this design; meanwhile use finn:step_set_fifo_depths with Vivado",
            full,
        )
    from brainsmith.rtlsim.partition import stitched_design, write_stitched

    design, _ = stitched_design(full, os.path.join(folder, "code"), part, clock, bounded=True)
    written = write_stitched(design, os.path.join(cfg.output_dir, "stitched_rtl"))
    record = {
        "stitched_rtl": [os.path.relpath(path, cfg.output_dir) for path in written],
        "frames": FRAMES,
        "cycles_per_frame": free["cycles_per_frame"],
        "latency_cycles": free["latency_cycles"],
        "fifos": [{**f, "depth": depths[f["name"]]} for f in free["fifos"]],
        "total_depth": sum(depths.values()),
        "attempts": attempts,
        "seconds": round(time.perf_counter() - began, 3),
    }
    write_json(os.path.join(cfg.output_dir, "report", RECORD), record)
    return full


def random_frames(model, count: int) -> list[list]:
    """``count`` frames of random values of the model's input type."""
    from qonnx.util.basic import gen_finn_dt_tensor

    return [
        [
            gen_finn_dt_tensor(model.get_tensor_datatype(i.name), model.get_tensor_shape(i.name))
            for i in model.graph.input
        ]
        for _ in range(count)
    ]


def _simulated(model, contexts, workdir: str, part: str, clock: float, bounded: bool) -> dict:
    from brainsmith.rtlsim.partition import simulate_partition

    result = simulate_partition(model, contexts, workdir, part, clock, bounded=bounded)
    if result.get("status") != "match" or not result.get("cycles_per_frame"):
        kind = "with the sized FIFOs" if bounded else "with unbounded FIFOs"
        raise StepError(
            f"the accelerator {kind} did not simulate correctly: {result.get('status')}: "
            f"{result.get('reason', '')}",
            "run brainsmith verify-rtl on the build folder to find the layer",
            model,
        )
    return result
