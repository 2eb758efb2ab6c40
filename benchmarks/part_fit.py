"""The part-aware folding measured by synthesis: a wide all-RTL MLP (FINN's TFC with three
hidden layers of 1,024, 2-bit weights and activations, exported with Brevitas) folded for a
ZCU104 (``xczu7ev``) at 100,000 fps, three ways, each built with ``build.synth`` (every layer
through Yosys, out of context):

- ``search``: brainsmith's folding, which spreads the weight memories over LUT-RAM and block
  RAM to lower the most used resource of the part;
- ``lutram``: the same PE and SIMD with every weight memory in LUT-RAM;
- ``bram``: the same PE and SIMD with every weight memory in block RAM.

Per design: the estimated and the measured LUT, BRAM_18K (a RAMB36 counts as two), URAM and
DSP, each as a share of the part, and the most used share (what the search lowers). The three
builds share one synthesis cache, so a layer the same in two designs is synthesised once.

    .venv/bin/python -m benchmarks.part_fit [--hidden 1024] [--target-fps 100000]
    (needs brevitas; about an hour on 2 cores, most of it Yosys)

Writes benchmarks/results/part_fit.json; ``benchmarks.run`` puts the table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xczu7ev-ffvc1156-2-e"
RESOURCES = ("LUT", "BRAM_18K", "URAM", "DSP")
STYLES = {"lutram": "distributed", "bram": "block"}


def export(folder: Path, hidden: int) -> Path:
    """The TFC with three hidden layers of ``hidden`` (seed 7), exported in a subprocess."""
    code = (
        "import sys; from pathlib import Path\nimport examples.zoo as zoo\n"
        "from examples.zoo import export_network\n"
        "export_network('wide_mlp', Path(sys.argv[1]), seed=7, make=lambda: zoo.tfc("
        f"2, 2, in_bits=2, hidden=({hidden}, {hidden}, {hidden})))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(folder)], cwd=REPO, check=True,
                   capture_output=True, timeout=900)  # fmt: skip
    return folder / "wide_mlp.onnx"


def restyled(config: Path, style: str, out: Path) -> Path:
    """``config`` (a FINN folding configuration) with every weight memory in ``style``."""
    folding = json.loads(config.read_text())
    for name, attributes in folding.items():
        if name.startswith("MVAU"):
            attributes["ram_style"] = style
    out.write_text(json.dumps(folding, indent=1))
    return out


def design(name: str, model: Path, out: Path, options: dict) -> dict:
    """Build ``model`` all-RTL with synthesis; the estimated and measured totals."""
    import brainsmith
    from benchmarks.synth_networks import measured_count

    began = time.perf_counter()
    load_before = list(os.getloadavg())
    result = brainsmith.build(str(model), None, str(out), verify="none", prefer="rtl",
                              options={**options, "synth": True})  # fmt: skip
    report = result.report
    section = report["synthesis"]
    measured = {key: measured_count(section["totals"], key) for key in RESOURCES}
    estimated = {key: round(report["totals"].get(key) or 0) for key in RESOURCES}
    available = report["utilisation"]["available"]
    return {
        "design": name,
        "styles": {
            layer["name"]: layer.get("ram_style")
            for layer in report["layers"]
            if layer["op_type"] == "MVAU"
        },
        "estimated_fps": report["performance"]["estimated_fps"],
        "estimated": estimated,
        "measured": measured,
        "estimated_share": share(estimated, available),
        "measured_share": share(measured, available),
        "complete": section["complete"],
        "not_synthesised": [x["name"] for x in section["layers"] if x["status"] != "synthesised"],
        "synthesis_s": section["seconds"],
        "cached_layers": sum(1 for x in section["layers"] if x.get("cached")),
        "build_s": round(time.perf_counter() - began, 1),
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
    }


def share(counts: dict[str, float], available: dict[str, float]) -> dict[str, float]:
    """Each resource as a fraction of the part (4 decimals), and the largest as ``peak``."""
    shares = {k: round(counts[k] / available[k], 4) for k in RESOURCES if available.get(k)}
    return {**shares, "peak": max(shares.values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--target-fps", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, help="synthesis cache to use and keep (default: "
                        "a new one, removed afterwards)")  # fmt: skip
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    out = HERE / "results" / "part_fit.json"
    options = {"fpga_part": PART, "target_fps": args.target_fps, "size_fifos": False}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="brainsmith-part-fit-") as tmp:
        folder = Path(tmp)
        cache = args.cache or folder / "cache"
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["BRAINSMITH_CACHE_DIR"] = str(cache)
        model = export(folder, args.hidden)
        rows.append(design("search", model, folder / "search", options))
        print(json.dumps(rows[-1]), flush=True)
        searched = folder / "search" / "finn" / "auto_folding_config.json"
        for name, style in STYLES.items():
            config = restyled(searched, style, folder / f"{name}.json")
            rows.append(
                design(name, model, folder / name, {**options, "folding_config": str(config)})
            )
            print(json.dumps(rows[-1]), flush=True)
    data = {"benchmark": "part_fit", "part": PART, "hidden": args.hidden,
            "target_fps": args.target_fps, "designs": rows, "machine": machine_info()}  # fmt: skip
    out.write_text(json.dumps(data, indent=2) + "\n")
    print("\n".join(section(data)))
    print(f"-> {out.relative_to(REPO)}")
    return 0


def section(data: dict) -> list[str]:
    """RESULTS.md's section: per design its estimated and measured shares of the part."""
    lines = [
        "",
        "## The part-aware folding, measured by synthesis",
        "",
        f"`python -m benchmarks.part_fit` (needs Brevitas): FINN's TFC with three hidden layers "
        f"of {data['hidden']:,}, 2-bit weights and activations, all RTL, folded for "
        f"`{data['part']}` at {data['target_fps']:,} fps by brainsmith's search (`search`), and "
        "with the same PE and SIMD but every weight memory in LUT-RAM (`lutram`) or in block RAM "
        "(`bram`); every layer synthesised by Yosys out of context (no place and route). The "
        "search's objective is the most used share of the part (`peak`); estimates are FINN's and "
        "brainsmith's cost models, measured counts Yosys' (a RAMB36 counts as two BRAM_18K). "
        "The designs share a synthesis cache: a layer synthesised for an earlier design is "
        "looked up (its count in brackets after the seconds).",
        "",
        "| design | weight memories | fps (estimate) | LUT est. / measured | BRAM_18K est. / "
        "measured | DSP est. / measured | peak share est. / measured | synthesis s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["designs"]:
        est, got = row["estimated_share"], row["measured_share"]
        styles = ", ".join(f"{name.removeprefix('MVAU_rtl_')}: {style}"
                           for name, style in row["styles"].items())  # fmt: skip
        cells = [
            f"{row['estimated'][k]:,} ({est.get(k, 0):.1%}) / {row['measured'][k]:,} "
            f"({got.get(k, 0):.1%})"
            for k in ("LUT", "BRAM_18K", "DSP")
        ]
        lines.append(
            f"| {row['design']} | {styles} | {row['estimated_fps']:,.0f} | {' | '.join(cells)} | "
            f"{est['peak']:.1%} / {got['peak']:.1%} | {row['synthesis_s']:,.0f} "
            f"({row['cached_layers']} cached) |"
        )
    machine = data["machine"]
    lines += ["", f"{machine.get('cpu', '')}; load average before each build: " + "; ".join(
        f"{row['design']} {', '.join(f'{x:.2f}' for x in row['load_average_before'])}"
        for row in data["designs"]
    ) + "."]  # fmt: skip
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
