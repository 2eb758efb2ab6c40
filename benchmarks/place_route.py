"""How long open-source place and route takes, and what it reaches: ``brainsmith place-route``
on the shipped 4-bit MLP built for an UltraScale+ part (every layer RTL), for a Lattice
ECP5-85F out of context at the build's clock, first with an empty cache and then again.

    .venv/bin/python -m benchmarks.place_route

The build runs once (no verification); each ``place-route`` is a fresh process with a private
cache. Writes benchmarks/results/place_route.json and its section of benchmarks/RESULTS.md:
seconds of synth_ecp5 and nextpnr (wall, and the processes' CPU), Fmax, LUT4, FF, MULT18X18D
and DP16KD.
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
BUILD_PART = "xczu7ev-ffvc1156-2-e"
PART = "LFE5U-85F-6BG381C"
RESULT = HERE / "results" / "place_route.json"
HEADING = "## Place and route for Lattice ECP5 (brainsmith place-route)"


def place_route(folder: Path, cache: Path, part: str = PART) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the process and its tools, its JSON output)."""
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    env.pop("BRAINSMITH_PLACE_ROUTE_CACHE", None)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "brainsmith", "place-route", str(folder), "--part", part, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 3):  # 3: placed and routed, the clock missed
        raise RuntimeError(f"brainsmith place-route {folder} failed:\n{result.stderr}")
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return seconds, used, json.loads(result.stdout)


def measure() -> dict:
    import brainsmith
    from benchmarks.machine import machine_info

    with tempfile.TemporaryDirectory(prefix="brainsmith-place-route-") as tmp:
        folder = Path(tmp) / "mlp"
        brainsmith.build(
            str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
            str(REPO / "blueprints" / "mlp.yaml"),
            str(folder),
            options={"fpga_part": BUILD_PART},
            prefer="rtl",
            verify="none",
        )
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        load_before = list(os.getloadavg())
        cold_s, cold_cpu, cold = place_route(folder, cache)
        warm_s, _, warm = place_route(folder, cache)
        load_after = list(os.getloadavg())
    resources = cold["resources"]
    return {
        "benchmark": "place_route",
        "model": "examples/models/mlp_4bit.onnx",
        "blueprint": "blueprints/mlp.yaml",
        "build_part": BUILD_PART,
        "part": PART,
        "clock_ns": cold["clock_ns"],
        "constraint_mhz": cold["constraint_mhz"],
        "fmax_mhz": cold["fmax_mhz"],
        "met": cold["met"],
        "seconds": cold["seconds"],
        "cold_process_s": round(cold_s, 2),
        "cold_process_cpu_s": round(cold_cpu, 2),
        "cached_process_s": round(warm_s, 2),
        "cached": warm["cached"],
        "cells": {k: cold["cells"].get(k, 0) for k in ("LUT4", "TRELLIS_FF", "CCU2C")},
        "resources": {
            k: resources[k]
            for k in ("TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD", "TRELLIS_RAMW")
        },
        "tools": cold["tools"],
        "machine": machine_info(),
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def section(data: dict) -> list[str]:
    """RESULTS.md's section."""
    res, cells = data["resources"], data["cells"]
    fmax = ", ".join(f"{clock} {mhz:.1f} MHz" for clock, mhz in data["fmax_mhz"].items())
    return [
        "",
        HEADING,
        "",
        f"`{data['model']}` with `{data['blueprint']}` built `--prefer rtl` for "
        f"`{data['build_part']}`, its stitched accelerator synthesised (`synth_ecp5`) and placed "
        f"and routed (`nextpnr-ecp5 --out-of-context`) for `{data['part']}` at the build's clock "
        f"({data['clock_ns']:g} ns, {data['constraint_mhz']:g} MHz); {data['tools']['yosys']}, "
        f"{data['tools']['nextpnr']} (`python -m benchmarks.place_route`; load average "
        f"{data['load_average_before'][0]:.1f} before, {data['load_average_after'][0]:.1f} after):",
        "",
        "| synth_ecp5 | nextpnr | whole command (CPU) | cached | Fmax | clock | LUT4 | FF "
        "| MULT18X18D | DP16KD | logic cells |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
        f"| {data['seconds']['synth_ecp5']:.1f} s | {data['seconds']['nextpnr']:.1f} s "
        f"| {data['cold_process_s']:.1f} s ({data['cold_process_cpu_s']:.1f} s) "
        f"| {data['cached_process_s']:.1f} s | {fmax} | {'met' if data['met'] else 'missed'} "
        f"| {cells['LUT4']:,} | {res['TRELLIS_FF']['used']:,} "
        f"| {res['MULT18X18D']['used']} of {res['MULT18X18D']['available']} "
        f"| {res['DP16KD']['used']} of {res['DP16KD']['available']} "
        f"| {res['TRELLIS_COMB']['used']:,} of {res['TRELLIS_COMB']['available']:,} |",
        "",
        "LUT4 is Yosys' count after `synth_ecp5`; FF, MULT18X18D, DP16KD and logic cells "
        "(TRELLIS_COMB: a LUT4 or half a carry cell) are nextpnr's, of the part's own totals.",
    ]


def main() -> int:
    from benchmarks.first_hour import publish

    data = measure()
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
