"""How far ECP5's models fall short of what nextpnr places on a Gowin part: for each Gowin
board build given (made with ``--bitstream``), its layers estimated in ECP5's models and
nextpnr-himbaechel-gowin's count of the same resources in its bitstream; their ratio, the
largest of the builds per resource, is what the Gowin models scale ECP5's by
(``brainsmith/frameworks/finn/rtl_costs_gowin.json``). Yosys maps a Gowin design to about as
many LUTs as an ECP5 one, but nextpnr places a LUT in front of each flip-flop Yosys left
without one, and counts the 16x4 RAMs and wide multiplexers in LUTs: none of that is in
ECP5's models.

    brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml --board tang-primer-20k --bitstream -o gw150
    brainsmith build examples/models/mlp_4bit.onnx blueprints/mlp.yaml --board tang-primer-20k --bitstream --clock-ns 20 -o gw50
    .venv/bin/python -m benchmarks.gowin_scale gw150 gw50

Writes rtl_costs_gowin.json, benchmarks/results/gowin_scale.json and its section of
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from benchmarks.first_hour import publish

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT = HERE / "results" / "gowin_scale.json"
MODELS = REPO / "brainsmith" / "frameworks" / "finn" / "rtl_costs_gowin.json"
HEADING = "## Gowin's cost models: ECP5's, scaled to what nextpnr places (python -m benchmarks.gowin_scale)"
BASE = "ecp5"
# the resources scaled: Gowin's name -> the models' (its multipliers and block RAMs are
# counted one for one, as ECP5's)
SCALED = {"LUT4": "LUT4", "FF": "FF"}


def measured(folder: Path) -> dict:
    """One build's estimate in ECP5's models and nextpnr's counts of the same resources."""
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.env import prepare_finn
    from brainsmith.frameworks.finn.estimation.estimates import family_estimates

    prepare_finn()
    report = json.loads((folder / "report.json").read_text())
    model = ModelWrapper(str(folder / "final.onnx"))
    layers = [node.name for node in model.graph.node]
    estimates = family_estimates(model, layers, BASE)
    totals = {
        key: sum(found[key] for found in estimates.values() if found) for key in SCALED.values()
    }
    placed = report["family_resources"]["placed"]
    return {
        "folder": folder.name,
        "board": report["bitstream"]["board"],
        "clock_mhz": report["bitstream"]["clock_mhz"],
        "estimated": totals,
        "placed": {name: placed[name]["used"] for name in SCALED},
    }


def main() -> int:
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", type=Path, help="Gowin board build folders")
    args = parser.parse_args()
    builds = [measured(folder) for folder in args.builds]
    scales = {
        name: math.ceil(100 * max(b["placed"][name] / b["estimated"][cost] for b in builds)) / 100
        for name, cost in SCALED.items()
    }
    MODELS.write_text(json.dumps({
        "family": "gowin", "base": BASE, "scales": scales,
        "source": "benchmarks/gowin_scale.py: nextpnr-himbaechel-gowin's counts of Gowin board "
                  "builds over ECP5's models' estimates, the largest ratio, rounded up",
    }, indent=2) + "\n")  # fmt: skip
    data = {"benchmark": "gowin_scale", "builds": builds, "scales": scales,
            "measured": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info()}  # fmt: skip
    lines = [
        HEADING,
        "",
        f"Gowin board builds estimated in ECP5's models and placed by nextpnr ({data['measured']});"
        " the largest ratio of each resource, rounded up, scales ECP5's models for Gowin parts "
        "(`rtl_costs_gowin.json`):",
        "",
        "| build | board | clock | "
        + " | ".join(f"{n}: estimated, placed, ratio" for n in SCALED)
        + " |",
        "|---|---|---:|" + "---:|" * len(SCALED),
    ]
    for b in builds:
        cells = [f"{b['estimated'][c]:,.0f}, {b['placed'][n]:,}, {b['placed'][n] / b['estimated'][c]:.2f}"
                 for n, c in SCALED.items()]  # fmt: skip
        lines.append(
            f"| {b['folder']} | `{b['board']}` | {b['clock_mhz']:.1f} MHz | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "Scales: " + ", ".join(f"{n} x {s:.2f}" for n, s in scales.items()) + "."]
    return publish(data, lines, RESULT, HEADING)


if __name__ == "__main__":
    sys.exit(main())
