"""How long each shipped network takes to become a board's bitstream with no vendor tool, and
what it reaches at 100 MHz: ``brainsmith build NET --board ulx3s-85f --bitstream --clock-ns 10
--refold-rounds 0`` (every layer RTL, FIFOs sized in Verilator, Yosys ``synth_ecp5``,
nextpnr-ecp5, ``ecppack``, ``ecpunpack``, the gate-level check), first with an empty cache and
then again into a second folder (the bitstream served by the cache).

    .venv/bin/python -m benchmarks.bitstream              # every network, one after another
    .venv/bin/python -m benchmarks.bitstream mlp_4bit cnv # only these; the others' rows are kept

Each build is a fresh ``brainsmith build`` process with a private cache, run one at a time.
Writes benchmarks/results/bitstream.json (one entry per network, merged with earlier runs) and
its section of benchmarks/RESULTS.md: per network the whole command's wall and CPU seconds, the
seconds of each tool stage, the clock made and the Fmax reached, fps and latency at that clock,
the resources nextpnr reports, and finn-plus's published on-board figures where the network is
one of theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "bitstream.json"
HEADING = "## Networks to a board's bitstream (build --board ulx3s-85f --bitstream)"
BOARD = ["--board", "ulx3s-85f", "--bitstream", "--clock-ns", "10", "--refold-rounds", "0"]
SHOWN = ("TRELLIS_COMB", "TRELLIS_FF", "MULT18X18D", "DP16KD")


@dataclass(frozen=True)
class Published:
    """finn-plus's CI on an RFSoC2x2 (xczu28dr, 100 MHz, Vivado 2024.2), fps measured on the
    board (its published figures, checked 2026-11-23)."""

    fps: float
    lut6: int


@dataclass(frozen=True)
class Network:
    name: str
    model: str
    options: tuple[str, ...] = ()
    published: Published | None = None

    def command(self, folder: Path) -> list[str]:
        return [sys.executable, "-m", "brainsmith", "build", self.model, *self.options, *BOARD,
                "--verify", "none", "-o", str(folder)]  # fmt: skip


NETWORKS = (
    Network(
        "mlp_4bit",
        "examples/models/mlp_4bit.onnx",
        ("blueprints/mlp.yaml", "--target-fps", "100000"),
    ),
    Network(
        "tfc_w2a2",
        "examples/models/zoo/tfc_w2a2.onnx",
        ("--target-fps", "100000"),
        Published(1_428_557, 28_515),
    ),
    Network("kws_conv1d", "examples/models/zoo/kws_conv1d.onnx"),
    Network("cnv", "examples/models/cnv.onnx"),
    Network("conv_pad", "examples/models/conv_pad.onnx"),
    Network("residual", "examples/models/residual.onnx"),
)
BY_NAME = {network.name: network for network in NETWORKS}


def build(network: Network, folder: Path, cache: Path) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the process and its tools, its report.json)."""
    env = {**os.environ, "BRAINSMITH_CACHE_DIR": str(cache)}
    for name in ("BRAINSMITH_BITSTREAM_CACHE", "BRAINSMITH_RTLSIM_CACHE"):
        env.pop(name, None)
    command = network.command(folder)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=7200)  # fmt: skip
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return seconds, used, json.loads((folder / "report.json").read_text())


def measure(network: Network) -> dict:
    """One network built cold, then again from the cache."""
    with tempfile.TemporaryDirectory(prefix="brainsmith-bitstream-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        load_before = os.getloadavg()[0]
        cold_s, cold_cpu, cold = build(network, Path(tmp) / "first", cache)
        warm_s, _, warm = build(network, Path(tmp) / "again", cache)
        load_after = os.getloadavg()[0]
    bit, performance = cold["bitstream"], cold["performance"]
    return {
        "model": network.model,
        "command": " ".join(["brainsmith build", network.model, *network.options, *BOARD]),
        "part": bit["part"],
        "clock_mhz": bit["clock_mhz"],
        "fmax_mhz": min(bit["fmax_mhz"].values()),
        "met": bit["met"],
        "stages_s": bit["seconds"],
        "netlist_check_s": bit["netlist_check"]["seconds"],
        "netlist_check_passed": bit["netlist_check"]["passed"],
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
        "load_average": [load_before, load_after],
    }


def _row(name: str, entry: dict) -> str:
    res, stages = entry["resources"], entry["stages_s"]
    lut4 = res["TRELLIS_COMB"]["used"]
    clock = f"{entry['clock_mhz']:g} MHz {'met' if entry['met'] else 'MISSED'}"
    check = "equal" if entry["netlist_check_passed"] else "FAILED"
    return (
        f"| `{name}` | {clock}, **{entry['fmax_mhz']:.1f} MHz** | {entry['fps']:,.0f} "
        f"| {entry['latency_ns'] / 1000:,.1f} µs | {entry['fps'] / lut4 * 1000:,.0f} "
        f"| {lut4:,} / {res['TRELLIS_FF']['used']:,} | {res['MULT18X18D']['used']} "
        f"/ {res['DP16KD']['used']} | {stages.get('synth', 0):.0f} / "
        f"{stages.get('place_route', 0):.0f} / {stages.get('pack', 0):.1f} / "
        f"{stages.get('unpack', 0):.1f} | {entry['netlist_check_s']:.0f} s, {check} "
        f"| **{entry['build_s']:.0f} s** ({entry['build_cpu_s']:.0f} s) "
        f"| {entry['cached_build_s']:.0f} s |"
    )


def section(data: dict) -> list[str]:
    """RESULTS.md's section: one row per network measured, in NETWORKS' order."""
    from brainsmith.hardware.place_route.critical_path import path_text

    entries = {n.name: data["networks"][n.name] for n in NETWORKS if n.name in data["networks"]}
    tools = next(iter(entries.values()))["tools"]
    lines = [
        "",
        HEADING,
        "",
        "Each network built with `brainsmith build examples/models/NET.onnx [OPTIONS] "
        f"{' '.join(BOARD)} --verify none`, a fresh process with an empty cache, then the "
        "same into a second folder (`python -m benchmarks.bitstream`, one build at a time; "
        f"{tools['yosys']}, {tools['nextpnr']}). Fmax and resources are nextpnr's (place and "
        "route, host link and board top included), fps and latency Verilator's cycles a frame "
        "at the clock made; the gate-level check simulates the routed netlist on 4 frames "
        "against the RTL:",
        "",
        "| network | clock, Fmax reached | fps | latency | fps per 1,000 LUT4 | LUT4 / FF "
        "| MULT18X18D / DP16KD | seconds: synth_ecp5 / nextpnr / ecppack / ecpunpack "
        "| gate-level check | model to bitstream (CPU) | again, cached |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(_row(name, entry) for name, entry in entries.items()),
        "",
        "Slowest paths (nextpnr): "
        + "; ".join(
            f"`{name}` {path_text(entry['critical_path'])}"
            for name, entry in entries.items()
            if entry.get("critical_path")
        )
        + ".",
        "",
        "Options and load average (1 minute, before the first build and after the second): "
        + "; ".join(
            f"`{name}` `{' '.join(BY_NAME[name].options) or '(none)'}` "
            f"{entry['load_average'][0]:.1f} → {entry['load_average'][1]:.1f}"
            for name, entry in entries.items()
        )
        + ".",
    ]
    for name, entry in entries.items():
        published = BY_NAME[name].published
        if published is not None:
            lut4 = entry["resources"]["TRELLIS_COMB"]["used"]
            lines += [
                "",
                f"`{name}` beside finn-plus's CI on an RFSoC2x2 (xczu28dr, 100 MHz, Vivado "
                f"2024.2, fps measured on the board): {published.fps:,.0f} fps at "
                f"{published.lut6:,} LUT6, {published.fps / published.lut6 * 1000:,.0f} fps per "
                f"thousand LUT6; here {entry['fps']:,.0f} fps at {lut4:,} LUT4, "
                f"{entry['fps'] / lut4 * 1000:,.0f} per thousand LUT4, folded for the "
                "`--target-fps` asked on a part with a fraction of the multiplier blocks.",
            ]
    return lines


def main() -> int:
    from benchmarks.first_hour import publish
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="*", metavar="NETWORK",
                        help="networks to build (default: all): " + ", ".join(BY_NAME))  # fmt: skip
    chosen = parser.parse_args().networks or list(BY_NAME)
    if unknown := sorted(set(chosen) - set(BY_NAME)):
        parser.error(f"unknown network(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    old = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    data = {"benchmark": "bitstream", "networks": dict(old.get("networks", {}))}
    for name in chosen:
        data["networks"][name] = measure(BY_NAME[name])
        data["machine"] = machine_info()
        RESULT.write_text(json.dumps(data, indent=2) + "\n")  # a row kept if a later one fails
    return publish(data, section(data), RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
