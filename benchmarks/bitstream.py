"""How long a network takes to become a board's bitstream with no vendor tool, and what it
reaches: ``brainsmith build`` of the shipped 4-bit MLP for a ULX3S-85F with ``--bitstream``
(every layer RTL, FIFOs sized in Verilator, Yosys ``synth_ecp5``, nextpnr-ecp5, ``ecppack``),
first with an empty cache and then again into a second folder (the bitstream served by the
cache).

    .venv/bin/python -m benchmarks.bitstream

Each build is a fresh ``brainsmith build`` process with a private cache. Writes
benchmarks/results/bitstream.json and its section of benchmarks/RESULTS.md: the whole
command's wall and CPU seconds, the seconds of each tool stage, the clock made and the Fmax
reached, fps and latency at that clock, the gate-level check's seconds (compiling the
netlist's simulator, then from rtlsim's cache) and the resources nextpnr reports.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODEL, BLUEPRINT = "examples/models/mlp_4bit.onnx", "blueprints/mlp.yaml"
OPTIONS = ["--board", "ulx3s-85f", "--bitstream", "--clock-ns", "20", "--target-fps", "100000"]
RESULT = HERE / "results" / "bitstream.json"
HEADING = "## A network to a board's bitstream (build --board ulx3s-85f --bitstream)"
SHOWN = ("TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD", "TRELLIS_RAMW")


def build(folder: Path, cache: Path) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the process and its tools, its report.json)."""
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    for name in ("BRAINSMITH_BITSTREAM_CACHE", "BRAINSMITH_RTLSIM_CACHE"):
        env.pop(name, None)
    command = [sys.executable, "-m", "brainsmith", "build", MODEL, BLUEPRINT, *OPTIONS,
               "--verify", "none", "-o", str(folder)]  # fmt: skip
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=3600)  # fmt: skip
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return seconds, used, json.loads((folder / "report.json").read_text())


def measure() -> dict:
    from benchmarks.machine import machine_info

    with tempfile.TemporaryDirectory(prefix="brainsmith-bitstream-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        load_before = list(os.getloadavg())
        cold_s, cold_cpu, cold = build(Path(tmp) / "first", cache)
        warm_s, _, warm = build(Path(tmp) / "again", cache)
        load_after = list(os.getloadavg())
    bit, performance = cold["bitstream"], cold["performance"]
    return {
        "benchmark": "bitstream",
        "model": MODEL,
        "blueprint": BLUEPRINT,
        "options": OPTIONS,
        "board": bit["board"],
        "part": bit["part"],
        "clock_mhz": bit["clock_mhz"],
        "fmax_mhz": bit["fmax_mhz"],
        "met": bit["met"],
        "stages_s": bit["seconds"],
        "netlist_check_s": bit["netlist_check"]["seconds"],
        "netlist_check_passed": bit["netlist_check"]["passed"],
        "cached_netlist_check_s": warm["bitstream"]["netlist_check"]["seconds"],
        "critical_path": bit.get("critical_path"),
        "build_s": round(cold_s, 2),
        "build_cpu_s": round(cold_cpu, 2),
        "cached_build_s": round(warm_s, 2),
        "cached": warm["bitstream"]["cached"],
        "fps": performance["fps"],
        "fps_source": performance["fps_source"],
        "latency_ns": performance["latency_ns"],
        "cycles_per_frame": performance["cycles_per_frame"],
        "resources": {k: bit["resources"][k] for k in SHOWN if k in bit["resources"]},
        "tools": bit["tools"],
        "machine": machine_info(),
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def section(data: dict) -> list[str]:
    """RESULTS.md's section."""
    from brainsmith.place_route.critical_path import path_text

    res, stages = data["resources"], data["stages_s"]
    fmax = ", ".join(f"{mhz:.1f} MHz" for mhz in data["fmax_mhz"].values())
    used = ", ".join(f"{name} {r['used']:,} of {r['available']:,}" for name, r in res.items())
    return [
        "",
        HEADING,
        "",
        f"`brainsmith build {data['model']} {data['blueprint']} {' '.join(data['options'])} "
        "--verify none`, a fresh process with an empty cache, then the same into a second folder "
        f"(`python -m benchmarks.bitstream`; {data['tools']['yosys']}, {data['tools']['nextpnr']}; "
        f"load average {data['load_average_before'][0]:.1f} before, "
        f"{data['load_average_after'][0]:.1f} after):",
        "",
        "| model to bitstream (CPU) | again, cached | synth_ecp5 | nextpnr | ecppack | ecpunpack "
        "| gate-level check (again) | clock made | Fmax reached | fps at that clock | latency |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {data['build_s']:.1f} s ({data['build_cpu_s']:.1f} s) | {data['cached_build_s']:.1f} s "
        f"| {stages.get('synth', 0):.1f} s | {stages.get('place_route', 0):.1f} s "
        f"| {stages.get('pack', 0):.1f} s | {stages.get('unpack', 0):.1f} s "
        f"| {data['netlist_check_s']:.1f} s ({data['cached_netlist_check_s']:.1f} s), "
        f"{'passed' if data['netlist_check_passed'] else 'FAILED'} "
        f"| {data['clock_mhz']:g} MHz ({'met' if data['met'] else 'missed'}) | {fmax} "
        f"| {data['fps']:,.0f} ({data['fps_source']}) | {data['latency_ns'] / 1000:.2f} µs |",
        "",
        f"Resources (nextpnr, of the part's own totals): {used}. The design includes the host "
        "link and the board top (PLL, reset)."
        + (
            f" Critical path (nextpnr): {path_text(data['critical_path'])}."
            if data.get("critical_path")
            else ""
        ),
    ]


def main() -> int:
    from benchmarks.first_hour import publish

    data = measure()
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
