"""How long RTL simulation takes: ``brainsmith verify-rtl`` on shipped examples, first with an
empty compile cache (every layer compiled) and then again (every layer cached).

    .venv/bin/python -m benchmarks.rtlsim        (part of make bench)

Each example is built once (Python verification only; the conv nets with ``prefer: rtl``, so
every layer is RTL and the whole accelerator is simulated too), then ``verify-rtl`` runs as a
fresh process with a private cache. Writes benchmarks/results/rtlsim.json and prints a table.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLES = [  # model, blueprint, prefer
    ("mlp_4bit", "mlp", None),
    ("cnv", "cnv", "rtl"),
    ("conv_pad", "conv_pad", "rtl"),
    ("residual", "residual", "rtl"),
]


def verify_rtl(folder: Path, cache: Path) -> tuple[float, dict]:
    from benchmarks.machine import brainsmith_json

    return brainsmith_json("verify-rtl", folder, cache)


def measure(model: str, blueprint: str, prefer: str | None, tmp: Path) -> dict:
    import brainsmith

    folder = tmp / model
    brainsmith.build(
        str(REPO / "examples" / "models" / f"{model}.onnx"),
        str(REPO / "blueprints" / f"{blueprint}.yaml"),
        str(folder),
        prefer=prefer,
    )
    cache = tmp / f"cache-{model}"
    cache.mkdir(mode=0o700)
    cold_seconds, cold = verify_rtl(folder, cache)
    warm_seconds, warm = verify_rtl(folder, cache)
    simulated = [layer for layer in cold["layers"] if layer["status"] == "match"]
    return {
        "model": f"examples/models/{model}.onnx",
        "prefer": prefer or "auto",
        "summary": cold["summary"],
        "stitched": {k: v for k, v in (cold.get("stitched") or {}).items() if k != "fifos"},
        "frames": simulated[0]["frames"] if simulated else 0,
        "cold_process_s": round(cold_seconds, 2),
        "warm_process_s": round(warm_seconds, 2),
        "compile_s": round(sum(layer["compile_seconds"] for layer in simulated), 2),
        "compile_s_per_layer_max": max(layer["compile_seconds"] for layer in simulated),
        "simulate_s": round(
            sum(
                layer["simulate_seconds"] for layer in warm["layers"] if "simulate_seconds" in layer
            ),
            2,
        ),
        "layers": cold["layers"],
    }


def main() -> int:
    from benchmarks.machine import machine_info

    rows = []
    with tempfile.TemporaryDirectory(prefix="brainsmith-rtlsim-") as tmp:
        for model, blueprint, prefer in EXAMPLES:
            rows.append(measure(model, blueprint, prefer, Path(tmp)))
    out = HERE / "results" / "rtlsim.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "rtlsim",
                "examples": rows,
                "machine": machine_info(),
                "load_average": list(os.getloadavg()),
            },
            indent=2,
        )
        + "\n"
    )
    print("| model | layers | first run (compile) | second run (cached) | simulation |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| `{Path(row['model']).name}` | {row['summary']} | {row['cold_process_s']:.0f} s "
            f"({row['compile_s']:.0f} s compiling) | {row['warm_process_s']:.1f} s "
            f"| {row['simulate_s']:.1f} s ({row['frames']} frames per layer) |"
        )
    print(f"\n-> {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
