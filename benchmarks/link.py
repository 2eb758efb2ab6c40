"""Frames per second through the host link, against the accelerator's own pace: the shipped
MLP built for a ULX3S-85F with its bitstream (``--clock-ns 20 --target-fps 100000``), then
run by the driver on the simulated board (``brainsmith run --simulate``: the link and the
accelerator in Verilator behind a bit-level UART on a pseudo-terminal) with 64 generated
frames, two requests outstanding, then the first of them ``BENCH_FRAMES`` times back to back
on the chip (``--bench``: the design's own cycle counter and checksum).

    .venv/bin/python -m benchmarks.link

Reports: the accelerator's own cycles per frame (its count in the simulation) and its fps at
the bitstream's clock; the pace the chip counted over ``BENCH_FRAMES`` frames streaming; what the UART carries at the bitstream's baud rate, request and reply
one after the other and with two requests outstanding (full duplex: the longer of request
and reply bounds it); and the simulated board's wall-clock fps on this machine. Writes
benchmarks/results/link.json and its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODEL, BLUEPRINT = "examples/models/mlp_4bit.onnx", "blueprints/mlp.yaml"
OPTIONS = ["--board", "ulx3s-85f", "--bitstream", "--clock-ns", "20", "--target-fps", "100000"]
FRAMES = 64
BENCH_FRAMES = 10_000
RESULT = HERE / "results" / "link.json"
HEADING = "## Frames through the host link (brainsmith run --simulate)"


def measure() -> dict:
    from benchmarks.machine import machine_info
    from brainsmith.commands.run import run_build_folder
    from brainsmith.files import read_json
    from brainsmith.hardware.board.streams import Host, streams
    from brainsmith.verification.verifier import generate_inputs

    with tempfile.TemporaryDirectory(prefix="brainsmith-link-") as tmp:
        folder = Path(tmp) / "mlp"
        command = [sys.executable, "-m", "brainsmith", "build", MODEL, BLUEPRINT, *OPTIONS,
                   "--verify", "none", "-o", str(folder)]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, cwd=REPO, timeout=3600)
        bitstream = read_json(str(folder / "report.json"))["bitstream"]
        build = streams(str(folder))
        runnable = Host(build).runnable
        x = np.stack([s[0] for s in generate_inputs(runnable, FRAMES)])
        np.save(Path(tmp) / "x.npy", x)
        load_before = list(os.getloadavg())
        began = time.perf_counter()
        outcome = run_build_folder(str(folder), simulate=True, input_npy=str(Path(tmp) / "x.npy"),
                                   bench=BENCH_FRAMES)  # fmt: skip
        wall = time.perf_counter() - began
        load_after = list(os.getloadavg())
    figures = outcome.figures
    baud, clock_mhz = int(bitstream["baud"]), float(bitstream["clock_mhz"])
    request = figures.in_bytes
    reply = figures.bytes_per_frame - request  # RESULT: the words and the cycle count
    cycles = figures.cycles_per_frame
    benched = outcome.bench
    assert benched is not None
    return {
        "benchmark": "link",
        "model": MODEL,
        "options": OPTIONS,
        "frames": figures.frames,
        "baud": baud,
        "clock_mhz": clock_mhz,
        "cycles_per_frame": cycles,
        "accelerator_fps": clock_mhz * 1e6 / cycles if cycles else 0.0,
        "request_bytes": request,
        "reply_bytes": reply,
        "bytes_per_frame": figures.bytes_per_frame,
        "link_fps_sequential": baud / (10 * figures.bytes_per_frame),
        "link_fps_two_outstanding": baud / (10 * max(request, reply)),
        "simulated_fps": figures.fps,
        "bench_frames": benched.frames,
        "bench_cycles": benched.cycles,
        "bench_fps": benched.fps,
        "bench_crc32": f"{benched.crc32:08x}",
        "run_s": round(wall, 2),
        "machine": machine_info(),
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def section(data: dict) -> list[str]:
    """RESULTS.md's section."""
    accelerator, outstanding = data["accelerator_fps"], data["link_fps_two_outstanding"]
    return [
        "",
        HEADING,
        "",
        f"`brainsmith build {data['model']} {BLUEPRINT} {' '.join(data['options'])} --verify "
        f"none`, then the driver on the simulated board with {data['frames']} generated frames "
        f"(`python -m benchmarks.link`; load average {data['load_average_before'][0]:.1f} before, "
        f"{data['load_average_after'][0]:.1f} after):",
        "",
        "| | frames/s | per frame |",
        "|---|---:|---:|",
        f"| the accelerator one frame at a time (its latency: {data['cycles_per_frame']:,.0f} "
        f"cycles, its count in the simulation, at the bitstream's {data['clock_mhz']:g} MHz) "
        f"| {accelerator:,.0f} "
        f"| {1e6 / accelerator:.2f} µs |",
        f"| counted by the chip: {data['bench_frames']:,} frames back to back (`--bench`) in "
        f"{data['bench_cycles']:,} cycles, its own counter, checksum equal to Python's "
        f"| {data['bench_fps']:,.0f} | {1e6 / data['bench_fps']:.2f} µs |",
        f"| the link at {data['baud']:,} baud, request and reply one after the other "
        f"({data['bytes_per_frame']:,} bytes x 10 bits) | {data['link_fps_sequential']:,.0f} "
        f"| {1e3 / data['link_fps_sequential']:.2f} ms |",
        f"| the link, two requests outstanding (full duplex: the {data['request_bytes']:,}-byte "
        f"request bounds it) | {outstanding:,.0f} | {1e3 / outstanding:.2f} ms |",
        f"| the simulated board, wall clock on this machine | {data['simulated_fps']:,.0f} "
        f"| {1e3 / data['simulated_fps']:.1f} ms |",
        "",
        f"The link bounds a run on a board: at {data['baud']:,} baud the accelerator, streaming, "
        f"waits about {data['bench_fps'] / outstanding:,.0f} times as long for a frame's words as "
        "it takes to compute it.",
    ]


def main() -> int:
    from benchmarks.first_hour import publish

    data = measure()
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
