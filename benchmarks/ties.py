"""Rounding ties of the conversion to FINN's thresholds, before and after brainsmith's
thresholds round half to even: each network's cleaned QONNX model converted by FINN's
``ConvertQONNXtoFINN`` alone and by brainsmith's ``qonnx_to_finn`` (the same conversion,
then ``brainsmith.frameworks.finn.passes.rounding``), each checked against the reference on the
16 seeded generated inputs a build verifies with: ties, samples with ties, errors, the
largest difference (in output steps where the output is quantized) and the worst tie.

    .venv/bin/python -m benchmarks.ties [--model zoo/resnet8 ...]

Writes benchmarks/results/ties.json (with machine info); ``benchmarks.run`` puts the table
in RESULTS.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = (
    "residual_ties", "bnn_ties", "zoo/tfc_w1a1", "zoo/tfc_w1a1_bnn_pynq", "zoo/kws_conv1d",
    "zoo/residual_identity", "zoo/mobilenet_block", "zoo/resnet8", "zoo/cnv_w2a2",
    "zoo/encoder_mlp", "zoo/encoder_layer", "zoo/bert_tiny",
)  # fmt: skip
SAMPLES = 16
BITS = 8  # build.max_multithreshold_bit_width's default


def measured(name: str) -> dict:
    """The two conversions of ``name``, each checked against the cleaned reference."""
    from finn.transformation.qonnx.convert_qonnx_to_finn import ConvertQONNXtoFINN
    from finn.transformation.qonnx.quant_act_to_multithreshold import (
        default_filter_function_generator,
    )
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.cleanup import cleanup_model

    from benchmarks.verify_cost import model_path
    from brainsmith.frameworks.finn.recipe.steps import qonnx_to_finn
    from brainsmith.verification.verifier import Verifier

    reference = cleanup_model(ModelWrapper(str(model_path(name))))
    verifier = Verifier(reference, SAMPLES)
    finn = copy.deepcopy(reference).transform(
        ConvertQONNXtoFINN(filter_function=default_filter_function_generator(BITS))
    )
    ours = qonnx_to_finn(
        copy.deepcopy(reference), SimpleNamespace(max_multithreshold_bit_width=BITS)
    )
    row: dict = {"model": name, "load_average_before": list(os.getloadavg())}
    for label, model in (("finn", finn), ("brainsmith", ours)):
        began = time.perf_counter()
        (check,) = verifier.check(model)
        row[label] = {
            "ties": check.ties, "tie_samples": check.tie_samples, "errors": check.errors,
            "max_error": check.max_error, "max_steps": check.max_steps,
            "worst_tie": check.worst_tie, "check_s": round(time.perf_counter() - began, 2),
        }  # fmt: skip
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="a model under examples/models")
    args = parser.parse_args()
    from benchmarks.machine import machine_info
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    warnings.filterwarnings("ignore", category=UserWarning)  # QONNX datatype annotations
    out = HERE / "results" / "ties.json"
    models = args.model or MODELS
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    rows = [r for r in kept if r["model"] not in models]
    for name in models:
        rows.append(measured(name))
        print(json.dumps(rows[-1]), flush=True)
    order = {name: i for i, name in enumerate(MODELS)}
    rows.sort(key=lambda r: order.get(r["model"], len(order)))
    data = {"samples": SAMPLES, "rows": rows, "machine": machine_info()}
    out.write_text(json.dumps(data, indent=2) + "\n")
    print("\n".join(table(data)))
    print(f"-> {out.relative_to(REPO)}")
    return 0


def table(data: dict) -> list[str]:
    """The RESULTS.md section of a ties.json."""
    lines = [
        "",
        "## Rounding ties of the conversion (FINN's thresholds vs brainsmith's)",
        "",
        "Each network's cleaned QONNX model converted by FINN's `ConvertQONNXtoFINN` alone "
        "and by brainsmith's `qonnx_to_finn` (thresholds in place of half-to-even quantizers "
        "round half to even), each checked against the reference on the "
        f"{data['samples']} seeded generated inputs a build verifies with "
        "(`python -m benchmarks.ties`). Ties: reference quantizer elements on a rounding "
        "boundary the converted model rounds the other way (samples with ties); errors: "
        "differences no tie explains; the largest difference in output steps where the "
        "output is quantized, else absolute.",
        "",
        "| model | FINN: ties (samples) | errors | largest difference | brainsmith: ties "
        "(samples) | errors | largest difference | worst tie left |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in data["rows"]:
        a, b = r["finn"], r["brainsmith"]
        lines.append(
            f"| {r['model']} | {a['ties']} ({a['tie_samples']}) | {a['errors']} | {_size(a)} "
            f"| {b['ties']} ({b['tie_samples']}) | {b['errors']} | {_size(b)} "
            f"| {b['worst_tie'] or '-'} |"
        )
    return lines


def _size(check: dict) -> str:
    if check["max_steps"] is not None:
        return f"{check['max_steps']:.3g} steps"
    return f"{check['max_error']:.3g}"


if __name__ == "__main__":
    sys.exit(main())
