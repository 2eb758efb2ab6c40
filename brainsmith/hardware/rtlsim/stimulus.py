"""Run one compiled layer on a batch of frames: pack the input tensors into stream beats
the way FINN does (on the folded shape, ``packing``), run the executable, unpack its beats
and measure cycles from the beat timestamps. A simulation that prints more than
``OUTPUT_LIMIT`` (a ``$display`` in a loop) is stopped there and fails.

A simulation is stalled when the design gives no output beat for a number of simulated
cycles derived from its own estimate (``idle_cycles``), never after some seconds of wall
time: a large design folded for no target simulates correctly for as long as its frames
take. It has no wall-clock limit because it needs none: the testbench stops after
``idle_cycles`` without an output beat, so a run lasts at most (output beats + 1) times
that many cycles, and Verilator's evaluation of a cycle either returns or aborts (its
convergence limit). Ctrl-C and SIGTERM still stop it (``run_bounded`` kills it).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field

import numpy as np

from brainsmith.errors import BrainsmithError
from brainsmith.files import FULL_DISKS, DiskFull, disk_full
from brainsmith.hardware.processes import MIB, Finished, TooMuchOutput, run_bounded
from brainsmith.hardware.rtlsim.beats import pack_beats, unpack_beats
from brainsmith.hardware.rtlsim.layer_design import LayerDesign, data_folders_linked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp

OUTPUT_LIMIT = 16 * MIB  # what a simulation may print: the testbench's few lines, FINN's notes
MIN_IDLE_CYCLES = 10_000
IDLE_FACTOR = 10  # a stall: no output for this many times the estimated cycles
PROBE = re.compile(r"^probe (\S+) ([0-9a-f]+)$", re.M)


class SimulationFailed(BrainsmithError, RuntimeError):
    """The simulation did not finish: the layer stalled, crashed or missed a parameter file."""


@dataclass
class Waveform:
    """What came out of one simulation."""

    outputs: list[list[np.ndarray]]  # per frame, per output stream (in the node's shape)
    cycles: int  # from reset release to the last output beat
    latency_cycles: int | None  # first input beat of frame 0 to its last output beat
    cycles_per_frame: float | None  # steady state, between consecutive frames' last beats
    probes: dict[str, int] = field(default_factory=dict)  # TB_PROBES values at the end


def simulate(
    design: LayerDesign,
    op: HWCustomOp | tuple[HWCustomOp, HWCustomOp],
    executable: str,
    frames: list[list[np.ndarray]],
    workdir: str,
    estimated_cycles: int | None = None,
    interval: int = 0,
    depths: dict[str, int] | None = None,
) -> Waveform:
    """Drive ``frames`` (per frame: one array per input stream) through ``executable``.

    ``op`` is the FINN op whose streams these are, or a pair (op of the inputs, op of the
    outputs) for a chain of layers; ``estimated_cycles`` (default: the op's estimate) sets
    how long the simulation may go without output before it counts as stalled; with an
    ``interval``, frame k is offered from cycle k * interval on (else inputs flow flat out);
    ``depths`` sets the design's ``depths`` inputs by name (0, unbounded, where not given).
    A simulation that fails while the disk of ``workdir`` is full raises DiskFull.
    """
    workdir = os.path.abspath(workdir)
    op_in, op_out = op if isinstance(op, tuple) else (op, op)
    run = _Run(design, op_in, op_out, executable, frames, workdir)
    try:
        return run.waveform(estimated_cycles, interval, depths or {})
    except (SimulationFailed, OSError, ValueError, IndexError) as exc:  # its files cut off?
        if isinstance(exc, DiskFull) or not disk_full(workdir):
            raise
        code = getattr(exc, "errno", None)
        raise DiskFull(workdir, code=code if code in FULL_DISKS else errno.ENOSPC) from exc


def idle_cycles(estimated_cycles: int) -> int:
    """Cycles without an output beat after which a design whose frames FINN estimates at
    ``estimated_cycles`` (its latency, for a chain of layers) counts as stalled."""
    return max(MIN_IDLE_CYCLES, IDLE_FACTOR * estimated_cycles)


@dataclass(frozen=True)
class _Run:
    """One simulation of ``design`` (``executable``) on ``frames``, its files in ``workdir``."""

    design: LayerDesign
    op_in: HWCustomOp  # the op whose input streams these are
    op_out: HWCustomOp  # and of the output streams
    executable: str
    frames: list[list[np.ndarray]]
    workdir: str

    def waveform(
        self, estimated_cycles: int | None, interval: int, depths: dict[str, int]
    ) -> Waveform:
        """Run it, stalled after ``idle_cycles`` of ``estimated_cycles`` (default: the op's
        estimate) without output, frames offered every ``interval`` cycles (0: flat out),
        the FIFOs of ``depths``; what came out."""
        if estimated_cycles is None:
            estimated_cycles = int(self.op_in.get_exp_cycles() or 0)
        os.makedirs(self.workdir, exist_ok=True)
        self._write_inputs()
        with open(os.path.join(self.workdir, "depths"), "w") as handle:
            handle.writelines(f"{depths.get(name, 0)}\n" for name in self.design.depths)
        outputs = self.design.outputs
        beats_out = [_beats(self.op_out.get_folded_output_shape(s.index)) for s in outputs]
        idle = idle_cycles(estimated_cycles)
        command = self._command(beats_out, idle, interval)
        with data_folders_linked(self.design, self.workdir):
            stdout = self._run(command, idle)
        found = re.search(r"^cycles (\d+)$", stdout, re.M)
        total = int(found.group(1)) if found else 0
        read = [_read_beats(os.path.join(self.workdir, f"{s.port}.hex")) for s in outputs]
        frames = self._outputs([values for _, values in read], beats_out)
        ends = self._last_beats([cycles for cycles, _ in read], beats_out)
        return Waveform(frames, total, *self._latency_and_interval(ends), _probes(stdout))

    def _command(self, beats_out: list[int], idle: int, interval: int) -> list[str]:
        """The testbench's command line: its folder, the output beats it waits for on each
        stream, the cycles without output that stall it; with an ``interval``, that and the
        input beats of a frame on each stream."""
        waited = [str(beats * len(self.frames)) for beats in beats_out]
        command = [self.executable, self.workdir, *waited, str(idle)]
        if not interval:
            return command
        inputs = self.design.inputs
        folded = [self.op_in.get_folded_input_shape(s.index) for s in inputs]
        return [*command, str(interval), *(str(_beats(shape)) for shape in folded)]

    def _write_inputs(self) -> None:
        """Each input stream's beats, frame after frame, packed as FINN packs them."""
        for position, stream in enumerate(self.design.inputs):
            shape = self.op_in.get_folded_input_shape(stream.index)
            dtype = self.op_in.get_input_datatype(stream.index)
            bits = self.op_in.get_instream_width(stream.index)
            with open(os.path.join(self.workdir, f"{stream.port}.hex"), "w") as handle:
                for frame in self.frames:
                    array = np.asarray(frame[position], dtype=np.float32).reshape(shape)
                    handle.writelines(f"{beat:x}\n" for beat in pack_beats(array, dtype, bits))

    def _run(self, command: list[str], idle: int) -> str:
        """Run ``command`` in the code folder (the RTL reads ./<parameter>.dat); what it
        printed. SimulationFailed where it printed too much, missed a parameter file,
        stalled or crashed."""
        try:
            result = run_bounded(
                command, cwd=self.design.code_dir or self.workdir, timeout=None, limit=OUTPUT_LIMIT
            )
        except TooMuchOutput as exc:
            raise SimulationFailed(f"the simulation of {self.design.node} {exc}") from exc
        _require_finished(result, idle)
        return result.stdout

    def _outputs(self, values: list[list[int]], beats_out: list[int]) -> list[list[np.ndarray]]:
        """Per frame, per output stream: the stream's beats (``values``) unpacked, in the
        node's shape."""
        outputs: list[list[np.ndarray]] = [[] for _ in self.frames]
        for stream, beats, per_frame in zip(self.design.outputs, values, beats_out, strict=True):
            dtype = self.op_out.get_output_datatype(stream.index)
            shape = self.op_out.get_folded_output_shape(stream.index)
            normal = tuple(self.op_out.get_normal_output_shape(stream.index))
            bits = self.op_out.get_outstream_width(stream.index)
            for index, output in enumerate(outputs):
                array = unpack_beats(
                    beats[index * per_frame : (index + 1) * per_frame], dtype, shape, bits
                )
                output.append(np.asarray(array, dtype=np.float32).reshape(normal))
        return outputs

    def _last_beats(self, cycles: list[list[int]], beats_out: list[int]) -> list[int]:
        """Per frame, the cycle of its last output beat on any stream (``cycles``: each
        stream's beats' cycles)."""
        ends = [
            [stream[(k + 1) * per_frame - 1] for k in range(len(self.frames))]
            for stream, per_frame in zip(cycles, beats_out, strict=True)
        ]
        return [max(frame) for frame in zip(*ends, strict=True)]

    def _latency_and_interval(self, last_beats: list[int]) -> tuple[int | None, float | None]:
        """(the first frame's latency: its first input beat to its last output beat, the
        cycles between consecutive frames' last beats)."""
        latency = interval = None
        if last_beats and self.design.inputs:
            path = os.path.join(self.workdir, f"{self.design.inputs[0].port}.cycles")
            first_in = _first_accepted(path)
            latency = last_beats[0] - first_in + 1 if first_in is not None else None
        if len(last_beats) > 1:
            interval = (last_beats[-1] - last_beats[0]) / (len(last_beats) - 1)
        return latency, interval


def _require_finished(result: Finished, idle: int) -> None:
    """SimulationFailed where the simulation missed a parameter file, stalled (no output
    for ``idle`` cycles) or crashed."""
    for line in (result.stdout + result.stderr).splitlines():
        if "$readmem" in line:  # Verilator warns and goes on with zeros; that is no result
            raise SimulationFailed(f"cannot read a parameter file: {line.strip()}")
    if result.returncode == 3:
        stalled = [line.split()[1:] for line in result.stdout.splitlines() if "stalled" in line]
        detail = ", ".join(f"{name} gave {count} beats" for name, count in stalled)
        raise SimulationFailed(f"stalled: no output for {idle:,} cycles ({detail})")
    if result.returncode != 0:
        raise SimulationFailed(
            f"crashed: the simulator exited with code {result.returncode}: "
            f"{(result.stderr or result.stdout).strip()[-300:]}"
        )


def _probes(stdout: str) -> dict[str, int]:
    """The TB_PROBES values the testbench printed at the end."""
    return {m.group(1): int(m.group(2), 16) for m in PROBE.finditer(stdout)}


def _beats(folded_shape: Sequence[int]) -> int:
    return int(np.prod(folded_shape[:-1]))


def _read_beats(path: str) -> tuple[list[int], list[int]]:
    cycles, values = [], []
    with open(path) as handle:
        for line in handle:
            cycle, value = line.split()
            cycles.append(int(cycle))
            values.append(int(value, 16))
    return cycles, values


def _first_accepted(path: str) -> int | None:
    with open(path) as handle:
        line = handle.readline().strip()
    return int(line) if line else None
