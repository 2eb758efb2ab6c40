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
from brainsmith.rtlsim.packing import pack_beats, unpack_beats
from brainsmith.rtlsim.processes import MIB, TooMuchOutput, run_bounded
from brainsmith.rtlsim.sources import LayerDesign

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
    op,
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
    try:
        return _simulate(
            design, op, executable, frames, workdir, estimated_cycles, interval, depths
        )
    except (SimulationFailed, OSError, ValueError, IndexError) as exc:  # its files cut off?
        if isinstance(exc, DiskFull) or not disk_full(workdir):
            raise
        code = getattr(exc, "errno", None)
        raise DiskFull(workdir, code=code if code in FULL_DISKS else errno.ENOSPC) from exc


def _simulate(
    design: LayerDesign,
    op,
    executable: str,
    frames: list[list[np.ndarray]],
    workdir: str,
    estimated_cycles: int | None,
    interval: int,
    depths: dict[str, int] | None,
) -> Waveform:
    op_in, op_out = op if isinstance(op, tuple) else (op, op)
    if estimated_cycles is None:
        estimated_cycles = int(op_in.get_exp_cycles() or 0)
    os.makedirs(workdir, exist_ok=True)
    for position, stream in enumerate(design.inputs):
        shape = op_in.get_folded_input_shape(stream.index)
        dtype = op_in.get_input_datatype(stream.index)
        bits = op_in.get_instream_width(stream.index)
        with open(os.path.join(workdir, f"{stream.port}.hex"), "w") as handle:
            for frame in frames:
                array = np.asarray(frame[position], dtype=np.float32).reshape(shape)
                handle.writelines(f"{beat:x}\n" for beat in pack_beats(array, dtype, bits))
    with open(os.path.join(workdir, "depths"), "w") as handle:
        handle.writelines(f"{(depths or {}).get(name, 0)}\n" for name in design.depths)
    beats_out = [_beats(op_out.get_folded_output_shape(s.index)) for s in design.outputs]
    idle = idle_cycles(estimated_cycles)
    command = [executable, workdir, *(str(b * len(frames)) for b in beats_out), str(idle)]
    if interval:
        command += [str(interval)]
        command += [str(_beats(op_in.get_folded_input_shape(s.index))) for s in design.inputs]
    try:  # in the code folder: the RTL reads ./<parameter>.dat
        result = run_bounded(
            command, cwd=design.code_dir or workdir, timeout=None, limit=OUTPUT_LIMIT
        )
    except TooMuchOutput as exc:
        raise SimulationFailed(f"the simulation of {design.node} {exc}") from exc
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
    return _collect(design, op_out, frames, beats_out, workdir, result.stdout)


def idle_cycles(estimated_cycles: int) -> int:
    """Cycles without an output beat after which a design whose frames FINN estimates at
    ``estimated_cycles`` (its latency, for a chain of layers) counts as stalled."""
    return max(MIN_IDLE_CYCLES, IDLE_FACTOR * estimated_cycles)


def _beats(folded_shape) -> int:
    return int(np.prod(folded_shape[:-1]))


def _collect(design, op, frames, beats_out, workdir: str, stdout: str) -> Waveform:
    outputs: list[list[np.ndarray]] = [[] for _ in frames]
    last_beats = None
    for stream, per_frame in zip(design.outputs, beats_out, strict=True):
        cycles, values = _read_beats(os.path.join(workdir, f"{stream.port}.hex"))
        dtype = op.get_output_datatype(stream.index)
        shape = op.get_folded_output_shape(stream.index)
        normal = tuple(op.get_normal_output_shape(stream.index))
        for index in range(len(frames)):
            chunk = values[index * per_frame : (index + 1) * per_frame]
            array = unpack_beats(chunk, dtype, shape, op.get_outstream_width(stream.index))
            outputs[index].append(np.asarray(array, dtype=np.float32).reshape(normal))
        frame_ends = [cycles[(k + 1) * per_frame - 1] for k in range(len(frames))]
        last_beats = frame_ends if last_beats is None else list(map(max, last_beats, frame_ends))
    found = re.search(r"^cycles (\d+)$", stdout, re.M)
    total = int(found.group(1)) if found else 0
    latency = interval = None
    if last_beats and design.inputs:
        first_in = _first_accepted(os.path.join(workdir, f"{design.inputs[0].port}.cycles"))
        latency = last_beats[0] - first_in + 1 if first_in is not None else None
    if last_beats and len(last_beats) > 1:
        interval = (last_beats[-1] - last_beats[0]) / (len(last_beats) - 1)
    probes = {m.group(1): int(m.group(2), 16) for m in PROBE.finditer(stdout)}
    return Waveform(outputs, total, latency, interval, probes)


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
