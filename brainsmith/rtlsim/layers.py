"""Simulate every RTL layer of a finished design and compare it with Python, bit for bit.

Each layer is driven with its own input tensors from a Python execution of the whole design
on the verification inputs (so one wrong layer does not hide the others) and its output
beats are compared with that execution's output of the same layer. HLS layers are listed
as not simulated: their RTL only exists after Vitis HLS synthesis.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np

from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.rtlsim.sources import (
    FAILED,
    MATCH,
    MISMATCH,
    NOT_SIMULATED,
    estimate_error,
)


@dataclass
class LayerResult:
    """One layer's outcome, as written to report.json."""

    name: str
    op_type: str
    status: str  # match | mismatch | failed | not simulated
    reason: str = ""
    frames: int = 0
    first_mismatch: dict | None = None
    cycles_per_frame: float | None = None
    latency_cycles: int | None = None
    estimated_cycles: int | None = None
    compile_seconds: float | None = None
    compile_cached: bool | None = None
    simulate_seconds: float | None = None

    @property
    def estimate_error(self) -> float | None:
        """The measured pace's error of FINN's estimate (+0.05: 5 % more cycles)."""
        return estimate_error(self.cycles_per_frame, self.estimated_cycles)

    @property
    def failed(self) -> bool:
        return self.status in (MISMATCH, FAILED)

    def as_dict(self) -> dict:
        entry = {k: v for k, v in self.__dict__.items() if v is not None and v != ""}
        if self.estimate_error is not None:
            entry["estimate_error"] = self.estimate_error
        return entry


@dataclass
class DesignResult:
    """All layers of one design."""

    tool: str
    layers: list[LayerResult] = field(default_factory=list)
    seconds: float = 0.0
    stitched: dict | None = None  # brainsmith.rtlsim.partition.simulate_partition's result

    @property
    def ok(self) -> bool:
        stitched_failed = (self.stitched or {}).get("status") in (MISMATCH, FAILED)
        return not stitched_failed and not any(layer.failed for layer in self.layers)

    def count(self, status: str) -> int:
        return sum(layer.status == status for layer in self.layers)

    @property
    def simulated(self) -> int:
        """Layers that were simulated, or should have been and failed."""
        return len(self.layers) - self.count(NOT_SIMULATED)

    def summary(self) -> str:
        parts = [f"{self.count(MATCH)} RTL layer(s) match"]
        for status in (MISMATCH, FAILED, NOT_SIMULATED):
            if self.count(status):
                parts.append(f"{self.count(status)} {status}")
        text = ", ".join(parts)
        stitched = self.stitched or {}
        if stitched.get("status") == MATCH:
            text += (
                f"; stitched partition matches, {stitched['cycles_per_frame']:,.0f} "
                f"cycles/frame{_against(stitched)}, latency {stitched['latency_cycles']:,} cycles"
            )
        elif stitched:
            text += f"; stitched partition {stitched['status']}"
        return text

    def as_dict(self) -> dict:
        return {
            "tool": self.tool,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "summary": self.summary(),
            "layers": [layer.as_dict() for layer in self.layers],
            "stitched": self.stitched,
        }


# Layers that only move data (FIFOs, width converters): in a design simulated whole they are
# checked within it, and simulated alone only when the whole does not match.
PLUMBING = ("StreamingFIFO", "StreamingDataWidthConverter")
STITCHED_ONLY = "checked within the stitched design, which matches"
LAYERS_AT_ONCE = min(2, os.cpu_count() or 1)  # layers compiled and simulated side by side


def simulate_design(
    model,
    samples,
    workdir: str,
    parent=None,
    *,
    only: set[str] | None = None,
    note: Callable[[str], None] | None = None,
    stitch: tuple[str, float] | None = None,
    whole_first: bool = False,
    every_frame: bool = False,
) -> DesignResult:
    """Simulate each hardware layer of ``model`` (or those named in ``only``) on ``samples``
    (inputs of ``parent`` if given, else of ``model``); per-layer files go to
    ``workdir/<layer>/``; ``note`` hears what is being done. With ``stitch`` (FPGA part,
    clock in ns) the whole partition is simulated too (``brainsmith.rtlsim.partition``),
    its FIFOs of the depths the model gives them (FINN's where it has none yet), and its
    ``PLUMBING`` layers alone only if the whole does not match. ``whole_first``: the whole
    partition before any layer, and every layer alone only if the whole does not match
    (to find the layer that differs); a match then checks them all at once. The whole
    partition runs on the frames it needs (``frames_to_check``: all of them unless they
    are long), or with ``every_frame`` (the user's own vectors) on all.

    Raises ``ToolchainError`` when Verilator cannot be used at all.
    """
    from brainsmith.rtlsim.verilator import find_toolchain

    began = time.perf_counter()
    toolchain = find_toolchain()
    contexts = layer_tensors(model, samples, workdir, parent)
    result = DesignResult(toolchain.label)
    layers = [n for n in model.graph.node if is_hardware(n)]
    layers = [n for n in layers if only is None or n.name in only]
    deferred = [
        n for n in layers if stitch is not None and (whole_first or n.op_type.startswith(PLUMBING))
    ]
    args = (model, contexts, toolchain, workdir, note)
    result.layers += _simulate_layers([n for n in layers if n not in deferred], *args)
    if stitch is not None and result.ok and layers:
        from brainsmith.rtlsim.partition import frames_to_check, simulate_partition

        if note is not None:
            note("RTL simulation of the stitched partition")
        folder = os.path.join(workdir, "stitched")
        count = len(contexts) if every_frame else frames_to_check(model, len(contexts))
        result.stitched = simulate_partition(model, contexts[:count], folder, *stitch, bounded=True)
    if (result.stitched or {}).get("status") == MATCH:  # checked within the whole
        frames = (result.stitched or {}).get("frames", len(contexts))
        result.layers += [
            LayerResult(node.name, node.op_type, MATCH, STITCHED_ONLY, frames) for node in deferred
        ]
    else:
        result.layers += _simulate_layers(deferred, *args)
    order = {node.name: index for index, node in enumerate(layers)}
    result.layers.sort(key=lambda layer: order[layer.name])
    result.seconds = time.perf_counter() - began
    return result


def _simulate_layers(nodes, model, contexts, toolchain, workdir, note) -> list[LayerResult]:
    """Each of ``nodes`` simulated alone, ``LAYERS_AT_ONCE`` at a time."""
    with ThreadPoolExecutor(max_workers=LAYERS_AT_ONCE) as pool:  # compiles are processes
        futures = {
            pool.submit(_simulate_layer, model, node, contexts, toolchain, workdir): node
            for node in nodes
        }
        for number, future in enumerate(as_completed(futures), 1):
            if note is not None:
                note(f"RTL simulation {number}/{len(nodes)}: {futures[future].name}")
        return [future.result() for future in futures]


def _against(stitched: dict) -> str:
    text = against_estimate(stitched)
    return f" ({text})" if text else ""


def against_estimate(stitched: Mapping[str, object]) -> str:
    """``FINN estimated N: +x.x%, within ±10%`` for a stitched result ('' without one)."""
    error = stitched.get("estimate_error")
    if error is None:
        return ""
    verdict = "within" if stitched.get("within_tolerance") else "outside"
    return (
        f"FINN estimated {stitched['estimated_cycles_per_frame']:,}: {error:+.1%}, "
        f"{verdict} ±{stitched['estimate_tolerance']:.0%}"
    )


def layer_tensors(model, samples, workdir: str, parent=None) -> list[dict[str, np.ndarray]]:
    """Every tensor of ``model`` for each sample, from its Python execution (FINN's RTL float
    layers computing as their RTL does: ``float_units``)."""
    from finn.core.onnx_exec import execute_onnx

    from brainsmith.frameworks.finn.execution import executable, fix_python_execution, graph_inputs
    from brainsmith.frameworks.finn.float_units import rtl_arithmetic

    fix_python_execution()
    os.makedirs(workdir, exist_ok=True)
    runnable = executable(model)
    outer = executable(model, parent, workdir) if parent is not None else None
    names = [i.name for i in graph_inputs(outer or runnable)]
    inner = [i.name for i in graph_inputs(runnable)]
    contexts = []
    with rtl_arithmetic():
        for sample in samples:
            feed = dict(zip(names, sample, strict=True))
            if outer is not None:
                context = execute_onnx(outer, feed, return_full_exec_context=True)
                partition = outer.get_nodes_by_op_type("StreamingDataflowPartition")[0]
                feed = {name: context[t] for name, t in zip(inner, partition.input, strict=True)}
            contexts.append(execute_onnx(runnable, feed, return_full_exec_context=True))
    return contexts


def _simulate_layer(model, node, contexts, toolchain, workdir: str) -> LayerResult:
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.rtlsim.compile import CompileError, compile_layer
    from brainsmith.rtlsim.sources import MissingCode, NotSimulated, layer_design
    from brainsmith.rtlsim.stimulus import SimulationFailed, simulate

    result = LayerResult(node.name, node.op_type, NOT_SIMULATED)
    try:
        op = getCustomOp(node)
        result.estimated_cycles = int(op.get_exp_cycles())
        design = layer_design(model, node)
    except MissingCode as exc:  # recorded but gone: nothing was checked, and that is a failure
        result.status, result.reason = FAILED, str(exc)
        return result
    except NotSimulated as exc:
        result.reason = str(exc)
        return result
    except Exception as exc:  # an op FINN cannot instantiate has nothing to simulate
        result.reason = f"no FINN class for {node.op_type}: {exc}"
        return result
    folder = os.path.join(workdir, node.name)
    try:
        compiled = compile_layer(design, toolchain, folder)
    except CompileError as exc:  # a layer that can be simulated here but was not: a failure
        result.status, result.reason = FAILED, f"{toolchain.label} cannot compile it: {exc}"
        if exc.log:
            result.reason += f" (log: {exc.log})"
        return result
    result.compile_seconds = round(compiled.seconds, 3)
    result.compile_cached = compiled.cached
    frames = [[context[node.input[s.index]] for s in design.inputs] for context in contexts]
    wanted = [[context[node.output[s.index]] for s in design.outputs] for context in contexts]
    result.frames = len(frames)
    began = time.perf_counter()
    try:
        wave = simulate(design, op, compiled.executable, frames, folder)
    except SimulationFailed as exc:
        result.status, result.reason = FAILED, str(exc)
        return result
    finally:
        result.simulate_seconds = round(time.perf_counter() - began, 3)
    result.cycles_per_frame = wave.cycles_per_frame
    result.latency_cycles = wave.latency_cycles
    result.first_mismatch = first_difference(wave.outputs, wanted, design)
    result.status = MISMATCH if result.first_mismatch else MATCH
    return result


def first_difference(got, want, design) -> dict | None:
    """The first element (frame, output, index) where ``got`` and ``want`` differ, or None."""
    differing = 0
    first = None
    for frame, (got_frame, want_frame) in enumerate(zip(got, want, strict=True)):
        for stream, a, b in zip(design.outputs, got_frame, want_frame, strict=True):
            b = np.asarray(b, dtype=np.float32).reshape(a.shape)
            wrong = np.argwhere(a != b)
            differing += len(wrong)
            if first is None and len(wrong):
                index = tuple(int(i) for i in wrong[0])
                first = {
                    "frame": frame,
                    "output": stream.port,
                    "index": list(index),
                    "got": float(a[index]),
                    "expected": float(b[index]),
                }
    if first is not None:
        first["differing_elements"] = differing
    return first
