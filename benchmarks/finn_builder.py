"""Build time of a convolutional network: ``brainsmith build`` vs FINN's own runner
(``build_dataflow_cfg``) on the same steps, shipped CNV example (examples/models/cnv.onnx,
blueprints/cnv.yaml).

FINN's variant runs its estimate flow plus transpose decomposition and code generation
(``step_qonnx_to_finn`` ... ``step_hw_codegen``, 13 steps) with standalone thresholds and
the blueprint's part, clock and target; brainsmith runs the blueprint's standard flow (the
same FINN transforms limited to the blueprint's kernels, plus QONNX clean-up, reports and
charts). Verification is off for both. Each run is a fresh process; the variants alternate,
and both leave with ``os._exit`` (see benchmarks/build_overhead.py for why).

    .venv/bin/python -m benchmarks.finn_builder [--runs 5]

Prints the medians and writes benchmarks/results/finn_builder.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.build_overhead import child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODEL = REPO / "examples" / "models" / "cnv.onnx"
BLUEPRINT = REPO / "blueprints" / "cnv.yaml"
TARGET = 1.00  # wall and CPU
FINN_STEPS = [
    "step_qonnx_to_finn",
    "step_tidy_up",
    "step_streamline",
    "step_convert_to_hw",
    "step_minimize_bit_width_initial",
    "step_create_dataflow_partition",
    "step_specialize_layers",
    "step_target_fps_parallelization",
    "step_apply_folding_config",
    "step_minimize_bit_width",
    "step_transpose_decomposition",
    "step_generate_estimate_reports",
    "step_hw_codegen",
]

BRAINSMITH = """
import time
began = time.perf_counter()
import brainsmith
result = brainsmith.build({model!r}, {blueprint!r}, {out!r}, verify="none")
assert result.status == "ok"
print(time.perf_counter() - began, flush=True)
import os; os._exit(0)
"""

FINN = """
import time
began = time.perf_counter()
from benchmarks.finn_builder import finn_build
finn_build({model!r}, {out!r})
print(time.perf_counter() - began, flush=True)
import os; os._exit(0)
"""


def finn_build(model_path: str, out: str) -> None:
    """FINN's runner on the CNV with the blueprint's part, clock and target fps."""
    from brainsmith.frameworks.finn.env import prepare_finn, run_finn_builder

    prepare_finn()
    from finn.builder.build_dataflow_config import DataflowBuildConfig

    cfg = DataflowBuildConfig(
        output_dir=out,
        fpga_part="xcvc1902-vsva2197-2MP-e-S",
        synth_clk_period_ns=5.0,
        target_fps=100000,
        standalone_thresholds=True,
        generate_outputs=["estimate_reports"],
        steps=FINN_STEPS,
    )
    if run_finn_builder(model_path, cfg) != 0:
        raise SystemExit("FINN's build failed")


def measure(runs: int) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    samples: dict[str, list[tuple[float, float, float]]] = {"brainsmith": [], "finn": []}
    with tempfile.TemporaryDirectory(prefix="brainsmith-bench-") as tmp:
        for index in range(runs + 1):  # run 0 warms the page cache and is discarded
            for variant, template in (("finn", FINN), ("brainsmith", BRAINSMITH)):
                out = os.path.join(tmp, f"{variant}-{index}")
                code = template.format(model=str(MODEL), blueprint=str(BLUEPRINT), out=out)
                result = child(code, env)
                if index:
                    samples[variant].append(result)
                shutil.rmtree(out, ignore_errors=True)
    medians = {
        variant: {
            "process_wall_s": round(statistics.median(v[0] for v in values), 3),
            "in_process_s": round(statistics.median(v[1] for v in values), 3),
            "cpu_s": round(statistics.median(v[2] for v in values), 3),
            "runs_wall_s": [round(v[0], 3) for v in values],
        }
        for variant, values in samples.items()
    }
    ratio = medians["brainsmith"]["process_wall_s"] / medians["finn"]["process_wall_s"]
    return {
        "benchmark": "finn_builder",
        "model": str(MODEL.relative_to(REPO)),
        "blueprint": str(BLUEPRINT.relative_to(REPO)),
        "finn_steps": FINN_STEPS,
        "runs": runs,
        "verification": "off for both",
        "brainsmith": medians["brainsmith"],
        "finn_build_dataflow_cfg": medians["finn"],
        "ratio_wall": round(ratio, 4),
        "ratio_in_process": round(
            medians["brainsmith"]["in_process_s"] / medians["finn"]["in_process_s"], 4
        ),
        "ratio_cpu": round(medians["brainsmith"]["cpu_s"] / medians["finn"]["cpu_s"], 4),
        "target_ratio": TARGET,
        "meets_target": ratio <= TARGET
        and medians["brainsmith"]["cpu_s"] <= TARGET * medians["finn"]["cpu_s"],
        "load_average": list(os.getloadavg()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per variant (>= 3)")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    result = {**measure(max(3, args.runs)), "machine": machine_info()}
    out = HERE / "results" / "finn_builder.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    b, f = result["brainsmith"], result["finn_build_dataflow_cfg"]
    for label, m in (("brainsmith build     ", b), ("FINN build_dataflow  ", f)):
        print(f"{label} {m['process_wall_s']:.3f} s wall per process, {m['cpu_s']:.3f} s CPU")
    verdict = "meets" if result["meets_target"] else "misses"
    print(
        f"ratio {result['ratio_wall']:.3f}x wall, {result['ratio_cpu']:.3f}x CPU ({verdict} "
        f"the {TARGET:.2f}x target for both)  -> {out.relative_to(REPO)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
