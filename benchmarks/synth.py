"""How long open-source synthesis takes: ``brainsmith synth`` on the shipped 4-bit MLP built
for an UltraScale+ part (every layer RTL), first with an empty synthesis cache (every layer
synthesised by Yosys, two at a time) and then again (every layer cached).

    .venv/bin/python -m benchmarks.synth

The build runs once (no verification); each ``synth`` is a fresh process with a private
cache. Writes benchmarks/results/synth.json and prints a table per layer: Yosys' counts,
FINN's estimates and seconds, cold and cached.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"


def synth(folder: Path, cache: Path) -> tuple[float, dict]:
    from benchmarks.machine import brainsmith_json

    return brainsmith_json("synth", folder, cache)


def main() -> int:
    import brainsmith
    from benchmarks.machine import machine_info

    with tempfile.TemporaryDirectory(prefix="brainsmith-synth-") as tmp:
        folder = Path(tmp) / "mlp"
        brainsmith.build(
            str(REPO / "examples" / "models" / "mlp_4bit.onnx"),
            str(REPO / "blueprints" / "mlp.yaml"),
            str(folder),
            options={"fpga_part": PART},
            prefer="rtl",
            verify="none",
        )
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        load_before = list(os.getloadavg())
        cold_s, cold = synth(folder, cache)
        warm_s, warm = synth(folder, cache)
        load_after = list(os.getloadavg())
    cached = {layer["name"]: layer for layer in warm["layers"]}
    layers = [
        {
            "name": layer["name"],
            "op_type": layer["op_type"],
            "counts": layer["counts"],
            "finn_estimate": layer["finn_estimate"],
            "cold_s": layer["seconds"],
            "cached_s": cached[layer["name"]]["seconds"],
            "cached": cached[layer["name"]]["cached"],
            "fixes": layer["fixes"],
        }
        for layer in cold["layers"]
    ]
    out = HERE / "results" / "synth.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "synth",
                "model": "examples/models/mlp_4bit.onnx",
                "blueprint": "blueprints/mlp.yaml",
                "part": PART,
                "family": cold["family"],
                "yosys": cold["yosys"],
                "jobs": 2,
                "cold_process_s": round(cold_s, 2),
                "cached_process_s": round(warm_s, 2),
                "cold_synthesis_s": cold["seconds"],
                "cached_synthesis_s": warm["seconds"],
                "layers": layers,
                "totals": cold["totals"],
                "finn_totals": cold["finn_totals"],
                "machine": machine_info(),
                "load_average_before": load_before,
                "load_average_after": load_after,
            },
            indent=2,
        )
        + "\n"
    )
    print(
        "| layer | LUT (FINN / Yosys) | FF | CARRY | DSP (FINN / Yosys) | BRAM_18K | cold | cached |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for layer in layers:
        counts, finn = layer["counts"], layer["finn_estimate"]
        print(
            f"| {layer['name']} | {_n(finn['LUT'])} / {counts['LUT']:,} | {counts['FF']:,} "
            f"| {counts['CARRY']} | {_n(finn['DSP'])} / {counts['DSP']} "
            f"| {_n(finn['BRAM_18K'])} / {counts['BRAM_18K'] + 2 * counts['BRAM_36K']} "
            f"| {layer['cold_s']:.1f} s | {layer['cached_s']:.2f} s |"
        )
    print(
        f"\nwhole command: {cold_s:.1f} s cold ({cold['seconds']:.1f} s synthesising), "
        f"{warm_s:.1f} s cached; load average {load_before[0]:.1f} -> {load_after[0]:.1f}"
    )
    print(f"-> {out.relative_to(REPO)}")
    return 0


def section(data: dict) -> list[str]:
    """RESULTS.md's section: per layer Yosys' counts beside FINN's estimates, and seconds."""
    lines = [
        "",
        "## Synthesis (brainsmith synth)",
        "",
        f"`{data['model']}` with `{data['blueprint']}` for `{data['part']}` (every layer RTL), "
        f"{data['yosys']}, `synth_xilinx -family {data['family']}` out of context, "
        f"{data['jobs']} layers at a time (`python -m benchmarks.synth`; load average "
        f"{data['load_average_before'][0]:.1f} before, {data['load_average_after'][0]:.1f} "
        "after). FINN's estimate / Yosys' count; BRAM_18K counts a RAMB36 as two:",
        "",
        "| layer | LUT | FF | CARRY | DSP | BRAM_18K | URAM | first run | cached |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for layer in data["layers"]:
        counts, finn = layer["counts"], layer["finn_estimate"]
        lines.append(
            f"| {layer['name']} | {_n(finn['LUT'])} / {counts['LUT']:,} | {counts['FF']:,} "
            f"| {counts['CARRY']} | {_n(finn['DSP'])} / {counts['DSP']} "
            f"| {_n(finn['BRAM_18K'])} / {counts['BRAM_18K'] + 2 * counts['BRAM_36K']} "
            f"| {_n(finn['URAM'])} / {counts['URAM']} "
            f"| {layer['cold_s']:.1f} s | {layer['cached_s']:.2f} s |"
        )
    totals, finn = data["totals"], data["finn_totals"]
    lines += [
        f"| total | {_n(finn['LUT'])} / {totals['LUT']:,} | {totals['FF']:,} "
        f"| {totals['CARRY']} | {_n(finn['DSP'])} / {totals['DSP']} "
        f"| {_n(finn['BRAM_18K'])} / {totals['BRAM_18K'] + 2 * totals['BRAM_36K']} "
        f"| {_n(finn['URAM'])} / {totals['URAM']} | {data['cold_synthesis_s']:.1f} s "
        f"| {data['cached_synthesis_s']:.2f} s |",
        "",
        f"The whole command (a fresh process: FINN's import, the final model, Yosys' start): "
        f"{data['cold_process_s']:.1f} s the first time, {data['cached_process_s']:.1f} s "
        "with every layer cached. A layer's first-run seconds overlap with another's (two at "
        "a time on two cores).",
    ]
    return lines


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
