"""Folding: brainsmith's search against FINN's SetFolding (default and relaxed limits) at one
target on one part, on the zoo's conv nets and the shipped examples.

Each model is built once with no blueprint up to its backends (``stop_after=5``); each
folding then runs on a copy of that model: brainsmith's search, FINN's SetFolding with its
defaults (``mvau_wwidth_max`` 36, two-pass relaxation) and with relaxed limits
(``mvau_wwidth_max`` 8191, FINN's widest). Reported per folding: the estimated fps (slowest
layer at the clock), FINN's LUT, BRAM_18K, URAM and DSP estimates (FF: FINN estimates none),
the utilisation of the part and the time the folding took.

    .venv/bin/python -m benchmarks.folding [--fps 100000] [--model zoo/cnv_w2a2 ...]

Writes benchmarks/results/folding.json (with machine info); ``benchmarks.run`` puts the
table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PART = "xcvc1902-vsva2197-2MP-e-S"
CLOCK_NS = 5.0
MODELS = ("zoo/cnv_w2a2", "zoo/cnv_w1a1", "zoo/resnet8", "zoo/mobilenet_block",
          "zoo/kws_conv1d", "cnv", "conv_pad", "residual")  # fmt: skip


def specialized(name: str, folder: str):
    """``name`` built with no blueprint up to its backends, as a ModelWrapper."""
    from qonnx.core.modelwrapper import ModelWrapper

    import brainsmith
    from benchmarks.verify_cost import model_path

    head = brainsmith.build(
        str(model_path(name)), None, os.path.join(folder, name.replace("/", "-")),
        stop_after=5, verify="none", progress=False,
    )  # fmt: skip
    return ModelWrapper(head.checkpoint.model)


def foldings(target: int):
    """(label, function folding a model in place) for each folding compared."""
    from finn.transformation.fpgadataflow.set_folding import SetFolding

    from brainsmith.frameworks.finn.folding.search import fold
    from brainsmith.frameworks.finn.parts import part_resources

    available = part_resources(PART)[0]

    def finn(wwidth: int):
        return lambda model: model.transform(SetFolding(target, mvau_wwidth_max=wwidth))

    def brainsmith(model):
        fold(model, target, PART, available)
        return model

    return [
        ("brainsmith", brainsmith),
        ("finn (default limits)", finn(36)),
        ("finn (mvau_wwidth_max 8191)", finn(8191)),
    ]


def measure(model, label: str, folding) -> dict:
    from qonnx.custom_op.registry import getCustomOp

    from brainsmith.frameworks.finn.folding.search import COSTED, estimate, layer_cycles
    from brainsmith.frameworks.finn.parts import part_resources

    began = time.perf_counter()
    folded = folding(copy.deepcopy(model))
    seconds = time.perf_counter() - began
    totals = dict.fromkeys(COSTED, 0.0)
    for node in folded.graph.node:
        if node.domain.startswith("finn.custom_op.fpgadataflow"):
            for key, value in estimate(getCustomOp(node), PART).items():
                totals[key] += value
    available = part_resources(PART)[0]
    slowest = max(layer_cycles(folded).values())
    cost = sum(totals[k] / available[k] for k in COSTED if available[k])
    return {
        "folding": label,
        "fps": round(1e9 / (slowest * CLOCK_NS)),
        **{key: round(value) for key, value in totals.items()},
        "utilisation": round(max(totals[k] / available[k] for k in COSTED if available[k]), 4),
        "cost": round(cost, 4),
        "seconds": round(seconds, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fps", type=int, default=100_000, help="the target frames per second")
    parser.add_argument("--model", action="append", help="a model under examples/models")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    target = int(1e9 / (CLOCK_NS * args.fps))
    rows = []
    with tempfile.TemporaryDirectory(prefix="brainsmith-folding-") as folder:
        for name in args.model or MODELS:
            model = specialized(name, folder)
            for label, folding in foldings(target):
                rows.append({"model": name, **measure(model, label, folding)})
            reached = rows[-2]["fps"]  # FINN's with its defaults: brainsmith's cost there
            if reached < args.fps:
                same = foldings(int(1e9 / (CLOCK_NS * reached)))[0][1]
                rows.append({"model": name, **measure(model, "brainsmith at FINN's fps", same)})
            for row in rows[-4:] if reached < args.fps else rows[-3:]:
                print(json.dumps(row), flush=True)
    out = HERE / "results" / "folding.json"
    out.parent.mkdir(exist_ok=True)
    data = {"target_fps": args.fps, "clock_ns": CLOCK_NS, "part": PART, "rows": rows,
            "machine": machine_info(), "load_average": list(os.getloadavg())}  # fmt: skip
    out.write_text(json.dumps(data, indent=2) + "\n")
    return 0


def table(data: dict) -> list[str]:
    """The RESULTS.md section of a folding.json."""
    lines = [
        "",
        "## Folding (brainsmith's search vs FINN's SetFolding)",
        "",
        f"Target {data['target_fps']:,} fps at {data['clock_ns']} ns on {data['part']}; FINN's "
        "estimates (FF: not estimated); each model built once to its backends, each folding on "
        "a copy (`python -m benchmarks.folding`). Cost: the estimates as fractions of the "
        "part, summed (what the search minimises). Where FINN's defaults miss the target, "
        "brainsmith also folds for the fps FINN reached, to compare costs at equal fps.",
        "",
        "| model | folding | fps | LUT | BRAM_18K | URAM | DSP | utilisation | cost | seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['model']} | {r['folding']} | {r['fps']:,} | {r['LUT']:,} | {r['BRAM_18K']:,} "
            f"| {r['URAM']:,} | {r['DSP']:,} | {r['utilisation']:.1%} | {r['cost']:.3f} "
            f"| {r['seconds']:.1f} |"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
