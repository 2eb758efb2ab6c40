"""Simulate every RTL layer of a finished design and compare it with Python, bit for bit.

Each layer is driven with its own input tensors from a Python execution of the whole design
on the verification inputs (so one wrong layer does not hide the others) and its output
beats are compared with that execution's output of the same layer. HLS layers are listed
as not simulated: their RTL only exists after Vitis HLS synthesis.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np

from brainsmith.frameworks.finn.execution import executable, fix_python_execution, graph_inputs
from brainsmith.frameworks.finn.facts import is_hardware
from brainsmith.frameworks.finn.float_units import rtl_arithmetic
from brainsmith.hardware.rtlsim.compile import CompileError, compile_layer
from brainsmith.hardware.rtlsim.layer_design import (
    FAILED,
    MATCH,
    MISMATCH,
    NOT_SIMULATED,
    LayerDesign,
    MissingCode,
    NotSimulated,
    estimate_error,
    layer_design,
)
from brainsmith.hardware.rtlsim.stimulus import SimulationFailed, simulate
from brainsmith.hardware.rtlsim.verilator import Toolchain, find_toolchain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
    from onnx import NodeProto
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.report_schema.stitched import Mismatch, Stitched

Tensors = dict[str, np.ndarray]  # every tensor of one sample's Python execution, by name


@dataclass
class LayerResult:
    """One layer's outcome, as written to report.json."""

    name: str
    op_type: str
    status: str  # match | mismatch | failed | not simulated
    reason: str = ""
    frames: int = 0
    first_mismatch: Mismatch | None = None
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

    def as_dict(self) -> dict[str, object]:
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
    stitched: Stitched | None = None  # stitched.partition.simulate_partition's

    @property
    def stitched_status(self) -> str:
        """The stitched partition's status; "" where it was not simulated."""
        return self.stitched["status"] if self.stitched is not None else ""

    @property
    def ok(self) -> bool:
        stitched_failed = self.stitched_status in (MISMATCH, FAILED)
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
        return ", ".join(parts) + _stitched_summary(self.stitched)

    def as_dict(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "summary": self.summary(),
            "layers": [layer.as_dict() for layer in self.layers],
            "stitched": self.stitched,
        }


def _stitched_summary(stitched: Stitched | None) -> str:
    """The summary's words on the stitched partition ("" where it was not simulated)."""
    if not stitched:
        return ""
    if stitched["status"] != MATCH:
        return f"; stitched partition {stitched['status']}"
    return (
        f"; stitched partition matches{_cost(stitched)}, {stitched['cycles_per_frame']:,.0f} "
        f"cycles/frame{_against(stitched)}, latency {stitched['latency_cycles']:,} cycles"
    )


def _cost(stitched: Stitched) -> str:
    """What the whole design's check cost: " on 16 frames (compiled in S s, simulated in
    S s)"; "compile cached" where a simulator compiled before was used."""
    frames, seconds = stitched.get("frames"), stitched.get("simulate_seconds")
    if not frames or seconds is None:
        return ""
    compiled = stitched.get("compile_seconds")
    made = f"compiled in {compiled:.1f} s, " if compiled is not None else ""
    made = "compile cached, " if stitched.get("compile_cached") else made
    return f" on {frames:,} frame{'s' if frames > 1 else ''} ({made}simulated in {seconds:.1f} s)"


# Layers that only move data (FIFOs, width converters): in a design simulated whole they are
# checked within it, and simulated alone only when the whole does not match.
PLUMBING = ("StreamingFIFO", "StreamingDataWidthConverter")
STITCHED_ONLY = "checked within the stitched design, which matches"
LAYERS_AT_ONCE = min(2, os.cpu_count() or 1)  # layers compiled and simulated side by side


def simulate_design(
    model: ModelWrapper,
    samples: Sequence[Sequence[np.ndarray]],
    workdir: str,
    parent: ModelWrapper | None = None,
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
    clock in ns) the whole partition is simulated too (``brainsmith.hardware.rtlsim.stitched.partition``),
    its FIFOs of the depths the model gives them (FINN's where it has none yet), and its
    ``PLUMBING`` layers alone only if the whole does not match. ``whole_first``: the whole
    partition before any layer, and every layer alone only if the whole does not match
    (to find the layer that differs); a match then checks them all at once. The whole
    partition runs on the frames it needs (``frames_to_check``: all of them unless they
    are long), or with ``every_frame`` (the user's own vectors) on all.

    Raises ``ToolchainError`` when Verilator cannot be used at all.
    """
    began = time.perf_counter()
    toolchain = find_toolchain()
    alone = _Alone(model, layer_tensors(model, samples, workdir, parent), toolchain, workdir, note)
    result = DesignResult(toolchain.label)
    layers = _hardware(model, only)
    deferred = _deferred(layers, stitch is not None, whole_first)
    result.layers += alone.simulate([n for n in layers if n not in deferred])
    if stitch is not None and result.ok and layers:
        result.stitched = alone.whole(stitch, every_frame)
    result.layers += alone.unless_matched(deferred, result.stitched)
    order = {node.name: index for index, node in enumerate(layers)}
    result.layers.sort(key=lambda layer: order[layer.name])
    result.seconds = time.perf_counter() - began
    return result


def _hardware(model: ModelWrapper, only: set[str] | None) -> list[NodeProto]:
    """The hardware layers of ``model`` (those named in ``only``, if given)."""
    return [n for n in model.graph.node if is_hardware(n) and (only is None or n.name in only)]


def _deferred(layers: list[NodeProto], stitched: bool, whole_first: bool) -> list[NodeProto]:
    """The layers simulated alone only where the stitched partition does not match."""
    if not stitched:
        return []
    return [n for n in layers if whole_first or n.op_type.startswith(PLUMBING)]


@dataclass(frozen=True)
class _Alone:
    """Layers of ``model`` simulated each on its own (or the whole partition at once) on the
    tensors of its Python execution (``contexts``), with ``toolchain``, below ``workdir``."""

    model: ModelWrapper
    contexts: list[Tensors]
    toolchain: Toolchain
    workdir: str
    note: Callable[[str], None] | None

    def simulate(self, nodes: list[NodeProto]) -> list[LayerResult]:
        """Each of ``nodes`` simulated alone, ``LAYERS_AT_ONCE`` at a time."""
        with ThreadPoolExecutor(max_workers=LAYERS_AT_ONCE) as pool:  # compiles are processes
            futures = {pool.submit(self.layer, node): node for node in nodes}
            for number, future in enumerate(as_completed(futures), 1):
                if self.note is not None:
                    self.note(f"RTL simulation {number}/{len(nodes)}: {futures[future].name}")
            return [future.result() for future in futures]

    def whole(self, stitch: tuple[str, float], every_frame: bool) -> Stitched:
        """The whole partition for (FPGA part, clock in ns) ``stitch``, its FIFOs bounded,
        on every frame or those it needs."""
        from brainsmith.hardware.rtlsim.stitched.partition import (
            frames_to_check,
            simulate_partition,
        )

        if self.note is not None:
            self.note("RTL simulation of the stitched partition")
        folder = os.path.join(self.workdir, "stitched")
        offered = len(self.contexts)
        count = offered if every_frame else frames_to_check(self.model, offered)
        return simulate_partition(self.model, self.contexts[:count], folder, *stitch, bounded=True)

    def unless_matched(
        self, nodes: list[NodeProto], stitched: Stitched | None
    ) -> list[LayerResult]:
        """``nodes`` as checked within the ``stitched`` partition where it matches; else
        each simulated alone."""
        if stitched is None or stitched["status"] != MATCH:
            return self.simulate(nodes)
        frames = stitched.get("frames", len(self.contexts))
        return [LayerResult(n.name, n.op_type, MATCH, STITCHED_ONLY, frames) for n in nodes]

    def layer(self, node: NodeProto) -> LayerResult:
        """``node`` compiled and simulated alone, compared with Python."""
        result = LayerResult(node.name, node.op_type, NOT_SIMULATED)
        found = _design(self.model, node, result)
        if found is None:
            return result
        op, design = found
        folder = os.path.join(self.workdir, node.name)
        try:
            compiled = compile_layer(design, self.toolchain, folder)
        except CompileError as exc:  # a layer that can be simulated here but was not: a failure
            result.status, result.reason = (
                FAILED,
                f"{self.toolchain.label} cannot compile it: {exc}",
            )
            if exc.log:
                result.reason += f" (log: {exc.log})"
            return result
        result.compile_seconds = round(compiled.seconds, 3)
        result.compile_cached = compiled.cached
        self._run(node, op, design, compiled.executable, result)
        return result

    def _run(
        self,
        node: NodeProto,
        op: HWCustomOp,
        design: LayerDesign,
        executable: str,
        result: LayerResult,
    ) -> None:
        """``executable`` run on the layer's frames; its outcome in ``result``."""
        frames = [
            [context[node.input[s.index]] for s in design.inputs] for context in self.contexts
        ]
        wanted = [
            [context[node.output[s.index]] for s in design.outputs] for context in self.contexts
        ]
        result.frames = len(frames)
        began = time.perf_counter()
        try:
            wave = simulate(design, op, executable, frames, os.path.join(self.workdir, node.name))
        except SimulationFailed as exc:
            result.status, result.reason = FAILED, str(exc)
            return
        finally:
            result.simulate_seconds = round(time.perf_counter() - began, 3)
        result.cycles_per_frame = wave.cycles_per_frame
        result.latency_cycles = wave.latency_cycles
        result.first_mismatch = first_difference(wave.outputs, wanted, design)
        result.status = MISMATCH if result.first_mismatch else MATCH


def _design(
    model: ModelWrapper, node: NodeProto, result: LayerResult
) -> tuple[HWCustomOp, LayerDesign] | None:
    """(FINN's op, the design) of ``node``, its estimated cycles in ``result``; None, with
    the reason in ``result``, where it cannot be simulated."""
    from qonnx.custom_op.registry import getCustomOp

    try:
        op = getCustomOp(node)
        result.estimated_cycles = int(op.get_exp_cycles())
        return op, layer_design(model, node)
    except MissingCode as exc:  # recorded but gone: nothing was checked, and that is a failure
        result.status, result.reason = FAILED, str(exc)
    except NotSimulated as exc:
        result.reason = str(exc)
    except Exception as exc:  # an op FINN cannot instantiate has nothing to simulate
        result.reason = f"no FINN class for {node.op_type}: {exc}"
    return None


def _against(stitched: Stitched) -> str:
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


def layer_tensors(
    model: ModelWrapper,
    samples: Sequence[Sequence[np.ndarray]],
    workdir: str,
    parent: ModelWrapper | None = None,
) -> list[Tensors]:
    """Every tensor of ``model`` for each sample, from its Python execution (FINN's RTL float
    layers computing as their RTL does: ``float_units``)."""
    from finn.core.onnx_exec import execute_onnx

    fix_python_execution()
    os.makedirs(workdir, exist_ok=True)
    runnable = executable(model)
    outer = executable(model, parent, workdir) if parent is not None else None
    first = outer or runnable
    names = [i.name for i in graph_inputs(first)]
    shapes = [first.get_tensor_shape(name) for name in names]
    inner = [i.name for i in graph_inputs(runnable)]
    contexts = []
    with rtl_arithmetic():
        for sample in samples:
            feed = {
                name: _shaped(x, shape)
                for name, x, shape in zip(names, sample, shapes, strict=True)
            }
            if outer is not None:
                context = execute_onnx(outer, feed, return_full_exec_context=True)
                partition = outer.get_nodes_by_op_type("StreamingDataflowPartition")[0]
                feed = {name: context[t] for name, t in zip(inner, partition.input, strict=True)}
            contexts.append(execute_onnx(runnable, feed, return_full_exec_context=True))
    return contexts


def _shaped(sample: np.ndarray, shape: Sequence[int] | None) -> np.ndarray:
    """``sample`` in the graph's input ``shape`` when it holds as many values (a 1-D
    network's samples lifted to 2-D for the build, fed to its graph as exported)."""
    if shape is None or tuple(sample.shape) == tuple(shape):
        return sample
    return sample.reshape(shape) if sample.size == int(np.prod(shape)) else sample


def first_difference(
    got: list[list[np.ndarray]], want: list[list[np.ndarray]], design: LayerDesign
) -> Mismatch | None:
    """The first element (frame, output, index) where ``got`` and ``want`` differ, and how
    many differ; None where none does."""
    differing = 0
    first: tuple[int, str, tuple[int, ...], float, float] | None = None
    for frame, (got_frame, want_frame) in enumerate(zip(got, want, strict=True)):
        for stream, a, b in zip(design.outputs, got_frame, want_frame, strict=True):
            expected = np.asarray(b, dtype=np.float32).reshape(a.shape)
            wrong = np.argwhere(a != expected)
            differing += len(wrong)
            if first is None and len(wrong):
                index = tuple(int(i) for i in wrong[0])
                first = (frame, stream.port, index, float(a[index]), float(expected[index]))
    if first is None:
        return None
    frame, port, index, value, expected_value = first
    return {
        "frame": frame,
        "output": port,
        "index": list(index),
        "got": value,
        "expected": expected_value,
        "differing_elements": differing,
    }
