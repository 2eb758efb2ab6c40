"""The networks that build: the shipped example models with their blueprints, and the network
zoo (examples/zoo.py, Brevitas exports) with no blueprint at a 100,000 fps target; each
verified after every step (and, for the Brevitas exports, against the torch model's own
outputs), with FINN's own builder on the same model beside it. fps, latency (FINN's critical
path: layer cycles summed) and resources are FINN's estimates at 5 ns.

    .venv/bin/python -m benchmarks.networks [--no-finn] [MODEL ...]      (make networks)

Prints the Markdown table docs/build.md shows and writes benchmarks/results/networks.json.
Naming models (``zoo/upsample``, ``mlp_4bit``) measures those alone and replaces their rows in
the results, keeping the others (each row records its machine).
The zoo's full-size CNVs are exported first when missing (needs Brevitas: requirements/models.txt).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = REPO / "examples" / "models"
TARGET_FPS = 100_000  # the zoo's target, and FINN's builder's

# (model path relative to examples/models, blueprint or None for the default, what it is)
SHIPPED = [
    ("mlp_4bit", "mlp", "MLP 64-32-10, 4-bit"),
    ("transformer_block", "transformer", "LayerNorm, projection, Softmax"),
    ("cnv", "cnv", "CNV-like: 2 conv 3x3 + max pool, FC (Brevitas)"),
    ("conv_pad", "conv_pad", "2 padded conv 3x3 + max pool, FC, 2/4-bit (Brevitas)"),
    ("residual", "residual", "conv stem + residual block, global pool, FC (Brevitas)"),
]


def networks() -> list[tuple[str, str | None, str]]:
    from examples.zoo import ZOO

    zoo = [(f"zoo/{name}", None, text) for name, (_, text, _) in ZOO.items()]
    return [*SHIPPED, *zoo]


def ensure_exported(model: str) -> Path:
    path = MODELS / f"{model}.onnx"
    if not path.is_file() and model.startswith("zoo/"):
        from examples.zoo import export_network

        export_network(model.removeprefix("zoo/"))
    return path


def build_one(model: str, blueprint: str | None, folder: Path) -> dict:
    import brainsmith
    from brainsmith.builder import BuildError

    path = ensure_exported(model)
    archive = path.with_name(f"{path.stem}_expected.npz")  # one array per output
    expected = archive if archive.is_file() else path.with_name(f"{path.stem}_expected.npy")
    vectors = [path.with_name(f"{path.stem}_input.npy"), expected]
    torch_vectors = all(v.is_file() for v in vectors)
    began = time.perf_counter()
    row: dict = {
        "model": f"examples/models/{model}.onnx",
        "blueprint": f"blueprints/{blueprint}.yaml" if blueprint else "(default)",
    }
    try:
        result = brainsmith.build(
            str(path),
            str(REPO / "blueprints" / f"{blueprint}.yaml") if blueprint else None,
            str(folder / path.stem),
            verify="each",
            input_npy=str(vectors[0]) if torch_vectors else None,
            expected_npy=str(vectors[1]) if torch_vectors else None,
            options=None if blueprint else {"target_fps": TARGET_FPS},
        )
    except BuildError as exc:
        return {**row, "status": "failed", "error": f"{exc.step}: {exc.reason}"[:300]}
    checks = [s["verification"] for s in result.report["steps"] if s.get("verification")]
    return {
        **row,
        "status": result.status,
        "layers": len(result.report.get("layers", [])),
        "fps": result.performance.get("estimated_fps"),
        "latency_ns": result.performance.get("estimated_latency_ns"),
        "totals": result.totals,
        "steps_verified": len(checks),
        "max_error": max(c["max_error"] for c in checks),
        "max_error_vs_torch": max(c["user"]["max_error"] for c in checks)
        if torch_vectors
        else None,
        "seconds": round(time.perf_counter() - began, 2),
    }


def finn_reference(model: str, folder: Path) -> dict:
    from benchmarks.finn_reference import finn_builder_isolated

    path = MODELS / f"{model}.onnx"
    return finn_builder_isolated(path, folder / f"finn-{path.stem}", TARGET_FPS, timeout=900)


def _number(value) -> str:
    return f"{value:,.0f}" if isinstance(value, int | float) else "—"


def _latency(nanoseconds) -> str:
    return f"{nanoseconds / 1000:,.1f} µs" if isinstance(nanoseconds, int | float) else "—"


def table(rows: list[dict], descriptions: dict[str, str]) -> str:
    lines = [
        "| model | kind | blueprint | builds | fps | latency | LUT | DSP | max error (steps) "
        "| vs torch | FINN's builder: builds | fps | LUT | DSP |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        finn = row.get("finn") or {}
        finn_cells = (
            f"| {'yes' if finn.get('builds') else 'no'} | {_number(finn.get('fps'))} "
            f"| {_number(finn.get('LUT'))} | {_number(finn.get('DSP'))} |"
            if finn
            else "| — | — | — | — |"
        )
        name = f"`{Path(row['model']).name}`"
        blueprint = row["blueprint"].removeprefix("blueprints/")
        if row["status"] != "ok":
            lines.append(
                f"| {name} | {descriptions[row['model']]} | {blueprint} | **no** "
                f"| — | — | — | — | — | — {finn_cells}"
            )
            continue
        totals = row["totals"]
        torch = f"{row['max_error_vs_torch']:.1e}" if row["max_error_vs_torch"] is not None else "—"
        lines.append(
            f"| {name} | {descriptions[row['model']]} | {blueprint} | yes "
            f"| {_number(row['fps'])} | {_latency(row.get('latency_ns'))} "
            f"| {_number(totals['LUT'])} | {_number(totals['DSP'])} "
            f"| {row['max_error']:.1e} ({row['steps_verified']}) | {torch} {finn_cells}"
        )
    return "\n".join(lines)


def main() -> int:
    from benchmarks.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-finn", action="store_true", help="skip FINN's own builder")
    parser.add_argument("models", nargs="*", help="only these (zoo/NAME or a shipped model)")
    args = parser.parse_args()
    known = {model for model, _, _ in networks()}
    unknown = sorted(set(args.models) - known)
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    chosen = [n for n in networks() if not args.models or n[0] in args.models]
    out = HERE / "results" / "networks.json"
    kept = json.loads(out.read_text())["networks"] if args.models and out.is_file() else []
    measured = {}
    with tempfile.TemporaryDirectory(prefix="brainsmith-networks-") as tmp:
        for model, blueprint, _ in chosen:
            row = build_one(model, blueprint, Path(tmp))
            if not args.no_finn:
                row["finn"] = finn_reference(model, Path(tmp))
            row["machine"] = machine_info()
            measured[row["model"]] = row
            print(f"{model}: {row['status']}", file=sys.stderr)
    order = [f"examples/models/{m}.onnx" for m, _, _ in networks()]
    by_model = {row["model"]: row for row in kept} | measured
    rows = [by_model[m] for m in order if m in by_model]
    descriptions = {f"examples/models/{m}.onnx": text for m, _, text in networks()}
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"networks": rows, "machine": machine_info()}, indent=2) + "\n")
    print(table(rows, descriptions))
    print(f"\n-> {out.relative_to(REPO)}")
    return 0 if all(row["status"] == "ok" for row in measured.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
