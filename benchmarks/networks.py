"""The networks that build: every shipped example model with its blueprint, verified after
each step (and, for the Brevitas exports, against the torch model's own outputs).

    .venv/bin/python -m benchmarks.networks        (make networks)

Prints the Markdown table docs/build.md shows and writes benchmarks/results/networks.json.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = REPO / "examples" / "models"

# (model, blueprint, what it is)
NETWORKS = [
    ("mlp_4bit", "mlp", "MLP 64-32-10, 4-bit"),
    ("transformer_block", "transformer", "LayerNorm, projection, Softmax"),
    ("cnv", "cnv", "CNV-like: 2 conv 3x3 + max pool, FC (Brevitas)"),
    ("conv_pad", "conv_pad", "2 padded conv 3x3 + max pool, FC, 2/4-bit (Brevitas)"),
    ("residual", "residual", "conv stem + residual block, global pool, FC (Brevitas)"),
]


def build_one(model: str, blueprint: str, folder: Path) -> dict:
    import brainsmith

    path = MODELS / f"{model}.onnx"
    vectors = [MODELS / f"{model}_{kind}.npy" for kind in ("input", "expected")]
    torch_vectors = all(v.is_file() for v in vectors)
    began = time.perf_counter()
    result = brainsmith.build(
        str(path),
        str(REPO / "blueprints" / f"{blueprint}.yaml"),
        str(folder / model),
        verify="each",
        input_npy=str(vectors[0]) if torch_vectors else None,
        expected_npy=str(vectors[1]) if torch_vectors else None,
    )
    seconds = time.perf_counter() - began
    checks = [s["verification"] for s in result.report["steps"] if s.get("verification")]
    kernels = [entry["kernel"] for entry in result.report["blueprint"]["hw_compiler"]["kernels"]]
    return {
        "model": f"examples/models/{model}.onnx",
        "blueprint": f"blueprints/{blueprint}.yaml",
        "status": result.status,
        "kernels": kernels,
        "layers": len(result.report.get("layers", [])),
        "fps": result.performance.get("estimated_fps"),
        "totals": result.totals,
        "steps_verified": len(checks),
        "max_error": max(c["max_error"] for c in checks),
        "max_error_vs_torch": max(c["user"]["max_error"] for c in checks)
        if torch_vectors
        else None,
        "seconds": round(seconds, 2),
    }


def table(rows: list[dict], descriptions: dict[str, str]) -> str:
    lines = [
        "| model | kind | kernels | fps | LUT | DSP | BRAM_18K | max error (steps) | vs torch |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        kernels = ", ".join(k.rpartition(":")[2] for k in row["kernels"])
        torch = f"{row['max_error_vs_torch']:.1e}" if row["max_error_vs_torch"] is not None else "—"
        totals = row["totals"]
        lines.append(
            f"| `{Path(row['model']).name}` | {descriptions[row['model']]} | {kernels} "
            f"| {row['fps']:,.0f} | {totals['LUT']:,} | {totals['DSP']:,} "
            f"| {totals['BRAM_18K']:,} | {row['max_error']:.1e} ({row['steps_verified']}) "
            f"| {torch} |"
        )
    return "\n".join(lines)


def main() -> int:
    from benchmarks.machine import machine_info

    rows = []
    with tempfile.TemporaryDirectory(prefix="brainsmith-networks-") as tmp:
        for model, blueprint, _ in NETWORKS:
            rows.append(build_one(model, blueprint, Path(tmp)))
    descriptions = {f"examples/models/{m}.onnx": text for m, _, text in NETWORKS}
    out = HERE / "results" / "networks.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"networks": rows, "machine": machine_info()}, indent=2) + "\n")
    print(table(rows, descriptions))
    print(f"\n-> {out.relative_to(REPO)}")
    return 0 if all(row["status"] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
