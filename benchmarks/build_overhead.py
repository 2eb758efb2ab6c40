"""Build overhead: ``brainsmith.build`` vs the same FINN transforms and steps called
directly, in the same order, on the shipped MLP with blueprints/mlp.yaml.

Each run is a fresh process (Python start, imports, build, exit); the two variants
alternate so that machine load drifts hit both alike. Verification is off for both.
The target (<= 1.03x) is on the median process wall time; CPU time (including helper
processes such as brainsmith's chart drawer) is reported beside it. Both variants end with
``os._exit`` once their work is done: tearing down an interpreter that loaded FINN takes
1-2 s of the same work for both, and its noise would swamp the difference measured here
(``brainsmith build`` itself skips it the same way, see ``frameworks.finn.env.fast_exit``).
The direct variant writes what FINN's own runner writes (intermediate models, estimate
reports, generated code); brainsmith adds its reports (report.json, report.html).

    .venv/bin/python -m benchmarks.build_overhead [--runs 5]

Prints the medians and writes benchmarks/results/build_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODEL = REPO / "examples" / "models" / "mlp_4bit.onnx"
BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
TARGET = 1.03

BRAINSMITH = """
import time
began = time.perf_counter()
import brainsmith
result = brainsmith.build({model!r}, {blueprint!r}, {out!r}, verify="none",
                          options={{"size_fifos": False}})  # FINN's flow sizes no FIFOs either
assert result.status == "ok"
print(time.perf_counter() - began, flush=True)
import os; os._exit(0)  # both variants skip the interpreter teardown (see the docstring)
"""

DIRECT = """
import time
began = time.perf_counter()
from benchmarks.build_overhead import direct_flow
direct_flow({model!r}, {out!r})
print(time.perf_counter() - began, flush=True)
import os; os._exit(0)
"""


def direct_flow(model_path: str, out: str) -> None:
    """blueprints/mlp.yaml's flow written out with FINN's own functions (and the one
    brainsmith transform the blueprint names), saving each step's model like FINN does."""
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()  # FINN_BUILD_DIR and the XSI stand-ins any FINN library user needs
    import finn.builder.build_dataflow_steps as finn_steps
    from finn.builder.build_dataflow_config import DataflowBuildConfig, DataflowOutputType
    from finn.transformation.fpgadataflow.convert_to_hw.quantized_matrix_vector_activation import (
        InferQuantizedMatrixVectorActivation,
    )
    from finn.transformation.fpgadataflow.convert_to_hw.thresholding import (
        InferThresholdingLayer,
    )
    from finn.transformation.fpgadataflow.create_dataflow_partition import (
        CreateDataflowPartition,
    )
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.custom_op.registry import getCustomOp
    from qonnx.transformation.general import GiveUniqueNodeNames
    from qonnx.transformation.infer_data_layouts import InferDataLayouts
    from qonnx.transformation.infer_datatypes import InferDataTypes
    from qonnx.transformation.infer_shapes import InferShapes
    from qonnx.util.cleanup import cleanup_model

    from brainsmith.transforms.remove_inference_noops import RemoveInferenceNoOps

    cfg = DataflowBuildConfig(
        output_dir=os.path.join(out, "finn"),
        fpga_part="xcvc1902-vsva2197-2MP-e-S",
        synth_clk_period_ns=5.0,
        target_fps=1000000,
        generate_outputs=[DataflowOutputType.ESTIMATE_REPORTS],
    )
    models = os.path.join(out, "intermediate_models")
    os.makedirs(models)

    def hardware(model):
        for transform in (
            InferThresholdingLayer(),
            InferQuantizedMatrixVectorActivation(),
            GiveUniqueNodeNames(),
            InferDataLayouts(),
            InferDataTypes(),
            InferShapes(),
        ):
            model = model.transform(transform)
        model = finn_steps.step_minimize_bit_width_initial(model, cfg)
        folder = str(cfg.get_intermediate_models_directory() / "supported_op_partitions")
        parent = model.transform(CreateDataflowPartition(partition_model_dir=folder))
        parent.save(os.path.join(models, "dataflow_parent.onnx"))
        sdp = parent.get_nodes_by_op_type("StreamingDataflowPartition")[0]
        return ModelWrapper(getCustomOp(sdp).get_nodeattr("model"))

    def specialize(model):
        for node in model.graph.node:
            getCustomOp(node).set_nodeattr("preferred_impl_style", "rtl")
        for transform in (
            SpecializeLayers(cfg._resolve_fpga_part()),
            GiveUniqueNodeNames(),
            InferShapes(),
            InferDataTypes(),
        ):
            model = model.transform(transform)
        return model

    def folding(model):
        model = finn_steps.step_target_fps_parallelization(model, cfg)
        model = finn_steps.step_apply_folding_config(model, cfg)
        return finn_steps.step_minimize_bit_width(model, cfg)

    flow = [
        ("cleanup", cleanup_model),
        (
            "qonnx_to_finn",
            lambda m: finn_steps.step_tidy_up(finn_steps.step_qonnx_to_finn(m, cfg), cfg),
        ),
        (
            "streamline",
            lambda m: finn_steps.step_streamline(m.transform(RemoveInferenceNoOps()), cfg),
        ),
        ("hardware_inference", hardware),
        ("specialize", specialize),
        ("folding", folding),
        ("estimates", lambda m: finn_steps.step_generate_estimate_reports(m, cfg)),
        ("codegen", lambda m: finn_steps.step_hw_codegen(m, cfg)),
        ("step_hw_ipgen", lambda m: finn_steps.step_hw_ipgen(m, cfg)),
    ]
    model = ModelWrapper(model_path)
    for index, (name, run) in enumerate(flow, 1):
        model = run(model)
        model.save(os.path.join(models, f"{index:02d}_{name}.onnx"))
    model.save(os.path.join(out, "final.onnx"))


def child(code: str, env: dict) -> tuple[float, float, float]:
    """(process wall s, in-process flow s, CPU s incl. its helpers) of ``python -c code``."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)  # the child's usage, with its reaped helpers
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"benchmark child failed:\n{err[-3000:]}")
    return wall, float(out.strip().splitlines()[-1]), usage.ru_utime + usage.ru_stime


def measure(runs: int) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    samples: dict[str, list[tuple[float, float, float]]] = {"brainsmith": [], "direct": []}
    with tempfile.TemporaryDirectory(prefix="brainsmith-bench-") as tmp:
        for index in range(runs + 1):  # run 0 warms the page cache and is discarded
            for variant, template in (("direct", DIRECT), ("brainsmith", BRAINSMITH)):
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
            "min_wall_s": round(min(v[0] for v in values), 3),
            "runs_wall_s": [round(v[0], 3) for v in values],
        }
        for variant, values in samples.items()
    }
    ratio = medians["brainsmith"]["process_wall_s"] / medians["direct"]["process_wall_s"]
    return {
        "benchmark": "build_overhead",
        "model": str(MODEL.relative_to(REPO)),
        "blueprint": str(BLUEPRINT.relative_to(REPO)),
        "runs": runs,
        "verification": "off for both",
        "brainsmith": medians["brainsmith"],
        "direct_finn": medians["direct"],
        "ratio_wall": round(ratio, 4),
        "ratio_in_process": round(
            medians["brainsmith"]["in_process_s"] / medians["direct"]["in_process_s"], 4
        ),
        "ratio_min_wall": round(
            medians["brainsmith"]["min_wall_s"] / medians["direct"]["min_wall_s"], 4
        ),
        "ratio_cpu": round(medians["brainsmith"]["cpu_s"] / medians["direct"]["cpu_s"], 4),
        "target_ratio": TARGET,
        "meets_target": ratio <= TARGET,
        "load_average": list(os.getloadavg()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per variant (>= 3)")
    args = parser.parse_args()
    from benchmarks.machine import machine_info

    result = {**measure(max(3, args.runs)), "machine": machine_info()}
    out = HERE / "results" / "build_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    b, d = result["brainsmith"], result["direct_finn"]
    for label, m in (("brainsmith.build ", b), ("direct FINN calls", d)):
        print(
            f"{label}  {m['process_wall_s']:.3f} s wall per process, "
            f"{m['in_process_s']:.3f} s in the build call, {m['cpu_s']:.3f} s CPU"
        )
    verdict = "meets" if result["meets_target"] else "misses"
    print(
        f"ratio {result['ratio_wall']:.3f}x wall ({verdict} the {TARGET}x target); "
        f"{result['ratio_min_wall']:.3f}x best run; {result['ratio_in_process']:.3f}x in the "
        f"build call; {result['ratio_cpu']:.3f}x CPU"
        f"  -> {out.relative_to(REPO)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
